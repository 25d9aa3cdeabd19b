#!/usr/bin/env python3
"""The abuse suite of issue 21: floods the release daemon as real unprivileged uids and checks
that nobody else is starved.

Run it through Tests/abuse/run.sh (as root). It starts the release biometricd privileged on a
replay camera in a temporary folder, creates two ordinary users (bmabuse1, bmabuse2) and uses
`nobody` as the attacker. Flooders are this same file run as `runuser -u <user> -- python3
abuse.py --worker KIND PARAMS`, so the daemon sees their uid through SO_PEERCRED; they talk to
the parent through their stdin/stdout (one JSON object per line).

Every scenario prints one line "PASS name: ..." or "FAIL name: ..." with what it measured; the
last line is "N passed, M failed" (read by CI). Exit status 0 only when nothing failed. Every
socket operation has a timeout, so a daemon that stops answering is a FAIL, not a hang.

Python 3 standard library only.
"""

import argparse
import base64
import errno
import hashlib
import json
import os
import random
import resource
import selectors
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import time
import zlib

MIB = 1 << 20
ATTACKER = "nobody"
USERS = ["bmabuse1", "bmabuse2"]
PINS = {"nobody": "2468", "bmabuse1": "1357", "bmabuse2": "8642"}
STATUS_LIMIT_MS = 50.0          # root's daemon.status during any flood
PIN_SLACK_MS = 15.0             # absolute slack on "2x idle" (scheduler noise on 2 cores)
CPU_LIMIT_PCT = 50.0            # of one core, while a flood holds
TIME_BUDGET_S = 165.0           # scenarios not started by then are reported as failed


def now():
    return time.monotonic()


def ms(seconds):
    return seconds * 1000.0


def rnd(v, digits=1):
    return None if v is None else round(v, digits)


def fmt_ms(values):
    """'max 3.1 ms, median 0.4 ms (n=20)' for a list of latencies in ms (None = no answer)."""
    got = [v for v in values if v is not None]
    missing = len(values) - len(got)
    if not got:
        return f"no answer to {len(values)} probe(s)"
    text = f"max {max(got):.1f} ms, median {statistics.median(got):.1f} ms (n={len(got)})"
    return text + (f", {missing} unanswered" if missing else "")


# =============================================================================================
# RPC over the Unix socket (used by the suite as root and by the workers as their uid)
# =============================================================================================

class RPCTimeout(Exception):
    pass


class RPCClosed(Exception):
    pass


def connect_unix(path, timeout=2.0):
    """A connected blocking socket. A full listen backlog (EAGAIN on a non-blocking connect) is
    retried until `timeout`; then RPCTimeout."""
    deadline = now() + timeout
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect(path)
            s.setblocking(True)
            return s
        except (BlockingIOError, InterruptedError):
            s.close()
            if now() >= deadline:
                raise RPCTimeout(f"connect: backlog full for {timeout:.1f} s")
            time.sleep(0.005)
        except OSError:
            s.close()
            raise


class Reply:
    def __init__(self, msg, elapsed_ms):
        self.msg = msg
        self.ms = elapsed_ms
        self.result = msg.get("result")
        self.error = msg.get("error")

    @property
    def code(self):
        return self.error.get("code") if self.error else None

    @property
    def data(self):
        return (self.error or {}).get("data") or {}

    def short(self):
        if self.error:
            return f"error {self.code} {self.data.get('reason')} {self.data.get('limit') or self.data.get('quota') or self.data.get('field') or ''}".strip()
        return "ok"


class Conn:
    """One JSON-RPC connection (one JSON value per line), as the uid of this process."""

    def __init__(self, path, timeout=2.0):
        self.sock = connect_unix(path, timeout)
        self.buf = b""
        self.next_id = 1

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send(self, obj, timeout=5.0):
        self.sock.settimeout(timeout)
        try:
            self.sock.sendall((json.dumps(obj) + "\n").encode())
        except socket.timeout:
            raise RPCTimeout("send timed out")
        except OSError as e:
            raise RPCClosed(f"send: {e}")

    def readline(self, deadline):
        while b"\n" not in self.buf:
            left = deadline - now()
            if left <= 0:
                raise RPCTimeout("no reply")
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(1 << 16)
            except socket.timeout:
                raise RPCTimeout("no reply")
            except OSError as e:
                raise RPCClosed(f"recv: {e}")
            if not data:
                raise RPCClosed("connection closed by the daemon")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def call(self, method, params=None, timeout=2.0):
        """Sends one request and waits for its reply (events on the way are skipped)."""
        rid = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        t0 = now()
        deadline = t0 + timeout
        self.send(msg, timeout)
        while True:
            reply = self.readline(deadline)
            if isinstance(reply, dict) and reply.get("id") == rid:
                return Reply(reply, ms(now() - t0))
            if isinstance(reply, dict) and "id" in reply and reply.get("method") is None and reply.get("id") is None:
                # An error not tied to a request (e.g. the connection was refused): surface it.
                return Reply(reply, ms(now() - t0))

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)


def rpc_once(path, method, params=None, timeout=2.0):
    """Connects, calls, closes. Returns a Reply; raises RPCTimeout / RPCClosed / OSError."""
    c = Conn(path, timeout)
    try:
        return c.call(method, params, timeout)
    finally:
        c.close()


def try_call(conn, method, params=None, timeout=2.0):
    """(Reply or None, problem text or None): never raises for a daemon that misbehaves."""
    try:
        return conn.call(method, params, timeout), None
    except RPCTimeout as e:
        return None, f"timeout after {timeout:.1f} s ({e})"
    except RPCClosed as e:
        return None, str(e)
    except (OSError, ValueError) as e:
        return None, f"{type(e).__name__}: {e}"


def try_once(path, method, params=None, timeout=2.0):
    try:
        return rpc_once(path, method, params, timeout), None
    except RPCTimeout as e:
        return None, f"timeout after {timeout:.1f} s ({e})"
    except RPCClosed as e:
        return None, str(e)
    except (OSError, ValueError) as e:
        return None, f"{type(e).__name__}: {e}"


# =============================================================================================
# Process measurements
# =============================================================================================

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def cpu_percent(pid, seconds=2.0):
    """The daemon's CPU use over `seconds`, in % of one core (None when it is gone)."""
    try:
        t0, c0 = now(), cpu_ticks(pid)
        time.sleep(seconds)
        t1, c1 = now(), cpu_ticks(pid)
    except (OSError, IndexError):
        return None
    return 100.0 * (c1 - c0) / CLK_TCK / (t1 - t0)


def proc_status_kib(pid, field):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def rss_mib(pid):
    v = proc_status_kib(pid, "VmRSS")
    return None if v is None else v / 1024.0


def hwm_mib(pid):
    v = proc_status_kib(pid, "VmHWM")
    return None if v is None else v / 1024.0


def reset_hwm(pid):
    """Resets VmHWM to the current RSS (root: write 5 to clear_refs). False when not possible."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def fd_count(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


# =============================================================================================
# The daemon under test
# =============================================================================================

class Daemon:
    """One release biometricd, started as root under `prlimit --nofile`, on a replay camera."""

    def __init__(self, env, name, socket_path, state_dir, nofile=None):
        self.env = env
        self.name = name
        self.socket = socket_path
        self.state = state_dir
        # systemd's default for a service is 1024 soft, 524288 hard; a container may not let
        # root raise its hard limit that far, so the hard limit is capped at ours.
        self.nofile = nofile or f"1024:{min(524288, resource.getrlimit(resource.RLIMIT_NOFILE)[1])}"
        self.proc = None
        self.log_path = os.path.join(env.work, f"{name}.log")
        self.log_offset = 0
        self.starts = 0
        env.daemons.append(self)

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def start(self):
        """Starts it; returns immediately (use wait_ready)."""
        self.starts += 1
        cmd = ["prlimit", f"--nofile={self.nofile}", "--", self.env.binary,
               "--socket", self.socket, "--state-dir", self.state, "--models", self.env.models,
               "--camera", self.env.camera, "--set", "modalities=face"]
        log = open(self.log_path, "ab")
        self.log_offset = log.tell()
        log.write(f"==== start {self.starts}: {' '.join(cmd)}\n".encode())
        log.flush()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                     start_new_session=True)
        log.close()
        self.env.note_pid(self.proc.pid)

    def wait_ready(self, timeout=30.0):
        """(True, status) once daemon.status answers; (False, why) when it exits or times out."""
        deadline = now() + timeout
        why = "no socket"
        while now() < deadline:
            rc = self.proc.poll()
            if rc is not None:
                return False, f"exited with status {rc}"
            if os.path.exists(self.socket):
                reply, problem = try_once(self.socket, "daemon.status", timeout=1.0)
                if reply and reply.result:
                    return True, reply.result
                why = problem or reply.short()
            time.sleep(0.05)
        return False, f"not ready within {timeout:.0f} s ({why})"

    def stop(self, timeout=10.0):
        """SIGTERM, wait; SIGKILL after `timeout`. Returns the exit status (or None)."""
        if not self.proc:
            return None
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        rc = self.proc.returncode
        self.proc = None
        return rc

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log_since_start(self):
        """What this start of the daemon logged."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self.log_offset)
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def log_tail(self, n=400):
        try:
            with open(self.log_path, "rb") as f:
                data = f.read()
            return data[-n:].decode(errors="replace")
        except OSError:
            return ""


# =============================================================================================
# Workers: this file, run as another uid
# =============================================================================================

class Worker:
    """`runuser -u USER -- python3 abuse.py --worker KIND PARAMS`; events come back as JSON lines."""

    def __init__(self, env, as_user, kind, **params):
        self.user = as_user
        self.kind = kind
        self.events = []
        self.buf = b""
        params.setdefault("max_life_s", 100)
        cmd = ["runuser", "-u", as_user, "--", env.worker_python, env.worker_script, "--worker", kind, json.dumps(params)]
        self.errlog = open(os.path.join(env.work, f"worker-{as_user}-{kind}.log"), "ab")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errlog)
        env.note_pid(self.proc.pid)

    def _read(self, timeout):
        if self.proc.stdout is None:
            return False
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        try:
            if not sel.select(max(0.0, timeout)):
                return True
        finally:
            sel.close()
        data = os.read(self.proc.stdout.fileno(), 1 << 16)
        if not data:
            return False
        self.buf += data
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            try:
                self.events.append(json.loads(line))
            except ValueError:
                self.events.append({"event": "garbage", "line": line[:200].decode(errors="replace")})
        return True

    def event(self, name, timeout):
        """The first event called `name` (waiting up to `timeout`); None if it does not come."""
        deadline = now() + timeout
        while True:
            for e in self.events:
                if e.get("event") == name:
                    self.events.remove(e)
                    return e
            left = deadline - now()
            if left <= 0 or not self._read(left):
                for e in self.events:
                    if e.get("event") == name:
                        self.events.remove(e)
                        return e
                return None

    def has_event(self, name):
        self._read(0)
        return any(e.get("event") == name for e in self.events)

    def command(self, **cmd):
        try:
            self.proc.stdin.write((json.dumps(cmd) + "\n").encode())
            self.proc.stdin.flush()
        except (OSError, ValueError):
            pass

    def finish(self, timeout=10.0, **cmd):
        """Tells it to release (close everything), waits for its 'done' event and its exit."""
        self.command(cmd="release", **cmd)
        done = self.event("done", timeout)
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.kill()
        self.errlog.close()
        return done

    def kill(self):
        """SIGTERM (runuser passes it on to the worker), then SIGKILL."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(2)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                try:
                    self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    pass


class Control:
    """The worker's side: events to stdout, commands from stdin."""

    def __init__(self):
        self.buf = b""
        self.eof = False

    def emit(self, event, **data):
        data["event"] = event
        sys.stdout.write(json.dumps(data) + "\n")
        sys.stdout.flush()

    def poll_command(self, data_ready=True):
        """A command if one is complete on stdin (call when stdin is readable)."""
        if data_ready and not self.eof:
            chunk = os.read(0, 4096)
            if not chunk:
                self.eof = True
            self.buf += chunk
        if b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            return json.loads(line)
        if self.eof:
            return {"cmd": "release", "eof": True}
        return None

    def wait_command(self, timeout):
        sel = selectors.DefaultSelector()
        sel.register(0, selectors.EVENT_READ)
        deadline = now() + timeout
        try:
            while True:
                cmd = self.poll_command(False)
                if cmd:
                    return cmd
                left = deadline - now()
                if left <= 0:
                    return {"cmd": "release", "timeout": True}
                if sel.select(left):
                    cmd = self.poll_command(True)
                    if cmd:
                        return cmd
        finally:
            sel.close()


class FloodConn:
    """A non-blocking connection of a flooder, with what happened to it."""

    def __init__(self, index, sock):
        self.index = index
        self.sock = sock
        self.t_connect = now()
        self.t_end = None           # refused (line or EOF) or closed by the daemon
        self.first_line = None
        self.buf = b""
        self.closed = False
        self.replies = 0
        self.out = b""

    @property
    def refused(self):
        return self.t_end is not None


def flood_open(path, count, open_s, sel):
    """Opens up to `count` non-blocking connections within `open_s` (a full backlog is retried).
    Returns (conns, stats)."""
    conns = []
    stats = {"eagain": 0, "connect_errors": {}, "open_ms": 0.0}
    t0 = now()
    while len(conns) < count and now() - t0 < open_s:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect(path)
        except (BlockingIOError, InterruptedError):
            s.close()
            stats["eagain"] += 1
            flood_service(sel, 0.005)
            continue
        except OSError as e:
            s.close()
            name = errno.errorcode.get(e.errno, str(e.errno))
            stats["connect_errors"][name] = stats["connect_errors"].get(name, 0) + 1
            if name == "EMFILE":
                break
            flood_service(sel, 0.005)
            continue
        c = FloodConn(len(conns), s)
        conns.append(c)
        sel.register(s, selectors.EVENT_READ, c)
        if len(conns) % 32 == 0:
            flood_service(sel, 0)
    stats["open_ms"] = ms(now() - t0)
    return conns, stats


def flood_service(sel, timeout):
    """Reads whatever the daemon sent on flood connections; notes refusals and EOFs."""
    for key, _ in sel.select(timeout):
        if isinstance(key.data, FloodConn):
            flood_read(sel, key.data)


def flood_read(sel, c):
    """One read on a flood connection: a reply, a refusal line, or EOF (refused or closed)."""
    try:
        data = c.sock.recv(1 << 16)
    except (BlockingIOError, InterruptedError):
        return
    except OSError:
        data = b""
    if data:
        c.buf += data
        while b"\n" in c.buf:
            line, c.buf = c.buf.split(b"\n", 1)
            try:
                msg = json.loads(line)
            except ValueError:
                msg = {"garbage": line[:200].decode(errors="replace")}
            if isinstance(msg, dict) and "result" in msg:
                c.replies += 1
            elif c.first_line is None:
                c.first_line = msg
                if isinstance(msg, dict) and msg.get("error") and c.t_end is None:
                    c.t_end = now()
        return
    if c.t_end is None:
        c.t_end = now()
    c.closed = True
    sel.unregister(c.sock)
    c.sock.close()


def flood_summary(conns):
    refused = [c for c in conns if c.refused]
    lat = [ms(c.t_end - c.t_connect) for c in refused]
    with_line = [c for c in refused if c.first_line is not None]
    sample = with_line[0].first_line if with_line else None
    refused_by = {}
    for c in with_line:
        err = c.first_line.get("error") if isinstance(c.first_line, dict) else None
        name = ((err or {}).get("data") or {}).get("limit") or str((err or {}).get("code"))
        refused_by[name] = refused_by.get(name, 0) + 1
    return {
        "opened": len(conns),
        "refused": len(refused),
        "refused_with_line": len(with_line),
        "refused_eof": len(refused) - len(with_line),
        "open": len(conns) - len(refused),
        "first_refused_index": min((c.index for c in refused), default=None),
        "refusal_ms_median": statistics.median(lat) if lat else None,
        "refusal_ms_max": max(lat) if lat else None,
        "sample_refusal": sample,
        "refused_by": refused_by,
    }


def flood_hold(ctl, sel, hold_s, conns):
    """Holds the connections (still noting refusals) until the parent's command."""
    sel.register(0, selectors.EVENT_READ, "stdin")
    deadline = now() + hold_s
    try:
        while now() < deadline:
            for key, _ in sel.select(min(0.2, max(0.0, deadline - now()))):
                if key.data == "stdin":
                    cmd = ctl.poll_command(True)
                    if cmd:
                        return cmd
                    continue
                if isinstance(key.data, FloodConn):
                    flood_read(sel, key.data)
            cmd = ctl.poll_command(False)
            if cmd:
                return cmd
        return {"cmd": "release", "timeout": True}
    finally:
        sel.unregister(0)


def flood_verify(sel, conns, timeout=2.0):
    """Sends daemon.status on every connection still open and counts the answers: the
    connections the daemon really serves (accepted), as opposed to ones in its backlog."""
    open_conns = [c for c in conns if not c.closed and not c.refused]
    for c in open_conns:
        try:
            c.sock.send(b'{"jsonrpc":"2.0","id":1,"method":"daemon.status"}\n')
        except OSError:
            pass
    deadline = now() + timeout
    while now() < deadline and any(c.replies == 0 and not c.closed for c in open_conns):
        flood_service(sel, 0.05)
    return {"verified_open": len(open_conns), "answered": sum(1 for c in open_conns if c.replies > 0)}


def worker_conn_flood(p, ctl):
    """Opens `count` connections, holds them idle, reports which were refused and how fast."""
    sel = selectors.DefaultSelector()
    conns, stats = flood_open(p["socket"], p["count"], p.get("open_s", 8.0), sel)
    settle_until = now() + p.get("settle_s", 1.5)
    while now() < settle_until:
        flood_service(sel, 0.05)
    ctl.emit("holding", **stats, **flood_summary(conns))
    cmd = flood_hold(ctl, sel, p.get("hold_s", 60.0), conns)
    extra = flood_verify(sel, conns) if cmd.get("verify") else {}
    late = flood_summary(conns)
    for c in conns:
        if not c.closed:
            c.sock.close()
    ctl.emit("done", **extra, refused_total=late["refused"], open_at_release=late["open"])


def worker_buffer_flood(p, ctl):
    """Opens up to `count` connections and writes `bytes` without a newline on each; holds."""
    sel = selectors.DefaultSelector()
    conns, stats = flood_open(p["socket"], p["count"], p.get("open_s", 6.0), sel)
    settle_until = now() + 0.5
    while now() < settle_until:
        flood_service(sel, 0.05)
    at_connect = flood_summary(conns)
    payload = b"x" * p["bytes"]
    left = {c.index: 0 for c in conns if not c.refused}
    writing = len(left)
    sent_total = 0
    broken = 0
    written = 0
    deadline = now() + p.get("write_s", 12.0)
    chunk = 256 * 1024
    while left and now() < deadline:
        progress = False
        for c in conns:
            if c.index not in left:
                continue
            off = left[c.index]
            try:
                n = c.sock.send(payload[off:off + chunk])
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                broken += 1
                del left[c.index]
                if c.t_end is None:
                    c.t_end = now()
                continue
            progress = True
            sent_total += n
            off += n
            if off >= len(payload):
                del left[c.index]
                written += 1
            else:
                left[c.index] = off
        flood_service(sel, 0 if progress else 0.02)
    settle_until = now() + 0.5
    while now() < settle_until:
        flood_service(sel, 0.05)
    after = flood_summary(conns)
    ctl.emit("holding", **stats, at_connect=at_connect, after_writing=after, writing=writing, bytes_sent=sent_total,
             fully_written=written, broken_while_writing=broken, still_writing=len(left))
    flood_hold(ctl, sel, p.get("hold_s", 60.0), conns)
    for c in conns:
        if not c.closed:
            c.sock.close()
    ctl.emit("done", refused_total=flood_summary(conns)["refused"])


def worker_pin_flood(p, ctl):
    """`total` pin.verify calls on the worker's own PIN, spread over `connections` connections and
    all sent at once; calls refused with 1009 are sent again after 100 ms (bounded by
    `max_sends`), so the flood keeps its share of the queue until the parent says stop."""
    path, user, pin, total = p["socket"], p["user"], p["pin"], p["total"]
    max_sends = p.get("max_sends", 20000)
    sel = selectors.DefaultSelector()
    conns = []
    refused_connections = 0
    for i in range(p["connections"]):
        try:
            s = connect_unix(path, 2.0)
        except (OSError, RPCTimeout):
            refused_connections += 1
            continue
        s.setblocking(False)
        c = FloodConn(i, s)
        conns.append(c)
        sel.register(s, selectors.EVENT_READ, c)
    pending = {}       # id -> conn
    retry = []         # (time, conn)
    counts = {"sends": 0, "completed": 0, "ok": 0, "refused": 0, "errors": {}, "refused_by": {}}
    next_id = [1]

    def queue_call(c):
        rid = next_id[0]
        next_id[0] += 1
        pending[rid] = c
        counts["sends"] += 1
        c.out += json.dumps({"jsonrpc": "2.0", "id": rid, "method": "pin.verify",
                             "params": {"user": user, "pin": pin}}).encode() + b"\n"

    def flush(c, block_s=0.0):
        end = now() + block_s
        while c.out and not c.closed:
            try:
                n = c.sock.send(c.out)
                c.out = c.out[n:]
            except (BlockingIOError, InterruptedError):
                if now() >= end:
                    return
                time.sleep(0.002)
            except OSError:
                c.closed = True
                return

    live = [c for c in conns]
    for k in range(total if live else 0):
        queue_call(live[k % len(live)])
    for c in live:
        flush(c, 2.0)
    ctl.emit("sent", connections=len(conns), refused_connections=refused_connections, sends=counts["sends"])
    sel.register(0, selectors.EVENT_READ, "stdin")
    deadline = now() + p.get("run_s", 60.0)
    finished_sent = False
    cmd = None
    while now() < deadline and cmd is None:
        for key, _ in sel.select(0.02):
            if key.data == "stdin":
                cmd = ctl.poll_command(True)
                continue
            c = key.data
            try:
                data = c.sock.recv(1 << 16)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if not data:
                c.closed = True
                sel.unregister(c.sock)
                for rid in [r for r, cc in pending.items() if cc is c]:
                    del pending[rid]
                continue
            c.buf += data
            while b"\n" in c.buf:
                line, c.buf = c.buf.split(b"\n", 1)
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(msg, dict) or msg.get("id") not in pending:
                    continue
                pending.pop(msg["id"])
                err = msg.get("error")
                if err and err.get("code") == 1009:
                    counts["refused"] += 1
                    lim = (err.get("data") or {}).get("limit", "?")
                    counts["refused_by"][lim] = counts["refused_by"].get(lim, 0) + 1
                    retry.append((now() + 0.1, c))
                elif err:
                    counts["completed"] += 1
                    r = (err.get("data") or {}).get("reason", str(err.get("code")))
                    counts["errors"][r] = counts["errors"].get(r, 0) + 1
                else:
                    counts["completed"] += 1
                    if (msg.get("result") or {}).get("ok"):
                        counts["ok"] += 1
        t = now()
        due = [r for r in retry if r[0] <= t]
        retry = [r for r in retry if r[0] > t]
        for _, c in due:
            if counts["sends"] >= max_sends or counts["completed"] + len(pending) >= total:
                continue
            target = c if not c.closed else next((x for x in conns if not x.closed), None)
            if target is not None:
                queue_call(target)
        for c in conns:
            flush(c)
        if counts["completed"] >= total and not finished_sent:
            finished_sent = True
            ctl.emit("finished", **counts)
        if cmd is None:
            cmd = ctl.poll_command(False)
    for c in conns:
        if not c.closed:
            c.sock.close()
    ctl.emit("done", **counts, in_flight_at_close=len(pending))


def worker_key_flood(p, ctl):
    """key.register on its own user up to `count` times (8 in flight), stopping at the first error.
    Each call names another app_id: a registration for the same (user, app_id, aaid) replaces
    the previous one, so only distinct ones can fill a quota."""
    path, user, count = p["socket"], p["user"], p["count"]
    conn = Conn(path, 2.0)
    t0 = now()
    accepted, sent, in_flight = 0, 0, 0
    first_error = None
    if p.get("pin"):
        # A change to one's factors needs a fresh authentication on the connection (issue 20):
        # the flooder passes its own PIN first, as a real user's program would.
        conn.send({"jsonrpc": "2.0", "id": 0, "method": "pin.verify", "params": {"user": user, "pin": p["pin"]}})
        while True:
            msg = conn.readline(now() + 10.0)
            if isinstance(msg, dict) and msg.get("id") == 0:
                if not (msg.get("result") or {}).get("ok"):
                    first_error = msg.get("error") or {"client": f"pin.verify did not pass: {msg}"}
                break
    deadline = now() + p.get("run_s", 25.0)
    try:
        while first_error is None and (sent < count or in_flight) and now() < deadline:
            while sent < count and in_flight < 8 and first_error is None:
                sent += 1
                in_flight += 1
                params = {"user": user, "app_id": f"https://example.com/abuse/{sent}", "aaid": "4e4e#4005"}
                conn.send({"jsonrpc": "2.0", "id": sent, "method": "key.register", "params": params})
            if in_flight == 0:
                break
            msg = conn.readline(min(deadline, now() + 5.0))
            if not isinstance(msg, dict) or "id" not in msg:
                continue
            in_flight -= 1
            if msg.get("error"):
                if first_error is None:
                    first_error = msg["error"]
            else:
                accepted += 1
    except (RPCTimeout, RPCClosed, OSError) as e:
        first_error = first_error or {"client": f"{type(e).__name__}: {e}"}
    conn.close()
    ctl.emit("done", accepted=accepted, sent=sent, first_error=first_error, elapsed_ms=ms(now() - t0))


def worker_remote(p, ctl):
    """A connection driven by the parent: commands connect / call / notify / close / release."""
    conns = {}
    while True:
        cmd = ctl.wait_command(p.get("max_life_s", 100))
        op = cmd.get("cmd")
        if op == "release":
            break
        name = cmd.get("name", "c")
        try:
            if op == "connect":
                conns[name] = Conn(p["socket"], cmd.get("timeout", 2.0))
                ctl.emit("ok")
            elif op == "call":
                r = conns[name].call(cmd["method"], cmd.get("params"), cmd.get("timeout_s", 2.0))
                ctl.emit("ok", msg=r.msg, ms=r.ms)
            elif op == "notify":
                for _ in range(cmd.get("count", 1)):
                    conns[name].notify(cmd["method"], cmd.get("params"))
                if cmd.get("close"):
                    conns.pop(name).close()
                ctl.emit("ok", t=now())
            elif op == "close":
                conns.pop(name).close()
                ctl.emit("ok", t=now())
            else:
                ctl.emit("ok", problem=f"unknown command {op}")
        except (RPCTimeout, RPCClosed, OSError, KeyError) as e:
            ctl.emit("ok", problem=f"{type(e).__name__}: {e}")
    for c in conns.values():
        c.close()
    ctl.emit("done")


WORKERS = {
    "conn_flood": worker_conn_flood,
    "buffer_flood": worker_buffer_flood,
    "pin_flood": worker_pin_flood,
    "key_flood": worker_key_flood,
    "remote": worker_remote,
}


def worker_main(kind, params_json):
    p = json.loads(params_json)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the flooder must not be the limit
    try:  # die with runuser (PR_SET_PDEATHSIG = 1), so a killed suite leaves no flooder behind
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    signal.signal(signal.SIGALRM, lambda *_: os._exit(3))
    signal.alarm(int(p.get("max_life_s", 100)))
    ctl = Control()
    try:
        WORKERS[kind](p, ctl)
    except Exception as e:  # reported, not hidden
        ctl.emit("done", crashed=f"{type(e).__name__}: {e}")
        raise


class Remote:
    """The parent's handle on a `remote` worker: a connection as another uid."""

    def __init__(self, env, user):
        self.w = env.worker(user, "remote", socket=env.socket)

    def do(self, timeout=5.0, **cmd):
        self.w.command(**cmd)
        e = self.w.event("ok", timeout + 1.0)
        return e if e is not None else {"problem": "worker did not answer"}

    def connect(self, name="c"):
        return self.do(cmd="connect", name=name)

    def call(self, method, params=None, timeout=2.0, name="c"):
        """(Reply or None, problem)."""
        e = self.do(timeout=timeout, cmd="call", name=name, method=method, params=params, timeout_s=timeout)
        if "msg" in e:
            return Reply(e["msg"], e["ms"]), None
        return None, e.get("problem")

    def close(self, name="c"):
        return self.do(cmd="close", name=name)

    def finish(self):
        self.w.finish(5.0)


# =============================================================================================
# Image bombs (tiny files declaring huge images)
# =============================================================================================

class BitWriter:
    """LSB-first bit writer (VP8L)."""

    def __init__(self):
        self.bits = []

    def put(self, value, n):
        for i in range(n):
            self.bits.append((value >> i) & 1)

    def bytes(self):
        out = bytearray((len(self.bits) + 7) // 8)
        for i, b in enumerate(self.bits):
            out[i // 8] |= b << (i % 8)
        return bytes(out)


def webp_bomb(width=16383, height=16383, size=10 * 1024):
    """A valid lossless WebP (VP8L) whose five prefix codes have one symbol each, so every pixel
    costs zero bits: a few bytes decode into width x height pixels. Padded to ~`size` bytes."""
    w = BitWriter()
    w.put(0x2F, 8)                  # VP8L signature
    w.put(width - 1, 14)
    w.put(height - 1, 14)
    w.put(0, 1)                     # alpha_is_used
    w.put(0, 3)                     # version
    w.put(0, 1)                     # no transform
    w.put(0, 1)                     # no colour cache
    w.put(0, 1)                     # no meta prefix codes
    for _ in range(5):              # green, red, blue, alpha, distance
        w.put(1, 1)                 # simple code
        w.put(0, 1)                 # one symbol
        w.put(0, 1)                 # symbol in 1 bit
        w.put(0, 1)                 # symbol 0
    data = w.bytes()
    data += b"\0" * max(0, size - 20 - len(data))
    if len(data) % 2:
        data += b"\0"
    chunk = b"VP8L" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def png_bomb(width=30000, height=30000):
    """PNG IHDR declaring width x height RGB, with a tiny zlib IDAT (two rows of zeros)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\0" * ((1 + width * 3) * 2), 9)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def jpeg_bomb(width=20000, height=20000):
    """Baseline JPEG: SOF0 declaring width x height, one-code Huffman tables (DC 0, EOB), so the
    zero-filled rest of a short scan decodes as a whole grey image."""
    def seg(marker, payload):
        return struct.pack(">BBH", 0xFF, marker, len(payload) + 2) + payload
    dqt = seg(0xDB, b"\x00" + b"\x01" * 64)
    sof = seg(0xC0, struct.pack(">BHHB", 8, height, width, 3) + b"\x01\x11\x00\x02\x11\x00\x03\x11\x00")
    one_code = b"\x01" + b"\x00" * 15
    dht = seg(0xC4, b"\x00" + one_code + b"\x00" + b"\x10" + one_code + b"\x00")
    sos = seg(0xDA, b"\x03\x01\x00\x02\x00\x03\x00\x00\x3f\x00")
    return b"\xff\xd8" + dqt + sof + dht + sos + b"\x00" * 256 + b"\xff\xd9"


def tiff_bomb(width=30000, height=30000):
    """Little-endian TIFF, 8-bit grey, one uncompressed strip declaring width*height bytes."""
    entries = [(256, 4, 1, width), (257, 4, 1, height), (258, 3, 1, 8), (259, 3, 1, 1), (262, 3, 1, 1),
               (273, 4, 1, 0), (277, 3, 1, 1), (278, 4, 1, height), (279, 4, 1, width * height)]
    ifd_size = 2 + 12 * len(entries) + 4
    data_offset = 8 + ifd_size
    out = b"II*\x00" + struct.pack("<I", 8) + struct.pack("<H", len(entries))
    for tag, typ, count, value in entries:
        if tag == 273:
            value = data_offset
        if typ == 3:
            out += struct.pack("<HHIHH", tag, typ, count, value, 0)
        else:
            out += struct.pack("<HHII", tag, typ, count, value)
    return out + struct.pack("<I", 0) + b"\0" * 1024


def pgm_bomb(width=30000, height=30000):
    return f"P5 {width} {height} 255\n".encode() + b"\0" * 1024


# =============================================================================================
# The suite
# =============================================================================================

class Env:
    """Paths, the main daemon, created users, results."""

    def __init__(self, args):
        self.work = args.workdir
        self.binary = os.path.join(args.bin, "biometricd")
        self.models = args.models
        self.camera = args.camera
        self.daemons = []
        self.daemon_broken = False
        self.socket = os.path.join(self.work, "b.sock")
        self.state = os.path.join(self.work, "state")
        self.worker_script = os.path.join(self.work, "abuse.py")
        self.worker_python = None
        self.daemon = Daemon(self, "daemon", self.socket, self.state)
        self.passed = 0
        self.failed = 0
        self.t0 = now()
        self.created_users = []
        self.idle_pin_ms = None
        self.camera_id = None
        self.rss_start = None
        self.rss_end = None
        self.workers = []

    def note_pid(self, pid):
        with open(os.path.join(self.work, "pids"), "a") as f:
            f.write(f"{pid}\n")

    def check(self, name, ok, detail):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)

    def info(self, text):
        print(f"     {text}", flush=True)

    def worker(self, as_user, kind, **params):
        w = Worker(self, as_user, kind, **params)
        self.workers.append(w)
        return w

    def root(self, timeout=2.0, path=None):
        return Conn(path or self.socket, timeout)

    def ensure_daemon(self):
        """Restarts the main daemon when a scenario left it dead or deaf (that scenario has
        failed). A daemon that cannot be restarted once is not tried again."""
        if self.daemon_broken:
            return False
        if self.daemon.alive():
            reply, _ = try_once(self.socket, "daemon.status", timeout=2.0)
            if reply and reply.result:
                return True
            self.info("daemon does not answer: restarting it")
            self.daemon.stop(5)
        elif self.daemon.starts:
            self.info(f"daemon died (log: {self.daemon.log_tail(300)!r}); restarting it")
        self.daemon.start()
        ok, why = self.daemon.wait_ready(20)
        if not ok:
            self.daemon_broken = f"restart failed: {why}"
            self.info(f"daemon {self.daemon_broken}")
        return ok


def status_probes(env, conn, count=20, timeout=0.5, path=None):
    """root's daemon.status latencies (ms; None = no answer): over `conn` (already open) when
    given, else each over a new connection. Stops after 3 misses in a row."""
    out, misses = [], 0
    for _ in range(count):
        if conn is not None:
            reply, _ = try_call(conn, "daemon.status", timeout=timeout)
            if reply is None:
                # A timed-out reply may still arrive later: this connection is no longer usable.
                out.append(None)
                break
        else:
            t0 = now()
            reply, _ = try_once(path or env.socket, "daemon.status", timeout=timeout)
            if reply is not None:
                reply.ms = ms(now() - t0)   # the new connection counts
        out.append(reply.ms if reply is not None and reply.result is not None else None)
        misses = misses + 1 if out[-1] is None else 0
        if misses >= 3:
            break
        time.sleep(0.01)
    return out


def within(latencies, limit):
    return bool(latencies) and all(v is not None and v <= limit for v in latencies)


def pin_probe(env, conn, user="bmabuse1", timeout=10.0):
    reply, problem = try_call(conn, "pin.verify", {"user": user, "pin": PINS[user]}, timeout)
    if reply is None:
        return None, problem
    if reply.error or not (reply.result or {}).get("ok"):
        return None, reply.short()
    return reply.ms, None


def pin_idle(env, conn, n=5):
    values = []
    for _ in range(n):
        v, problem = pin_probe(env, conn, timeout=5.0)
        if v is None:
            return None, problem
        values.append(v)
    return statistics.median(values), values


def pin_limit(env):
    return 2 * env.idle_pin_ms + PIN_SLACK_MS


def wait_pin_idle(env, budget_s):
    """Waits (bounded) until root's pin.verify is back near idle, so the next scenario starts
    clean. Returns the seconds it took, or None."""
    t0 = now()
    while now() - t0 < budget_s:
        try:
            c = env.root(1.0)
        except (OSError, RPCTimeout):
            time.sleep(0.2)
            continue
        try:
            v, _ = pin_probe(env, c, timeout=max(0.5, budget_s - (now() - t0)))
        finally:
            c.close()
        if v is not None and v <= pin_limit(env):
            return now() - t0
    return None


# ---------------------------------------------------------------------------------------------

def scenario_connection_flood(env):
    """nobody opens 1,100 connections and holds them idle. A user checks that root's daemon.status
    still answers within 50 ms (on an open and on a new connection), that nobody got no more than
    its 32 connections, that the rest were refused at once, and that the daemon does not spin."""
    pid = env.daemon.pid
    root = env.root()
    status_probes(env, root, 3)
    rss0 = rss_mib(pid)
    w = env.worker(ATTACKER, "conn_flood", socket=env.socket, count=1100, open_s=8.0, settle_s=1.5)
    h = w.event("holding", 15.0)
    if h is None:
        w.kill()
        root.close()
        env.check("connection_flood", False, "the flooder never reported (see worker log)")
        return
    open_lat = status_probes(env, root, 20)
    new_lat = status_probes(env, None, 20)
    cpu = cpu_percent(pid, 2.0)
    fds = fd_count(pid)
    st, _ = try_once(env.socket, "daemon.status", timeout=0.5)
    clients = (st.result or {}).get("clients") if st else None
    rss = rss_mib(pid)
    done = w.finish(10.0, verify=True) or {}
    root.close()
    accepted = done.get("answered")
    refused_all = h["opened"] - h["open"]
    env.info(f"flooder: opened {h['opened']} in {h['open_ms']:.0f} ms ({h['eagain']} EAGAIN, errors {h['connect_errors']}), "
             f"refused {h['refused']} ({h['refused_with_line']} with a line, {h['refused_eof']} EOF), "
             f"{h['open']} still open, first refused #{h['first_refused_index']}")
    env.info(f"refusal time: median {rnd(h['refusal_ms_median'])} ms, max {rnd(h['refusal_ms_max'])} ms; sample: {json.dumps(h['sample_refusal'])[:300]}")
    env.info(f"daemon: {fds} fds, clients {clients}, RSS {rnd(rss0)} -> {rnd(rss)} MiB under the flood; flooder connections answering daemon.status: {accepted} of {done.get('verified_open')}")
    reasons = []
    if not within(open_lat, STATUS_LIMIT_MS):
        reasons.append(f"status on an open connection {fmt_ms(open_lat)}")
    if not within(new_lat, STATUS_LIMIT_MS):
        reasons.append(f"status on a new connection {fmt_ms(new_lat)}")
    if cpu is None or cpu >= CPU_LIMIT_PCT:
        reasons.append(f"CPU {cpu if cpu is None else round(cpu, 1)} % of a core")
    if accepted is None or accepted > 32:
        reasons.append(f"{accepted} flooder connections served (cap 32)")
    if h["open"] > 32:
        reasons.append(f"{h['open']} connections neither served within the cap nor refused")
    sample = h.get("sample_refusal") or {}
    err = sample.get("error") or {}
    if h["refused_with_line"] and not (err.get("code") == 1009 and (err.get("data") or {}).get("limit") == "connections_per_user"):
        reasons.append(f"refusal line is not 1009 connections_per_user: {json.dumps(sample)[:200]}")
    detail = (f"status open conn {fmt_ms(open_lat)}; new conn {fmt_ms(new_lat)}; CPU {cpu and round(cpu, 1)} %; "
              f"served {accepted}, refused {refused_all} of {h['opened']} (refused within median {rnd(h['refusal_ms_median'])}, "
              f"max {rnd(h['refusal_ms_max'])} ms); RSS {rss0 and round(rss0)} -> {rss and round(rss)} MiB")
    env.check("connection_flood", not reasons, detail + ("; " + "; ".join(reasons) if reasons else ""))
    # Recovery: the daemon serves new connections again once the flood is gone.
    t0 = now()
    while now() - t0 < 5.0:
        r, _ = try_once(env.socket, "daemon.status", timeout=0.5)
        if r and r.result:
            env.info(f"after the flood closed: a new connection answered after {ms(now() - t0):.0f} ms")
            break
        time.sleep(0.05)
    else:
        env.info("after the flood closed: no answer on new connections within 5 s")


def scenario_descriptor_limit(env):
    """A daemon with only 96 descriptors (prlimit --nofile=96:96) flooded by nobody, bmabuse1 and
    bmabuse2 (up to 40 connections each). A user checks that it does not spin, that root's
    connection opened before the flood still answers within 50 ms, and that new connections work
    again within 2 s of the flood ending."""
    d = Daemon(env, "daemon-fd96", os.path.join(env.work, "fd96.sock"), os.path.join(env.work, "state-fd96"), nofile="96:96")
    d.start()
    ok, st = d.wait_ready(20)
    if not ok:
        env.check("descriptor_limit", False, f"daemon with 96 descriptors did not start: {st}; log: {d.log_tail(300)!r}")
        d.stop()
        return
    fds0 = fd_count(d.pid)
    root = env.root(path=d.socket)
    before = status_probes(env, root, 3)
    workers = [env.worker(u, "conn_flood", socket=d.socket, count=40, open_s=5.0, settle_s=1.0)
               for u in [ATTACKER] + USERS]
    reports = [w.event("holding", 12.0) for w in workers]
    cpu = cpu_percent(d.pid, 2.0)
    fds = fd_count(d.pid)
    lat = status_probes(env, root, 10)
    for w in workers:
        w.finish(8.0)
    t_closed = now()
    recovered = None
    while now() - t_closed < 4.0:
        r, _ = try_once(d.socket, "daemon.status", timeout=0.3)
        if r and r.result:
            recovered = now() - t_closed
            break
        time.sleep(0.05)
    root.close()
    alive_after = d.alive()
    d.stop()
    for u, rep in zip([ATTACKER] + USERS, reports):
        if rep:
            limit = ((rep.get("sample_refusal") or {}).get("error") or {}).get("data", {}).get("limit")
            env.info(f"{u}: opened {rep['opened']} (EAGAIN {rep['eagain']}, errors {rep['connect_errors']}), "
                     f"refused {rep['refused']} (line {rep['refused_with_line']} [{limit}], EOF {rep['refused_eof']}), open {rep['open']}")
        else:
            env.info(f"{u}: flooder never reported")
    env.info(f"daemon descriptors: {fds0} before, {fds} during the flood (limit 96)")
    reasons = []
    if cpu is None or cpu >= CPU_LIMIT_PCT:
        reasons.append(f"CPU {cpu if cpu is None else round(cpu, 1)} % of a core")
    if not within(lat, STATUS_LIMIT_MS):
        reasons.append(f"status on root's open connection {fmt_ms(lat)}")
    if recovered is None or recovered > 2.0:
        reasons.append(f"new connections work again after {recovered if recovered is None else round(recovered, 2)} s")
    if not alive_after:
        reasons.append("daemon died")
    detail = (f"CPU {cpu and round(cpu, 1)} %; root's open connection {fmt_ms(lat)}; "
              f"new connections again after {recovered and round(ms(recovered))} ms")
    env.check("descriptor_limit", not reasons, detail + ("; " + "; ".join(reasons) if reasons else ""))


def scenario_pin_flood(env):
    """nobody floods pin.verify (Argon2id) on its own PIN: 300 calls over 10 connections, all sent
    at once. A user checks that root's pin.verify of bmabuse1 stays within 2x its idle time (+15 ms
    slack for scheduler noise) and root's daemon.status within 50 ms.

    Each probe starts after a random pause of up to one idle PIN check, as a user's call arrives
    at any point of the job in flight. Probes sent back to back would always arrive just as the
    queue handed the slot to the flooder, i.e. always wait one whole job: that worst case is
    reported too (max), but the check is on the median."""
    root = env.root()
    pin_probe(env, root, timeout=5.0)  # warm-up
    idle, values = pin_idle(env, root)
    if idle is None:
        root.close()
        env.check("pin_flood", False, f"root's idle pin.verify failed: {values}")
        return
    env.idle_pin_ms = idle
    env.info(f"idle pin.verify (root, bmabuse1): median {idle:.1f} ms of {[round(v, 1) for v in values]}")
    w = env.worker(ATTACKER, "pin_flood", socket=env.socket, user=ATTACKER, pin=PINS[ATTACKER],
                   total=300, connections=10, run_s=60.0)
    sent = w.event("sent", 10.0)
    time.sleep(0.3)  # let the burst reach the queue
    during, problem = [], None
    rng = random.Random(21)
    # 9 probes: the median of 5 moved by a third with one slow probe on a busy 2-core machine.
    for _ in range(9):
        time.sleep(rng.uniform(0, idle) / 1000.0)
        v, problem = pin_probe(env, root, timeout=8.0)
        during.append(v)
        if v is None:
            break
    status_conn = env.root()
    lat = status_probes(env, status_conn, 10)
    status_conn.close()
    flood_still_running = not w.has_event("finished")
    done = w.finish(10.0) or {}
    root.close()
    drained = wait_pin_idle(env, 40.0)
    limit = pin_limit(env)
    med = statistics.median(during) if during and all(v is not None for v in during) else None
    env.info(f"flooder: {sent and sent.get('connections')} connections ({sent and sent.get('refused_connections')} refused); "
             f"sends {done.get('sends')}, completed {done.get('completed')} (ok {done.get('ok')}), "
             f"refused 1009 {done.get('refused')} {done.get('refused_by')}, other errors {done.get('errors')}, "
             f"in flight at close {done.get('in_flight_at_close')}; flood still running after the probes: {flood_still_running}")
    env.info(f"queue back to idle {drained and round(drained, 2)} s after the flooder closed")
    reasons = []
    if med is None:
        reasons.append(f"root's pin.verify during the flood: {problem} (after {[v and round(v) for v in during]})")
    elif med > limit:
        reasons.append(f"root's pin.verify median {med:.1f} ms > {limit:.1f} ms")
    if not within(lat, STATUS_LIMIT_MS):
        reasons.append(f"status {fmt_ms(lat)}")
    worst = max(during) if during and all(v is not None for v in during) else None
    detail = (f"root pin.verify idle {idle:.1f} ms, during median {rnd(med)} ms = {rnd(med and med / idle, 2)}x, max {rnd(worst)} ms "
              f"(limit on the median: 2x idle + {PIN_SLACK_MS:.0f} ms slack = {limit:.1f} ms; probes {[rnd(v) for v in during]}); "
              f"status {fmt_ms(lat)}")
    env.check("pin_flood", not reasons, detail + ("; " + "; ".join(reasons) if reasons else ""))


def camera_busy(env):
    r, problem = try_once(env.socket, "camera.list", timeout=1.0)
    if r is None or r.result is None:
        return None
    for cam in r.result:
        if cam.get("id") == env.camera_id:
            return cam.get("busy")
    return None


def scenario_idless_calls(env):
    """Calls without an id die with their connection. (1) nobody sends 100 id-less pin.verify and
    closes at once: a user checks root's pin.verify is back at idle time within 1 s. (2) an id-less
    face.enroll with a 30 s countdown, then close: the camera is free again within 2 s."""
    if env.idle_pin_ms is None:
        c = env.root()
        env.idle_pin_ms, _ = pin_idle(env, c, 3)
        c.close()
    limit = pin_limit(env)
    r = Remote(env, ATTACKER)
    r.connect()
    e = r.do(cmd="notify", method="pin.verify", params={"user": ATTACKER, "pin": PINS[ATTACKER]}, count=100, close=True)
    t_close = e.get("t", now())
    back = None
    probes = []
    while now() - t_close < 1.0:
        try:
            c = env.root(1.0)
        except (OSError, RPCTimeout):
            break
        v, problem = pin_probe(env, c, timeout=3.0)
        c.close()
        probes.append(v and round(v, 1))
        if v is not None and v <= limit:
            back = now() - t_close
            break
    r.finish()
    if back is None:
        drained = wait_pin_idle(env, 20.0)
        extra = f"; back at idle {now() - t_close:.1f} s after the close" if drained is not None else "; not back at idle 20 s later"
        env.check("idless_pin_canceled", False,
                  f"root's pin.verify not back at idle (<= {limit:.0f} ms) within 1 s of the close; probes {probes} ms{extra}")
    else:
        env.check("idless_pin_canceled", True,
                  f"root's pin.verify back at idle {ms(back):.0f} ms after the close (probes {probes} ms, limit {limit:.0f} ms)")

    # (2) id-less face.enroll holding the camera, then the client goes away.
    enroll = {"user": ATTACKER, "camera": env.camera_id, "countdown_s": 30, "timeout_ms": 60000}
    who = ATTACKER
    r = Remote(env, ATTACKER)
    r.connect()
    r.do(cmd="notify", method="face.enroll", params=enroll)
    busy_seen = wait_busy(env, True, 1.5)
    note = ""
    if busy_seen is None:
        # No reply comes to a notification: ask the same with an id to learn why it did not start.
        reply, problem = r.call("face.enroll", enroll, timeout=1.0)
        r.close()
        r.finish()
        if reply is not None and reply.code == 1003:
            note = "nobody's enrol refused (permission_denied): done as root; "
            who = "root"
            enroll["user"] = "bmabuse2"
            c = env.root()
            c.notify("face.enroll", enroll)
            busy_seen = wait_busy(env, True, 1.5)
            c.close()
            t_close = now()
        else:
            env.check("idless_enroll_canceled", False,
                      f"the id-less face.enroll never took the camera; with an id: {reply.short() if reply else problem}")
            wait_busy(env, False, 2.0)
            return
    else:
        e = r.close()
        t_close = e.get("t", now())
        r.finish()
    freed = wait_busy(env, False, 2.0)
    free_after = None if freed is None else freed - t_close
    if free_after is None:
        later = wait_busy(env, False, 8.0)
        env.check("idless_enroll_canceled", False,
                  f"{note}camera still busy 2 s after {who}'s client closed"
                  + (f" (free {later - t_close:.1f} s after)" if later else " (still busy 10 s after)"))
        if later is None:
            env.info("camera still busy: restarting the daemon so the next scenarios have a free camera")
            env.daemon.stop(5)
            env.ensure_daemon()
    else:
        env.check("idless_enroll_canceled", free_after <= 2.0,
                  f"{note}camera busy while the id-less enrol ran, free {ms(free_after):.0f} ms after {who}'s client closed")


def wait_busy(env, want, timeout):
    """The time at which camera.list shows busy == want (None when not within timeout)."""
    t0 = now()
    while now() - t0 < timeout:
        if camera_busy(env) == want:
            return now()
        time.sleep(0.02)
    return None


def scenario_buffer_flood(env):
    """nobody opens up to 300 connections and writes just under 1 MiB without a newline on each,
    and holds them. A user checks the daemon's RSS grows by at most 64 MiB and root's daemon.status
    still answers within 50 ms."""
    pid = env.daemon.pid
    root = env.root()
    status_probes(env, root, 3)
    rss0 = rss_mib(pid)
    w = env.worker(ATTACKER, "buffer_flood", socket=env.socket, count=300, bytes=MIB - 64, write_s=12.0)
    h = w.event("holding", 25.0)
    if h is None:
        w.kill()
        root.close()
        env.check("buffer_flood", False, "the flooder never reported")
        return
    peak = rss0
    t_end = now() + 1.5
    while now() < t_end:
        v = rss_mib(pid)
        if v is not None:
            peak = max(peak, v)
        time.sleep(0.1)
    lat = status_probes(env, root, 10)
    w.finish(10.0)
    root.close()
    time.sleep(0.5)
    rss1 = rss_mib(pid)
    growth = peak - rss0
    a, b = h["at_connect"], h["after_writing"]
    env.info(f"flooder: opened {a['opened']}, refused at connect {a['refused']} {a['refused_by']}; wrote on {h['writing']}: "
             f"{h['bytes_sent'] / MIB:.1f} MiB sent, {h['fully_written']} fully written, {h['broken_while_writing']} broken while writing, "
             f"{h['still_writing']} still blocked; refused or closed in all {b['refused']} {b['refused_by']}, {b['open']} held open")
    bsample = next((c for c in [b.get("sample_refusal")] if c), None)
    if bsample and (a.get("sample_refusal") != bsample):
        env.info(f"sample: {json.dumps(bsample)[:300]}")
    reasons = []
    if growth > 64:
        reasons.append(f"RSS grew {growth:.0f} MiB (> 64)")
    if not within(lat, STATUS_LIMIT_MS):
        reasons.append(f"status {fmt_ms(lat)}")
    detail = f"RSS {rss0:.0f} -> peak {peak:.0f} MiB (+{growth:.0f}), {rss1 and round(rss1)} MiB after release; status {fmt_ms(lat)}"
    env.check("buffer_flood", not reasons, detail + ("; " + "; ".join(reasons) if reasons else ""))


def db_size(state):
    total = 0
    for name in ("biometricd.sqlite", "biometricd.sqlite-wal"):
        try:
            total += os.path.getsize(os.path.join(state, name))
        except OSError:
            pass
    return total


def scenario_storage_quota(env):
    """nobody, freshly authenticated with its own PIN on its connection (what a change to its
    factors needs), registers keys for itself up to 5,000 times. A user checks it is stopped at
    32 keys (the default quota) with error 1010 quota_exceeded, and that the database barely grows."""
    size0 = db_size(env.state)
    w = env.worker(ATTACKER, "key_flood", socket=env.socket, user=ATTACKER, count=5000, run_s=30.0, pin=PINS[ATTACKER])
    done = w.event("done", 40.0) or {}
    w.finish(2.0)
    size1 = db_size(env.state)
    c = env.root()
    listed, problem = try_call(c, "key.list", {"user": ATTACKER}, 5.0)
    stored = len((listed.result or {}).get("keys", [])) if listed and listed.result else None
    cleanup, _ = try_call(c, "key.deregister", {"user": ATTACKER}, 30.0)
    c.close()
    err = done.get("first_error") or {}
    data = err.get("data") or {}
    accepted = done.get("accepted")
    growth = (size1 - size0) / MIB
    env.info(f"flooder: {accepted} accepted of {done.get('sent')} sent in {done.get('elapsed_ms') and round(done['elapsed_ms'])} ms; "
             f"first error {json.dumps(err)[:300]}; key.list (root) shows {stored}; cleanup {cleanup.short() if cleanup else 'failed'}")
    if err.get("code") == 1003:
        ok = stored == 0 and accepted == 0
        env.check("storage_quota", ok,
                  f"key.register by nobody refused with permission_denied (fresh authentication needed); "
                  f"stored {stored} (must be 0); database +{growth:.2f} MiB")
        return
    reasons = []
    if accepted is None or accepted > 32:
        reasons.append(f"{accepted} keys accepted (quota 32)")
    if not err:
        reasons.append("never refused")
    elif not (err.get("code") == 1010 and data.get("reason") == "quota_exceeded" and data.get("quota") == "keys"):
        reasons.append(f"stopped by {json.dumps(err)[:160]} instead of 1010 quota_exceeded/keys")
    if growth > 2.0:
        reasons.append(f"database grew {growth:.1f} MiB")
    stop = f"then {err.get('code')} {data.get('reason')} {data.get('quota') or ''}".strip() if err else "and no refusal"
    detail = f"{accepted} keys accepted of {done.get('sent')} sent, {stop}; key.list shows {stored}; database +{growth:.2f} MiB"
    env.check("storage_quota", not reasons, detail + ("; " + "; ".join(reasons) if reasons else ""))


def scenario_image_bombs(env):
    """face.extract (as root) of tiny files declaring huge images: WebP 16383x16383, PNG
    30000x30000, JPEG 20000x20000, TIFF 30000x30000, PGM 30000x30000. A user checks each is
    refused with a JSON-RPC error within 1 s and the daemon's memory does not rise by 100 MiB."""
    bombs = [("webp", webp_bomb()), ("png", png_bomb()), ("jpeg", jpeg_bomb()), ("tiff", tiff_bomb()), ("pgm", pgm_bomb())]
    for name, blob in bombs:
        if not env.ensure_daemon():
            env.check(f"image_bomb_{name}", False, "daemon not running")
            continue
        pid = env.daemon.pid
        can_reset = reset_hwm(pid)
        rss0 = rss_mib(pid)
        hwm0 = hwm_mib(pid) if can_reset else rss0
        peak = [rss0 or 0]
        c = env.root()
        reply, problem = try_call(c, "face.extract", {"image": base64.b64encode(blob).decode()}, timeout=1.0)
        late = None
        if reply is None and problem and problem.startswith("timeout"):
            # Keep waiting (bounded) so the next bomb does not overlap this one.
            t0 = now()
            while now() - t0 < 15.0 and env.daemon.alive():
                v = rss_mib(pid)
                if v:
                    peak.append(v)
                try:
                    msg = c.readline(now() + 0.2)
                    if isinstance(msg, dict) and "id" in msg:
                        late = Reply(msg, 1000.0 + ms(now() - t0))
                        break
                except RPCTimeout:
                    continue
                except (RPCClosed, OSError, ValueError):
                    break
        c.close()
        time.sleep(0.1)
        hwm1 = hwm_mib(pid)
        rss1 = rss_mib(pid)
        rise = (max([hwm1 or 0] + peak) if can_reset else max([rss1 or 0] + peak)) - (hwm0 or 0)
        alive_after = env.daemon.alive()
        reasons = []
        if reply is None:
            reasons.append(f"no reply within 1 s ({problem})" + (f"; answered after {late.ms:.0f} ms: {late.short()}" if late else ""))
        elif reply.error is None:
            reasons.append("accepted (a result, not an error)")
        if rise > 100:
            reasons.append(f"memory rose {rise:.0f} MiB")
        if not alive_after:
            reasons.append(f"daemon died: {env.daemon.log_tail(200)!r}")
        got = reply.short() + f" in {reply.ms:.0f} ms" if reply else "no reply"
        msg = (reply.error or {}).get("message", "")[:100] if reply else ""
        env.check(f"image_bomb_{name}", not reasons,
                  f"{len(blob)} bytes: {got} {msg!r}; {'VmHWM' if can_reset else 'RSS'} +{rise:.0f} MiB"
                  + ("; " + "; ".join(reasons) if reasons else ""))


INT_FIELDS = [
    ("face.verify", {"user": "bmabuse1"}, "timeout_ms"),
    ("face.verify", {"user": "bmabuse1"}, "quality_threshold"),
    ("face.verify", {"user": "bmabuse1"}, "liveness_threshold"),
    ("face.verify", {"user": "bmabuse1"}, "blink_timeout_ms"),
    ("face.verify", {"user": "bmabuse1"}, "challenge_steps"),
    ("face.identify", {}, "challenge_step_timeout_ms"),
    ("face.enroll", {"user": "bmabuse1"}, "frames"),
    ("face.enroll", {"user": "bmabuse1"}, "countdown_s"),
    ("camera.snapshot", {}, "warmup_frames"),
    ("camera.snapshot", {}, "timeout_ms"),
    ("auth.authenticate", {"user": "bmabuse1"}, "timeout_ms"),
    ("finger.capture", {}, "timeout_s"),
    ("finger.enroll", {"user": "bmabuse1"}, "captures"),
    ("finger.extract", {"image": "AAAA"}, "dpi"),
]
BAD_INTEGERS = [("1.5", 1.5), ("2^63", 2 ** 63), ("1e308", 1e308), ("-1e308", -1e308)]


def scenario_field_names(env):
    """Integer params given 1.5, 2^63, 1e308 and -1e308 must each get -32602 with data.field naming
    the param; a 65-digit PIN to pin.set must get 5003 pin_format."""
    bad = []
    total = 0
    c = env.root()
    for method, base, field in INT_FIELDS:
        for label, value in BAD_INTEGERS:
            total += 1
            params = dict(base)
            if "camera" not in params and method.startswith(("face.", "camera.")) and method != "face.extract":
                params["camera"] = env.camera_id
            params[field] = value
            reply, problem = try_call(c, method, params, timeout=2.0)
            if reply is None:
                bad.append(f"{method} {field}={label}: {problem}")
                c.close()          # a call that runs is canceled with its connection
                c = env.root()
                continue
            got_field = reply.data.get("field")
            if reply.code != -32602 or got_field != field:
                bad.append(f"{method} {field}={label}: {reply.short() if reply.error else 'accepted'} field={got_field!r}")
    env.check("field_names", not bad,
              f"{total - len(bad)} of {total} integer cases got -32602 with data.field"
              + (f"; wrong: {'; '.join(bad[:8])}" + (f" (+{len(bad) - 8} more)" if len(bad) > 8 else "") if bad else ""))
    reply, problem = try_call(c, "pin.set", {"user": "bmabuse2", "pin": "1" * 65}, timeout=5.0)
    c.close()
    ok = reply is not None and reply.code == 5003 and reply.data.get("reason") == "pin_format"
    env.check("pin_too_long", ok, f"65-digit PIN: {reply.short() if reply else problem}"
              + (f" {reply.error.get('message', '')[:100]!r}" if reply and reply.error else ""))


def state_digest(state):
    """sha256 of the database and its WAL (an absent WAL counts as empty; -shm is an index
    SQLite rebuilds on open and is left out)."""
    out = {}
    for name in ("biometricd.sqlite", "biometricd.sqlite-wal"):
        try:
            with open(os.path.join(state, name), "rb") as f:
                out[name] = hashlib.sha256(f.read()).hexdigest()[:16]
        except FileNotFoundError:
            out[name] = hashlib.sha256(b"").hexdigest()[:16]
    return out


def file_digest(path):
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()[:16]
    except FileNotFoundError:
        return None


def key_case(env):
    """Starts the daemon on the prepared key situation and judges it. Returns (ok, detail)."""
    key_path = os.path.join(env.state, "key")
    key_before = file_digest(key_path)
    db_before = state_digest(env.state)
    env.daemon.start()
    ok_ready, st = env.daemon.wait_ready(15)
    notes, reasons = [], []
    if ok_ready:
        store = st.get("store")
        notes.append(f"kept running; daemon.status store={json.dumps(store)}")
        if not (isinstance(store, dict) and store.get("state") not in (None, "open")):
            reasons.append("daemon.status shows no store problem")
        c = env.root()
        pin, p1 = try_call(c, "pin.verify", {"user": "bmabuse1", "pin": PINS["bmabuse1"]}, 5.0)
        keys, p2 = try_call(c, "key.list", {"user": "bmabuse1"}, 5.0)
        c.close()
        notes.append(f"pin.verify: {pin.short() if pin else p1}; key.list: {keys.short() if keys else p2}")
        if pin is None or pin.error is None:
            reasons.append("pin.verify (store-backed) was not refused with an error")
        if keys is None or keys.error is None:
            reasons.append("key.list (store-backed) was not refused with an error")
        rc = env.daemon.stop()
    else:
        rc = env.daemon.stop()
        log = env.daemon.log_since_start()
        last = [l for l in log.splitlines() if l.strip()][-1:] or [""]
        notes.append(f"refused to start ({st}); last log line {last[0][-200:]!r}")
        if rc == 0 or rc is None:
            reasons.append(f"exit status {rc}")
        if "key" not in log.lower():
            reasons.append("the message does not name the key")
    key_after = file_digest(key_path)
    db_after = state_digest(env.state)
    if key_after != key_before:
        reasons.append("a new key file was created" if key_before is None else "the key file was changed")
    if db_after != db_before:
        reasons.append(f"the database changed ({db_before} -> {db_after})")
    return not reasons, "; ".join(notes + reasons)


def scenario_key(env):
    """The template key goes missing, or is replaced by another one. A user checks the daemon
    neither makes a new key nor touches the database, and either refuses to start naming the key
    or runs showing the problem in daemon.status and refuses store-backed calls. With the right
    key back, the data opens again."""
    key_path = os.path.join(env.state, "key")
    saved = os.path.join(env.work, "key.saved")
    rc = env.daemon.stop()
    if not os.path.exists(key_path):
        env.check("key_missing", False, f"no key file at {key_path} after the first run")
        return
    shutil.copy2(key_path, saved)
    env.info(f"daemon stopped (status {rc}); database {state_digest(env.state)}")
    # (a) missing key
    os.unlink(key_path)
    ok, detail = key_case(env)
    env.check("key_missing", ok, detail)
    if os.path.exists(key_path):
        os.unlink(key_path)   # a key the daemon made must not stay
    # (b) a different key
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, os.urandom(32))
    os.close(fd)
    ok, detail = key_case(env)
    env.check("key_changed", ok, detail)
    # restore
    os.unlink(key_path)
    shutil.copy2(saved, key_path)
    os.chmod(key_path, 0o600)
    env.daemon.start()
    ready, st = env.daemon.wait_ready(20)
    if not ready:
        env.check("key_restored", False, f"daemon with its own key did not start: {st}; {env.daemon.log_tail(300)!r}")
        return
    c = env.root()
    pin, p1 = try_call(c, "pin.verify", {"user": "bmabuse1", "pin": PINS["bmabuse1"]}, 5.0)
    keys, p2 = try_call(c, "key.list", {"user": "bmabuse1"}, 5.0)
    c.close()
    n_keys = len((keys.result or {}).get("keys", [])) if keys and keys.result else None
    ok = pin is not None and (pin.result or {}).get("ok") is True and n_keys == 1
    env.check("key_restored", ok, f"with the right key: pin.verify {pin.short() if pin else p1} "
              f"(ok={(pin.result or {}).get('ok') if pin else None}), key.list {n_keys} key(s) (1 expected); store={json.dumps(st.get('store'))}")


# ---------------------------------------------------------------------------------------------

def ensure_users(env):
    for u in USERS:
        if subprocess.run(["id", "-u", u], capture_output=True).returncode != 0:
            subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", u],
                           check=True, capture_output=True)
            env.created_users.append(u)
            with open(os.path.join(env.work, "users"), "a") as f:
                f.write(u + "\n")


def remove_users(env):
    for u in env.created_users:
        subprocess.run(["userdel", u], capture_output=True)
    env.created_users = []


def find_worker_python(env):
    """A python3 the attacker may run (this one may live under /root, e.g. pyenv)."""
    for candidate in [sys.executable, "/usr/bin/python3", shutil.which("python3") or ""]:
        if candidate and subprocess.run(["runuser", "-u", ATTACKER, "--", candidate, "-c", "pass"],
                                        capture_output=True, timeout=20).returncode == 0:
            return candidate
    raise RuntimeError(f"no python3 that '{ATTACKER}' may run (tried {sys.executable}, /usr/bin/python3)")


def setup(env):
    """Starts the daemon and stores the data the scenarios use: PINs of nobody and bmabuse1 and
    bmabuse2 (set by root), one key of bmabuse1."""
    env.worker_python = find_worker_python(env)
    os.makedirs(env.state, mode=0o700, exist_ok=True)
    env.daemon.start()
    ok, st = env.daemon.wait_ready(40)
    if not ok:
        raise RuntimeError(f"daemon did not start: {st}; log: {env.daemon.log_tail(600)!r}")
    env.info(f"daemon pid {env.daemon.pid}, version {st.get('version')}, cameras {st.get('cameras')}, "
             f"models missing {st.get('models', {}).get('missing')}, privileged {st.get('privileged')}")
    c = env.root(5.0)
    cams, problem = try_call(c, "camera.list", timeout=5.0)
    env.camera_id = cams.result[0]["id"] if cams and cams.result else None
    for user, pin in PINS.items():
        r, problem = try_call(c, "pin.set", {"user": user, "pin": pin}, 10.0)
        if r is None or r.error:
            raise RuntimeError(f"root's pin.set for {user}: {r.short() if r else problem}")
    r, problem = try_call(c, "key.register", {"user": "bmabuse1", "app_id": "https://example.com", "aaid": "4e4e#4005"}, 10.0)
    if r is None or r.error:
        raise RuntimeError(f"root's key.register for bmabuse1: {r.short() if r else problem}")
    c.close()
    env.rss_start = settled_rss(env.daemon.pid)


def settled_rss(pid, timeout=10.0):
    """RSS (MiB) once it stops moving (the face models load in the background after start)."""
    last, stable_since, t0 = None, now(), now()
    while now() - t0 < timeout:
        v = rss_mib(pid)
        if v is None:
            return None
        if last is None or abs(v - last) > 1.0:
            last, stable_since = v, now()
        elif now() - stable_since >= 1.0:
            return v
        time.sleep(0.1)
    return last


SCENARIOS = [
    ("connection_flood", scenario_connection_flood),
    ("descriptor_limit", scenario_descriptor_limit),
    ("pin_flood", scenario_pin_flood),
    ("idless_calls", scenario_idless_calls),
    ("buffer_flood", scenario_buffer_flood),
    ("storage_quota", scenario_storage_quota),
    ("image_bombs", scenario_image_bombs),
    ("field_names", scenario_field_names),
    ("key", scenario_key),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", nargs=2, metavar=("KIND", "PARAMS"), help=argparse.SUPPRESS)
    ap.add_argument("--workdir", help="temporary folder (mode 0755) made by run.sh")
    ap.add_argument("--bin", help="folder with the release biometricd")
    ap.add_argument("--models", help="models folder")
    ap.add_argument("--camera", help="replay camera spec")
    ap.add_argument("--only", help="comma-separated scenario names (debugging)")
    args = ap.parse_args()
    if args.worker:
        worker_main(*args.worker)
        return 0
    if os.geteuid() != 0:
        print("FAIL setup: run as root (starts the daemon privileged, creates users, runs flooders as nobody)")
        print("0 passed, 1 failed")
        return 1
    env = Env(args)
    shutil.copy(os.path.abspath(__file__), env.worker_script)
    os.chmod(env.worker_script, 0o644)
    signal.signal(signal.SIGTERM, interrupted)
    only = set(args.only.split(",")) if args.only else None
    rss_before_key = None
    try:
        ensure_users(env)
        try:
            setup(env)
        except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
            env.check("setup", False, str(e))
            return finish(env)
        for name, run in SCENARIOS:
            if only and name not in only:
                continue
            if now() - env.t0 > TIME_BUDGET_S:
                env.check(name, False, f"not run: the suite's {TIME_BUDGET_S:.0f} s budget is used up")
                continue
            if name == "key":
                rss_before_key = rss_mib(env.daemon.pid) if env.daemon.alive() else None
            if not env.ensure_daemon():
                env.check(name, False, f"not run: the daemon does not answer and could not be restarted ({env.daemon_broken})")
                continue
            print(f"---- {name} ({now() - env.t0:.0f} s)", flush=True)
            t0 = now()
            try:
                run(env)
            except Exception as e:  # a broken scenario is a failure, and the rest still runs
                env.check(name, False, f"scenario crashed: {type(e).__name__}: {e}")
                import traceback
                traceback.print_exc()
            finally:
                for w in env.workers:
                    w.kill()
                env.workers = []
            env.info(f"({now() - t0:.1f} s)")
        if rss_before_key is None and env.daemon.alive():
            rss_before_key = rss_mib(env.daemon.pid)
        env.rss_end = rss_before_key
        return finish(env)
    except KeyboardInterrupt:
        env.check("suite", False, "interrupted")
        return finish(env)
    finally:
        for w in env.workers:
            w.kill()
        for d in env.daemons:
            d.stop(5)
        remove_users(env)


def interrupted(*_):
    raise KeyboardInterrupt()


def finish(env):
    def f(v):
        return "?" if v is None else f"{v:.0f} MiB"
    print(f"RSS of the daemon: {f(env.rss_start)} before the floods, {f(env.rss_end)} after them "
          f"({now() - env.t0:.0f} s in all)")
    print(f"{env.passed} passed, {env.failed} failed", flush=True)
    return 0 if env.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
