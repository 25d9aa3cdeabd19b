@testable import BiometricFIDO
import XCTest

final class CTAPHIDTests: XCTestCase {
    let t0 = ContinuousClock.now
    let nonce: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]

    func initPacket(_ channel: UInt32, _ command: UInt8, length: Int? = nil, _ data: [UInt8] = []) -> [UInt8] {
        let n = length ?? data.count
        let head = CTAPHIDState.bigEndian(channel) + [0x80 | command, UInt8(n >> 8), UInt8(n & 0xff)]
        return pad(head + data.prefix(57))
    }

    func contPacket(_ channel: UInt32, _ seq: UInt8, _ data: [UInt8]) -> [UInt8] {
        pad(CTAPHIDState.bigEndian(channel) + [seq] + data.prefix(59))
    }

    func pad(_ r: [UInt8]) -> [UInt8] { r + [UInt8](repeating: 0, count: 64 - r.count) }

    /// The reports of the single `.send` action in `actions`.
    func sent(_ actions: [CTAPHIDAction], file: StaticString = #filePath, line: UInt = #line) -> [[UInt8]] {
        let sends = actions.compactMap { if case .send(let r) = $0 { r } else { nil } }
        XCTAssertEqual(sends.count, 1, "\(actions)", file: file, line: line)
        return sends.first ?? []
    }

    func errorCode(_ actions: [CTAPHIDAction], channel: UInt32, file: StaticString = #filePath, line: UInt = #line) -> CTAPHIDError? {
        let reports = sent(actions, file: file, line: line)
        guard let r = reports.first, reports.count == 1 else { return nil }
        XCTAssertEqual(Array(r[0..<4]), CTAPHIDState.bigEndian(channel), file: file, line: line)
        XCTAssertEqual(r[4], 0xbf, file: file, line: line)
        XCTAssertEqual(Array(r[5..<7]), [0, 1], file: file, line: line)
        return CTAPHIDError(rawValue: r[7])
    }

    func allocate(_ state: inout CTAPHIDState) -> UInt32 {
        let r = sent(state.receive(initPacket(CTAPHIDState.broadcastChannel, 0x06, nonce), now: t0))[0]
        return UInt32(r[15]) << 24 | UInt32(r[16]) << 16 | UInt32(r[17]) << 8 | UInt32(r[18])
    }

    func testInitOnBroadcastAllocatesAChannelAndEchoesTheNonce() {
        var state = CTAPHIDState()
        let reports = sent(state.receive(initPacket(0xffff_ffff, 0x06, nonce), now: t0))
        XCTAssertEqual(reports.count, 1)
        let r = reports[0]
        XCTAssertEqual(r.count, 64)
        XCTAssertEqual(Array(r[0..<7]), [0xff, 0xff, 0xff, 0xff, 0x86, 0, 17])
        XCTAssertEqual(Array(r[7..<15]), nonce)
        let channel = UInt32(r[15]) << 24 | UInt32(r[16]) << 16 | UInt32(r[17]) << 8 | UInt32(r[18])
        XCTAssertNotEqual(channel, 0)
        XCTAssertNotEqual(channel, 0xffff_ffff)
        XCTAssertEqual(r[19], 2, "CTAPHID protocol version")
        XCTAssertEqual(r[23], 0x0d, "WINK | CBOR | NMSG")
        XCTAssertTrue(state.isAllocated(channel))
        XCTAssertNotEqual(allocate(&state), channel, "each INIT on broadcast gets a new channel")
    }

    func testInitOnAnAllocatedChannelResyncsItAndCancelsItsRequest() {
        var state = CTAPHIDState()
        let channel = allocate(&state)
        XCTAssertEqual(state.receive(initPacket(channel, 0x10, [4]), now: t0), [.process(channel: channel, command: .cbor, payload: [4])])
        let actions = state.receive(initPacket(channel, 0x06, nonce), now: t0)
        XCTAssertEqual(actions.first, .cancel(channel: channel))
        let r = sent(actions)[0]
        XCTAssertEqual(Array(r[0..<4]), CTAPHIDState.bigEndian(channel))
        XCTAssertEqual(Array(r[15..<19]), CTAPHIDState.bigEndian(channel), "the same channel is confirmed")
        XCTAssertNil(state.busyChannel)
        // The late answer of the cancelled request is dropped.
        XCTAssertEqual(state.respond(channel: channel, command: .cbor, payload: [0]), [])
    }

    func testInitWithTheWrongLengthIsInvalidLen() {
        var state = CTAPHIDState()
        XCTAssertEqual(errorCode(state.receive(initPacket(0xffff_ffff, 0x06, length: 7, nonce), now: t0), channel: 0xffff_ffff), .invalidLength)
    }

    func testUnallocatedBroadcastAndZeroChannelsAreInvalidChannel() {
        var state = CTAPHIDState()
        XCTAssertEqual(errorCode(state.receive(initPacket(0x1234, 0x01, [1]), now: t0), channel: 0x1234), .invalidChannel)
        XCTAssertEqual(errorCode(state.receive(initPacket(0xffff_ffff, 0x01, [1]), now: t0), channel: 0xffff_ffff), .invalidChannel)
        XCTAssertEqual(errorCode(state.receive(initPacket(0, 0x06, nonce), now: t0), channel: 0), .invalidChannel)
        XCTAssertEqual(errorCode(state.receive(initPacket(0x1234, 0x06, nonce), now: t0), channel: 0x1234), .invalidChannel)
    }

    func testPingEchoesAcrossContinuationPackets() {
        var state = CTAPHIDState()
        let channel = allocate(&state)
        let payload = (0..<200).map { UInt8($0 & 0xff) }
        XCTAssertEqual(state.receive(initPacket(channel, 0x01, length: 200, payload), now: t0), [])
        XCTAssertEqual(state.receive(contPacket(channel, 0, Array(payload[57...])), now: t0), [])
        XCTAssertEqual(state.receive(contPacket(channel, 1, Array(payload[116...])), now: t0), [])
        let reports = sent(state.receive(contPacket(channel, 2, Array(payload[175...])), now: t0))
        XCTAssertEqual(reports, CTAPHIDState.frame(channel: channel, command: .ping, payload: payload))
        XCTAssertEqual(reports.count, 4)
        XCTAssertEqual(reports[1][4], 0)
        XCTAssertEqual(reports[3][4], 2)
    }

    func testLargestMessageIs7609Bytes() {
        var state = CTAPHIDState()
        let channel = allocate(&state)
        let payload = (0..<7609).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let reports = CTAPHIDState.frame(channel: channel, command: .ping, payload: payload)
        XCTAssertEqual(reports.count, 129)
        var last: [CTAPHIDAction] = []
        // The host frames its request exactly as the device frames the echo.
        for r in reports { last = state.receive(r, now: t0) }
        XCTAssertEqual(sent(last), reports)
        XCTAssertEqual(errorCode(state.receive(initPacket(channel, 0x01, length: 7610), now: t0), channel: channel), .invalidLength)
    }

    func testOutOfOrderContinuationIsInvalidSeq() {
        var state = CTAPHIDState()
        let channel = allocate(&state)
        _ = state.receive(initPacket(channel, 0x01, length: 100, []), now: t0)
        XCTAssertEqual(errorCode(state.receive(contPacket(channel, 1, []), now: t0), channel: channel), .invalidSequence)
        // The transaction is gone: a stray continuation is ignored.
        XCTAssertEqual(state.receive(contPacket(channel, 0, []), now: t0), [])
    }

    func testNewRequestMidMessageOnTheSameChannelIsInvalidSeq() {
        var state = CTAPHIDState()
        let channel = allocate(&state)
        _ = state.receive(initPacket(channel, 0x01, length: 100, []), now: t0)
        XCTAssertEqual(errorCode(state.receive(initPacket(channel, 0x01, [1]), now: t0), channel: channel), .invalidSequence)
    }

    func testAnotherChannelIsBusyDuringATransaction() {
        var state = CTAPHIDState()
        let a = allocate(&state), b = allocate(&state)
        _ = state.receive(initPacket(a, 0x01, length: 100, []), now: t0)
        XCTAssertEqual(errorCode(state.receive(initPacket(b, 0x01, [1]), now: t0), channel: b), .channelBusy)
        // … and while a CBOR request is being processed, on any channel.
        var processing = CTAPHIDState()
        let c = allocate(&processing), d = allocate(&processing)
        _ = processing.receive(initPacket(c, 0x10, [4]), now: t0)
        XCTAssertEqual(errorCode(processing.receive(initPacket(d, 0x01, [1]), now: t0), channel: d), .channelBusy)
        XCTAssertEqual(errorCode(processing.receive(initPacket(c, 0x10, [4]), now: t0), channel: c), .channelBusy)
        // INIT on broadcast is still answered.
        XCTAssertNotEqual(allocate(&processing), 0)
        XCTAssertEqual(processing.respond(channel: c, command: .cbor, payload: [0]).count, 1)
        XCTAssertNil(processing.busyChannel)
    }

    func testTransactionTimesOut() {
        var state = CTAPHIDState(transactionTimeout: .milliseconds(500))
        let channel = allocate(&state)
        _ = state.receive(initPacket(channel, 0x01, length: 100, []), now: t0)
        XCTAssertEqual(state.expire(now: t0.advanced(by: .milliseconds(499))), [])
        XCTAssertEqual(errorCode(state.expire(now: t0.advanced(by: .milliseconds(500))), channel: channel), .messageTimeout)
        XCTAssertEqual(state.receive(contPacket(channel, 0, []), now: t0.advanced(by: .seconds(1))), [])
        // A late continuation packet also times the transaction out before it is read.
        _ = state.receive(initPacket(channel, 0x01, length: 100, []), now: t0)
        let late = state.receive(contPacket(channel, 0, []), now: t0.advanced(by: .seconds(2)))
        XCTAssertEqual(errorCode(late, channel: channel), .messageTimeout)
    }

    func testUnknownAndUnsupportedCommandsAreInvalidCmd() {
        var state = CTAPHIDState()
        let channel = allocate(&state)
        for command: UInt8 in [0x03, 0x04, 0x3b, 0x3f, 0x55, 0x7f] {
            XCTAssertEqual(errorCode(state.receive(initPacket(channel, command, [1]), now: t0), channel: channel), .invalidCommand, "\(command)")
        }
    }

    func testCBORIsDeliveredAndAnswered() {
        var state = CTAPHIDState()
        let channel = allocate(&state)
        XCTAssertEqual(errorCode(state.receive(initPacket(channel, 0x10, []), now: t0), channel: channel), .invalidLength)
        XCTAssertEqual(state.receive(initPacket(channel, 0x10, [4]), now: t0), [.process(channel: channel, command: .cbor, payload: [4])])
        XCTAssertEqual(state.busyChannel, channel)
        let keepalive = sent(state.keepalive(.userPresenceNeeded))
        XCTAssertEqual(Array(keepalive[0][0..<8]), CTAPHIDState.bigEndian(channel) + [0xbb, 0, 1, 2])
        let response = (0..<100).map { UInt8($0) }
        XCTAssertEqual(sent(state.respond(channel: channel, command: .cbor, payload: response)),
                       CTAPHIDState.frame(channel: channel, command: .cbor, payload: response))
        XCTAssertEqual(state.keepalive(.processing), [], "no keepalive without a request")
    }

    func testCancelReachesTheRequestInProgressWithoutAnAnswer() {
        var state = CTAPHIDState()
        let channel = allocate(&state), other = allocate(&state)
        _ = state.receive(initPacket(channel, 0x10, [1]), now: t0)
        XCTAssertEqual(state.receive(initPacket(other, 0x11, []), now: t0), [], "another channel's cancel is ignored")
        XCTAssertEqual(state.receive(initPacket(channel, 0x11, []), now: t0), [.cancel(channel: channel)])
        XCTAssertEqual(state.busyChannel, channel, "the request still answers, with KEEPALIVE_CANCEL")
    }

    func testWink() {
        var state = CTAPHIDState()
        let channel = allocate(&state)
        let actions = state.receive(initPacket(channel, 0x08, []), now: t0)
        XCTAssertEqual(actions.first, .wink)
        XCTAssertEqual(Array(sent(actions)[0][0..<7]), CTAPHIDState.bigEndian(channel) + [0x88, 0, 0])
        XCTAssertEqual(errorCode(state.receive(initPacket(channel, 0x08, [1]), now: t0), channel: channel), .invalidLength)
    }

    func testShortAndLongReportsDoNotCrash() {
        var state = CTAPHIDState()
        XCTAssertEqual(state.receive([], now: t0), [])
        XCTAssertEqual(state.receive([0xff, 0xff, 0xff, 0xff], now: t0), [])
        // A short INIT: zero-padded, so its length 0 is wrong for INIT.
        XCTAssertEqual(errorCode(state.receive([0xff, 0xff, 0xff, 0xff, 0x86], now: t0), channel: 0xffff_ffff), .invalidLength)
        XCTAssertEqual(sent(state.receive(initPacket(0xffff_ffff, 0x06, nonce) + [9, 9, 9], now: t0)).count, 1)
    }

    func testChannelTableIsBounded() {
        var state = CTAPHIDState()
        let first = allocate(&state)
        for _ in 0..<CTAPHIDState.maxChannels { _ = allocate(&state) }
        XCTAssertFalse(state.isAllocated(first))
    }

    /// ≥ 100,000 random and mutated reports: every answer is well-formed 64-byte reports.
    func testFuzzedReportsNeverCrash() {
        var rng = SplitMix64(seed: 0xc7a9_1d)
        var state = CTAPHIDState()
        var channels = [allocate(&state)]
        var now = t0
        for i in 0..<150_000 {
            var report = (0..<64).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            switch rng.next() % 4 {
            case 0: report.replaceSubrange(0..<4, with: CTAPHIDState.bigEndian(channels[Int(rng.next() % UInt64(channels.count))]))
            case 1: report.replaceSubrange(0..<4, with: [0xff, 0xff, 0xff, 0xff])
            case 2: report = Array(report.prefix(Int(rng.next() % 70)))
            default: break
            }
            if rng.next() % 3 == 0, report.count > 6 { report[5] = 0; report[6] = UInt8(rng.next() % 120) }
            if i % 1000 == 0 { now = now.advanced(by: .seconds(1)) }
            for action in state.receive(report, now: now) {
                switch action {
                case .send(let reports):
                    XCTAssertTrue(reports.allSatisfy { $0.count == 64 })
                    if report.count >= 5, report[4] == 0x86, reports[0][4] == 0x86, report[0..<4] == [0xff, 0xff, 0xff, 0xff] {
                        channels.append(UInt32(reports[0][15]) << 24 | UInt32(reports[0][16]) << 16 | UInt32(reports[0][17]) << 8 | UInt32(reports[0][18]))
                    }
                case .process(let channel, _, _):
                    XCTAssertEqual(state.respond(channel: channel, command: .cbor, payload: [0x12]).count, 1)
                default: break
                }
            }
        }
    }
}
