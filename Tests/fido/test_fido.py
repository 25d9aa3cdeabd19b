"""python-fido2 (PyPI fido2 2.x) against biometricd's FIDO2 authenticator, through the test
transport: the CTAPHID report stream over a Unix SOCK_SEQPACKET socket, spoken by python-fido2's
own CtapHidDevice through a custom connection class. Each test starts a fresh
fido-test-authenticator (BiometricFIDO with a user verifier the test drives through a control
file), so no state leaks between tests.

    FIDO_TEST_AUTHENTICATOR=.build/debug/fido-test-authenticator python3 -m unittest Tests/fido/test_fido.py

Tests/fido/run.sh builds the binary and runs this.
"""

import os
import random
import socket
import struct
import subprocess
import tempfile
import threading
import time
import unittest
from hashlib import sha256

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from fido2 import cbor
from fido2.attestation import PackedAttestation, AttestationType
from fido2.client import ClientError, DefaultClientDataCollector, Fido2Client, UserInteraction
from fido2.ctap import CtapError, STATUS
from fido2.ctap2 import Ctap2, ClientPin, CredentialManagement
from fido2.ctap2.pin import PinProtocolV1, PinProtocolV2
from fido2.hid import CtapHidDevice, CTAPHID
from fido2.hid.base import CtapHidConnection, HidDescriptor
from fido2.server import Fido2Server
from fido2.utils import websafe_encode
from fido2.webauthn import (
    PublicKeyCredentialRpEntity,
    PublicKeyCredentialUserEntity,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

BINARY = os.environ.get("FIDO_TEST_AUTHENTICATOR", ".build/debug/fido-test-authenticator")
# FIDO_TEST_TRANSPORT=uhid (Tests/fido/vm.sh, in a VM with /dev/uhid): each authenticator is a real
# HID device and python-fido2 talks to its hidraw node through its own Linux backend.
UHID = os.environ.get("FIDO_TEST_TRANSPORT", "socket") == "uhid"
CBOR_FUZZ_COUNT = int(os.environ.get("FIDO_TEST_CBOR_COUNT", "100000"))
PIN = "482913"
RP = PublicKeyCredentialRpEntity(id="example.com", name="Example")
ORIGIN = "https://example.com"


class SocketConnection(CtapHidConnection):
    """One 64-byte HID report per SOCK_SEQPACKET packet, each way (what hidraw carries)."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.connect(path)
        self.sock.settimeout(15)

    def write_packet(self, data):
        self.sock.send(data)

    def read_packet(self):
        return self.sock.recv(64)

    def close(self):
        self.sock.close()


def open_device(path):
    descriptor = HidDescriptor(path, 0x1209, 0x000B, 64, 64, "biometricd test authenticator", None)
    return CtapHidDevice(descriptor, SocketConnection(path))


class PinInteraction(UserInteraction):
    def __init__(self, pin=PIN):
        self.pin = pin
        self.up_prompts = 0

    def prompt_up(self):
        self.up_prompts += 1

    def request_pin(self, permissions, rp_id):
        return self.pin


class AuthenticatorProcess:
    def __init__(self, pin=PIN, retries=8, control="uv=face up=present"):
        self.dir = tempfile.TemporaryDirectory(prefix="fido-test-")
        self.socket = os.path.join(self.dir.name, "hid.sock")
        self.control = os.path.join(self.dir.name, "control")
        self.set(control)
        self.devices = []
        transport = ["--uhid"] if UHID else ["--socket", self.socket]
        args = [BINARY, *transport, "--control", self.control, "--pin-retries", str(retries)]
        if pin:
            args += ["--pin", pin]
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        line = self.process.stdout.readline().decode()
        if not line.startswith("ready"):
            raise RuntimeError("authenticator did not start: " + line + self.process.stderr.read().decode())
        self.hidraw = self.find_hidraw() if UHID else None

    def find_hidraw(self, timeout=10):
        """The hidraw node of this process's device (the only 1209:000B device: tests run one at a time)."""
        from fido2.hid.linux import list_descriptors

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for d in list_descriptors():
                if (d.vid, d.pid) == (0x1209, 0x000B):
                    return d.path
            time.sleep(0.05)
        raise RuntimeError("no hidraw node for the uhid device")

    def set(self, control):
        with open(self.control, "w") as f:
            f.write(control)

    def device(self):
        if UHID:
            from fido2.hid import open_device as open_hidraw

            device = open_hidraw(self.hidraw)
        else:
            device = open_device(self.socket)
        self.devices.append(device)
        return device

    def alive(self):
        return self.process.poll() is None

    def stop(self):
        for device in self.devices:
            device.close()
        self.process.terminate()
        self.process.wait(5)
        if self.hidraw:  # SIGTERM destroys the device: wait for its node to go (the next test's is new)
            deadline = time.monotonic() + 5
            while os.path.exists(self.hidraw) and time.monotonic() < deadline:
                time.sleep(0.05)
        self.process.stdout.close()
        self.process.stderr.close()
        self.dir.cleanup()


class FidoTestCase(unittest.TestCase):
    def setUp(self):
        self.auth = AuthenticatorProcess()
        self.addCleanup(self.auth.stop)

    def client(self, interaction=None):
        return Fido2Client(self.auth.device(), DefaultClientDataCollector(ORIGIN), interaction or PinInteraction())

    def register(self, server, user_id=b"user-1", name="alice", credentials=None,
                 resident=ResidentKeyRequirement.DISCOURAGED, client=None):
        options, state = server.register_begin(
            PublicKeyCredentialUserEntity(id=user_id, name=name, display_name=name.title()),
            credentials=credentials,
            resident_key_requirement=resident,
            user_verification=UserVerificationRequirement.REQUIRED,
        )
        response = (client or self.client()).make_credential(options.public_key)
        return server.register_complete(state, response), response


class RegistrationTests(FidoTestCase):
    def test_register_and_authenticate_with_uv_required(self):
        server = Fido2Server(RP)
        auth_data, response = self.register(server)
        self.assertTrue(auth_data.is_user_verified())
        self.assertTrue(auth_data.is_user_present())
        self.assertEqual(auth_data.credential_data.aaguid, b"biometricd-test!")
        # Packed attestation with a one-time certificate (x5c), verified by python-fido2's own
        # attestation code, which also checks the certificate's FIDO fields and AAGUID extension.
        att = response.response.attestation_object
        self.assertEqual(att.fmt, "packed")
        client_data_hash = sha256(bytes(response.response.client_data)).digest()
        result = PackedAttestation().verify(att.att_stmt, att.auth_data, client_data_hash)
        self.assertEqual(result.attestation_type, AttestationType.BASIC)
        self.assertEqual(len(result.trust_path), 1)
        certificate = x509.load_der_x509_certificate(result.trust_path[0])
        self.assertEqual(certificate.issuer, certificate.subject, "self-signed")
        certificate.public_key().verify(certificate.signature, certificate.tbs_certificate_bytes,
                                        ec.ECDSA(certificate.signature_hash_algorithm))
        # The attestation key is not the credential key, and a second credential (another RP user
        # here) gets another key and certificate: nothing links the two.
        credential_key = auth_data.credential_data.public_key
        attestation_point = certificate.public_key().public_numbers()
        self.assertNotEqual((credential_key[-2], credential_key[-3]), (attestation_point.x.to_bytes(32, "big"),
                                                                        attestation_point.y.to_bytes(32, "big")))
        _, second = self.register(Fido2Server(RP))
        second_att = second.response.attestation_object
        second_certificate = second_att.att_stmt["x5c"][0]
        self.assertNotEqual(second_certificate, result.trust_path[0])
        self.assertNotEqual(x509.load_der_x509_certificate(second_certificate).public_key().public_numbers(),
                            attestation_point)

        credentials = [auth_data.credential_data]
        previous = 0
        for _ in range(2):
            options, state = server.authenticate_begin(credentials, user_verification=UserVerificationRequirement.REQUIRED)
            selection = self.client().get_assertion(options.public_key)
            result = selection.get_response(0)
            server.authenticate_complete(state, credentials, result)
            self.assertTrue(result.response.authenticator_data.is_user_verified())
            self.assertGreater(result.response.authenticator_data.counter, previous)
            previous = result.response.authenticator_data.counter
            counter = result.response.authenticator_data.counter
        # python-fido2 also probes the allowList with silent (up=false) assertions; each counts.
        self.assertGreaterEqual(counter, 2)

    def test_prf_over_hmac_secret(self):
        server = Fido2Server(RP)
        options, state = server.register_begin(
            PublicKeyCredentialUserEntity(id=b"user-1", name="alice", display_name="Alice"),
            user_verification=UserVerificationRequirement.REQUIRED, extensions={"prf": {}})
        response = self.client().make_credential(options.public_key)
        auth_data = server.register_complete(state, response)
        self.assertTrue(response.client_extension_results["prf"]["enabled"])
        credentials = [auth_data.credential_data]

        def prf(salt):
            options, state = server.authenticate_begin(
                credentials, user_verification=UserVerificationRequirement.REQUIRED,
                extensions={"prf": {"eval": {"first": websafe_encode(salt)}}})
            result = self.client().get_assertion(options.public_key).get_response(0)
            server.authenticate_complete(state, credentials, result)
            return result.client_extension_results["prf"]["results"]["first"]

        first = prf(b"\1" * 32)
        self.assertTrue(first)
        self.assertEqual(prf(b"\1" * 32), first, "the same salt gives the same secret")
        self.assertNotEqual(prf(b"\2" * 32), first)

    def test_uv_by_a_stranger_fails(self):
        self.auth.set("uv=deny up=present")
        with self.assertRaises(ClientError):
            self.register(Fido2Server(RP))

    def test_discoverable_credentials_and_exclude_list(self):
        server = Fido2Server(RP)
        alice, _ = self.register(server, b"alice", "alice", resident=ResidentKeyRequirement.REQUIRED)
        self.register(server, b"bob", "bob", resident=ResidentKeyRequirement.REQUIRED)
        options, state = server.authenticate_begin(user_verification=UserVerificationRequirement.REQUIRED)
        selection = self.client().get_assertion(options.public_key)
        responses = selection.get_assertions()
        self.assertEqual(len(responses), 2)
        self.assertEqual({r.user["id"] for r in responses}, {b"alice", b"bob"})
        server.authenticate_complete(state, [alice.credential_data], selection.get_response(
            [r.user["id"] for r in responses].index(b"alice")))
        # A second credential for an excluded authenticator is refused.
        with self.assertRaises(ClientError) as refused:
            self.register(server, b"alice", "alice", credentials=[alice.credential_data])
        self.assertEqual(refused.exception.code, ClientError.ERR.DEVICE_INELIGIBLE)

    def test_cancel_during_uv(self):
        self.auth.set("uv=wait up=present")
        device = self.auth.device()
        ctap = Ctap2(device)
        event = threading.Event()
        statuses = []
        threading.Timer(0.4, event.set).start()
        started = time.monotonic()
        with self.assertRaises(CtapError) as cancelled:
            ctap.make_credential(
                b"\1" * 32, {"id": "example.com"}, {"id": b"u", "name": "u"}, [{"type": "public-key", "alg": -7}],
                options={"uv": True}, event=event, on_keepalive=statuses.append)
        self.assertEqual(cancelled.exception.code, CtapError.ERR.KEEPALIVE_CANCEL)
        self.assertLess(time.monotonic() - started, 3)
        self.assertIn(STATUS.UPNEEDED, statuses)
        self.assertEqual(device.ping(b"still here"), b"still here")


class PinTests(FidoTestCase):
    def test_pin_token_in_both_protocols(self):
        ctap = Ctap2(self.auth.device())
        self.assertEqual(ctap.info.options.get("clientPin"), True)
        self.assertEqual(ctap.info.pin_uv_protocols, [2, 1])
        for protocol in (PinProtocolV2(), PinProtocolV1()):
            token = ClientPin(ctap, protocol).get_pin_token(PIN, ClientPin.PERMISSION.MAKE_CREDENTIAL, "example.com")
            cdh = os.urandom(32)
            response = ctap.make_credential(
                cdh, {"id": "example.com"}, {"id": b"u", "name": "u"}, [{"type": "public-key", "alg": -7}],
                pin_uv_param=protocol.authenticate(token, cdh), pin_uv_protocol=protocol.VERSION)
            self.assertTrue(response.auth_data.is_user_verified())

    def test_wrong_pins_until_pin_blocked(self):
        strict = AuthenticatorProcess(retries=3)
        self.addCleanup(strict.stop)
        ctap = Ctap2(strict.device())
        pin = ClientPin(ctap)
        codes = []
        for _ in range(3):
            with self.assertRaises(CtapError) as wrong:
                pin.get_pin_token("000000")
            codes.append(wrong.exception.code)
        self.assertEqual(codes, [CtapError.ERR.PIN_INVALID, CtapError.ERR.PIN_INVALID, CtapError.ERR.PIN_BLOCKED])
        self.assertEqual(pin.get_pin_retries()[0], 0)
        with self.assertRaises(CtapError) as blocked:
            pin.get_pin_token(PIN)
        self.assertEqual(blocked.exception.code, CtapError.ERR.PIN_BLOCKED)

    def test_three_wrong_pins_in_a_row_block_until_power_cycle(self):
        pin = ClientPin(Ctap2(self.auth.device()))
        codes = []
        for _ in range(3):
            with self.assertRaises(CtapError) as wrong:
                pin.get_pin_token("000000")
            codes.append(wrong.exception.code)
        self.assertEqual(codes, [CtapError.ERR.PIN_INVALID, CtapError.ERR.PIN_INVALID, CtapError.ERR.PIN_AUTH_BLOCKED])
        self.assertEqual(pin.get_pin_retries()[0], 5)

    def test_credential_management(self):
        server = Fido2Server(RP)
        other = Fido2Server(PublicKeyCredentialRpEntity(id="other.example.com", name="Other"))
        self.register(server, b"alice", "alice", resident=ResidentKeyRequirement.REQUIRED)
        self.register(server, b"bob", "bob", resident=ResidentKeyRequirement.REQUIRED)
        options, state = other.register_begin(
            PublicKeyCredentialUserEntity(id=b"carol", name="carol", display_name="Carol"),
            resident_key_requirement=ResidentKeyRequirement.REQUIRED,
            user_verification=UserVerificationRequirement.REQUIRED)
        Fido2Client(self.auth.device(), DefaultClientDataCollector("https://other.example.com"), PinInteraction()) \
            .make_credential(options.public_key)

        ctap = Ctap2(self.auth.device())
        protocol = PinProtocolV2()
        token = ClientPin(ctap, protocol).get_pin_token(PIN, ClientPin.PERMISSION.CREDENTIAL_MGMT)
        manager = CredentialManagement(ctap, protocol, token)
        self.assertEqual(manager.get_metadata()[CredentialManagement.RESULT.EXISTING_CRED_COUNT], 3)
        rps = manager.enumerate_rps()
        self.assertEqual(sorted(rp[CredentialManagement.RESULT.RP]["id"] for rp in rps), ["example.com", "other.example.com"])
        creds = manager.enumerate_creds(sha256(b"example.com").digest())
        users = sorted(c[CredentialManagement.RESULT.USER]["name"] for c in creds)
        self.assertEqual(users, ["alice", "bob"])
        bob = next(c for c in creds if c[CredentialManagement.RESULT.USER]["id"] == b"bob")
        manager.delete_cred(bob[CredentialManagement.RESULT.CREDENTIAL_ID])
        self.assertEqual(manager.get_metadata()[CredentialManagement.RESULT.EXISTING_CRED_COUNT], 2)
        remaining = manager.enumerate_creds(sha256(b"example.com").digest())
        self.assertEqual([c[CredentialManagement.RESULT.USER]["id"] for c in remaining], [b"alice"])


class MalformedInputTests(FidoTestCase):
    """≥ 100,000 malformed HID frames and ≥ 100,000 malformed CBOR requests: each is answered with
    a CTAPHID or CTAP2 error (or ignored, where CTAPHID says so), and the authenticator survives."""

    HID_ERRORS = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x0B, 0x7F}

    def raw(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.connect(self.auth.socket)
        s.settimeout(10)
        self.addCleanup(s.close)
        return s

    @unittest.skipIf(UHID, "raw frames go through the test socket (the same bytes hidraw carries)")
    def test_malformed_hid_frames(self):
        rng = random.Random(0xF1D0)
        s = self.raw()
        frames = 0
        errors = 0
        answered = 0
        batch = 200
        for round_ in range(100_000 // batch + 1):
            for _ in range(batch):
                kind = rng.randrange(4)
                frame = bytearray(rng.randbytes(64))
                if kind == 0:
                    frame[0:4] = b"\xff\xff\xff\xff"
                elif kind == 1:
                    frame[4] = 0x80 | rng.choice([0x01, 0x03, 0x06, 0x08, 0x10, 0x11, 0x3B, 0x3F, 0x7F])
                elif kind == 2:
                    frame = frame[: rng.randrange(1, 70)]  # (an empty SEQPACKET message reads as end of stream)
                s.send(bytes(frame))
                frames += 1
            # A sync point: INIT on the broadcast channel is always answered, after what came before.
            nonce = struct.pack(">Q", round_)
            s.send((b"\xff\xff\xff\xff\x86\x00\x08" + nonce).ljust(64, b"\0"))
            while True:
                report = s.recv(64)
                self.assertEqual(len(report), 64)
                answered += 1
                if report[4] == 0xBF:
                    errors += 1
                    self.assertIn(report[7], self.HID_ERRORS)
                if report[0:7] == b"\xff\xff\xff\xff\x86\x00\x11" and report[7:15] == nonce:
                    break
        self.assertGreaterEqual(frames, 100_000)
        self.assertGreater(errors, 10_000)
        self.assertTrue(self.auth.alive())
        self.assertEqual(self.auth.device().ping(b"alive"), b"alive")
        print(f"\n  {frames} HID frames, {answered} reports back, {errors} CTAPHID errors")

    def test_malformed_cbor_requests(self):
        rng = random.Random(0xC0B0)
        device = self.auth.device()
        seeds = [
            bytes([0x01]) + cbor.encode({1: b"\1" * 32, 2: {"id": "example.com"}, 3: {"id": b"u"},
                                          4: [{"alg": -7, "type": "public-key"}], 7: {"up": False}}),
            bytes([0x02]) + cbor.encode({1: "example.com", 2: b"\1" * 32, 3: [{"id": b"\0" * 63, "type": "public-key"}]}),
            bytes([0x06]) + cbor.encode({1: 2, 2: 9, 3: {1: 2, -1: 1}, 6: b"\0" * 32, 9: 3}),
            bytes([0x0A]) + cbor.encode({1: 4, 2: {1: b"\0" * 32}, 3: 2, 4: b"\0" * 32}),
            bytes([0x04]), bytes([0x08]), bytes([0x0B]),
        ]
        self.auth.set("uv=deny up=deny")
        statuses = set()
        started = time.monotonic()
        for i in range(CBOR_FUZZ_COUNT):
            message = bytearray(rng.choice(seeds))
            for _ in range(rng.randrange(1, 4)):
                at = rng.randrange(len(message))
                op = rng.randrange(3)
                if op == 0:
                    message[at] = rng.randrange(256)
                elif op == 1 and len(message) > 1:
                    del message[at]
                else:
                    message.insert(at, rng.randrange(256))
            response = device.call(CTAPHID.CBOR, bytes(message))
            self.assertGreaterEqual(len(response), 1)
            statuses.add(response[0])
            if response[0] == 0:
                cbor.decode(response[1:]) if len(response) > 1 else None
        self.assertTrue(self.auth.alive())
        self.assertGreater(len(statuses), 5)
        self.assertEqual(Ctap2(device).get_info().aaguid, b"biometricd-test!")
        print(f"\n  {CBOR_FUZZ_COUNT} CBOR requests in {time.monotonic() - started:.1f} s, statuses {sorted(statuses)}")


if __name__ == "__main__":
    unittest.main()
