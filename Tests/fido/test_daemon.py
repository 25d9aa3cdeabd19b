"""python-fido2 (PyPI fido2 2.x) against biometricd itself: the daemon's FIDO2 authenticator over
its test socket (test_fido_socket), with user verification by a live face — the enrolled
person's live clip (shared data video/tran_live) on a replay camera — and clientPIN on the
daemon's own PIN. Skipped without the face models or the clip.

    BIOMETRICD=.build/debug/biometricd python3 -m unittest Tests/fido/test_daemon.py

Tests/fido/run.sh runs it after test_fido.py.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_fido import ORIGIN, RP, PinInteraction, open_device  # noqa: E402

from fido2.client import ClientError, DefaultClientDataCollector, Fido2Client  # noqa: E402
from fido2.ctap import CtapError  # noqa: E402
from fido2.ctap2 import Ctap2, ClientPin, CredentialManagement  # noqa: E402
from fido2.server import Fido2Server  # noqa: E402
from fido2.webauthn import (  # noqa: E402
    PublicKeyCredentialUserEntity,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BINARY = os.environ.get("BIOMETRICD", os.path.join(ROOT, ".build/debug/biometricd"))
MODELS = os.path.join(ROOT, "models")
LIVE = os.path.join(ROOT, "..", "shared", "data", "video", "tran_live", "video.mp4")
PIN = "482913"


class Daemon:
    """A biometricd in a temporary folder (as nobody when run as root: a root daemon is a
    production instance and refuses the test socket), the FIDO user fixed by fido_user."""

    def __init__(self, cameras=None):
        self.dir = tempfile.mkdtemp(prefix="bmd-fido-")
        os.chmod(self.dir, 0o755)
        self.socket = os.path.join(self.dir, "biometricd.sock")
        self.fido = os.path.join(self.dir, "fido.sock")
        self.log = open(os.path.join(self.dir, "daemon.log"), "w+")
        cameras = [f"replay:{LIVE}?fps=30&loop=true"] if cameras is None else cameras
        args = [BINARY, "--socket", self.socket, "--state-dir", os.path.join(self.dir, "state"), "--models", MODELS,
                *[arg for camera in cameras for arg in ("--camera", camera)], "--set", f"test_fido_socket={self.fido}",
                "--set", "fido_user=tran", "--set", "face_camera=replay0", "--set", "pin_max_retries=5"]
        if os.geteuid() == 0:
            shutil.chown(self.dir, "nobody")
            args = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"] + args
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.monotonic() + 30
        while not (os.path.exists(self.socket) and os.path.exists(self.fido)):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("biometricd did not start:\n" + self.text())
            time.sleep(0.05)
        self.next_id = 0

    def text(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def call(self, method, params, timeout=120):
        """One JSON-RPC call (events skipped); the result, or raises with the error."""
        self.next_id += 1
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(self.socket)
            s.sendall((json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}) + "\n").encode())
            buffer = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    raise RuntimeError(f"{method}: connection closed")
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    message = json.loads(line)
                    if message.get("id") != self.next_id:
                        continue
                    if "error" in message:
                        raise RuntimeError(f"{method}: {message['error']}")
                    return message["result"]

    def stop(self):
        self.process.terminate()
        self.process.wait(10)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@unittest.skipUnless(os.path.exists(os.path.join(MODELS, "dlib_face_recognition_resnet_model_v1.dat"))
                     and os.path.exists(os.path.join(MODELS, "MiniFASNetV2.onnx")) and os.path.exists(LIVE),
                     "face models (scripts/setup.sh) or the tran_live clip missing")
class DaemonFidoTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(BINARY, os.X_OK):
            raise unittest.SkipTest(f"{BINARY} missing: swift build --product biometricd")
        cls.daemon = Daemon()
        cls.daemon.call("face.enroll", {"user": "tran", "camera": "replay0", "frames": 2, "countdown_s": 0,
                                        "quality_threshold": 20})
        cls.daemon.call("pin.set", {"user": "tran", "pin": PIN})

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def device(self):
        device = open_device(self.daemon.fido)
        self.addCleanup(device.close)
        return device

    def client(self, pin=PIN):
        return Fido2Client(self.device(), DefaultClientDataCollector(ORIGIN), PinInteraction(pin))

    def test_1_info(self):
        info = Ctap2(self.device()).info
        self.assertEqual(info.aaguid, b"biometricd-fido2")
        self.assertTrue(info.options["uv"], "tran has a face enrolled and in the policy")
        self.assertTrue(info.options["clientPin"], "the PIN was set through biometricd")

    def test_2_passkey_with_uv_by_face_verified_by_the_server(self):
        server = Fido2Server(RP)
        options, state = server.register_begin(
            PublicKeyCredentialUserEntity(id=b"tran-1", name="tran", display_name="Tran"),
            resident_key_requirement=ResidentKeyRequirement.REQUIRED,
            user_verification=UserVerificationRequirement.REQUIRED)
        started = time.monotonic()
        response = self.client().make_credential(options.public_key)
        make_ms = (time.monotonic() - started) * 1000
        auth_data = server.register_complete(state, response)
        self.assertTrue(auth_data.is_user_verified())
        self.assertRegex(self.daemon.text(), r"FIDO verification of 'tran'[^\n]*: verified by face")

        # Discoverable: no allowList; the user comes back from the authenticator.
        options, state = server.authenticate_begin(user_verification=UserVerificationRequirement.REQUIRED)
        started = time.monotonic()
        selection = self.client().get_assertion(options.public_key)
        assert_ms = (time.monotonic() - started) * 1000
        result = selection.get_response(0)
        server.authenticate_complete(state, [auth_data.credential_data], result)
        self.assertTrue(result.response.authenticator_data.is_user_verified())
        self.assertEqual(result.response.user_handle, b"tran-1")
        print(f"\npython-fido2 through biometricd, UV by face: make_credential {make_ms:.0f} ms, "
              f"get_assertion {assert_ms:.0f} ms", file=sys.stderr)

    def test_3_client_pin_is_the_daemon_pin_with_its_retries(self):
        client_pin = ClientPin(Ctap2(self.device()))
        before = self.daemon.call("auth.status", {"user": "tran"})["pin_retries_left"]
        token = client_pin.get_pin_token(PIN, ClientPin.PERMISSION.CREDENTIAL_MGMT)
        self.assertEqual(len(token), 32)
        with self.assertRaises(CtapError) as wrong:
            client_pin.get_pin_token("000000", ClientPin.PERMISSION.CREDENTIAL_MGMT)
        self.assertEqual(wrong.exception.code, CtapError.ERR.PIN_INVALID)
        self.assertEqual(self.daemon.call("auth.status", {"user": "tran"})["pin_retries_left"], before - 1,
                         "a wrong CTAP PIN costs a daemon PIN retry")
        self.assertEqual(client_pin.get_pin_retries()[0], before - 1)
        # The right one clears the count, for both.
        token = client_pin.get_pin_token(PIN, ClientPin.PERMISSION.CREDENTIAL_MGMT)
        self.assertEqual(self.daemon.call("auth.status", {"user": "tran"})["pin_retries_left"], before)
        credentials = CredentialManagement(Ctap2(self.device()), client_pin.protocol, token)
        rps = credentials.enumerate_rps()
        self.assertIn("example.com", [rp[CredentialManagement.RESULT.RP]["id"] for rp in rps])

    def test_4_setting_the_pin_over_ctap_is_refused(self):
        with self.assertRaises(CtapError) as refused:
            ClientPin(Ctap2(self.device())).change_pin(PIN, "135790")
        self.assertEqual(refused.exception.code, CtapError.ERR.NOT_ALLOWED)


if __name__ == "__main__":
    unittest.main()
