@testable import BiometricFIDO
import Foundation
import Synchronization
import XCTest

final class TransportTests: XCTestCase {
    func testTestSocketIsRefusedInASystemService() throws {
        XCTAssertEqual(try FIDOTransportChoice.decide(testSocketPath: nil, systemService: true), .uhid)
        XCTAssertEqual(try FIDOTransportChoice.decide(testSocketPath: nil, systemService: false), .uhid)
        XCTAssertEqual(try FIDOTransportChoice.decide(testSocketPath: "/tmp/x", systemService: false), .testSocket(path: "/tmp/x"))
        XCTAssertThrowsError(try FIDOTransportChoice.decide(testSocketPath: "/tmp/x", systemService: true)) {
            XCTAssertEqual($0 as? FIDOTransportChoice.Refusal, .testSocketInSystemService)
        }
        XCTAssertTrue(FIDOTransportChoice.startedBySystemd(["INVOCATION_ID": "abc"]))
        XCTAssertTrue(FIDOTransportChoice.startedBySystemd(["NOTIFY_SOCKET": "/run/systemd/notify"]))
        XCTAssertTrue(FIDOTransportChoice.startedBySystemd(["LISTEN_FDS": "1"]))
        XCTAssertFalse(FIDOTransportChoice.startedBySystemd(["HOME": "/root"]))
    }

    /// A blocked UV prompt: KEEPALIVE UPNEEDED reports flow, CTAPHID_CANCEL ends it with
    /// CTAP2_ERR_KEEPALIVE_CANCEL, and the device answers again afterwards.
    func testDeviceSendsKeepalivesAndHonoursCancel() async throws {
        let waiting = WaitingVerifier()
        let authenticator = CTAP2Authenticator(configuration: .init(aaguid: [UInt8](repeating: 1, count: 16)), verifier: waiting,
                                               pins: InMemoryPINVerifier(pin: nil), store: InMemoryCredentialStore())
        let sent = Mutex<[[UInt8]]>([])
        let device = CTAPHIDDevice(authenticator: authenticator) { report in sent.withLock { $0.append(report) } }
        await device.start()
        let nonce: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
        await device.receive(CTAPHIDState.frame(channel: 0xffff_ffff, command: .initialize, payload: nonce)[0])
        let initReply = try XCTUnwrap(sent.withLock { $0.first })
        let channel = UInt32(initReply[15]) << 24 | UInt32(initReply[16]) << 16 | UInt32(initReply[17]) << 8 | UInt32(initReply[18])
        let request: [UInt8] = [0x01] + CBOREncoder.encode(.map([
            .init(1, .bytes([UInt8](repeating: 1, count: 32))), .init(2, .map([.init("id", "example.com")])),
            .init(3, .map([.init("id", .bytes([1]))])), .init(4, .array([.map([.init("alg", -7), .init("type", "public-key")])])),
            .init(7, .map([.init("uv", true)])),
        ]))
        for report in CTAPHIDState.frame(channel: channel, command: .cbor, payload: request) { await device.receive(report) }
        try await Task.sleep(for: .milliseconds(350))
        let keepalives = sent.withLock { $0.filter { $0[4] == 0xbb } }
        XCTAssertGreaterThanOrEqual(keepalives.count, 2)
        XCTAssertTrue(keepalives.allSatisfy { $0[7] == CTAPHIDKeepaliveStatus.userPresenceNeeded.rawValue })
        await device.receive(CTAPHIDState.frame(channel: channel, command: .cancel, payload: [])[0])
        var answer: [UInt8]?
        for _ in 0..<100 where answer == nil {
            try await Task.sleep(for: .milliseconds(10))
            answer = sent.withLock { $0.last(where: { $0[4] == 0x90 }) }
        }
        XCTAssertEqual(answer.map { Array($0[5..<8]) }, [0, 1, CTAPStatus.keepaliveCancel.rawValue])
        await device.receive(CTAPHIDState.frame(channel: channel, command: .ping, payload: [7, 7])[0])
        XCTAssertEqual(sent.withLock { $0.last.map { Array($0[4..<9]) } }, [0x81, 0, 2, 7, 7])
        await device.stop()
    }
}

/// Waits for the prompt to be cancelled, as the daemon's verifier will.
struct WaitingVerifier: UserVerifier {
    func verifyUser(rpID: String?) async -> UserCheckOutcome {
        while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(10)) }
        return .cancelled
    }

    func confirmPresence(rpID: String?) async -> UserCheckOutcome { await verifyUser(rpID: rpID) }
    func uvRetries() async -> Int { 5 }
}
