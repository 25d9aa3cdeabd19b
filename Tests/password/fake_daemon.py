#!/usr/bin/env python3
"""A stand-in for biometricd's socket, for Tests/password/run.sh.

Listens on a Unix socket (mode 0666) and answers auth.password.proven the way --mode says.
Every line received is appended to --log as one JSON object {"uid": <SO_PEERCRED uid>,
"line": "<the line>"}, so a test can check who called, what exactly was sent, and how often.

  fake_daemon.py --socket S --log L --mode ok|refuse|refuse_long|garbage|close|event_then_ok
"""
import argparse
import json
import os
import socket
import struct
import threading


def serve(conn, mode, log, lock):
    with conn:
        cred = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", cred)
        f = conn.makefile("rb")
        line = f.readline(70000)
        if not line:
            return
        with lock, open(log, "a") as out:
            out.write(json.dumps({"uid": uid, "line": line.decode("utf-8", "replace").rstrip("\n")}) + "\n")
        if mode == "ok":
            conn.sendall(b'{"jsonrpc":"2.0","id":1,"result":{"ok":true,"user":"x"}}\n')
        elif mode == "event_then_ok":
            conn.sendall(b'{"jsonrpc":"2.0","method":"event","params":{"type":"x"}}\n'
                         b'{"jsonrpc":"2.0","id":1,"result":{"ok":true}}\n')
        elif mode == "refuse":
            conn.sendall(b'{"jsonrpc":"2.0","id":1,"error":{"code":1006,"message":"unknown or expired nonce \\"x\\"","data":{"reason":"bad_nonce"}}}\n')
        elif mode == "refuse_long":
            msg = "\u00e9\u2603\n" * 700
            conn.sendall((json.dumps({"jsonrpc": "2.0", "id": 1, "error": {"code": 1006, "message": msg}},
                                     ensure_ascii=False) + "\n").encode())
        elif mode == "garbage":
            conn.sendall(b'{"jsonrpc":"2.0","id":1,"result":{"ok":true}} trailing\n')
        elif mode == "result_not_ok":
            conn.sendall(b'{"jsonrpc":"2.0","id":1,"result":{"canceled":false}}\n')
        elif mode == "result_ok_string":
            conn.sendall(b'{"jsonrpc":"2.0","id":1,"result":{"ok":"true"}}\n')
        elif mode == "result_array":
            conn.sendall(b'{"jsonrpc":"2.0","id":1,"result":[true]}\n')
        elif mode == "close":
            pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--mode", default="ok")
    a = ap.parse_args()
    try:
        os.unlink(a.socket)
    except FileNotFoundError:
        pass
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(a.socket + ".tmp")
    os.chmod(a.socket + ".tmp", 0o666)
    s.listen(16)
    os.rename(a.socket + ".tmp", a.socket)  # appears only when it is listening
    lock = threading.Lock()
    while True:
        conn, _ = s.accept()
        threading.Thread(target=serve, args=(conn, a.mode, a.log, lock), daemon=True).start()


if __name__ == "__main__":
    main()
