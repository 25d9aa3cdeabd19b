"""Round-trip timings of biometricd's own FIDO2 authenticator over its test socket
(test_fido_socket), against a socketpair baseline in the same run (bench.py's): CTAPHID PING, and
getAssertion with a cached pinUvAuthToken (up=false, no user prompt) — which, unlike the test
authenticator's in-memory store, commits the signature counter to the daemon's SQLite store
(synchronous=FULL) before it signs. The token comes from clientPIN on the daemon PIN; the one
makeCredential before the loop needs presence, a face: the enrolled person's live clip (models
and shared data needed, as test_daemon.py).

    BIOMETRICD=.build/release/biometricd python3 Tests/fido/bench_daemon.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import measure, socketpair_baseline  # noqa: E402
from test_daemon import BINARY, Daemon  # noqa: E402
from test_fido import open_device  # noqa: E402

from fido2.ctap2 import Ctap2, ClientPin  # noqa: E402
from fido2.ctap2.pin import PinProtocolV2  # noqa: E402

PIN = "482913"


def main():
    baseline = socketpair_baseline()
    daemon = Daemon()
    try:
        # makeCredential needs presence: a face, once (the live clip of the enrolled person).
        daemon.call("face.enroll", {"user": "tran", "camera": "replay0", "frames": 2, "countdown_s": 0,
                                    "quality_threshold": 20})
        daemon.call("pin.set", {"user": "tran", "pin": PIN})
        device = open_device(daemon.fido)
        ping = measure(lambda: device.ping(b"x" * 57))
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
                                                       pin_uv_param=param, pin_uv_protocol=2), rounds=500)
        device.close()
    finally:
        daemon.stop()
    print(f"binary: {BINARY}")
    print(f"{'':48} {'median µs':>10} {'p90 µs':>10} {'× baseline':>11}")
    for name, (median, p90) in [("socketpair round trip (baseline)", baseline), ("CTAPHID PING (64 B each way)", ping),
                                ("getAssertion, cached token, up=false (fsync)", assertion)]:
        print(f"{name:48} {median:10.1f} {p90:10.1f} {median / baseline[0]:11.1f}")


if __name__ == "__main__":
    main()
