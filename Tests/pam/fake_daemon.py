#!/usr/bin/env python3
"""A scripted stand-in for biometricd, for Tests/pam/run.sh.

Listens on a Unix socket and answers auth.authenticate with the behaviour chosen by --mode.
Every request line received is appended to --log (one line each), so a test can tell whether
the PAM module connected at all.

  fake_daemon.py --socket S --log L --mode MODE [--seed N] [--enrol face|finger|none|error|hang]

Before auth.authenticate, the module may ask user.get on the same connection (an intent prompt
comes only for a user with something to use): --enrol says what it answers. In mode
"events_then_success" the daemon sends guidance for 20 s before a success, and logs
{"closed_after_s": N} when the module closes the connection first (the camera stopped).
"""
import argparse
import json
import os
import random
import socket
import sys
import threading
import time

MODES = [
    "success", "no_match", "spoof", "blink_timeout", "unavail_result", "locked_out", "locked_pin",
    "not_found", "hang", "events_forever", "slow_success", "garbage", "wrong_id", "huge_line",
    "close", "ok_string", "other_user", "fuzz", "events_then_success",
]
ENROL = ["face", "finger", "none", "error", "hang"]


def line(obj):
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode()


def event(rid, typ, **kw):
    params = {"request": rid, "type": typ}
    params.update(kw)
    return line({"jsonrpc": "2.0", "method": "event", "params": params})


def face_frame(rid, feedback, action=None):
    return event(rid, "face.frame", face=None, quality=0, feedback=feedback, liveness_action=action)


def success(rid, user, factor="face"):
    return line({"jsonrpc": "2.0", "id": rid, "result": {
        "ok": True, "factor": factor, "user": user, "duration_ms": 812,
        "tried": [{"factor": factor, "name": "Face", "code": 0, "reason": "ok"}], "skipped": []}})


def failure(rid, tried, skipped=()):
    return line({"jsonrpc": "2.0", "id": rid, "result": {
        "ok": False, "factor": None, "tried": list(tried), "skipped": list(skipped), "duration_ms": 3120}})


def error(rid, code, reason, message, **data):
    d = {"reason": reason}
    d.update(data)
    return line({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message, "data": d}})


def guidance(rid):
    return [
        event(rid, "auth.factor", factor="face", index=0),
        face_frame(rid, ["no_face"]),
        face_frame(rid, ["move_closer"]),
        face_frame(rid, [], "keep_still"),
        face_frame(rid, [], "blink"),
    ]


# ---- hostile replies for --mode fuzz (the PAM module must never succeed on these) ----

def still_success(data, rid, user):
    """True when a mutated reply is by chance still a valid success (then it is not hostile)."""
    try:
        m = json.loads(data.split(b"\n")[0].decode("utf-8"))
        r = m["result"]
        return (m.get("jsonrpc") == "2.0" and type(m.get("id")) is int and m["id"] == rid
                and r.get("ok") is True and isinstance(r.get("factor"), str) and r.get("user", user) == user)
    except Exception:  # noqa: BLE001
        return False


def hostile(rnd, rid, user):
    data = hostile1(rnd, rid, user)
    return b"not json\n" if still_success(data, rid, user) else data


def hostile1(rnd, rid, user):
    good = success(rid, user).decode()
    k = rnd.randrange(22)
    if k == 0:
        return bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 300))) + b"\n"
    if k == 1:  # truncated valid reply, then EOF
        return good[: rnd.randrange(1, len(good) - 1)].encode()
    if k == 2:
        return success(rid + rnd.choice([1, -1, 1000]), user)
    if k == 3:
        return good.replace('"ok":true', '"ok":"true"').encode()
    if k == 4:
        return good.replace('"ok":true', '"ok":1').encode()
    if k == 5:
        return good.replace('"factor":"face"', '"factor":null').encode()
    if k == 6:
        return good.replace('"ok":true', '"ok":true,"ok":false').encode()
    if k == 7:
        return good.replace('"id":%d' % rid, '"id":"%d"' % rid).encode()
    if k == 8:
        return b"[" * rnd.randrange(1, 100000) + b"\n"
    if k == 9:  # over the 64 KiB line cap, a valid success at the end
        return b" " * 70000 + good.encode()
    if k == 10:
        return good.replace('"jsonrpc":"2.0"', '"jsonrpc":"1.0"').encode()
    if k == 11:
        return good.replace('"result"', '"error"').encode()
    if k == 12:
        return good.replace('"user":"%s"' % user, '"user":"mallory"').encode()
    if k == 13:
        return good.replace('"id":%d' % rid, '"id":%d.0' % rid).encode()
    if k == 14:
        return good.replace('"face"', '"fa\\udc00ce"', 1).encode()
    if k == 15:  # a valid success for a notification id, not a response
        return good.replace('"id":%d' % rid, '"method":"event"').encode()
    if k == 16:
        g = bytearray(good.encode())
        for _ in range(rnd.randrange(1, 4)):
            g[rnd.randrange(len(g) - 1)] = rnd.randrange(256)
        if bytes(g) == good.encode():
            return b"x\n"
        return bytes(g)
    if k == 17:
        return good.replace("{", "{\x00", 1).encode()
    if k == 18:
        return failure(rid, [{"factor": "face", "code": 0, "reason": "no_match"}])
    if k == 19:
        return error(rid, 5001, "locked_out", "locked", retry_after_s=rnd.randrange(100))
    if k == 20:
        return good.replace('"ok":true', '"ok":[true]').encode()
    return good.rstrip("\n").encode() + b" garbage\n"


def send_fragmented(conn, rnd, data):
    i = 0
    while i < len(data):
        n = rnd.choice([1, 7, 64, 4096, len(data)])
        conn.sendall(data[i:i + n])
        i += n
        if rnd.random() < 0.05:
            time.sleep(0.001)


def user_get(rid, user, enrol):
    if enrol == "error":
        return error(rid, 1002, "not_found", "user unknown")
    return line({"jsonrpc": "2.0", "id": rid, "result": {
        "name": user, "uuid": "00000000-0000-0000-0000-000000000000", "created": "2026-01-01T00:00:00Z",
        "face_templates": 2 if enrol == "face" else 0, "finger_templates": 3 if enrol == "finger" else 0,
        "pin_set": False, "policy": ["face", "finger"]}})


def serve(conn, mode, log, index, seed, enrol="face"):
    rnd = random.Random(seed * 1000003 + index)
    f = conn.makefile("rb")
    try:
        while True:
            req = f.readline(1 << 20)
            if not req:
                return
            with open(log, "ab") as fh:
                fh.write(req if req.endswith(b"\n") else req + b"\n")
            try:
                msg = json.loads(req)
                rid, user = msg["id"], msg["params"]["user"]
            except Exception:
                return
            if msg.get("method") == "user.get":
                if enrol == "hang":
                    time.sleep(3600)
                conn.sendall(user_get(rid, user, enrol))
                continue
            break
        if mode == "success":
            for ev in guidance(rid):
                conn.sendall(ev)
            conn.sendall(success(rid, user))
        elif mode == "no_match":
            conn.sendall(face_frame(rid, ["no_face"]))
            conn.sendall(failure(rid, [{"factor": "face", "name": "Face", "code": 0, "reason": "no_match",
                                        "message": "not recognised"}],
                                 [{"factor": "finger", "reason": "not_enrolled"}]))
        elif mode == "spoof":
            conn.sendall(failure(rid, [{"factor": "face", "name": "Face", "code": 3004,
                                        "reason": "spoof_detected", "message": "spoof"}]))
        elif mode == "blink_timeout":
            conn.sendall(failure(rid, [{"factor": "face", "code": 3003, "reason": "blink_timeout"}]))
        elif mode == "unavail_result":
            conn.sendall(failure(rid, [{"factor": "face", "code": 1007, "reason": "timeout"},
                                       {"factor": "finger", "code": 2001, "reason": "no_camera"}]))
        elif mode == "locked_out":
            conn.sendall(error(rid, 5001, "locked_out", "biometrics locked", retry_after_s=27))
        elif mode == "locked_pin":
            conn.sendall(error(rid, 5001, "locked_out", "biometrics locked", retry_after_s=None))
        elif mode == "not_found":
            conn.sendall(error(rid, 1002, "not_found", "user unknown"))
        elif mode == "hang":
            time.sleep(3600)
        elif mode == "events_forever":
            while True:
                conn.sendall(face_frame(rid, ["move_closer"]))
                time.sleep(0.1)
        elif mode == "slow_success":
            end = time.monotonic() + 3
            while time.monotonic() < end:
                conn.sendall(face_frame(rid, [], "keep_still"))
                time.sleep(0.2)
            conn.sendall(success(rid, user))
        elif mode == "garbage":
            conn.sendall(b"\x00\xffnot json at all {\"ok\":true}\n")
            time.sleep(5)
        elif mode == "wrong_id":
            conn.sendall(success(rid + 1, user))
            time.sleep(5)
        elif mode == "huge_line":
            conn.sendall(b'{"jsonrpc":"2.0","id":%d,"result":{"ok":true,"factor":"face","pad":"' % rid
                         + b"a" * (2 << 20) + b'"}}\n')
            time.sleep(5)
        elif mode == "close":
            pass
        elif mode == "ok_string":
            conn.sendall(success(rid, user).replace(b'"ok":true', b'"ok":"true"'))
            time.sleep(5)
        elif mode == "other_user":
            conn.sendall(success(rid, "root"))
            time.sleep(5)
        elif mode == "events_then_success":
            t0 = time.monotonic()
            try:
                while time.monotonic() - t0 < 20:
                    conn.sendall(face_frame(rid, [], "keep_still"))
                    time.sleep(0.2)
                conn.sendall(success(rid, user))
            except (BrokenPipeError, ConnectionResetError):
                with open(log, "ab") as fh:
                    fh.write(line({"closed_after_s": round(time.monotonic() - t0, 2)}))
        elif mode == "fuzz":
            out = b""
            for _ in range(rnd.randrange(4)):
                out += rnd.choice(guidance(rid) + [event(rid + 5, "face.frame", feedback=["no_face"]),
                                                   line({"jsonrpc": "2.0", "method": "camera.added",
                                                         "params": {"id": "x"}})])
            out += success(rid, user, rnd.choice(["face", "finger"])) if index % 10 == 0 else hostile(rnd, rid, user)
            send_fragmented(conn, rnd, out)
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        try:
            conn.close()
        except OSError:
            pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--mode", required=True, choices=MODES)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--enrol", default="face", choices=ENROL)
    a = ap.parse_args()
    try:
        os.unlink(a.socket)
    except FileNotFoundError:
        pass
    open(a.log, "ab").close()
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o022)
    srv.bind(a.socket)
    os.umask(old)
    srv.listen(64)
    index = 0
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn, a.mode, a.log, index, a.seed, a.enrol), daemon=True).start()
        index += 1


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(0)
