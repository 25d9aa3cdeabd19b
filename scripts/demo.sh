#!/usr/bin/env bash
# The main job, end to end: starts the release daemon unprivileged (socket and state in a temp
# folder) and enrols and verifies real faces through it with authctl.
#
# Cameras: replay cameras of real photos from ../shared/data (LFW), so the demo runs the same on
# any machine: "enrol" shows four photos of one person, "same" another photo of them, "other"
# a photo of someone else. On a machine with a webcam, run the daemon with --camera v4l2:/dev/video0
# and use `authctl face enroll` / `authctl face verify` yourself (see README).
# Fingers: replay cameras of rendered hands whose fingertips carry real FVC2002 prints
# (finger-scene, a test tool): enrol from impression 1, verify with impression 3 of the same
# fingers (match) and with other fingers (no match).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$(pwd)
BIN=$(swift build -c release --show-bin-path)
[ -x "$BIN/biometricd" ] && [ -x "$BIN/authctl" ] && [ -x "$BIN/finger-scene" ] || swift build -c release
LFW=$REPO/../shared/data/faces/lfw/images
[ -d "$LFW" ] || { echo "demo: $LFW not found (../shared/data)"; exit 1; }
WORK=$(mktemp -d /tmp/biometricd-demo.XXXXXX)
SOCK=$WORK/biometricd.sock
export BIOMETRICD_SOCKET=$SOCK

# Folders of photos, played as cameras (links: the data stays in ../shared).
photos() { local dir=$WORK/$1; shift; mkdir -p "$dir"; for f in "$@"; do ln -s "$LFW/$f" "$dir/"; done; echo "$dir"; }
ENROL=$(photos enrol Tony_Blair/Tony_Blair_0018.jpg Tony_Blair/Tony_Blair_0032.jpg Tony_Blair/Tony_Blair_0048.jpg Tony_Blair/Tony_Blair_0053.jpg)
SAME=$(photos same Tony_Blair/Tony_Blair_0064.jpg)
OTHER=$(photos other Silvio_Berlusconi/Silvio_Berlusconi_0006.jpg)
FVC=$REPO/../shared/data/fingers/fvc2002_db2_b/images
hand() { "$BIN/finger-scene" --out "$WORK/$1" --frames 20 --prints "$2" --prints-dir "$FVC" >/dev/null; echo "$WORK/$1"; }
HAND_ENROL=$(hand hand-enrol 101_1,102_1,103_1,104_1)
HAND_SAME=$(hand hand-same 101_3,102_3,103_3,104_3)
HAND_OTHER=$(hand hand-other 105_1,106_1,107_1,108_1)

"$BIN/biometricd" --socket "$SOCK" --state-dir "$WORK/state" --models "$REPO/models" \
    --camera "replay:$ENROL?fps=10&loop=true" --camera "replay:$SAME?fps=10&loop=true" \
    --camera "replay:$OTHER?fps=10&loop=true" --camera "replay:$HAND_ENROL?fps=15&loop=true" \
    --camera "replay:$HAND_SAME?fps=15&loop=true" --camera "replay:$HAND_OTHER?fps=15&loop=true" 2> "$WORK/daemon.log" &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null || true; echo "==> daemon log: $WORK/daemon.log"' EXIT
for _ in $(seq 200); do [ -S "$SOCK" ] && break; sleep 0.05; done

step() { echo; echo "\$ authctl $*"; "$BIN/authctl" "$@" || echo "(exit $?)"; }
step status
step cameras
step face enroll tony --camera replay0 --countdown 0 --frames 3
step face verify tony --camera replay1 --no-liveness
step face verify tony --camera replay2 --no-liveness
step face verify tony --camera replay1
step snapshot -o "$WORK/snapshot.png" --camera replay1
step finger enroll tony --camera replay3 --liveness none --captures 2
step finger verify tony --camera replay4 --liveness none
step finger verify tony --camera replay5 --liveness none --timeout 4
step finger capture --camera replay4 --liveness none -o "$WORK/prints"
step users
echo
echo "==> faces: a match (exit 0) for another photo of the same person, no match (exit 1) for someone"
echo "    else; in liveness mode a photo never blinks, so it is refused. Snapshot: $WORK/snapshot.png"
echo "==> fingers: other impressions of the enrolled fingers match, other fingers do not;"
echo "    captured prints (500 ppi, contact-like): $WORK/prints"
