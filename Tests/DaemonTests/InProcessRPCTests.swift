@testable import BiometricDaemon
import BiometricProtocol
import Foundation
import NIOCore
import NIOEmbedded
import XCTest

/// Line framing and dispatch in process, on NIO's testing channels: no socket, no daemon.
final class LineFramingTests: XCTestCase {
    private func lines(_ chunks: [String], limit: Int = 64) throws -> [String] {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(LineDecoder(maxLineBytes: limit)))
        for chunk in chunks { try channel.writeInbound(ByteBuffer(string: chunk)) }
        var out: [String] = []
        while let line = try channel.readInbound(as: ByteBuffer.self) { out.append(String(buffer: line)) }
        _ = try? channel.finish()
        return out
    }

    func testLinesSplitAcrossReadsAndCRLF() throws {
        XCTAssertEqual(try lines(["{\"a\"", ":1}\r\n{\"b\":2}\n{", "}\n"]), ["{\"a\":1}", "{\"b\":2}", "{}"])
        XCTAssertEqual(try lines(["\n\n"]), ["", ""], "blank lines reach the handler, which skips them")
    }

    func testALastLineWithoutNewlineCountsAtEOF() throws {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(LineDecoder(maxLineBytes: 64)))
        try channel.writeInbound(ByteBuffer(string: "{\"x\":1}"))
        XCTAssertNil(try channel.readInbound(as: ByteBuffer.self))
        channel.pipeline.fireChannelInactive()
        XCTAssertEqual(try channel.readInbound(as: ByteBuffer.self).map { String(buffer: $0) }, "{\"x\":1}")
    }

    func testALineOverTheLimitIsAnErrorEvenBeforeItsNewline() throws {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(LineDecoder(maxLineBytes: 8)))
        XCTAssertThrowsError(try channel.writeInbound(ByteBuffer(string: "123456789"))) { XCTAssertTrue($0 is LineDecoder.LineTooLong) }
        let exact = EmbeddedChannel(handler: ByteToMessageHandler(LineDecoder(maxLineBytes: 8)))
        try exact.writeInbound(ByteBuffer(string: "12345678\n"))
        XCTAssertEqual(try exact.readInbound(as: ByteBuffer.self).map { String(buffer: $0) }, "12345678")
    }
}

final class DispatchTests: XCTestCase {
    struct Pong: Encodable, Sendable { var pong = true }
    struct Echo: Encodable, Sendable { var user: String }
    struct Started: EventPayload {
        var n = 1
        var eventType: String { "t.started" }
    }

    /// A table with an immediate method, an async one, one that runs until canceled (emitting an
    /// event first), and the daemon's own session.cancel.
    static var table: MethodTable {
        var table = MethodTable(policy: AccessPolicy(adminGroup: "biometric-admin", loginGroup: "biometric-login"))
        table.registerImmediate("t.ping", .anyone) { (_, _: NoParams) in Pong() }
        table.register("t.echo", .anyone) { (_, p: UserParams) in Echo(user: p.user) }
        table.register("t.wait", .anyone) { (context, _: NoParams) -> Pong in
            context.emit(Started())
            while true { try await Task.sleep(nanoseconds: 5_000_000) }
        }
        DaemonMethods(status: {
            DaemonStatus(version: "t", uptimeS: 0, pid: 0, cameras: [], models: ModelStatus(loaded: [], missing: [], corrupt: [], folders: []),
                         users: 0, activeSessions: 0, clients: 0, socketActivated: false, privileged: false,
                         faceGallery: GalleryStatus(state: "ready", templates: 0, loaded: 0, total: 0, refreshing: false))
        }).register(in: &table)
        return table
    }

    private func connect() -> (NIOAsyncTestingChannel, ClientConnection) {
        let channel = NIOAsyncTestingChannel()
        let peer = AccessPolicy(adminGroup: "nogroup-admin", loginGroup: "nogroup-login").peer(pid: 1, uid: 65534, gid: 65534)
        return (channel, ClientConnection(peer: peer, channel: channel, methods: Self.table) {})
    }

    private func send(_ line: String, to connection: ClientConnection, on channel: NIOAsyncTestingChannel) async throws {
        try await channel.testingEventLoop.executeInContext {
            connection.receive(Data(line.utf8).withUnsafeBytes { RPCCodec.parse(bytes: $0) })
        }
    }

    private func next(_ channel: NIOAsyncTestingChannel) async throws -> JSONValue {
        let buffer = try await channel.waitForOutboundWrite(as: ByteBuffer.self)
        return try JSONDecoder().decode(JSONValue.self, from: Data(buffer.readableBytesView))
    }

    func testImmediateAndAsyncCallsAreAnsweredWithTheirIds() async throws {
        let (channel, connection) = connect()
        try await send(#"{"jsonrpc":"2.0","id":1,"method":"t.ping"}"#, to: connection, on: channel)
        let reply1 = try await next(channel)
        XCTAssertEqual(reply1, ["jsonrpc": "2.0", "id": 1, "result": ["pong": true]])
        try await send(#"{"jsonrpc":"2.0","id":"b","method":"t.echo","params":{"user":"ana"}}"#, to: connection, on: channel)
        let reply2 = try await next(channel)
        XCTAssertEqual(reply2, ["jsonrpc": "2.0", "id": "b", "result": ["user": "ana"]])
        try await send(#"{"jsonrpc":"2.0","id":3,"method":"t.nope"}"#, to: connection, on: channel)
        let reply3 = try await next(channel)
        XCTAssertEqual(reply3["error"]?["code"], -32601)
        try await send(#"{"jsonrpc":"2.0","id":4,"method":"t.echo","params":{"user":"ana","usr":"x"}}"#, to: connection, on: channel)
        let reply4 = try await next(channel)
        XCTAssertEqual(reply4["error"]?["code"], -32602, "unknown fields are refused: \(reply4)")
        try await send(#"{"jsonrpc":"2.0","id":5,"method":"t.echo","params":{"user":" ana"}}"#, to: connection, on: channel)
        let reply5 = try await next(channel)
        XCTAssertEqual(reply5["error"]?["data"]?["reason"], "invalid_user", "params are validated before the handler runs")
        connection.closed()
    }

    func testANotificationGetsNoReplyAndABatchOneLine() async throws {
        let (channel, connection) = connect()
        try await send(#"{"jsonrpc":"2.0","method":"t.echo","params":{"user":"ana"}}"#, to: connection, on: channel)
        try await send(#"[{"jsonrpc":"2.0","id":1,"method":"t.echo","params":{"user":"a"}},{"jsonrpc":"2.0","id":2,"method":"t.ping"}]"#,
                       to: connection, on: channel)
        let batch = try await next(channel)
        XCTAssertEqual(batch.arrayValue?.count, 2, "the notification was not answered; the batch is one line: \(batch)")
        XCTAssertEqual(Set(batch.arrayValue?.compactMap { $0["id"] } ?? []), [1, 2])
        connection.closed()
    }

    func testSessionCancelEndsARunningCallAfterItsEvent() async throws {
        let (channel, connection) = connect()
        try await send(#"{"jsonrpc":"2.0","id":7,"method":"t.wait"}"#, to: connection, on: channel)
        let event = try await next(channel)
        XCTAssertEqual(event["method"], "event")
        XCTAssertEqual(event["params"]?["request"], 7)
        try await send(#"{"jsonrpc":"2.0","id":8,"method":"session.cancel","params":{"request":7}}"#, to: connection, on: channel)
        var replies: [JSONValue: JSONValue] = [:]
        for _ in 0..<2 {
            let r = try await next(channel)
            replies[r["id"] ?? .null] = r
        }
        XCTAssertEqual(replies[8]?["result"], ["canceled": true])
        XCTAssertEqual(replies[7]?["error"]?["code"], 1006, "the canceled call ends with canceled")
        try await send(#"{"jsonrpc":"2.0","id":9,"method":"session.cancel","params":{"request":7}}"#, to: connection, on: channel)
        let reply5 = try await next(channel)
        XCTAssertEqual(reply5["result"], ["canceled": false], "already finished")
        connection.closed()
    }
}
