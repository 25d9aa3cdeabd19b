# Sourced by clients.sh in `Tests/fido/vm.sh --daemon`: biometricd itself with `fido = yes` makes
# the device through /dev/uhid (as user biometricd, through the udev rule's ACL), `fido_user = tran`
# (a kiosk's one user), tran's face enrolled from the tran_live clip on a replay camera; the
# clients then get UV by a live face (passive liveness, forced on for FIDO). Then the daemon is
# restarted with another person's photo on the camera: the same clients must fail.
# Not a production instance (its own socket and state folder, not root, no systemd), so replay
# cameras are allowed, as in Tests/DaemonTests/FIDODaemonTests.
# fido_uv_timeout = 300: under qemu TCG one face check with passive liveness takes ~120 s (about
# 0.5 s natively), past the default 30 s. The clients wait on KEEPALIVE with no limit of their own
# (libfido2's fido_dev timeout is -1 unless set, and fido2-cred/-assert, OpenSSH's sk-usbhid and
# pam_u2f 1.1.0 set none; python-fido2's HID read blocks). Each face check costs ~2 min here, so
# the face-UV steps are few: no separate face.verify timing (the UV timings are the same check).
SOCK=/tmp/bmd/biometricd.sock STATE=/tmp/bmd/state
useradd -m -s /bin/bash tran
install -d -o tran -g tran /home/tran/w /home/tran/.ssh /home/tran/.config/Yubico
install -d -o biometricd -g biometricd -m 0755 /tmp/bmd "$STATE"
W=/home/tran/w
T() { setpriv --reuid tran --regid tran --init-groups env HOME=/home/tran USER=tran LOGNAME=tran "$@"; }
rpc() { python3 "$V/rpc.py" "$1" "$2" "$SOCK"; }
DPID=""
start_daemon() {  # FACE_CAMERA
    setpriv --reuid biometricd --regid biometricd --init-groups env -i PATH=/usr/bin:/bin HOME=/nonexistent \
        "$V/bin/biometricd" --socket "$SOCK" --state-dir "$STATE" --models "$V/models" --log-level info \
        --camera "replay:$V/media/tran_live.mp4?fps=30&loop=true" --camera "replay:$V/media/stranger?fps=15&loop=true" \
        --set fido=yes --set fido_user=tran --set fido_uv_timeout=300 --set face_camera="$1" >> "$L/daemon.log" 2>&1 &
    DPID=$!
    local i
    for i in $(seq 1200); do
        rpc auth.status '{"user":"tran"}' >/dev/null 2>&1; local up=$?
        if [ $up -ne 3 ] && NODE=$(hidraw_node) && [ -e "$NODE" ]; then
            udevadm settle -t 10; setfacl -m u:tran:rw "$NODE"; return 0
        fi
        kill -0 "$DPID" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}
stop_daemon() {
    [ -n "$DPID" ] || return 0
    kill "$DPID"; local i
    for i in $(seq 300); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.1; done
    wait "$DPID" 2>/dev/null; DPID=""
}

daemon_up() {
    local t0; t0=$(now)
    start_daemon replay0 || { tail -5 "$L/daemon.log"; return 1; }
    DETAIL="biometricd (fido = yes, fido_user = tran, fido_uv_timeout = 300, as user biometricd) up with $NODE in $(since "$t0") s; $(grep -o 'FIDO2 authenticator up[^"]*' "$L/daemon.log" | head -1)"
}
t daemon-fido-up daemon_up
[ -n "${NODE:-}" ] || NODE=/dev/hidraw-missing

enrol() {
    local t0; t0=$(now)
    rpc face.enroll '{"user":"tran","camera":"replay0","frames":2,"countdown_s":0,"quality_threshold":20,"timeout_ms":300000}' | tail -1 || return 1
    rpc pin.set "{\"user\":\"tran\",\"pin\":\"$PIN\"}" | tail -1 || return 1
    DETAIL="tran's face from the tran_live clip in $(since "$t0") s; the daemon PIN set (pin.set)"
}
t enrol-tran enrol


d_info() {
    local out; out=$(T fido2-token -I "$NODE") || { echo "$out"; return 1; }; echo "$out"
    DETAIL=$(echo "$out" | grep -E '^(aaguid|options)' | paste -sd';' | tr -s ' ')
    echo "$out" | grep -q 'options:.* uv,' && echo "$out" | grep -q 'clientPin'
}
t daemon-fido2-token-I d_info

# makeCredential and getAssertion with UV by face, timed in python-fido2 (the CTAP command alone).
py_timed() {  # EXPECT: pass | fail
    T python3 - "$NODE" "$1" <<'PY'
import sys, time, os
from fido2.hid import open_device
from fido2.ctap2 import Ctap2
from fido2.ctap import CtapError
from fido2.webauthn import AuthenticatorData
dev = open_device(sys.argv[1]); ctap = Ctap2(dev); expect = sys.argv[2]
cdh = os.urandom(32)
rp = {"id": "timing.example", "name": "Timing"}; user = {"id": b"tran-1", "name": "tran"}
t0 = time.monotonic()
try:
    att = ctap.make_credential(cdh, rp, user, [{"type": "public-key", "alg": -7}], options={"rk": True, "uv": True})
except CtapError as e:
    print(f"makeCredential refused: {e.code.name} after {(time.monotonic() - t0) * 1000:.0f} ms")
    sys.exit(0 if expect == "fail" else 1)
mc = (time.monotonic() - t0) * 1000
flags = att.auth_data.flags
cred = att.auth_data.credential_data
t0 = time.monotonic()
a = ctap.get_assertion("timing.example", cdh, [{"type": "public-key", "id": cred.credential_id}], options={"uv": True})
ga = (time.monotonic() - t0) * 1000
cred.public_key.verify(a.auth_data + cdh, a.signature)
print(f"makeCredential {mc:.0f} ms (flags {flags:#x}), getAssertion {ga:.0f} ms (flags {a.auth_data.flags:#x}), signature verified")
sys.exit(0 if expect == "pass" else 1)
PY
}
d_timed() { local out; out=$(py_timed pass) || { echo "$out"; DETAIL=$out; return 1; }; echo "$out"; DETAIL="UV by face: $out"; }
t daemon-uv-timings d_timed

d_cred() {
    printf '%s\n%s\n%s\n%s\n' "$(rand64)" example.com tran "$(rand64)" > "$W/cred.param"
    local t0; t0=$(now)
    T fido2-cred -M -r -v -i "$W/cred.param" -o "$W/cred.out" "$NODE" es256 || return 1
    local mk; mk=$(since "$t0")
    T fido2-cred -V -v -i "$W/cred.out" -o "$W/cred.pub" es256 || return 1
    tail -n +2 "$W/cred.pub" > "$W/pub.pem"
    printf '%s\n%s\n%s\n' "$(rand64)" example.com "$(head -1 "$W/cred.pub")" > "$W/assert.param"
    t0=$(now)
    T fido2-assert -G -t uv=true -i "$W/assert.param" -o "$W/assert.out" "$NODE" || return 1
    local ga; ga=$(since "$t0")
    T fido2-assert -V -v -i "$W/assert.out" "$W/pub.pem" es256 || return 1
    DETAIL="fido2-cred -M -r -v ${mk} s (UV token by face, then makeCredential), -V ok; fido2-assert -G -t uv=true ${ga} s, -V ok"
}
t daemon-fido2-cred-assert d_cred

d_ssh() {
    ASKPASS_ANSWER=$PIN T ssh-keygen -t ecdsa-sk -O resident -O verify-required -O application=ssh:fido-vm \
        -f /home/tran/.ssh/id_ecdsa_sk -N '' -C tran@fido-vm < /dev/null || return 1
    echo "signed through biometricd $(date)" > "$W/message"; chown tran "$W/message"
    local t0; t0=$(now)
    ASKPASS_ANSWER= T ssh-keygen -Y sign -f /home/tran/.ssh/id_ecdsa_sk -n file "$W/message" < /dev/null || return 1
    local s; s=$(since "$t0")
    echo "tran $(cut -d' ' -f1,2 /home/tran/.ssh/id_ecdsa_sk.pub)" > "$W/allowed_signers"
    T ssh-keygen -Y verify -f "$W/allowed_signers" -I tran -n file -s "$W/message.sig" < "$W/message" || return 1
    DETAIL="ecdsa-sk resident verify-required key (enrolled with the daemon PIN); -Y sign by face in ${s} s; -Y verify: good signature"
}
t daemon-ssh d_ssh

d_pam() {
    printf '%s\n%s\n%s\n%s\n' "$(rand64)" pam://fido-vm tran "$(rand64)" > "$W/pam-cred.param"
    T fido2-cred -M -i "$W/pam-cred.param" -o "$W/pam-cred.out" "$NODE" es256 || return 1
    T fido2-cred -V -i "$W/pam-cred.out" -o "$W/pam-cred.pub" es256 || return 1
    python3 - "$W/pam-cred.pub" tran > "$W/u2f_keys" <<'PY' || return 1
import base64, sys
from cryptography.hazmat.primitives.serialization import load_pem_public_key
lines = open(sys.argv[1]).read().split("\n", 1)
n = load_pem_public_key(lines[1].encode()).public_numbers()
raw = n.x.to_bytes(32, "big") + n.y.to_bytes(32, "big")
print(f"{sys.argv[2]}:{lines[0].strip()},{base64.b64encode(raw).decode()},es256,+presence")
PY
    install -o tran -g tran -m 0600 "$W/u2f_keys" /home/tran/.config/Yubico/u2f_keys
    local t0; t0=$(now)
    T pamtester fido-vm tran authenticate || return 1
    DETAIL="pam_u2f (key file from a fido2-cred credential) with userverification=1: authenticated by face in $(since "$t0") s"
}
t daemon-pamtester-face d_pam

# ---- another person on the camera -------------------------------------------------------------
stranger_up() {
    stop_daemon
    local t0; t0=$(now)
    start_daemon replay1 || { tail -5 "$L/daemon.log"; return 1; }
    DETAIL="restarted with face_camera = replay1 (LFW Tony_Blair_0018, not tran) in $(since "$t0") s"
}
t daemon-stranger-camera stranger_up
d_stranger_py() {  # needs nothing made before: makeCredential with UV must be refused
    local py; py=$(py_timed fail) || { DETAIL="UNEXPECTED: $py"; return 1; }
    DETAIL="python-fido2: $py"
}
t daemon-stranger-python d_stranger_py
d_stranger() {  # the credentials, key and key file made with tran's face above
    [ -e "$NODE" ] && [ -s "$W/assert.out" ] && [ -s /home/tran/.ssh/id_ecdsa_sk ] && [ -s /home/tran/.config/Yubico/u2f_keys ] \
        || { DETAIL="nothing to try: the checks by tran's face above did not pass"; return 1; }
    local t0 rc1=0 rc2=0 rc3=0 rc4=0; t0=$(now)
    T fido2-assert -G -t uv=true -i "$W/assert.param" -o "$W/assert-stranger.out" "$NODE" || rc1=$?
    local ga; ga=$(since "$t0")
    rm -f "$W/message.sig"
    ASKPASS_ANSWER= T ssh-keygen -Y sign -f /home/tran/.ssh/id_ecdsa_sk -n file "$W/message" < /dev/null || rc2=$?
    T pamtester fido-vm tran authenticate || rc3=$?
    T pamtester fido-vm-fallthrough tran authenticate || rc4=$?
    DETAIL="fido2-assert -G exit $rc1 (${ga} s); ssh-keygen -Y sign exit $rc2; pamtester fido-vm exit $rc3, fido-vm-fallthrough exit $rc4"
    [ $rc1 -ne 0 ] && [ $rc2 -ne 0 ] && [ $rc3 -ne 0 ] && [ $rc4 -eq 0 ]
}
t daemon-stranger-clients d_stranger
d_stop() {
    [ -e "$NODE" ] || return 1
    local t0; t0=$(now); stop_daemon
    for _ in $(seq 100); do [ -e "$NODE" ] || break; sleep 0.05; done
    DETAIL="daemon stopped (SIGTERM) in $(since "$t0") s; $NODE $([ -e "$NODE" ] && echo still there || echo gone)"
    [ ! -e "$NODE" ]
}
t daemon-stop-removes-device d_stop
grep -E 'FIDO|fido' "$L/daemon.log" | tail -20 > "$L/daemon-fido-lines.log"
