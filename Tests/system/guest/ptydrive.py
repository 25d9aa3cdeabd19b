#!/usr/bin/env python3
"""Runs a command in a new pseudo-terminal, as a person at a terminal would, and answers a
password prompt (Tests/system/guest/phases.sh drives `su` with it).

    pty.py PASSWORD|- LIMIT_S command args...

PASSWORD "-" answers no prompt: a prompt then ends the run (the child is killed).
Prints one line: exit=N prompt=SECONDS|none total=SECONDS output=<the terminal's text, one line>
and exits with the command's status (124 when it was killed at the limit or at the prompt)."""
import os, pty, select, signal, sys, time

password, limit, argv = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
t0 = time.monotonic()
pid, fd = pty.fork()
if pid == 0:
    os.environ["LC_ALL"] = "C"
    os.execvp(argv[0], argv)
buf, prompt_at, killed = b"", None, False
while True:
    if time.monotonic() - t0 > limit:
        os.kill(pid, signal.SIGKILL); killed = True
        break
    r, _, _ = select.select([fd], [], [], 0.1)
    if r:
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        buf += data
    if prompt_at is None and b"assword:" in buf:
        prompt_at = time.monotonic() - t0
        if password == "-":
            os.kill(pid, signal.SIGKILL); killed = True
            break
        os.write(fd, password.encode() + b"\n")
_, status = os.waitpid(pid, 0)
code = 124 if killed else (os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))
text = buf.decode("utf-8", "replace").replace("\r", "").replace("\n", " | ")
print("exit=%d prompt=%s total=%.2f output=%s" % (code, "none" if prompt_at is None else "%.2f" % prompt_at,
                                                   time.monotonic() - t0, text.strip()))
sys.exit(code)
