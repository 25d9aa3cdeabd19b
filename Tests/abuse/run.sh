#!/usr/bin/env bash
# The abuse suite (issue 21): floods the release daemon as real unprivileged uids (`nobody`, and
# two users it creates) and checks that root and the other users are not starved. Run as root:
#
#   Tests/abuse/run.sh
#
# Environment:
#   BIOMETRICD_BIN  folder with the release biometricd (default .build/release)
#   MODELS          models folder (default ./models, made by scripts/setup.sh)
#   SHARED          the shared data folder (default ../shared)
#   ABUSE_ONLY      comma-separated scenario names, for debugging (default: all)
#   ABUSE_KEEP      set: keep the temporary folder (daemon and worker logs) instead of removing it
#
# What each scenario checks is in Tests/abuse/abuse.py (one function per scenario). Every check
# prints "PASS name: ..." or "FAIL name: ..." with its figures; the last line is
# "N passed, M failed". Exit status 0 only when nothing failed. Bounded: at most ~3 minutes.
# Then the red team of issue 33 (Tests/abuse/redteam.py, at most 5 minutes): the trust policy's
# refusals with real uids (ABUSE_ONLY=redteam-only skips the floods).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
REPO=$(cd "$HERE/../.." && pwd -P)
cd "$REPO"
BIN=${BIOMETRICD_BIN:-$REPO/.build/release}
MODELS=${MODELS:-$REPO/models}
SHARED=${SHARED:-$REPO/../shared}
FACES=$SHARED/data/faces/lfw/images/Colin_Powell
LIMIT_S=190
REDTEAM_LIMIT_S=300

fail() { echo "FAIL setup: $*"; echo "0 passed, 1 failed"; exit 1; }
[ "$(id -u)" = 0 ] || fail "run as root (starts the daemon privileged, creates users, floods as nobody)"
for tool in python3 runuser prlimit useradd userdel timeout; do
    command -v "$tool" >/dev/null || fail "missing $tool"
done
[ -x "$BIN/biometricd" ] || fail "no release daemon at $BIN/biometricd (swift build -c release)"
[ -f "$MODELS/dlib_face_recognition_resnet_model_v1.dat" ] || fail "no models in $MODELS (scripts/setup.sh)"
[ -d "$FACES" ] || fail "no replay photos at $FACES"
id nobody >/dev/null 2>&1 || fail "no user 'nobody'"

T=$(mktemp -d /tmp/biometricd-abuse.XXXXXX)
chmod 755 "$T" # nobody must reach the socket in here
cleanup() {
    # Whatever the suite started and did not stop: daemons and flooders (their pids are listed by
    # abuse.py; each is checked to still be ours before it is killed).
    if [ -f "$T/pids" ]; then
        while read -r pid; do
            if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -e biometricd -e abuse.py; then
                kill -9 "$pid" 2>/dev/null
            fi
        done <"$T/pids"
    fi
    if [ -f "$T/users" ]; then
        while read -r u; do id "$u" >/dev/null 2>&1 && userdel "$u" 2>/dev/null; done <"$T/users"
    fi
    if [ -f "$T/redteam-made" ]; then
        grep '^user ' "$T/redteam-made" | while read -r _ u; do userdel "$u" 2>/dev/null; done
        grep '^group ' "$T/redteam-made" | while read -r _ g; do groupdel "$g" 2>/dev/null; done
    fi
    if [ -n "${ABUSE_KEEP:-}" ]; then echo "kept: $T (daemon and worker logs)"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "${ABUSE_ONLY:-}" != redteam-only ]; then
echo "daemon: $BIN/biometricd ($(date -r "$BIN/biometricd" '+%F %T'))"
timeout -k 5 "$LIMIT_S" python3 "$HERE/abuse.py" --workdir "$T" --bin "$BIN" --models "$MODELS" \
    --camera "replay:$FACES?fps=15&loop=true" ${ABUSE_ONLY:+--only "$ABUSE_ONLY"} 2>&1 | tee "$T/out"
RC=${PIPESTATUS[0]}
if ! tail -n 1 "$T/out" | grep -Eq '^[0-9]+ passed, [0-9]+ failed$'; then
    # Killed by the time limit (or crashed) before its summary: count what it printed, plus this.
    P=$(grep -c '^PASS ' "$T/out")
    F=$(grep -c '^FAIL ' "$T/out")
    echo "FAIL suite: stopped before the end (status $RC, limit ${LIMIT_S} s)"
    echo "$P passed, $((F + 1)) failed"
    exit 1
fi
tail -n 1 "$T/out" | grep -q ', 0 failed$' || exit 1
fi

# The red team of issue 33 (Tests/abuse/redteam.py): each path a hostile local user got through
# before the one trust policy, with real uids, expecting a refusal and the state unchanged.
echo "== red team (issue 33)"
timeout -k 5 "$REDTEAM_LIMIT_S" python3 "$HERE/redteam.py" --workdir "$T" --bin "$BIN" --models "$MODELS" --shared "$SHARED" 2>&1 | tee "$T/redteam.out"
RC=${PIPESTATUS[0]}
if ! tail -n 1 "$T/redteam.out" | grep -Eq '^[0-9]+ passed, [0-9]+ failed$'; then
    echo "FAIL red team: stopped before the end (status $RC, limit ${REDTEAM_LIMIT_S} s)"
    exit 1
fi
tail -n 1 "$T/redteam.out" | grep -q ', 0 failed$'
