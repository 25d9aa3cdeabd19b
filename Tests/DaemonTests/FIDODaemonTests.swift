import BiometricClient
import CImaging
@testable import BiometricDaemon
@testable import BiometricFIDO
import BiometricProtocol
import Crypto
import Foundation
import XCTest
import TestRequirements

/// The FIDO2 authenticator of a real biometricd process, over its test socket (the HID report
/// stream a hidraw node carries), with UV by a live face: the enrolled person's live clip on a
/// replay camera passes and signs; after the user's face is re-enrolled from another person the
/// same clip is refused. Prints makeCredential and getAssertion times with UV by face.
final class FIDODaemonTests: XCTestCase {
    static let models = repositoryRoot + "/models"

    /// A host on the test socket: CTAPHID framing by hand (as libfido2 does over hidraw).
    final class HIDHost {
        let fd: Int32
        var channel: UInt32 = 0xffff_ffff
        private(set) var keepalives = 0

        init(path: String) throws {
            fd = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in raw.copyBytes(from: Array(path.utf8) + [0]) }
            let rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard rc == 0 else { throw POSIXError(.ECONNREFUSED) }
        }

        deinit { close(fd) }

        private func read(timeout: Double) -> [UInt8]? {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(timeout * 1000)) > 0 else { return nil }
            var buffer = [UInt8](repeating: 0, count: 128)
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            return n > 0 ? Array(buffer[..<n]) : nil
        }

        func send(_ command: CTAPHIDCommand, _ payload: [UInt8]) {
            for report in CTAPHIDState.frame(channel: channel, command: command, payload: payload) {
                _ = report.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
        }

        /// One request, its answer's command byte and payload (KEEPALIVEs counted and skipped).
        func transact(_ command: CTAPHIDCommand, _ payload: [UInt8], timeout: Double = 60) -> (UInt8, [UInt8])? {
            send(command, payload)
            return receive(timeout: timeout)
        }

        func receive(timeout: Double = 60) -> (UInt8, [UInt8])? {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                guard let first = read(timeout: deadline.timeIntervalSinceNow) else { return nil }
                let cid = first[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                guard cid == channel, first[4] & 0x80 != 0 else { continue }
                if first[4] == 0xbb { keepalives += 1; continue }
                let length = Int(first[5]) << 8 | Int(first[6])
                var data = Array(first[7...].prefix(length))
                while data.count < length, let next = read(timeout: 2) { data += next[5...].prefix(length - data.count) }
                return (first[4], data)
            }
            return nil
        }

        func open() throws {
            let nonce: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
            let reply = try XCTUnwrap(transact(.initialize, nonce, timeout: 5))
            XCTAssertEqual(Array(reply.1.prefix(8)), nonce)
            channel = reply.1[8..<12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        }

        func cbor(_ command: UInt8, _ body: CBORValue) throws -> (CTAPStatus, CBORValue?) {
            let reply = try XCTUnwrap(transact(.cbor, [command] + CBOREncoder.encode(body)))
            XCTAssertEqual(reply.0, 0x90)
            let status = CTAPStatus(rawValue: reply.1.first ?? 0xff) ?? .other
            return (status, reply.1.count > 1 ? try CBORDecoder().decode(Array(reply.1.dropFirst())) : nil)
        }
    }

    func testUVByALiveFaceMakesAndUsesAPasskeyAndAStrangerIsRefused() throws {
        for file in ["dlib_face_recognition_resnet_model_v1.dat", "MiniFASNetV2.onnx", "MiniFASNetV1SE.onnx"]
        where !FileManager.default.fileExists(atPath: Self.models + "/" + file) {
            throw missing("models not installed: run scripts/setup.sh")
        }
        let live = sharedData + "/video/tran_live/video.mp4"
        guard FileManager.default.fileExists(atPath: live) else { throw missing("\(live) missing") }
        let photos = "/tmp/bmd-fido-photo-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: photos, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: photos) }
        try FileManager.default.createSymbolicLink(atPath: photos + "/Tony_Blair_0018.jpg",
                                                   withDestinationPath: lfw + "/Tony_Blair/Tony_Blair_0018.jpg")
        let root = "/tmp/bmd-\(UUID().uuidString.prefix(8))"
        let fidoSocket = root + "/fido.sock"
        let daemon = try DaemonProcess(
            cameras: ["replay:\(live)?fps=30&loop=true", "replay:\(photos)?fps=15&loop=true"],
            extraArguments: ["--models", Self.models, "--set", "test_fido_socket=\(fidoSocket)", "--set", "fido_user=tran",
                             "--set", "face_camera=replay0"],
            // As root the daemon is a production instance, which refuses the test socket.
            root: root, user: geteuid() == 0 ? "nobody" : nil)
        let client = try daemon.client()
        let _: FaceEnrollResult = try client.call(Method.faceEnroll, FaceEnrollParams(
            user: "tran", camera: "replay0", frames: 2, countdownS: 0, qualityThreshold: 20))

        let host = try HIDHost(path: fidoSocket)
        try host.open()
        let (infoStatus, info) = try host.cbor(0x04, .map([]))
        XCTAssertEqual(infoStatus, .success)
        XCTAssertEqual(info?[3]?.bytesValue, FIDOService.aaguid)

        let clientDataHash = [UInt8](repeating: 0x5a, count: 32)
        var started = Date()
        let (made, body) = try host.cbor(0x01, .map([
            .init(1, .bytes(clientDataHash)),
            .init(2, .map([.init("id", "example.com"), .init("name", "Example")])),
            .init(3, .map([.init("id", .bytes([9, 9, 9])), .init("name", "tran")])),
            .init(4, .array([.map([.init("alg", -7), .init("type", "public-key")])])),
            .init(7, .map([.init("rk", true), .init("uv", true)])),
        ]))
        let makeMs = Date().timeIntervalSince(started) * 1000
        XCTAssertEqual(made, .success, daemon.log.suffix(3000).description)
        let authData = try XCTUnwrap(body?[2]?.bytesValue)
        XCTAssertEqual(authData[32] & 0x05, 0x05, "UP and UV")
        XCTAssertGreaterThan(host.keepalives, 0, "KEEPALIVE while the face session ran")

        started = Date()
        let (asserted, assertion) = try host.cbor(0x02, .map([
            .init(1, "example.com"), .init(2, .bytes(clientDataHash)), .init(5, .map([.init("uv", true)])),
        ]))
        let assertMs = Date().timeIntervalSince(started) * 1000
        XCTAssertEqual(asserted, .success, daemon.log.suffix(3000).description)
        let signedData = try XCTUnwrap(assertion?[2]?.bytesValue)
        XCTAssertEqual(signedData[32] & 0x05, 0x05)
        XCTAssertEqual(signedData[33..<37].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }, 1, "the first signature")
        XCTAssertEqual(assertion?[4]?["name"]?.textValue, "tran", "user details after UV")
        print("FIDO through biometricd (test socket, UV by face on the live clip, passive liveness): makeCredential \(Int(makeMs)) ms, getAssertion \(Int(assertMs)) ms")

        // key.list shows it, with how it was verified (the seed's AAID distinction).
        let listed: KeyListResult = try client.call(Method.keyList, UserParams(user: "tran"))
        XCTAssertEqual(listed.keys, [])
        XCTAssertEqual(listed.fidoCredentials.count, 1)
        XCTAssertEqual(listed.fidoCredentials.first?.rpID, "example.com")
        XCTAssertEqual(listed.fidoCredentials.first?.userName, "tran")
        XCTAssertEqual(listed.fidoCredentials.first?.verifiedBy, "face")
        XCTAssertEqual(listed.fidoCredentials.first?.counter, 1)
        XCTAssertTrue(listed.fidoCredentials.first?.publicKey.hasPrefix("-----BEGIN PUBLIC KEY-----") ?? false)

        // Another person's face enrolled as tran's: the live clip no longer verifies.
        let _: DeleteResult = try client.call(Method.userDelete, UserParams(user: "tran"))
        let _: FaceEnrollResult = try client.call(Method.faceEnroll, FaceEnrollParams(
            user: "tran", camera: "replay1", frames: 2, countdownS: 0, qualityThreshold: 20))
        let (refused, _) = try host.cbor(0x01, .map([
            .init(1, .bytes(clientDataHash)),
            .init(2, .map([.init("id", "example.com")])),
            .init(3, .map([.init("id", .bytes([9, 9, 9])), .init("name", "tran")])),
            .init(4, .array([.map([.init("alg", -7), .init("type", "public-key")])])),
            .init(7, .map([.init("rk", true), .init("uv", true)])),
        ]))
        XCTAssertEqual(refused, .uvInvalid)
        XCTAssertTrue(daemon.log.contains("FIDO verification of 'tran' for example.com: denied"), daemon.log.suffix(2000).description)
        XCTAssertTrue(daemon.log.contains("FIDO verification of 'tran' for example.com: verified by face"))
        XCTAssertEqual(daemon.stop(), 0, "a clean stop")
        XCTAssertTrue(daemon.log.contains("FIDO2 authenticator removed"), daemon.log.suffix(1000).description)
        XCTAssertFalse(FileManager.default.fileExists(atPath: fidoSocket), "the device (here its socket) is gone")
    }

    /// CTAPHID_CANCEL while the face session runs (nobody in view): the capture ends at once,
    /// the request answers CTAP2_ERR_KEEPALIVE_CANCEL, and the authenticator answers again.
    func testCancelDuringUVEndsTheFaceSession() throws {
        guard FileManager.default.fileExists(atPath: Self.models + "/dlib_face_recognition_resnet_model_v1.dat") else {
            throw missing("models not installed: run scripts/setup.sh")
        }
        let live = sharedData + "/video/tran_live/video.mp4"
        guard FileManager.default.fileExists(atPath: live) else { throw missing("\(live) missing") }
        // A camera that never shows a face: mid-grey noise.
        let noFace = "/tmp/bmd-fido-empty-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: noFace, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: noFace) }
        var generator = SystemRandomNumberGenerator()
        let pixels = (0..<(320 * 240 * 3)).map { _ in UInt8.random(in: 110...140, using: &generator) }
        var png: UnsafeMutablePointer<UInt8>?
        var length = 0
        XCTAssertEqual(cvis_encode_png(pixels, 320, 240, 3, &png, &length), CVIS_OK)
        try Data(bytes: png!, count: length).write(to: URL(fileURLWithPath: noFace + "/empty.png"))
        cvis_free(png)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: noFace)
        let root = "/tmp/bmd-\(UUID().uuidString.prefix(8))"
        let fidoSocket = root + "/fido.sock"
        let daemon = try DaemonProcess(
            cameras: ["replay:\(live)?fps=30&loop=true", "replay:\(noFace)?fps=15&loop=true"],
            extraArguments: ["--models", Self.models, "--set", "test_fido_socket=\(fidoSocket)", "--set", "fido_user=tran",
                             "--set", "face_camera=replay1"],
            root: root, user: geteuid() == 0 ? "nobody" : nil)
        let client = try daemon.client()
        let _: FaceEnrollResult = try client.call(Method.faceEnroll, FaceEnrollParams(
            user: "tran", camera: "replay0", frames: 2, countdownS: 0, qualityThreshold: 20))
        let host = try HIDHost(path: fidoSocket)
        try host.open()
        host.send(.cbor, [0x01] + CBOREncoder.encode(.map([
            .init(1, .bytes([UInt8](repeating: 1, count: 32))), .init(2, .map([.init("id", "example.com")])),
            .init(3, .map([.init("id", .bytes([1]))])), .init(4, .array([.map([.init("alg", -7), .init("type", "public-key")])])),
            .init(7, .map([.init("rk", true), .init("uv", true)])),
        ])))
        usleep(800_000)
        host.send(.cancel, [])
        // The answer must come within the 10 s this waits, well before the session's own 30 s
        // timeout: it comes because of the cancel (no wall-clock assertion needed).
        let reply = try XCTUnwrap(host.receive(timeout: 10), "no answer to the cancel before the 30 s session timeout")
        XCTAssertEqual(reply.0, 0x90)
        XCTAssertEqual(reply.1, [CTAPStatus.keepaliveCancel.rawValue])
        XCTAssertGreaterThan(host.keepalives, 3, "UPNEEDED keepalives while it waited")
        let (status, _) = try host.cbor(0x04, .map([]))
        XCTAssertEqual(status, .success, "answers again after the cancel")
        XCTAssertTrue(daemon.log.contains("FIDO verification of 'tran' for example.com: cancelled"), daemon.log.suffix(2000).description)
        let status2: AuthStatusResult = try client.call(Method.authStatus, UserParams(user: "tran"))
        XCTAssertEqual(status2.biometricFailures, 0, "a cancelled attempt is no failure")
    }
}
