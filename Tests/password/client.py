#!/usr/bin/env python3
"""The client side of biometricd-password, for Tests/password/run.sh (runs as the test user).

  client.py SOCKET request USER NONCE   < password     one well-formed request (password from stdin,
                                                       without its final newline)
  client.py SOCKET raw                  < bytes        sends stdin exactly as it is
  client.py SOCKET hold SECONDS                        connects, sends nothing, waits for the answer
  client.py SOCKET fuzz N SEED                         N connections with hostile requests, one
                                                       after the other; prints every answer
  client.py SOCKET flood N SECONDS                     holds N connections open at once

Prints each answer line (or "<eof>" / "<timeout>" / "<refused: ...>") on stdout.
"""
import json
import random
import socket
import sys
import time


def connect(path, timeout=15):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s


def answer(s):
    buf = b""
    try:
        while not buf.endswith(b"\n"):
            d = s.recv(4096)
            if not d:
                break
            buf += d
    except socket.timeout:
        return "<timeout>"
    except OSError as e:
        return "<error: %s>" % e
    return buf.decode("utf-8", "replace").rstrip("\n") if buf else "<eof>"


def send(path, data, half_close=False):
    try:
        s = connect(path)
    except OSError as e:
        return "<refused: %s>" % e
    with s:
        try:
            s.sendall(data)
            if half_close:
                s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        return answer(s)


def fuzz_inputs(n, seed):
    rnd = random.Random(seed)
    base = json.dumps({"user": "root", "nonce": "A" * 43, "password": "not-the-password"}).encode()
    for i in range(n):
        k = i % 5
        if k == 0:
            data = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 300)))
        elif k == 1:
            b = bytearray(base)
            for _ in range(rnd.randrange(1, 6)):
                b[rnd.randrange(len(b))] = rnd.randrange(256)
            data = bytes(b)
        elif k == 2:
            cut = rnd.randrange(len(base))
            data = base[:cut] + bytes(rnd.randrange(256) for _ in range(rnd.randrange(0, 20))) + base[cut:]
        elif k == 3:
            toks = [b"{", b"}", b"[", b"]", b'"user"', b'"nonce"', b'"password"', b":", b",", b'"\\u0000"',
                    b'"\\ud800"', b"1e999", b"-0", b"null", b"true", b'"' + b"A" * 43 + b'"', b'"\xff"', b" "]
            data = b"".join(rnd.choice(toks) for _ in range(rnd.randrange(1, 40)))
        else:
            data = b"[" * rnd.randrange(1, 3000)
        if rnd.random() < 0.8:
            data += b"\n"
        yield data


def main():
    path, cmd = sys.argv[1], sys.argv[2]
    if cmd == "request":
        pw = sys.stdin.buffer.read().decode("utf-8").rstrip("\n")
        line = json.dumps({"user": sys.argv[3], "nonce": sys.argv[4], "password": pw}, ensure_ascii=False)
        print(send(path, line.encode("utf-8") + b"\n"))
    elif cmd == "raw":
        print(send(path, sys.stdin.buffer.read()))
    elif cmd == "rawhalf":
        print(send(path, sys.stdin.buffer.read(), half_close=True))
    elif cmd == "hold":
        s = connect(path, timeout=float(sys.argv[3]) + 10)
        with s:
            print(answer(s))
    elif cmd == "fuzz":
        for data in fuzz_inputs(int(sys.argv[3]), int(sys.argv[4])):
            print(send(path, data, half_close=True))
    elif cmd == "flood":
        socks = []
        for _ in range(int(sys.argv[3])):
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.setblocking(False)
                s.connect(path)
                socks.append(s)
            except OSError:
                pass
        print("connected %d" % len(socks))
        sys.stdout.flush()
        time.sleep(float(sys.argv[4]))
        for s in socks:
            s.close()
    else:
        sys.exit("usage: see the docstring")


if __name__ == "__main__":
    main()
