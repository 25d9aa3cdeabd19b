#!/usr/bin/env python3
"""Independent judge for Tests/pam/fuzz_reply.c: every line the PAM module's reply handler
accepted as a success (hex, one per line) must be, per Python's json module, a JSON-RPC 2.0
response with id 1 whose result.ok is true and result.factor a string (and result.user, when
present, "alice"), with no duplicate decision keys, no NaN/Infinity, valid UTF-8 and no lone surrogates.
Prints "N passed, M failed"."""
import json
import sys


# Keys the verdict depends on: a duplicate of any of them makes the reply ambiguous. Duplicates
# of other keys (duration_ms, tried, ...) cannot change the verdict and are tolerated.
DECISION_KEYS = {"jsonrpc", "id", "result", "error", "method", "ok", "factor", "user"}


class Obj(dict):
    dups = False


def dup_check(pairs):
    o = Obj(pairs)
    keys = [k for k, _ in pairs if k in DECISION_KEYS]
    o.dups = len(keys) != len(set(keys))
    return o


def bad_constant(name):
    raise ValueError("constant " + name)


def no_surrogates(v):
    if isinstance(v, str):
        return not any(0xD800 <= ord(c) <= 0xDFFF for c in v)
    if isinstance(v, list):
        return all(no_surrogates(x) for x in v)
    if isinstance(v, dict):
        return all(no_surrogates(k) and no_surrogates(x) for k, x in v.items())
    return True


def judge(raw):
    text = raw.decode("utf-8")  # strict
    m = json.loads(text, object_pairs_hook=dup_check, parse_constant=bad_constant)
    if not no_surrogates(m):
        return "lone surrogate"
    if not isinstance(m, dict) or m.dups or m.get("jsonrpc") != "2.0" or "method" in m or "error" in m:
        return "not a response"
    if type(m.get("id")) is not int or m["id"] != 1:
        return "wrong id"
    r = m.get("result")
    if not isinstance(r, dict) or r.dups or r.get("ok") is not True or not isinstance(r.get("factor"), str) or not r["factor"]:
        return "not a success"
    if "user" in r and r["user"] != "alice":
        return "wrong user"
    return None


ok = bad = 0
for n, l in enumerate(open(sys.argv[1])):
    raw = bytes.fromhex(l.strip())
    try:
        why = judge(raw)
    except Exception as e:  # noqa: BLE001
        why = "invalid: %s" % e
    if why:
        bad += 1
        if bad <= 20:
            print("ORACLE FAIL (%s): %r" % (why, raw[:300]), file=sys.stderr)
    else:
        ok += 1
print("%d passed, %d failed" % (ok, bad))
sys.exit(1 if bad else 0)
