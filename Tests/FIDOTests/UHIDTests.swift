@testable import BiometricFIDO
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import XCTest

final class UHIDTests: XCTestCase {
    func le32(_ b: [UInt8], _ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(b[at + $1]) << (8 * UInt32($1)) } }
    func le16(_ b: [UInt8], _ at: Int) -> UInt16 { UInt16(b[at]) | UInt16(b[at + 1]) << 8 }

    /// struct uhid_create2_req offsets: name 4, phys 132, uniq 196, rd_size 260, bus 262,
    /// vendor 264, product 268, version 272, country 276, rd_data 280 (packed, after the type).
    func testCreate2Layout() {
        let event = UHIDEvent.create(name: "biometricd", vendor: 0x1209, product: 0x000b, version: 0x0100,
                                     descriptor: UHIDEvent.fidoReportDescriptor).encoded()
        XCTAssertEqual(event.count, 4376)
        XCTAssertEqual(le32(event, 0), 11)
        XCTAssertEqual(Array(event[4..<14]), Array("biometricd".utf8))
        XCTAssertEqual(event[14], 0)
        XCTAssertEqual(Int(le16(event, 260)), UHIDEvent.fidoReportDescriptor.count)
        XCTAssertEqual(le16(event, 262), 3, "BUS_USB")
        XCTAssertEqual(le32(event, 264), 0x1209)
        XCTAssertEqual(le32(event, 268), 0x000b)
        XCTAssertEqual(le32(event, 272), 0x0100)
        XCTAssertEqual(Array(event[280..<280 + 5]), [0x06, 0xd0, 0xf1, 0x09, 0x01], "usage page 0xF1D0, usage 1")
    }

    func testInputOutputAndReplies() {
        let input = UHIDEvent.input([1, 2, 3]).encoded()
        XCTAssertEqual(le32(input, 0), 12)
        XCTAssertEqual(le16(input, 4), 3)
        XCTAssertEqual(Array(input[6..<9]), [1, 2, 3])
        let report = [UInt8(0)] + (1...64).map { UInt8($0) }
        let output = UHIDEvent.output(report).encoded()
        XCTAssertEqual(le32(output, 0), 6)
        XCTAssertEqual(le16(output, 4 + 4096), 65)
        XCTAssertEqual(UHIDEvent.decode(output), .output(report))
        XCTAssertEqual(UHIDEvent.report(fromOutput: report), Array(report.dropFirst()), "report number 0 dropped")
        XCTAssertEqual(UHIDEvent.report(fromOutput: Array(report.dropFirst())).count, 64)
        XCTAssertEqual(UHIDEvent.decode(UHIDEvent.getReport(id: 77).encoded()), .getReport(id: 77))
        let reply = UHIDEvent.getReportReply(id: 77, error: 5).encoded()
        XCTAssertEqual(le32(reply, 0), 10)
        XCTAssertEqual(le32(reply, 4), 77)
        XCTAssertEqual(le16(reply, 8), 5)
        XCTAssertEqual(UHIDEvent.decode([4, 0, 0, 0]), .other(type: 4), "UHID_OPEN")
        XCTAssertNil(UHIDEvent.decode([6, 0]))
        XCTAssertNil(UHIDEvent.decode([6, 0, 0, 0, 1]), "a truncated output event")
    }

    /// The transport end to end over a socketpair standing in for /dev/uhid: CREATE2 first, an
    /// output event with CTAPHID INIT answered by an input event, GET_REPORT refused, DESTROY on close.
    func testTransportOverASocketpair() async throws {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &fds), 0)
        let kernel = fds[1]
        defer { Glibc.close(kernel) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(kernel, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        func readEvent() -> [UInt8] {
            var buffer = [UInt8](repeating: 0, count: UHIDEvent.size)
            let n = buffer.withUnsafeMutableBytes { recv(kernel, $0.baseAddress, $0.count, 0) }
            return n > 0 ? Array(buffer[..<n]) : []
        }
        func writeEvent(_ event: UHIDEvent) {
            let bytes = event.encoded()
            _ = bytes.withUnsafeBytes { send(kernel, $0.baseAddress, $0.count, 0) }
        }

        let transport = try UHIDTransport(fd: fds[0])
        let created = readEvent()
        XCTAssertEqual(created.count, UHIDEvent.size)
        XCTAssertEqual(le32(created, 0), 11)

        let authenticator = CTAP2Authenticator(configuration: .init(aaguid: [UInt8](repeating: 2, count: 16)),
                                               verifier: WaitingVerifier(), pins: InMemoryPINVerifier(pin: nil),
                                               store: InMemoryCredentialStore())
        let device = CTAPHIDDevice(authenticator: authenticator) { transport.send($0) }
        let running = Task { await transport.run(device: device) }

        let nonce: [UInt8] = [9, 8, 7, 6, 5, 4, 3, 2]
        writeEvent(.output([0] + CTAPHIDState.frame(channel: 0xffff_ffff, command: .initialize, payload: nonce)[0]))
        let answer = readEvent()
        XCTAssertEqual(le32(answer, 0), 12, "UHID_INPUT2")
        XCTAssertEqual(le16(answer, 4), 64)
        XCTAssertEqual(Array(answer[6..<13]), [0xff, 0xff, 0xff, 0xff, 0x86, 0, 17])
        XCTAssertEqual(Array(answer[13..<21]), nonce)

        writeEvent(.getReport(id: 5))
        let refused = readEvent()
        XCTAssertEqual(le32(refused, 0), 10)
        XCTAssertEqual(le32(refused, 4), 5)
        XCTAssertEqual(le16(refused, 8), UInt16(EIO))

        transport.close()
        XCTAssertEqual(le32(readEvent(), 0), 1, "UHID_DESTROY")
        await running.value
    }
}
