#!/usr/bin/env python3
"""One JSON-RPC call to biometricd (SPEC section 3), for the few knobs authctl does not expose
(timeout_ms and quality_threshold of face.enroll, blink_timeout_ms of face.verify).

    rpc.py METHOD '{"param": ...}' [SOCKET]

Prints every notification and then the response, one compact JSON object per line (like authctl --json).
Exit status like authctl: 0 result, 1 error reason in the "refused" group, 4 other error,
3 daemon unreachable. A timestamp "t" (seconds since the call) is added to each printed line.
"""
import json
import socket
import sys
import time

REFUSED = {1003, 3001, 3002, 3003, 3004, 4001, 4002, 5001, 5002}


def main():
    method, params = sys.argv[1], json.loads(sys.argv[2])
    path = sys.argv[3] if len(sys.argv) > 3 else "/run/biometricd/biometricd.sock"
    t0 = time.monotonic()
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
    except OSError as e:
        print(f"rpc: cannot reach biometricd at {path}: {e}", file=sys.stderr)
        return 3
    s.sendall((json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}) + "\n").encode())
    for line in s.makefile("r", encoding="utf-8"):
        msg = json.loads(line)
        stamp = round(time.monotonic() - t0, 2)
        if msg.get("method") == "event":
            print(json.dumps(dict(msg["params"], t=stamp), sort_keys=True, separators=(",", ":")), flush=True)
            continue
        if msg.get("id") != 1:
            continue
        if "error" in msg:
            err = msg["error"]
            print(json.dumps({"error": err, "t": stamp}, sort_keys=True, separators=(",", ":")), flush=True)
            print(f"rpc: {err.get('message')} ({(err.get('data') or {}).get('reason', err.get('code'))})", file=sys.stderr)
            return 1 if err.get("code") in REFUSED else 4
        print(json.dumps(dict(msg["result"], t=stamp) if isinstance(msg["result"], dict) else msg["result"],
                         sort_keys=True, separators=(",", ":")), flush=True)
        return 0
    print("rpc: connection closed without an answer", file=sys.stderr)
    return 4


if __name__ == "__main__":
    sys.exit(main())
