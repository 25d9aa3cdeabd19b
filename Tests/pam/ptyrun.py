#!/usr/bin/env python3
"""Runs a command on a new pseudo-terminal and plays a person at it (Tests/pam/run.sh, the
module's own password prompt beside the camera; Tests/system uses it in the guest too).

    ptyrun.py [--limit S] [--step expect=TEXT | send=TEXT | sleep=S | signal=INT] ... -- command args

Steps run in order: expect waits (up to the limit) until TEXT has appeared in the terminal's
output since the last expect; send types TEXT (Python escapes: \\r is Enter, \\x7f erase,
\\x03 is typed as a key, so the terminal's line discipline turns it into SIGINT); sleep waits;
signal sends a signal to the command's process group. Prints one JSON line: exit status, the
time each expect matched (seconds from the start), the whole output, and whether the limit
was hit; exit status 0 when every expect matched and the command ended by itself.
"""
import codecs
import json
import os
import pty
import select
import signal
import sys
import time


def main():
    args = sys.argv[1:]
    limit = 30.0
    steps = []
    while args and args[0] != "--":
        a = args.pop(0)
        if a == "--limit":
            limit = float(args.pop(0))
        elif a == "--step":
            kind, _, value = args.pop(0).partition("=")
            steps.append((kind, codecs.decode(value, "unicode_escape")))
        else:
            sys.exit("usage: ptyrun.py [--limit S] [--step KIND=VALUE]... -- command args")
    argv = args[1:]
    t0 = time.monotonic()
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["LC_ALL"] = "C.UTF-8"
        os.environ["TERM"] = "xterm"
        os.execvp(argv[0], argv)
    out = b""
    seen = 0
    matched = []
    killed = False
    ok = True

    def pump(timeout):
        nonlocal out
        r, _, _ = select.select([fd], [], [], timeout)
        if not r:
            return True
        try:
            data = os.read(fd, 4096)
        except OSError:
            return False
        if not data:
            return False
        out += data
        return True

    alive = True
    for kind, value in steps:
        if not alive:
            ok = False
            break
        if kind == "expect":
            want = value.encode()
            while want not in out[seen:]:
                if time.monotonic() - t0 > limit:
                    ok = False
                    break
                alive = pump(0.05)
                if not alive and want not in out[seen:]:
                    ok = False
                    break
            if not ok:
                break
            seen = out.index(want, seen) + len(want)
            matched.append({"text": value, "at": round(time.monotonic() - t0, 3)})
        elif kind == "send":
            os.write(fd, value.encode())
        elif kind == "sleep":
            end = time.monotonic() + float(value)
            while time.monotonic() < end and alive:
                alive = pump(max(0.0, min(0.05, end - time.monotonic())))
        elif kind == "signal":
            os.killpg(os.getpgid(pid), getattr(signal, "SIG" + value))
    while alive:
        if time.monotonic() - t0 > limit:
            os.kill(pid, signal.SIGKILL)
            killed = True
            break
        alive = pump(0.05)
    _, status = os.waitpid(pid, 0)
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
    print(json.dumps({"exit": code, "matched": matched, "all_matched": ok, "killed": killed,
                      "total": round(time.monotonic() - t0, 3),
                      "output": out.decode("utf-8", "replace")}))
    sys.exit(0 if ok and not killed else 1)


if __name__ == "__main__":
    main()
