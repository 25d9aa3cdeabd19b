#!/usr/bin/env python3
"""The red-team suite of issue 33: every path by which a hostile local user got through before
the one trust policy, tried again with real uids on one connection each, expecting a refusal and
the state read back unchanged.

Run it through Tests/abuse/run.sh (as root), which runs it after the flood suite. It starts the
release biometricd privileged (a production instance: its replay cameras are the virtual devices
they are) twice:
  A  with the default refuse_virtual_cameras = pam: replay cameras stand for OBS's virtual camera;
  B  with refuse_virtual_cameras = no: replay cameras stand for real ones, so that what is
     refused there is refused whatever the camera.
It creates three users (alice, bob and a greeter in the login group). Each attacker's calls run
as that user (`runuser -u USER -- python3 redteam.py --client SOCKET`, one connection, the
calls as JSON lines on stdin, the answers on stdout), so the daemon sees the uid through
SO_PEERCRED.

Every check prints "PASS name: ..." or "FAIL name: ..."; the last line is "N passed, M failed".
Python 3 standard library only. Paths of issue 33 covered elsewhere are listed in its closing
note (Tests/pam: elevation, remote sessions, setcred, log escaping, the 2 s budget, hardening
flags; Tests/password: the helper's socket path, reply, umask and timing; FIDOTests: tokens bound
to their user).
"""

import argparse
import base64
import grp
import json
import os
import pwd
import socket
import subprocess
import sys
import tempfile
import time

ALICE, BOB, GREETER = "bmred_alice", "bmred_bob", "bmred_greeter"
LOGIN_GROUP = "bmred-login"
ALICE_PIN = "1357"
# The system's python (another uid may not be able to run root's own interpreter, e.g. pyenv's).
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
RESULTS = {"passed": 0, "failed": 0}


def now():
    return time.monotonic()


def report(ok, name, detail=""):
    RESULTS["passed" if ok else "failed"] += 1
    print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)


# ---- the client side, run as another uid --------------------------------------------------------

def client_main(path):
    """One connection; each stdin line is {"method", "params", "timeout"}; each answer (result or
    error, after any events) is one stdout line {"result"|"error", "ms"}."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    buf = b""
    for n, line in enumerate(sys.stdin, 1):
        call = json.loads(line)
        t0 = now()
        s.sendall((json.dumps({"jsonrpc": "2.0", "id": n, "method": call["method"], "params": call.get("params", {})}) + "\n").encode())
        deadline = t0 + call.get("timeout", 30)
        answer = None
        while answer is None:
            while b"\n" not in buf:
                s.settimeout(max(0.1, deadline - now()))
                try:
                    chunk = s.recv(65536)
                except socket.timeout:
                    chunk = None
                if not chunk:
                    answer = {"error": {"code": -1, "message": "no answer"}}
                    break
                buf += chunk
            if answer is not None:
                break
            one, buf = buf.split(b"\n", 1)
            msg = json.loads(one)
            if msg.get("id") == n:
                answer = {k: msg[k] for k in ("result", "error") if k in msg}
        answer["ms"] = round((now() - t0) * 1000)
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


def as_user(user, sock, calls, timeout=120):
    """Runs `calls` as `user` on one connection; returns the answers."""
    data = "".join(json.dumps(c) + "\n" for c in calls)
    p = subprocess.run(["runuser", "-u", user, "--", PYTHON, os.path.abspath(__file__), "--client", sock],
                       input=data.encode(), capture_output=True, timeout=timeout)
    answers = [json.loads(l) for l in p.stdout.decode().splitlines() if l.strip()]
    while len(answers) < len(calls):
        answers.append({"error": {"code": -2, "message": "client failed: " + p.stderr.decode()[-300:]}})
    return answers


def call(method, params=None, timeout=30):
    return {"method": method, "params": params or {}, "timeout": timeout}


# ---- root's side -----------------------------------------------------------------------------------

class Root:
    """root's own connection (an administrator)."""

    def __init__(self, sock):
        self.sock = sock
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(60)
        self.s.connect(sock)
        self.buf = b""
        self.n = 0

    def call(self, method, params=None, timeout=60):
        self.n += 1
        self.s.sendall((json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params or {}}) + "\n").encode())
        deadline = now() + timeout
        while True:
            while b"\n" not in self.buf:
                self.s.settimeout(max(0.1, deadline - now()))
                chunk = self.s.recv(65536)
                if not chunk:
                    raise RuntimeError(f"{method}: connection closed")
                self.buf += chunk
            one, self.buf = self.buf.split(b"\n", 1)
            msg = json.loads(one)
            if msg.get("id") == self.n:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]

    def state(self, user):
        """What an attack must not change: templates, PIN and lockout, policy, keys."""
        u = self.call("user.get", {"user": user})
        st = self.call("auth.status", {"user": user})
        pol = self.call("auth.policy.get", {"user": user})
        keys = self.call("key.list", {"user": user})
        return {"faces": u.get("face_templates"), "fingers": u.get("finger_templates"), "pin_set": st.get("pin_set"),
                "pin_locked": st.get("pin_locked"), "pin_retries_left": st.get("pin_retries_left"),
                "biometric_failures": st.get("biometric_failures"), "factors": pol.get("factors"),
                "require_liveness": pol.get("require_liveness"), "keys": [k["key_handle"] for k in keys.get("keys", [])]}


def error_of(answer):
    return answer.get("error") or {}


def is_refused(answer, code, **data):
    e = error_of(answer)
    if e.get("code") != code:
        return False
    return all((e.get("data") or {}).get(k) == v for k, v in data.items())


def short(answer):
    if "error" in answer:
        e = answer["error"]
        return f"error {e.get('code')} {(e.get('data') or {}).get('reason', '')} {e.get('message', '')[:90]}"
    return "result " + json.dumps(answer.get("result"))[:160]


def ensure_users():
    made = []
    if subprocess.run(["getent", "group", LOGIN_GROUP], capture_output=True).returncode != 0:
        subprocess.run(["groupadd", LOGIN_GROUP], check=True)
        made.append(("group", LOGIN_GROUP))
    for user in (ALICE, BOB, GREETER):
        try:
            pwd.getpwnam(user)
        except KeyError:
            subprocess.run(["useradd", "-M", "-s", "/usr/sbin/nologin", user], check=True)
            made.append(("user", user))
    subprocess.run(["usermod", "-aG", LOGIN_GROUP, GREETER], check=True)
    return made


def start_daemon(args, work, name, sock, cameras, extra):
    state = os.path.join(work, name + "-state")
    log = open(os.path.join(work, name + ".log"), "ab")
    cmd = [os.path.join(args.bin, "biometricd"), "--socket", sock, "--state-dir", state, "--models", args.models,
           "--set", f"login_group={LOGIN_GROUP}", "--set", "modalities=face,finger"]
    for c in cameras:
        cmd += ["--camera", c]
    for kv in extra:
        cmd += ["--set", kv]
    p = subprocess.Popen(cmd, stdout=log, stderr=log, start_new_session=True)
    with open(os.path.join(work, "pids"), "a") as f:
        f.write(f"{p.pid}\n")
    deadline = now() + 30
    while now() < deadline:
        if os.path.exists(sock):
            try:
                Root(sock).call("daemon.status")
                os.chmod(sock, 0o666)
                return p
            except (OSError, RuntimeError):
                pass
        if p.poll() is not None:
            break
        time.sleep(0.1)
    raise RuntimeError(f"daemon {name} did not start: " + open(os.path.join(work, name + ".log"), errors="replace").read()[-2000:])


def finger_template(root, shared):
    """A finger template of an FVC print, extracted by the daemon (as an administrator)."""
    with open(os.path.join(shared, "data/fingers/fvc2002_db2_b/images/101_1.tif"), "rb") as f:
        image = base64.b64encode(f.read()).decode()
    return root.call("finger.extract", {"image": image, "dpi": 569})["template"]


def setup_bob(root):
    """bob: a face (LFW photos on replay1)."""
    root.call("face.enroll", {"user": BOB, "camera": "replay1", "frames": 2, "countdown_s": 0, "quality_threshold": 20,
                              "timeout_ms": 60000}, timeout=90)


def setup_alice(root, shared, with_finger):
    """alice: a face (the live clip on replay0), a PIN, a key, a finger."""
    root.call("face.enroll", {"user": ALICE, "camera": "replay0", "frames": 2, "countdown_s": 0, "quality_threshold": 20,
                              "timeout_ms": 60000}, timeout=90)
    root.call("pin.set", {"user": ALICE, "pin": ALICE_PIN})
    root.call("key.register", {"user": ALICE, "app_id": "https://example.com", "aaid": "FFFF#0001"})
    if with_finger:
        root.call("finger.add", {"user": ALICE, "template": finger_template(root, shared), "position": "right_index"})


# ---- daemon A: replay cameras are virtual (the default policy) -----------------------------------

def scenarios_virtual(root, sock):
    before = root.state(ALICE)
    # 1. A virtual camera re-verifies: face.verify on a replay of alice's own live clip, then
    # changes to her factors on the same connection.
    a = as_user(ALICE, sock, [
        call("face.verify", {"user": ALICE, "camera": "replay0", "timeout_ms": 20000}, 40),
        call("pin.set", {"user": ALICE, "pin": "2468"}),
        call("face.enroll", {"user": ALICE, "camera": "replay1", "frames": 1, "countdown_s": 0}),
        call("key.register", {"user": ALICE, "app_id": "https://evil.example", "aaid": "FFFF#0002"}),
        call("auth.policy.set", {"user": ALICE, "factors": ["pin"]}),
    ])
    verified = a[0].get("result") or {}
    report(verified.get("authenticated") is False,
           "1 virtual camera: face.verify on a replay of alice's clip proves nothing", short(a[0]))
    for answer, what in zip(a[1:], ["pin.set", "face.enroll", "key.register", "auth.policy.set"]):
        report(is_refused(answer, 1003, reverification_required=True), f"1 virtual camera: then {what} is refused", short(answer))
    report(root.state(ALICE) == before, "1 virtual camera: alice's factors read back unchanged", json.dumps(root.state(ALICE)))

    # 3. Fingers have a virtual-camera rule too: the login path refuses before any capture.
    t0 = now()
    f = as_user(ALICE, sock, [call("auth.authenticate", {"user": ALICE, "factors": ["finger"], "camera": "replay1",
                                                         "timeout_ms": 30000}, 40)])[0]
    took = now() - t0
    tried = ((f.get("result") or {}).get("tried") or [{}])[0]
    report(tried.get("code") == 3004 and "virtual" in tried.get("message", "") and took < 5,
           "3 a finger login on a virtual camera is refused before capture", f"{short(f)} in {took:.1f} s")
    # 1:N on a virtual camera: a login path, refused.
    g = as_user(GREETER, sock, [call("face.identify", {"camera": "replay1"}, 40)])[0]
    report(is_refused(g, 3004, cue="virtual_camera"), "3 face.identify on a virtual camera is refused", short(g))
    report(root.state(ALICE) == before, "3 nothing counted against alice", json.dumps(root.state(ALICE)))

    # 4. Removals need the same fresh authentication as additions.
    r = as_user(ALICE, sock, [
        call("face.remove", {"user": ALICE}),
        call("finger.remove", {"user": ALICE}),
        call("key.deregister", {"user": ALICE}),
    ])
    for answer, what in zip(r, ["face.remove", "finger.remove", "key.deregister"]):
        report(is_refused(answer, 1003, reverification_required=True), f"4 {what} without a fresh authentication is refused", short(answer))
    report(root.state(ALICE) == before, "4 alice's templates and keys read back unchanged", json.dumps(root.state(ALICE)))

    # 2. A caller weakens liveness (or any knob): refused before any camera opens.
    # One failure on bob's count first: root (an admin) shows him alice's face.
    root.call("face.verify", {"user": BOB, "camera": "replay0", "mode": "image", "quality_threshold": 20, "timeout_ms": 20000}, timeout=40)
    bob_before = root.state(BOB)
    knobs = [
        ("liveness_threshold 0", "face.verify", {"liveness_threshold": 0}, "liveness_threshold"),
        ("liveness_mode blink (passive configured)", "face.verify", {"liveness_mode": "blink"}, "liveness_mode"),
        ("mode image", "face.verify", {"mode": "image"}, "mode"),
        ("quality_threshold 5", "face.verify", {"quality_threshold": 5}, "quality_threshold"),
        ("matching_threshold 0", "face.verify", {"matching_threshold": 0}, "matching_threshold"),
        ("finger liveness very_low", "finger.verify", {"liveness": "very_low"}, "liveness"),
        ("finger liveness none", "finger.verify", {"liveness": "none"}, "liveness"),
        ("finger threshold 10", "finger.verify", {"threshold": 10}, "threshold"),
        ("finger quality_threshold 5", "finger.verify", {"quality_threshold": 5}, "quality_threshold"),
    ]
    answers = as_user(BOB, sock, [call(m, dict({"user": BOB, "camera": "replay2"}, **p)) for _, m, p, _ in knobs])
    for (name, _, _, field), answer in zip(knobs, answers):
        report(is_refused(answer, 1003, field=field) and answer["ms"] < 2000, f"2 bob asks {name}: refused at once", short(answer))
    after = root.state(BOB)
    report(after == bob_before and (bob_before["biometric_failures"] or 0) >= 1,
           "2 bob's failure count stays where it was", f"{bob_before['biometric_failures']} -> {after['biometric_failures']}")
    # A root-only param from a user: refused.
    o = as_user(ALICE, sock, [call("auth.authenticate", {"user": ALICE, "factors": ["face"], "other_user": True})])[0]
    report(is_refused(o, 1003, field="other_user"), "7 other_user (never counted) is root's (the PAM module's) only", short(o))


# ---- daemon B: replay cameras stand for real ones --------------------------------------------------

def scenario_stranger(root, sock):
    """Before alice is enrolled, her live clip is a live stranger's."""
    # 5. 1:N names nobody it did not recognise: a live stranger in front of a greeter.
    g = as_user(GREETER, sock, [call("face.identify", {"camera": "replay0", "timeout_ms": 20000}, 40)])[0]
    res = g.get("result")
    report(res is not None and res.get("user") is None and res.get("candidates") == [] and res.get("score") == 0,
           "5 a live stranger at the greeter: no user, no candidates, no score", short(g))


def scenarios_trusted(root, sock):
    # 4. A face match re-verifies only by a factor of the user's policy.
    root.call("auth.policy.set", {"user": ALICE, "factors": ["pin"]})
    before = root.state(ALICE)
    a = as_user(ALICE, sock, [
        call("face.verify", {"user": ALICE, "camera": "replay0", "timeout_ms": 20000}, 40),
        call("key.register", {"user": ALICE, "app_id": "https://evil.example", "aaid": "FFFF#0003"}),
        call("pin.set", {"user": ALICE, "pin": "2468"}),
    ])
    v = a[0].get("result") or {}
    report(v.get("match") is True and v.get("authenticated") is False,
           "4 policy [pin]: a proven face match is no authentication of alice", short(a[0]))
    report(all(is_refused(x, 1003, reverification_required=True) for x in a[1:]),
           "4 policy [pin]: key.register and pin.set refused after it", " / ".join(short(x) for x in a[1:]))
    report(root.state(ALICE) == before, "4 policy [pin]: alice read back unchanged", json.dumps(root.state(ALICE)))

    # 4. A locked PIN stays locked until an administrator resets it, a face match or not.
    root.call("auth.policy.set", {"user": ALICE, "factors": ["face", "finger", "pin"]})
    wrong = as_user(ALICE, sock, [call("pin.verify", {"user": ALICE, "pin": "0000"}) for _ in range(3)])
    locked = root.state(ALICE)
    report(locked["pin_locked"] is True, "4 three wrong PINs lock alice's PIN", " / ".join(short(x) for x in wrong))
    a = as_user(ALICE, sock, [
        call("face.verify", {"user": ALICE, "camera": "replay0", "timeout_ms": 20000}, 40),
        call("pin.set", {"user": ALICE, "pin": "2468"}),
    ])
    report((a[0].get("result") or {}).get("authenticated") is True, "4 a live face on a trusted camera re-verifies alice", short(a[0]))
    report(is_refused(a[1], 5002), "4 ... but her locked PIN stays locked (pin.set refused)", short(a[1]))
    report(root.state(ALICE)["pin_locked"] is True, "4 the PIN reads back locked", json.dumps(root.state(ALICE)))
    root.call("pin.reset", {"user": ALICE})

    # 9. authctl is not dumpable: another process of the same uid cannot read its memory.
    # `authctl cameras --watch` runs until stopped (it follows hot-plug): a long-lived authctl.
    p = subprocess.Popen(["runuser", "-u", ALICE, "--", os.path.join(ARGS.bin, "authctl"), "cameras", "--watch", "--socket", sock],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pids = []
    deadline = now() + 10
    while not pids and now() < deadline:
        time.sleep(0.2)
        pids = subprocess.run(["pgrep", "-u", ALICE, "-x", "authctl"], capture_output=True, text=True).stdout.split()
    owners = {pid: os.stat(f"/proc/{pid}/mem").st_uid for pid in pids if os.path.exists(f"/proc/{pid}/mem")}
    readable = subprocess.run(["runuser", "-u", ALICE, "--", "sh", "-c", f"cat /proc/{pids[0]}/environ >/dev/null 2>&1"],
                              capture_output=True).returncode == 0 if pids else True
    p.kill()
    p.wait()
    report(bool(owners) and all(u == 0 for u in owners.values()) and not readable,
           "9 authctl is not dumpable: its /proc memory is root's, alice's other processes cannot read it",
           f"owners {owners}, readable by alice: {readable}")


ARGS = None


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--client")
    ap.add_argument("--bin")
    ap.add_argument("--models")
    ap.add_argument("--shared")
    ap.add_argument("--workdir")
    args = ap.parse_args()
    if args.client:
        client_main(args.client)
        return
    ARGS = args
    made = ensure_users()
    with open(os.path.join(args.workdir, "redteam-made"), "a") as f:
        for kind, name in made:
            f.write(f"{kind} {name}\n")
    video = os.path.join(args.shared, "data/video")
    lfw = os.path.join(args.shared, "data/faces/lfw/images")
    cameras = [f"replay:{video}/tran_live/video.mp4?fps=30&loop=true",
               f"replay:{lfw}/Colin_Powell?fps=10&loop=true",
               f"replay:{video}/grid_face_blink_a/video.mp4?fps=25&loop=true"]
    os.chmod(args.workdir, 0o755)
    t0 = now()
    try:
        sock_a = os.path.join(args.workdir, "a.sock")
        da = start_daemon(args, args.workdir, "daemon-a", sock_a, cameras, [])
        root = Root(sock_a)
        setup_bob(root)
        setup_alice(root, args.shared, with_finger=True)
        scenarios_virtual(root, sock_a)
        da.terminate()
        da.wait(10)
        sock_b = os.path.join(args.workdir, "b.sock")
        db = start_daemon(args, args.workdir, "daemon-b", sock_b, cameras, ["refuse_virtual_cameras=no"])
        root = Root(sock_b)
        setup_bob(root)
        scenario_stranger(root, sock_b)
        setup_alice(root, args.shared, with_finger=False)
        scenarios_trusted(root, sock_b)
        db.terminate()
        db.wait(10)
    except Exception as e:  # a crash of the suite is a failure, never a pass
        report(False, "suite", f"{type(e).__name__}: {e}")
    print(f"red team took {now() - t0:.0f} s")
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed", flush=True)
    sys.exit(1 if RESULTS["failed"] else 0)


if __name__ == "__main__":
    main()
