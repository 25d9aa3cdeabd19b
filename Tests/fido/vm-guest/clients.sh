#!/bin/bash
# Runs inside the FIDO VM (Tests/fido/vm.sh), chrooted into the Debian 12 root, as root; no systemd,
# no logind: systemd-udevd runs on its own, and logind's "uaccess" grant to the seat's user is done
# by hand (setfacl, what logind would do for alice's session). The authenticator is
# fido-test-authenticator --uhid running as the daemon's user (biometricd) through the ACL the udev
# rule gives its group on /dev/uhid; its user verification is the control file (uv=face: verified,
# uv=deny: a stranger). The clients are Debian's own: libfido2's fido2-token/fido2-cred/fido2-assert,
# OpenSSH's ssh-keygen, pam_u2f (pamu2fcfg, pamtester), and python-fido2 2.x.
# Writes one line per check to /vmtest/results.txt: STATUS NAME SECONDS DETAIL.
set -uo pipefail
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 HOME=/root
# udevd and udevadm (trigger, settle) do nothing in a chroot without it.
export SYSTEMD_IGNORE_CHROOT=1
V=/vmtest R=/vmtest/results.txt L=/vmtest/logs
: > "$R"; mkdir -p "$L"
. "$V/env.sh"
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }
result() { echo "$1 $2 $3 ${4:-}" >> "$R"; echo "$1 $2 $3 ${4:-}"; }
# t NAME FUNCTION [ARGS]: runs the check (its output in logs/NAME.log); it sets DETAIL.
t() {
    local name=$1 t0 rc; shift; t0=$(now); DETAIL=""
    "$@" > "$L/$name.log" 2>&1 < /dev/null; rc=$?
    if [ $rc -eq 0 ]; then result PASS "$name" "$(since "$t0")" "$DETAIL"
    else result FAIL "$name" "$(since "$t0")" "${DETAIL:+$DETAIL; }rc $rc, logs/$name.log: $(tail -3 "$L/$name.log" | tr '\n' ' ' | cut -c1-300)"; fi
    return 0
}
A() { setpriv --reuid alice --regid alice --init-groups env HOME=/home/alice USER=alice LOGNAME=alice "$@"; }
W=/home/alice/w
CONTROL=/run/fido/control
control() { echo "$1" > "$CONTROL"; }

# ---- set-up: accounts, udev with the project's rule, the authenticator --------------------------
groupadd -r biometricd && useradd -r -g biometricd -d /nonexistent -s /usr/sbin/nologin biometricd
useradd -m -s /bin/bash alice && useradd -m -s /bin/bash bob
install -d -o alice -g alice "$W" /home/alice/.ssh /home/alice/.config/Yubico
install -d -m 0755 /run/fido
# A PIN on the authenticator (clientPin): OpenSSH 9.2 enrols a resident key only with one.
PIN=482913
printf '#!/bin/sh\nprintf "%%s\\n" "$ASKPASS_ANSWER"\n' > /run/fido/askpass; chmod 0755 /run/fido/askpass
export SSH_ASKPASS=/run/fido/askpass SSH_ASKPASS_REQUIRE=force
control "uv=face up=present"
/usr/lib/systemd/systemd-udevd --daemon
udevadm trigger --action=add >/dev/null 2>&1; udevadm settle -t 60

hidraw_node() {  # the authenticator's hidraw node (HID 0003:1209:000B), if any
    local d
    for d in /sys/class/hidraw/hidraw*; do
        [ -e "$d/device/uevent" ] || continue
        grep -qi '^HID_ID=0003:00001209:0000000B$' "$d/device/uevent" && { echo "/dev/${d##*/}"; return 0; }
    done
    return 1
}
AUTH_PID="" AUTH_USER=biometricd
start_authenticator() {  # as the daemon's user, through the udev rule's ACL on /dev/uhid
    rm -f "$L/authenticator.out"
    setpriv --reuid $AUTH_USER --regid $AUTH_USER --init-groups "$V/bin/fido-test-authenticator" --uhid --control "$CONTROL" --pin "$PIN" \
        > "$L/authenticator.out" 2>> "$L/authenticator.err" &
    AUTH_PID=$!
    local i
    for i in $(seq 200); do
        NODE=$(hidraw_node) && [ -e "$NODE" ] && udevadm settle -t 10 && return 0
        kill -0 "$AUTH_PID" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}

uhid_acl() {
    ls -l /dev/uhid; udevadm info /dev/uhid; pgrep -a udevd
    udevadm test /sys/devices/virtual/misc/uhid 2>&1 | tail -25
    DETAIL=$(getfacl -p /dev/uhid 2>/dev/null | grep -E '^(user|group)::|^group:biometricd' | paste -sd' ')
    getfacl -p /dev/uhid | grep -q '^group:biometricd:rw-'
}
t uhid-acl uhid_acl

rand64() { head -c 32 /dev/urandom | base64 -w0; }
# pam_u2f with UV, then pam_deny (what the issue asks for).
cat > /etc/pam.d/fido-vm <<'PAM'
auth sufficient pam_u2f.so cue userverification=1 origin=pam://fido-vm appid=pam://fido-vm
auth requisite pam_deny.so
account required pam_permit.so
PAM
# The same first line, then a module that always passes: shows pam_u2f's failure falls through.
cat > /etc/pam.d/fido-vm-fallthrough <<'PAM'
auth sufficient pam_u2f.so cue userverification=1 origin=pam://fido-vm appid=pam://fido-vm
auth sufficient pam_permit.so
account required pam_permit.so
PAM

if [ "$MODE" = daemon ]; then
    . "$V/daemon.sh"
    echo done
    exit 0
fi

device_appears() {
    local t0; t0=$(now)
    if ! start_authenticator; then
        # Go on as root so the clients still run; this check fails.
        cat "$L/authenticator.err"; AUTH_USER=root; start_authenticator || return 1
        DETAIL="only as root: user biometricd could not open /dev/uhid; $NODE ($(grep -E '^HID_(ID|NAME)=' /sys/class/hidraw/${NODE#/dev/}/device/uevent | paste -sd' '))"
        return 1
    fi
    DETAIL="as user biometricd: $NODE after $(since "$t0") s ($(cat /sys/class/hidraw/${NODE#/dev/}/device/uevent | grep -E '^HID_(ID|NAME)=' | paste -sd' '))"
}
t device-appears device_appears
[ -n "${NODE:-}" ] || NODE=/dev/hidraw-missing

hidraw_permissions() {
    local mode tags
    mode=$(stat -c '%U:%G %a' "$NODE")
    tags=$(udevadm info -q property "$NODE" | sed -n 's/^TAGS=//p')
    DETAIL="$NODE $mode, udev tags $tags"
    [ "$mode" = "root:root 600" ] && [[ $tags == *:uaccess:* ]] && [[ $tags == *:biometricd:* ]]
}
t hidraw-permissions hidraw_permissions

other_user_refused() {  # bob has no session: he cannot open the node
    [ -e "$NODE" ] || return 1
    local out; out=$(setpriv --reuid bob --regid bob --init-groups fido2-token -I "$NODE" 2>&1); local rc=$?
    DETAIL="bob: fido2-token -I: $(echo "$out" | head -1)"
    echo "$out"
    [ $rc -ne 0 ]
}
t other-user-refused other_user_refused
# What logind does for the active session's user on a "uaccess" device.
setfacl -m u:alice:rw "$NODE"

# ---- libfido2 (fido2-tools 1.12) ----------------------------------------------------------------
token_list() {
    local out; out=$(A fido2-token -L); echo "$out"
    DETAIL=$(echo "$out" | grep -F "$NODE")
    [ -n "$DETAIL" ]
}
t fido2-token-L token_list
token_info() {
    local out; out=$(A fido2-token -I "$NODE") || { echo "$out"; return 1; }; echo "$out"
    DETAIL=$(echo "$out" | grep -E '^(version strings|options|aaguid|pin protocols)' | paste -sd';' | tr -s ' ')
    echo "$out" | grep -q 'FIDO_2_1' && echo "$out" | grep -q 'aaguid: 62696f6d6574726963642d7465737421'
}
t fido2-token-I token_info

cred_make() {
    printf '%s\n%s\n%s\n%s\n' "$(rand64)" example.com alice "$(rand64)" > "$W/cred.param"; chown alice "$W/cred.param"
    A fido2-cred -M -r -v -i "$W/cred.param" -o "$W/cred.out" "$NODE" es256 || return 1
    DETAIL="resident ES256 with UV, fmt $(sed -n 3p "$W/cred.out"), credential id $(sed -n 5p "$W/cred.out" | base64 -d | wc -c) bytes"
}
t fido2-cred-M cred_make
cred_verify() {
    A fido2-cred -V -v -i "$W/cred.out" -o "$W/cred.pub" es256 || return 1
    tail -n +2 "$W/cred.pub" > "$W/pub.pem"
    local att="self attestation (no x5c)"
    [ -n "$(sed -n 7p "$W/cred.out")" ] && att="packed attestation with an x5c certificate ($(sed -n 7p "$W/cred.out" | base64 -d | wc -c) bytes)"
    DETAIL="$att verified, UV flag set"
    grep -q 'BEGIN PUBLIC KEY' "$W/pub.pem"
}
t fido2-cred-V cred_verify
assert_get() {
    printf '%s\n%s\n%s\n' "$(rand64)" example.com "$(head -1 "$W/cred.pub")" > "$W/assert.param"
    A fido2-assert -G -t uv=true -i "$W/assert.param" -o "$W/assert.out" "$NODE" || return 1
    DETAIL="allowList with the credential, UV"
}
t fido2-assert-G assert_get
assert_verify() {
    A fido2-assert -V -v -i "$W/assert.out" "$W/pub.pem" es256 || return 1
    DETAIL="signature and UV flag verified with the credential's public key"
}
t fido2-assert-V assert_verify
assert_resident() {
    printf '%s\n%s\n' "$(rand64)" example.com > "$W/assert-rk.param"
    A fido2-assert -G -r -t uv=true -i "$W/assert-rk.param" -o "$W/assert-rk.out" "$NODE" || return 1
    A fido2-assert -V -v -i "$W/assert-rk.out" "$W/pub.pem" es256 || return 1
    DETAIL="no allowList: the discoverable credential found and its assertion verified"
}
t fido2-assert-G-resident assert_resident
assert_stranger() {
    [ -e "$NODE" ] && [ -s "$W/assert.param" ] || return 1
    control "uv=deny up=deny"
    local rc=0; A fido2-assert -G -t uv=true -i "$W/assert.param" -o "$W/assert-denied.out" "$NODE" || rc=$?
    control "uv=face up=present"
    DETAIL="UV denied: fido2-assert -G exit $rc"
    [ $rc -ne 0 ]
}
t fido2-assert-G-stranger assert_stranger

# ---- OpenSSH 9.2 (ssh-keygen, ssh-sk-helper, libfido2) -----------------------------------------
ssh_keygen() {
    # ssh-keygen asks makeCredential(rk) without "uv": PUAT_REQUIRED, then it asks for the PIN
    # (askpass answers it). The key's signatures then need UV (verify-required).
    ASKPASS_ANSWER=$PIN A ssh-keygen -t ecdsa-sk -O resident -O verify-required -O application=ssh:fido-vm \
        -f /home/alice/.ssh/id_ecdsa_sk -N '' -C alice@fido-vm < /dev/null || return 1
    DETAIL="$(cut -d' ' -f1 /home/alice/.ssh/id_ecdsa_sk.pub), resident, verify-required (enrolment with the PIN: ssh-keygen asks for it)"
}
t ssh-keygen-ecdsa-sk ssh_keygen
echo "signed by biometricd $(date)" > "$W/message"; chown alice "$W/message"
ssh_sign() {
    rm -f "$W/message.sig"
    # An empty answer to "Enter PIN": no PIN, so the authenticator's own UV (uv=true) is asked.
    ASKPASS_ANSWER= A ssh-keygen -Y sign -f /home/alice/.ssh/id_ecdsa_sk -n file "$W/message" < /dev/null || return 1
    DETAIL="empty PIN -> built-in UV: $(wc -c < "$W/message.sig") byte signature"
    [ -s "$W/message.sig" ]
}
t ssh-keygen-Y-sign ssh_sign
ssh_verify() {
    echo "alice $(cut -d' ' -f1,2 /home/alice/.ssh/id_ecdsa_sk.pub)" > "$W/allowed_signers"
    A ssh-keygen -Y verify -f "$W/allowed_signers" -I alice -n file -s "$W/message.sig" < "$W/message" || return 1
    DETAIL="Good signature accepted"
    echo tampered >> "$W/message"
    if A ssh-keygen -Y verify -f "$W/allowed_signers" -I alice -n file -s "$W/message.sig" < "$W/message"; then
        DETAIL="a changed message verified too"; return 1
    fi
    DETAIL="$DETAIL; a changed message refused"
}
t ssh-keygen-Y-verify ssh_verify
ssh_sign_stranger() {
    [ -e "$NODE" ] && [ -s /home/alice/.ssh/id_ecdsa_sk ] || return 1
    control "uv=deny up=deny"
    rm -f "$W/message.sig"
    local rc=0; ASKPASS_ANSWER= A ssh-keygen -Y sign -f /home/alice/.ssh/id_ecdsa_sk -n file "$W/message" < /dev/null || rc=$?
    control "uv=face up=present"
    DETAIL="UV denied: ssh-keygen -Y sign exit $rc"
    [ $rc -ne 0 ]
}
t ssh-keygen-Y-sign-stranger ssh_sign_stranger

# ---- pam_u2f 1.2 (pamu2fcfg, pamtester) ---------------------------------------------------------
pam_register() {
    A pamu2fcfg -u alice -o pam://fido-vm -i pam://fido-vm -d "$NODE" > "$W/u2f_keys" || {
        grep -q 'fido_cred_verify (-7)' "$L/pamu2fcfg.log" \
            && DETAIL="pam-u2f $(dpkg-query -W -f '${Version}' pamu2fcfg)'s pamu2fcfg calls fido_cred_verify, which needs an attestation certificate (x5c): self attestation refused"
        return 1
    }
    DETAIL="$(cut -c1-60 "$W/u2f_keys")…"
    grep -q '^alice:' "$W/u2f_keys"
}
t pamu2fcfg pam_register
# pam_u2f's own key file format (alice:credential id,public key,es256,+presence), written from a
# fido2-cred credential when pamu2fcfg could not write it: pam_u2f's authentication is what follows.
pam_keyfile() {
    if [ -s "$W/u2f_keys" ] && grep -q '^alice:' "$W/u2f_keys"; then DETAIL="from pamu2fcfg"
    else
        printf '%s\n%s\n%s\n%s\n' "$(rand64)" pam://fido-vm alice "$(rand64)" > "$W/pam-cred.param"
        A fido2-cred -M -i "$W/pam-cred.param" -o "$W/pam-cred.out" "$NODE" es256 || return 1
        A fido2-cred -V -i "$W/pam-cred.out" -o "$W/pam-cred.pub" es256 || return 1
        python3 - "$W/pam-cred.pub" > "$W/u2f_keys" <<'PY' || return 1
import base64, sys
from cryptography.hazmat.primitives.serialization import load_pem_public_key
lines = open(sys.argv[1]).read().split("\n", 1)
n = load_pem_public_key(lines[1].encode()).public_numbers()
raw = n.x.to_bytes(32, "big") + n.y.to_bytes(32, "big")
print(f"alice:{lines[0].strip()},{base64.b64encode(raw).decode()},es256,+presence")
PY
        DETAIL="written from a fido2-cred credential for rp pam://fido-vm (pamu2fcfg failed)"
    fi
    install -o alice -g alice -m 0600 "$W/u2f_keys" /home/alice/.config/Yubico/u2f_keys
}
t pam-u2f-keyfile pam_keyfile
pam_face() {
    A pamtester fido-vm alice authenticate || return 1
    DETAIL="pam_u2f sufficient with userverification=1: authenticated"
}
t pamtester-face pam_face
pam_stranger() {
    [ -e "$NODE" ] && [ -s /home/alice/.config/Yubico/u2f_keys ] || return 1
    control "uv=deny up=deny"
    local rc=0 rc2=0
    A pamtester fido-vm alice authenticate || rc=$?
    A pamtester fido-vm-fallthrough alice authenticate || rc2=$?
    control "uv=face up=present"
    DETAIL="UV denied: fido-vm (then pam_deny) exit $rc; fido-vm-fallthrough (then pam_permit) exit $rc2"
    [ $rc -ne 0 ] && [ $rc2 -eq 0 ]
}
t pamtester-stranger pam_stranger

# ---- python-fido2 2.x over the hidraw node ----------------------------------------------------
py_list() {
    A python3 - "$NODE" <<'PY'
import sys
from fido2.hid import CtapHidDevice
from fido2.ctap2 import Ctap2
devs = [d for d in CtapHidDevice.list_devices() if d.descriptor.path == sys.argv[1]]
assert len(devs) == 1, [d.descriptor for d in CtapHidDevice.list_devices()]
d = devs[0]
info = Ctap2(d).get_info()
assert d.ping(b"hidraw") == b"hidraw"
print(f"{d.descriptor.product_name!r}, CTAPHID v{d.version} caps {d.capabilities:#x}, {info.versions}, aaguid {info.aaguid}")
PY
}
py_list_wrap() { local out; out=$(py_list) || { echo "$out"; return 1; }; echo "$out"; DETAIL=$out; }
t python-fido2-list py_list_wrap

# ---- the device goes when the process stops ---------------------------------------------------
gone_after() {  # SIGNAL
    [ -e "$NODE" ] || return 1
    local t0 i; kill -"$1" "$AUTH_PID"; t0=$(now)
    for i in $(seq 100); do
        [ -e "$NODE" ] || { wait "$AUTH_PID" 2>/dev/null; DETAIL="SIG$1: $NODE gone after $(since "$t0") s, $(ls /sys/class/hidraw | wc -l) hidraw devices left"; return 0; }
        sleep 0.05
    done
    return 1
}
t device-gone-on-sigterm gone_after TERM
kill_gone() {
    start_authenticator || return 1
    gone_after KILL
}
t device-gone-on-sigkill kill_gone

# ---- python-fido2's conformance tests (Tests/fido/test_fido.py) over real hidraw ---------------
py_suite() {
    cd /vmtest && FIDO_TEST_TRANSPORT=uhid FIDO_TEST_CBOR_COUNT=$CBOR_COUNT FIDO_TEST_AUTHENTICATOR=$V/bin/fido-test-authenticator \
        python3 -m unittest -v test_fido.py || return 1
}
py_suite_wrap() {
    py_suite; local rc=$?
    DETAIL=$(grep -E '^(Ran|OK|FAILED)' "$L/python-fido2-tests.log" | paste -sd' ')
    DETAIL="$DETAIL (CBOR fuzz: $CBOR_COUNT requests over hidraw)"
    return $rc
}
t python-fido2-tests py_suite_wrap

echo "done"
