#!/usr/bin/env bash
# The main job, end to end: starts the release daemon unprivileged (socket and state in a temp
# folder), on the V4L2 cameras of this machine or, when it has none, on a replay camera of real
# LFW photos from ../shared/data, and talks to it with authctl.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$(pwd)
BIN=$(swift build -c release --show-bin-path)
[ -x "$BIN/biometricd" ] || swift build -c release
WORK=$(mktemp -d /tmp/biometricd-demo.XXXXXX)
SOCK=$WORK/biometricd.sock
export BIOMETRICD_SOCKET=$SOCK

CAMERAS=()
if ! ls /dev/video* >/dev/null 2>&1; then
    PERSON=${DEMO_PERSON:-Aaron_Eckhart}
    CAMERAS=(--camera "replay:$REPO/../shared/data/faces/lfw/images/$PERSON?fps=15&loop=true")
    echo "==> no V4L2 camera here: replaying photos of $PERSON from ../shared/data"
fi

"$BIN/biometricd" --socket "$SOCK" --state-dir "$WORK/state" --models "$REPO/models" "${CAMERAS[@]}" \
    2> "$WORK/daemon.log" &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; echo "==> daemon log: $WORK/daemon.log"' EXIT
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.05; done

step() { echo; echo "\$ authctl $*"; "$BIN/authctl" "$@"; }
step status
step cameras
step snapshot -o "$WORK/snapshot.png"
step users
echo
echo "==> snapshot: $WORK/snapshot.png"
