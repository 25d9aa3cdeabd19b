"""Round-trip timings of the FIDO2 authenticator over the test socket, against a baseline in the
same run: a 64-byte SOCK_SEQPACKET socketpair round trip to an echoing child process (the kernel
and Python cost that every CTAPHID exchange below also pays).

    FIDO_TEST_AUTHENTICATOR=.build/release/fido-test-authenticator python3 Tests/fido/bench.py

Prints the median and p90 of each, in microseconds, and the ratio of each median to the baseline's.
"""

import os
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_fido import AuthenticatorProcess, PIN  # noqa: E402

from fido2.ctap2 import Ctap2, ClientPin  # noqa: E402
from fido2.ctap2.pin import PinProtocolV2  # noqa: E402

ROUNDS = 2000


def measure(fn, rounds=ROUNDS):
    for _ in range(50):
        fn()
    samples = []
    for _ in range(rounds):
        t = time.perf_counter_ns()
        fn()
        samples.append((time.perf_counter_ns() - t) / 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.9)]


def socketpair_baseline():
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:
        parent.close()
        while True:
            data = child.recv(64)
            if not data:
                os._exit(0)
            child.send(data)
    child.close()
    packet = b"\x01" * 64

    def round_trip():
        parent.send(packet)
        parent.recv(64)

    result = measure(round_trip)
    parent.close()
    os.waitpid(pid, 0)
    return result


def main():
    baseline = socketpair_baseline()
    auth = AuthenticatorProcess()
    try:
        device = auth.device()
        ping = measure(lambda: device.ping(b"x" * 57))  # one report each way
        ctap = Ctap2(device)
        protocol = PinProtocolV2()
        token = ClientPin(ctap, protocol).get_pin_token(PIN, ClientPin.PERMISSION.MAKE_CREDENTIAL
                                                        | ClientPin.PERMISSION.GET_ASSERTION, "example.com")
        cdh = b"\x07" * 32
        made = ctap.make_credential(cdh, {"id": "example.com"}, {"id": b"u", "name": "u"},
                                    [{"type": "public-key", "alg": -7}],
                                    pin_uv_param=protocol.authenticate(token, cdh), pin_uv_protocol=2)
        allow = [{"type": "public-key", "id": made.auth_data.credential_data.credential_id}]
        param = protocol.authenticate(token, cdh)
        assertion = measure(lambda: ctap.get_assertion("example.com", cdh, allow, options={"up": False},
                                                       pin_uv_param=param, pin_uv_protocol=2), rounds=1000)
    finally:
        auth.stop()
    print(f"binary: {os.environ.get('FIDO_TEST_AUTHENTICATOR', '.build/debug/fido-test-authenticator')}")
    print(f"{'':40} {'median µs':>10} {'p90 µs':>10} {'× baseline':>11}")
    for name, (median, p90) in [("socketpair round trip (baseline)", baseline), ("CTAPHID PING (64 B each way)", ping),
                                ("getAssertion, cached token, up=false", assertion)]:
        print(f"{name:40} {median:10.1f} {p90:10.1f} {median / baseline[0]:11.1f}")


if __name__ == "__main__":
    main()
