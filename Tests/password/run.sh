#!/usr/bin/env bash
# Tests of biometricd-password (Sources/PAM/password_helper.c), the root-owned helper that checks
# a user's account password with PAM and reports it to biometricd (Docs/auth.md, "Proving the
# account password (first factor)"). Run as root: it creates a test user with a known password
# (removed on exit) and installs Sources/PAM/biometricd-enroll.pam as /etc/pam.d/biometricd-enroll
# (an existing file is put back on exit). The helper talks to a fake daemon
# (Tests/password/fake_daemon.py) that records every auth.password.proven line and the peer uid
# it came from; the client (Tests/password/client.py) runs as the test user with runuser.
#
#   Tests/password/run.sh
#
# Environment:
#   PASSWORD_HELPER  the helper under test (default: built here with scripts/build-password-helper.sh)
#   FUZZ_N           hostile requests in the fuzz loop (default 400)
#   SANITIZE=1       test an ASan+UBSan build of the helper instead (made here with $CC, default
#                    cc); the fuzz then also catches memory errors that do not crash
#
# Every case prints one line ("ok ..." or "FAIL ..."); the last line is "N passed, M failed".
# Bounded: the whole run takes about 20-30 s (a hard limit of 60 s ends it).
set -uo pipefail
# The hard bound: whatever hangs, the run ends (and cleans up) within 60 s.
if [ -z "${PWH_TEST_TIMED:-}" ]; then PWH_TEST_TIMED=1 exec timeout -s TERM 60 "$0" "$@"; fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
REPO=$(cd "$HERE/../.." && pwd -P)
PY=/usr/bin/python3 # not a pyenv shim: the test user must be able to run it
FUZZ_N=${FUZZ_N:-400}
PASS=0
FAIL=0
ok() { PASS=$((PASS + 1)); echo "ok   $*"; }
bad() { FAIL=$((FAIL + 1)); echo "FAIL $*"; }
finish() { echo "$PASS passed, $FAIL failed"; [ "$FAIL" = 0 ]; exit $?; }

if [ "$(id -u)" != 0 ]; then bad "run as root (creates a user, writes /etc/pam.d/biometricd-enroll)"; finish; fi
for tool in "$PY" useradd userdel chpasswd runuser; do
    command -v "$tool" >/dev/null || { bad "missing $tool"; finish; }
done
[ -e /usr/include/security/pam_appl.h ] || [ -n "${PASSWORD_HELPER:-}" ] || { bad "missing libpam0g-dev"; finish; }

T=$(mktemp -d /tmp/pwh-test.XXXXXX)
chmod 755 "$T"
TUSER=pwt$(echo "${T##*.}" | tr 'A-Z' 'a-z' | tr -cd 'a-z0-9')
# The password has JSON escapes in it (quote, backslash), non-ASCII and a colon.
PW='Corr3ct "horse" \battery: é ☃'
NONCE=AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCdE
PAMFILE=/etc/pam.d/biometricd-enroll
HPID=
DPID=
APID=
MADE_USER=0
SAVED_PAM=0
cleanup() {
    for p in $HPID $DPID $APID; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    if [ "$SAVED_PAM" = 1 ]; then mv -f "$T/pam.saved" "$PAMFILE"; else rm -f "$PAMFILE"; fi
    [ "$MADE_USER" = 1 ] && userdel "$TUSER" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
trap 'bad "interrupted, or over the 60 s limit"; finish' INT TERM

HELPER=${PASSWORD_HELPER:-}
if [ -z "$HELPER" ] && [ "${SANITIZE:-0}" = 1 ]; then
    # -lcrypt up front: ASan intercepts crypt_r, and when libcrypt only arrives later with
    # pam_unix (dlopen), the interceptor has no real function to call and jumps to 0.
    HELPER=$T/biometricd-password-asan
    "${CC:-cc}" -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined \
        -Wall -Wextra -Werror -DBIOMETRICD_PASSWORD_HELPER -I"$REPO/Sources/PAM/include" -o "$HELPER" \
        "$REPO/Sources/PAM/password_helper.c" "$REPO/Sources/PAM/bjson.c" "$REPO/Sources/PAM/keyring.c" "$REPO/Sources/PAM/reply.c" \
        -lpam -lsystemd -Wl,--no-as-needed -lcrypt \
        || { bad "sanitizer build"; finish; }
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
elif [ -z "$HELPER" ]; then
    HELPER=$("$REPO/scripts/build-password-helper.sh" "$T/biometricd-password") || { bad "helper build"; finish; }
fi
[ -x "$HELPER" ] || { bad "no helper at $HELPER"; finish; }
echo "helper: $HELPER"
cp "$HERE/client.py" "$HERE/fake_daemon.py" "$T/" && chmod 755 "$T"/*.py

# The test user and its password; the shipped PAM service file.
useradd -M -N -s /usr/sbin/nologin "$TUSER" || { bad "useradd $TUSER"; finish; }
MADE_USER=1
printf '%s:%s\n' "$TUSER" "$PW" | chpasswd || { bad "chpasswd"; finish; }
if [ -e "$PAMFILE" ]; then cp -p "$PAMFILE" "$T/pam.saved" && SAVED_PAM=1; fi
install -m 0644 "$REPO/Sources/PAM/biometricd-enroll.pam" "$PAMFILE"

HSOCK=$T/password.sock
DSOCK=$T/daemon.sock
DLOG=$T/daemon.log
HLOG=$T/helper.log
: >"$DLOG"

daemon() { # mode
    [ -n "$DPID" ] && { kill "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; }
    DPID=
    rm -f "$DSOCK"
    [ "$1" = down ] && return 0
    "$PY" "$T/fake_daemon.py" --socket "$DSOCK" --log "$DLOG" --mode "$1" &
    DPID=$!
    for _ in $(seq 100); do [ -S "$DSOCK" ] && return 0; sleep 0.02; done
    bad "fake daemon ($1) did not start"
}
calls() { wc -l <"$DLOG"; }

"$HELPER" --socket "$HSOCK" --daemon-socket "$DSOCK" --client-timeout 2 --max-children 4 2>"$HLOG" &
HPID=$!
for _ in $(seq 100); do [ -S "$HSOCK" ] && break; sleep 0.02; done
[ -S "$HSOCK" ] || { bad "helper did not start: $(cat "$HLOG")"; finish; }
[ "$(stat -c %a "$HSOCK")" = 666 ] && ok "helper socket is mode 0666 (from the umask at bind, no chmod)" || bad "helper socket mode $(stat -c %a "$HSOCK")"
grep -qE '(^|[^a-z_])f?chmod *\(' "$REPO/Sources/PAM/password_helper.c" && bad "the helper still calls chmod (follows links)" || ok "the helper calls no chmod on a path"

as_user() { runuser -u "$TUSER" -- "$PY" "$T/client.py" "$HSOCK" "$@"; }
# check NAME WANT_REGEX OUT CALLS_BEFORE [WANT_NEW_CALLS]
check() {
    local name=$1 want=$2 out=$3 before=$4 new=${5:-0} now
    now=$(calls)
    if [[ "$out" =~ $want ]] && [ $((now - before)) = "$new" ]; then ok "$name"
    else bad "$name: got '$out', daemon calls +$((now - before)) (wanted +$new)"; fi
}
reason() { echo "^\\{\"ok\":false,\"reason\":\"$1\",\"message\":\"[^\"]"; }

daemon ok

# 1. The right password: ok, and exactly one proven call, from uid 0, with that user and nonce.
c0=$(calls)
out=$(printf '%s' "$PW" | as_user request "$TUSER" "$NONCE")
check "right password -> ok:true" '^\{"ok":true\}$' "$out" "$c0" 1
want="{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"auth.password.proven\",\"params\":{\"user\":\"$TUSER\",\"nonce\":\"$NONCE\"}}"
got=$(tail -n 1 "$DLOG")
"$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); sys.exit(0 if d["uid"]==0 and d["line"]==sys.argv[2] else 1)' "$got" "$want" \
    && ok "the daemon got the exact proven line from uid 0" || bad "daemon saw: $got; wanted uid 0 and $want"

# 2. A wrong password: wrong_password after PAM's delay, and no call.
c0=$(calls)
t0=$(date +%s%N)
out=$(printf '%s' "${PW}x" | as_user request "$TUSER" "$NONCE")
ms=$((($(date +%s%N) - t0) / 1000000))
check "wrong password -> wrong_password" "$(reason wrong_password)" "$out" "$c0"
[ "$ms" -ge 1900 ] && [ "$ms" -lt 3000 ] && ok "wrong password answered after the fixed refusal delay (${ms} ms)" || bad "wrong password answered in ${ms} ms (wanted 2 s)"
WRONG_OUT=$out

# 2b. The right password of an expired account: refused by pam_acct_mgmt, no call, with the
# same answer in the same time as a wrong password (issue 33 item 9: neither tells a guesser
# that the password was right).
if command -v chage >/dev/null; then
    chage -E 1 "$TUSER"
    c0=$(calls)
    t0=$(date +%s%N)
    out=$(printf '%s' "$PW" | as_user request "$TUSER" "$NONCE")
    ms2=$((($(date +%s%N) - t0) / 1000000))
    check "right password, expired account -> wrong_password" "$(reason wrong_password)" "$out" "$c0"
    [ "$out" = "$WRONG_OUT" ] && ok "expired account: the same answer as a wrong password" || bad "expired account answers differently: $out"
    [ "$ms2" -ge 1900 ] && [ "$ms2" -lt 3000 ] && ok "expired account answered in ${ms2} ms, as a wrong password (${ms} ms)" ||
        bad "expired account answered in ${ms2} ms (a wrong password: ${ms} ms)"
    grep -q "outcome=wrong_password account=" "$HLOG" && ok "the log still tells the administrator it was the account" || bad "account refusal not logged"
    chage -E -1 "$TUSER"
fi

# 3. Another user's name: not_your_user, no call (PAM is not even started).
for other in root nobody no-such-user-xyz; do
    c0=$(calls)
    out=$(printf '%s' "$PW" | as_user request "$other" "$NONCE")
    check "user $other asked by $TUSER -> not_your_user" "$(reason not_your_user)" "$out" "$c0"
done

# 4. Malformed requests: bad_request, no call.
long=$("$PY" -c 'print("{\"user\":\"x\",\"nonce\":\"y\",\"password\":\"" + "a"*5000 + "\"}")')
pw513=$("$PY" -c 'import sys; print("{\"user\":\"%s\",\"nonce\":\"%s\",\"password\":\"%s\"}" % (sys.argv[1], sys.argv[2], "a"*513))' "$TUSER" "$NONCE")
while IFS='|' read -r name body; do
    body=${body//@U@/$TUSER}
    body=${body//@N@/$NONCE}
    c0=$(calls)
    out=$(printf '%s\n' "$body" | as_user raw)
    check "bad request: $name" "$(reason bad_request)" "$out" "$c0"
done <<'EOF'
not JSON|{"user":"@U@","nonce":"@N@","password":
trailing data|{"user":"@U@","nonce":"@N@","password":"p"} x
an array|["@U@","@N@","p"]
nonce 42 chars|{"user":"@U@","nonce":"AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbC","password":"p"}
nonce with +/|{"user":"@U@","nonce":"AbCdEfGhIjKlMnOpQrStUvWxYz0123456789+/AbCd","password":"p"}
nonce not a string|{"user":"@U@","nonce":43,"password":"p"}
missing password|{"user":"@U@","nonce":"@N@"}
extra member|{"user":"@U@","nonce":"@N@","password":"p","admin":true}
duplicate user|{"user":"@U@","user":"root","nonce":"@N@","password":"p"}
escaped duplicate key|{"user":"@U@","nonce":"@N@","password":"p","p\u0061ssword":"q"}
NUL in password|{"user":"@U@","nonce":"@N@","password":"a\u0000b"}
empty password|{"user":"@U@","nonce":"@N@","password":""}
lone surrogate|{"user":"@U@","nonce":"@N@","password":"\ud800"}
control character in user|{"user":"@U@\u0001","nonce":"@N@","password":"p"}
EOF
for pair in "over-long line (5 KB)|$long" "password over 512 bytes|$pw513"; do
    c0=$(calls)
    out=$(printf '%s\n' "${pair#*|}" | as_user raw)
    check "bad request: ${pair%%|*}" "$(reason bad_request)" "$out" "$c0"
done
c0=$(calls)
out=$(printf '\xff\xfe{"user":"x"}\n' | as_user raw)
check "bad request: invalid UTF-8" "$(reason bad_request)" "$out" "$c0"
c0=$(calls)
out=$(printf '{"user":"%s","nonce":"%s","password":"p"}' "$TUSER" "$NONCE" | as_user rawhalf)
check "bad request: no newline before EOF" "$(reason bad_request)" "$out" "$c0"
c0=$(calls)
out=$(as_user hold 2)
check "bad request: nothing sent (client timeout 2 s)" "$(reason bad_request)" "$out" "$c0"

# 4b. The keyring secret (issue 36): keyring.seal checks the password with PAM exactly as the
# proof does, then seals it with systemd-creds and the TPM (host+tpm2) into
# /var/lib/biometricd-keyring/UID.cred; without a TPM it refuses (the host key alone would leave
# the password readable from a copy of the disk). No daemon call in any of them.
KDIR=/var/lib/biometricd-keyring
KMADE=0
[ -d "$KDIR" ] || { mkdir -m 0700 "$KDIR"; KMADE=1; }
KCRED=$KDIR/$(id -u "$TUSER").cred
rm -f "$KCRED"
kreq() { "$PY" -c 'import json,sys; print(json.dumps(dict(zip(sys.argv[1::2], sys.argv[2::2]))))' "$@"; }
c0=$(calls)
out=$(kreq op keyring.status user "$TUSER" | as_user raw)
check "keyring.status, none sealed -> sealed:false" '^\{"ok":true,"sealed":false\}$' "$out" "$c0"
out=$(kreq op keyring.seal user "$TUSER" password "${PW}x" | as_user raw)
check "keyring.seal with a wrong password -> wrong_password" "$(reason wrong_password)" "$out" "$c0"
[ ! -e "$KCRED" ] && ok "keyring.seal with a wrong password: nothing sealed" || bad "keyring: sealed after a wrong password"
out=$(kreq op keyring.seal user root password "$PW" | as_user raw)
check "keyring.seal for root asked by $TUSER -> not_your_user" "$(reason not_your_user)" "$out" "$c0"
out=$(kreq op keyring.seal user "$TUSER" password "$PW" | as_user raw)
if [ -e /dev/tpmrm0 ]; then
    check "keyring.seal with the right password -> sealed" '^\{"ok":true,"sealed":true\}$' "$out" "$c0"
    [ "$(stat -c '%U %a' "$KCRED" 2>/dev/null)" = "root 600" ] && ok "keyring: root's 0600 file" || bad "keyring file: $(stat -c '%U %a' "$KCRED" 2>&1)"
else
    check "keyring.seal with the right password and no TPM -> keyring_failed, says why" "$(reason keyring_failed).*no TPM 2.0" "$out" "$c0"
    [ ! -e "$KCRED" ] && ok "keyring: nothing sealed without a TPM" || bad "keyring: sealed without a TPM"
fi
touch "$KCRED" && chmod 600 "$KCRED"
out=$(kreq op keyring.status user "$TUSER" | as_user raw)
check "keyring.status with one sealed -> sealed:true" '^\{"ok":true,"sealed":true\}$' "$out" "$c0"
out=$(kreq op keyring.remove user root | as_user raw)
check "keyring.remove of root's by $TUSER -> not_your_user" "$(reason not_your_user)" "$out" "$c0"
out=$(kreq op keyring.remove user "$TUSER" | as_user raw)
check "keyring.remove -> removed:true" '^\{"ok":true,"removed":true\}$' "$out" "$c0"
[ ! -e "$KCRED" ] && ok "keyring.remove: the file is gone" || bad "keyring.remove left the file"
out=$(kreq op keyring.remove user "$TUSER" | as_user raw)
check "keyring.remove again -> removed:false" '^\{"ok":true,"removed":false\}$' "$out" "$c0"
while IFS='|' read -r name body; do
    body=${body//@U@/$TUSER}
    body=${body//@N@/$NONCE}
    out=$(printf '%s\n' "$body" | as_user raw)
    check "bad request: $name" "$(reason bad_request)" "$out" "$c0"
done <<'EOF'
unknown op|{"op":"keyring.dump","user":"@U@"}
op not a string|{"op":1,"user":"@U@","password":"p"}
seal with a nonce|{"op":"keyring.seal","user":"@U@","nonce":"@N@","password":"p"}
seal without a password|{"op":"keyring.seal","user":"@U@"}
remove with a password|{"op":"keyring.remove","user":"@U@","password":"p"}
duplicate op|{"op":"keyring.status","op":"keyring.seal","user":"@U@"}
status with an extra member|{"op":"keyring.status","user":"@U@","x":"y"}
EOF
[ "$KMADE" = 1 ] && rm -rf "$KDIR"

# 5. The daemon: down, stale socket, refusing, garbage, an event before the answer.
daemon down
c0=$(calls)
out=$(printf '%s' "$PW" | as_user request "$TUSER" "$NONCE")
check "daemon down -> daemon_unreachable" "$(reason daemon_unreachable)" "$out" "$c0"
"$PY" -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$DSOCK"
out=$(printf '%s' "$PW" | as_user request "$TUSER" "$NONCE")
check "stale daemon socket -> daemon_unreachable" "$(reason daemon_unreachable)" "$out" "$c0"
daemon refuse
c0=$(calls)
out=$(printf '%s' "$PW" | as_user request "$TUSER" "$NONCE")
check "daemon refuses -> daemon_refused with its message" "$(reason daemon_refused).*unknown or expired nonce \\\\\"x\\\\\"" "$out" "$c0" 1
daemon refuse_long
c0=$(calls)
out=$(printf '%s' "$PW" | as_user request "$TUSER" "$NONCE")
if printf '%s' "$out" | "$PY" -c 'import json,sys; d=json.loads(sys.stdin.buffer.read().decode("utf-8")); sys.exit(0 if d["reason"]=="daemon_refused" and len(d["message"])<400 else 1)'; then
    ok "a 7 KB non-ASCII daemon message is cut on a character boundary (valid JSON and UTF-8)"
else bad "long daemon message: $out"; fi
daemon garbage
c0=$(calls)
out=$(printf '%s' "$PW" | as_user request "$TUSER" "$NONCE")
check "daemon answers garbage -> daemon_unreachable" "$(reason daemon_unreachable)" "$out" "$c0" 1
daemon close
c0=$(calls)
out=$(printf '%s' "$PW" | as_user request "$TUSER" "$NONCE")
check "daemon closes without answer -> daemon_unreachable" "$(reason daemon_unreachable)" "$out" "$c0" 1
# Only {"ok": true} is a proof the daemon took (issue 33 item 8): any other result is refused.
for mode in result_not_ok result_ok_string result_array; do
    daemon $mode
    c0=$(calls)
    out=$(printf '%s' "$PW" | as_user request "$TUSER" "$NONCE")
    check "daemon answers a result that is not ok:true ($mode) -> daemon_refused" "$(reason daemon_refused)" "$out" "$c0" 1
done
daemon event_then_ok
c0=$(calls)
out=$(printf '%s' "$PW" | as_user request "$TUSER" "$NONCE")
check "daemon sends an event first -> ok:true" '^\{"ok":true\}$' "$out" "$c0" 1
daemon ok

# 6. root may prove anyone's password (it never needs to).
c0=$(calls)
out=$(printf '%s' "$PW" | "$PY" "$T/client.py" "$HSOCK" request "$TUSER" "$NONCE")
check "root proves $TUSER's password -> ok:true" '^\{"ok":true\}$' "$out" "$c0" 1

# 7. One check per uid at a time; a flood does not grow the helper.
as_user hold 2 >"$T/held" &
HOLD=$!
sleep 0.4
c0=$(calls)
printf '%s' "$PW" | as_user request "$TUSER" "$NONCE" >"$T/second" &
SECOND=$!
sleep 0.4
out=$(printf '%s' "$PW" | as_user request "$TUSER" "$NONCE")
check "third connection of a uid while its check runs and one waits -> busy" "$(reason busy)" "$out" "$c0"
wait "$HOLD" "$SECOND"
check "second connection of that uid waited for the first, then ok:true" '^\{"ok":true\}$' "$(cat "$T/second")" "$c0" 1
runuser -u "$TUSER" -- "$PY" "$T/client.py" "$HSOCK" flood 300 1.5 >"$T/flood" &
FLOOD=$!
maxkids=0
for _ in $(seq 12); do
    n=$(pgrep -c -P "$HPID" || true)
    [ "$n" -gt "$maxkids" ] && maxkids=$n
    sleep 0.1
done
fds=$(ls /proc/"$HPID"/fd | wc -l)
wait "$FLOOD"
[ "$maxkids" -le 4 ] && [ "$fds" -le 12 ] && ok "flood of 300 connections: at most $maxkids children, $fds fds in the helper ($(cat "$T/flood"))" \
    || bad "flood: $maxkids children, $fds fds"
sleep 2.2 # the one accepted flood connection times out
# Six uids at once with --max-children 4: never more than 4 children; the others wait their turn
# in the backlog and are served (each connection gets its bad_request after 2 s).
pids=
for u in "$TUSER" nobody daemon bin sys root; do
    runuser -u "$u" -- "$PY" "$T/client.py" "$HSOCK" hold 2 >"$T/multi.$u" &
    pids="$pids $!"
done
maxkids=0
for _ in $(seq 30); do
    n=$(pgrep -c -P "$HPID" || true)
    [ "$n" -gt "$maxkids" ] && maxkids=$n
    sleep 0.1
done
wait $pids
served=$(cat "$T"/multi.* | grep -c '"reason":"bad_request"')
[ "$maxkids" -le 4 ] && [ "$served" = 6 ] && ok "6 uids at once: $maxkids children at most (cap 4), all 6 served in turn" \
    || bad "6 uids at once: $maxkids children at most, $served of 6 served: $(cat "$T"/multi.* | tr '\n' ' ')"
c0=$(calls)
out=$(printf '%s' "$PW" | as_user request "$TUSER" "$NONCE")
check "after the flood: right password -> ok:true" '^\{"ok":true\}$' "$out" "$c0" 1

# 8. Fuzz: hostile bytes, one connection each; the helper answers every one with a refusal.
c0=$(calls)
as_user fuzz "$FUZZ_N" 7 >"$T/fuzz"
total=$(wc -l <"$T/fuzz")
good=$(grep -cE '^\{"ok":false,"reason":"(bad_request|not_your_user)","message":"[^"]+"\}$' "$T/fuzz")
if [ "$total" = "$FUZZ_N" ] && [ "$good" = "$FUZZ_N" ] && [ "$(calls)" = "$c0" ] && kill -0 "$HPID" 2>/dev/null; then
    ok "fuzz: $FUZZ_N hostile requests, each refused, no daemon call, helper alive"
else
    bad "fuzz: $good of $total answers were refusals, daemon calls +$(($(calls) - c0)); first odd: $(grep -vE '"reason":"(bad_request|not_your_user)"' "$T/fuzz" | head -n 3)"
fi
c0=$(calls)
out=$(printf '%s' "$PW" | as_user request "$TUSER" "$NONCE")
check "after the fuzz: right password -> ok:true" '^\{"ok":true\}$' "$out" "$c0" 1

# 9. The password never appears in the helper's log (or in the daemon's).
if grep -qF -e "$PW" -e "horse" -e "battery" "$HLOG" "$DLOG"; then bad "the password appears in a log"
else ok "the password is in no log ($(wc -l <"$HLOG") helper log lines)"; fi
if grep -q -e "ERROR: AddressSanitizer" -e "runtime error:" -e "ended by signal" "$HLOG"; then bad "crash or sanitizer report: $(grep -m1 -A3 -e ERROR -e "runtime error" -e "ended by signal" "$HLOG")"; fi
grep -q "outcome=wrong_password" "$HLOG" && grep -q "outcome=ok" "$HLOG" && ok "outcomes are logged" || bad "log: $(head -c 400 "$HLOG")"
kill "$HPID"; wait "$HPID" 2>/dev/null
[ ! -e "$HSOCK" ] && ok "SIGTERM: helper exits and removes its socket" || bad "socket left after SIGTERM"
HPID=

# 10. Socket activation (LISTEN_FDS, as systemd's Accept=no passes it), and the idle exit.
if command -v systemd-socket-activate >/dev/null; then
    ASOCK=$T/activated.sock
    systemd-socket-activate -l "$ASOCK" "$HELPER" --daemon-socket "$DSOCK" --idle-exit 1 2>"$T/activated.log" &
    APID=$!
    for _ in $(seq 100); do [ -S "$ASOCK" ] && break; sleep 0.02; done
    chmod 666 "$ASOCK"
    c0=$(calls)
    out=$(printf '%s' "$PW" | runuser -u "$TUSER" -- "$PY" "$T/client.py" "$ASOCK" request "$TUSER" "$NONCE")
    check "socket-activated: right password -> ok:true" '^\{"ok":true\}$' "$out" "$c0" 1
    for _ in $(seq 40); do kill -0 "$APID" 2>/dev/null || break; sleep 0.1; done
    if ! kill -0 "$APID" 2>/dev/null && grep -q "socket-activated" "$T/activated.log" && grep -q "idle for 1 s" "$T/activated.log"; then
        ok "socket-activated helper exits after --idle-exit"
    else bad "socket activation: $(tr '\n' ' ' <"$T/activated.log")"; fi
    APID=
else
    echo "skip socket activation: no systemd-socket-activate"
fi

# 11. The shipped unit stays hardened (offline analysis; the binary need not be installed).
if command -v systemd-analyze >/dev/null; then
    score=$(cd "$REPO/systemd" && systemd-analyze security --offline=true biometricd-password.service 2>/dev/null |
        sed -n 's/.*exposure level for biometricd-password.service: \([0-9.]*\).*/\1/p')
    if [ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s <= 1.0) }'; then ok "systemd-analyze security: exposure $score (at most 1.0)"
    else bad "systemd-analyze security: exposure '${score}' (wanted at most 1.0)"; fi
fi

# 12. End to end (issue 20): the real daemon (BIOMETRICD_BIN, a folder with biometricd and
# authctl), this helper and authctl as the test user. A first enrolment needs the account
# password: wrong -> refused, nothing stored; right -> enrolled. Another user cannot enrol this one.
if [ -n "${BIOMETRICD_BIN:-}" ] && [ -x "$BIOMETRICD_BIN/biometricd" ] && [ -f "$REPO/models/dlib_face_recognition_resnet_model_v1.dat" ]; then
    LFWP=${SHARED:-$REPO/../shared}/data/faces/lfw/images/Tony_Blair
    mkdir -p "$T/e2e/photos"
    for n in 0018 0032 0048; do ln -s "$LFWP/Tony_Blair_$n.jpg" "$T/e2e/photos/"; done
    chmod -R a+rX "$T/e2e"
    RS=$T/e2e/b.sock
    "$BIOMETRICD_BIN/biometricd" --socket "$RS" --state-dir "$T/e2e/state" --models "$REPO/models" \
        --camera "replay:$T/e2e/photos?fps=10&loop=true" >"$T/e2e/daemon.log" 2>&1 &
    E2EPID=$!
    for _ in $(seq 200); do [ -S "$RS" ] && break; sleep 0.05; done
    "$HELPER" --socket "$T/e2e/pw.sock" --daemon-socket "$RS" --daemon-user root 2>"$T/e2e/helper.log" &
    E2EHPID=$!
    for _ in $(seq 100); do [ -S "$T/e2e/pw.sock" ] && break; sleep 0.05; done
    enrol_as() { # user, password on stdin
        runuser -u "$1" -- env BIOMETRICD_PASSWORD_SOCKET="$T/e2e/pw.sock" "$BIOMETRICD_BIN/authctl" face enroll "$TUSER" \
            --camera replay0 --countdown 0 --frames 2 --quality 20 --socket "$RS" >"$T/e2e/out" 2>&1
    }
    faces() { "$BIOMETRICD_BIN/authctl" face list "$TUSER" --json --socket "$RS" 2>/dev/null | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["templates"]))' 2>/dev/null || echo 0; }
    printf 'not the password\n' | enrol_as "$TUSER"
    rc=$?
    if [ "$rc" != 0 ] && [ "$(faces)" = 0 ]; then ok "e2e: a first enrolment with a wrong password is refused, nothing stored (rc $rc)"
    else bad "e2e: wrong password: rc $rc, faces $(faces): $(tr '\n' ' ' <"$T/e2e/out" | head -c 300)"; fi
    printf '%s\n' "$PW" | enrol_as nobody
    rc=$?
    if [ "$rc" != 0 ] && grep -q "may not enrol" "$T/e2e/out" && [ "$(faces)" = 0 ]; then ok "e2e: another user cannot enrol $TUSER, even with the password"
    else bad "e2e: another user: rc $rc: $(tr '\n' ' ' <"$T/e2e/out" | head -c 300)"; fi
    # A password socket that is not root's (e.g. put there by the daemon's own user): authctl
    # checks the peer and sends nothing.
    mkdir -p "$T/e2e/fake" && chown nobody "$T/e2e/fake"
    runuser -u nobody -- "$PY" -c '
import socket, sys
import os; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o666); s.listen(1); s.settimeout(20)
try:
    c, _ = s.accept(); c.settimeout(2)
    data = b""
    try:
        while True:
            d = c.recv(4096)
            if not d: break
            data += d
    except OSError: pass
    open(sys.argv[2], "wb").write(data)
except OSError: pass' "$T/e2e/fake/s.sock" "$T/e2e/fake/got" &
    FAKEPID=$!
    for _ in $(seq 100); do [ -S "$T/e2e/fake/s.sock" ] && break; sleep 0.05; done
    printf '%s\n' "$PW" | runuser -u "$TUSER" -- env BIOMETRICD_PASSWORD_SOCKET="$T/e2e/fake/s.sock" "$BIOMETRICD_BIN/authctl" face enroll "$TUSER" \
        --camera replay0 --countdown 0 --frames 2 --quality 20 --socket "$RS" >"$T/e2e/out" 2>&1
    rc=$?
    wait "$FAKEPID" 2>/dev/null
    if [ "$rc" != 0 ] && grep -q "not the root password helper (it belongs to uid" "$T/e2e/out" && ! grep -qF "$PW" "$T/e2e/fake/got" 2>/dev/null; then
        ok "e2e: authctl sends no password to a socket that is not root's"
    else bad "e2e: non-root password socket: rc $rc: $(tr '\n' ' ' <"$T/e2e/out" | head -c 200)"; fi
    # The daemon's own user swaps the password socket for a link to the daemon's socket (whose
    # listener, under socket activation, is systemd: root): authctl checks the path (a socket,
    # root's, in a folder only root may change) and sends nothing (issue 33, item 8).
    mkdir -p "$T/e2e/link" && chown nobody "$T/e2e/link"
    runuser -u nobody -- ln -s "$RS" "$T/e2e/link/pw.sock"
    printf '%s\n' "$PW" | runuser -u "$TUSER" -- env BIOMETRICD_PASSWORD_SOCKET="$T/e2e/link/pw.sock" "$BIOMETRICD_BIN/authctl" face enroll "$TUSER" \
        --camera replay0 --countdown 0 --frames 2 --quality 20 --socket "$RS" >"$T/e2e/out" 2>&1
    rc=$?
    if [ "$rc" != 0 ] && grep -q "not the root password helper (it is not a socket" "$T/e2e/out" && ! grep -qF "$PW" "$T/e2e/daemon.log"; then
        ok "e2e: a link to the daemon's socket in the helper's place gets no password"
    else bad "e2e: link to the daemon socket: rc $rc: $(tr '\n' ' ' <"$T/e2e/out" | head -c 200)"; fi
    # The same root-owned helper socket, reached through a folder others may write: refused.
    mkdir -p "$T/e2e/open" && chmod 777 "$T/e2e/open"
    ln "$T/e2e/pw.sock" "$T/e2e/open/pw.sock" 2>/dev/null || cp -a "$T/e2e/pw.sock" "$T/e2e/open/pw.sock"
    printf '%s\n' "$PW" | runuser -u "$TUSER" -- env BIOMETRICD_PASSWORD_SOCKET="$T/e2e/open/pw.sock" "$BIOMETRICD_BIN/authctl" face enroll "$TUSER" \
        --camera replay0 --countdown 0 --frames 2 --quality 20 --socket "$RS" >"$T/e2e/out" 2>&1
    rc=$?
    if [ "$rc" != 0 ] && grep -q "its folder is writable by others" "$T/e2e/out"; then ok "e2e: a helper socket in a folder others may write is not trusted"
    else bad "e2e: open folder: rc $rc: $(tr '\n' ' ' <"$T/e2e/out" | head -c 200)"; fi
    printf '%s\n' "$PW" | enrol_as "$TUSER"
    rc=$?
    if [ "$rc" = 0 ] && [ "$(faces)" = 1 ]; then ok "e2e: with the right password the user enrols their first face"
    else bad "e2e: right password: rc $rc, faces $(faces): $(tr '\n' ' ' <"$T/e2e/out" | head -c 300)"; fi
    if ! grep -qF "$PW" "$T/e2e/daemon.log" "$T/e2e/helper.log"; then ok "e2e: the password is in no log"; else bad "e2e: the password was logged"; fi
    kill "$E2EHPID" "$E2EPID" 2>/dev/null
    wait "$E2EHPID" "$E2EPID" 2>/dev/null
else
    echo "skip e2e: BIOMETRICD_BIN (with biometricd and authctl) or models not given"
fi

finish
