@testable import BiometricProtocol
import Foundation
import XCTest

final class RPCCodecTests: XCTestCase {
    private func single(_ text: String) -> Result<RPCRequest, FailedRequest> {
        guard case .single(let r) = RPCCodec.parse(line: Data(text.utf8)) else {
            XCTFail("expected a single message")
            return .failure(FailedRequest(id: .null, error: .internal("")))
        }
        return r
    }

    private func errorCode(_ text: String) -> Int? {
        if case .failure(let f) = single(text) { return f.error.code }
        return nil
    }

    func testMalformedJSONAndInvalidUTF8AreParseErrors() {
        XCTAssertEqual(errorCode("{\"jsonrpc\":"), -32700)
        XCTAssertEqual(errorCode("not json"), -32700)
        guard case .single(.failure(let f)) = RPCCodec.parse(line: Data([0x7B, 0x22, 0xFF, 0xFE, 0x22, 0x7D])) else {
            return XCTFail("invalid UTF-8 must fail")
        }
        XCTAssertEqual(f.error.code, -32700)
        XCTAssertEqual(f.error.reason, "parse_error")
    }

    func testEnvelopeValidation() {
        XCTAssertEqual(errorCode("42"), -32600)
        XCTAssertEqual(errorCode("{\"method\":\"daemon.status\",\"id\":1}"), -32600, "jsonrpc 2.0 is required")
        XCTAssertEqual(errorCode("{\"jsonrpc\":\"2.0\",\"id\":1}"), -32600, "method is required")
        XCTAssertEqual(errorCode("{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":3,\"id\":1}"), -32600)
        XCTAssertEqual(errorCode("{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"id\":{}}"), -32600)
        XCTAssertEqual(errorCode("{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"id\":1,\"extra\":1}"), -32600)
        // The id is echoed in errors when it could be read.
        if case .failure(let f) = single("{\"jsonrpc\":\"1.0\",\"method\":\"x\",\"id\":\"abc\"}") {
            XCTAssertEqual(f.id, .string("abc"))
        } else { XCTFail() }
    }

    func testRequestsAndNotifications() throws {
        let request = try single("{\"jsonrpc\":\"2.0\",\"method\":\"user.get\",\"params\":{\"user\":\"ann\"},\"id\":7}").get()
        XCTAssertEqual(request.method, "user.get")
        XCTAssertEqual(request.id, .int(7))
        XCTAssertEqual(request.params?["user"], "ann")
        let notification = try single("{\"jsonrpc\":\"2.0\",\"method\":\"daemon.status\"}").get()
        XCTAssertNil(notification.id, "no id means a notification")
    }

    func testBatches() {
        guard case .single(.failure(let empty)) = RPCCodec.parse(line: Data("[]".utf8)) else { return XCTFail() }
        XCTAssertEqual(empty.error.code, -32600, "an empty batch is invalid")
        guard case .batch(let items) = RPCCodec.parse(line: Data("[{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"id\":1}, 1]".utf8)) else {
            return XCTFail()
        }
        XCTAssertEqual(items.count, 2)
        XCTAssertNoThrow(try items[0].get())
        if case .failure(let f) = items[1] { XCTAssertEqual(f.error.code, -32600) } else { XCTFail() }
        XCTAssertNil(RPCCodec.batch([]), "a batch of notifications gets no reply at all")
        let joined = RPCCodec.batch([Data("{\"a\":1}\n".utf8), Data("{\"b\":2}\n".utf8)])
        XCTAssertEqual(joined.map { String(decoding: $0, as: UTF8.self) }, "[{\"a\":1},{\"b\":2}]\n")
    }

    func testEventsCarryTheRequestID() throws {
        let line = try RPCCodec.event(Event(request: .int(5), type: "face.frame", fields: ["quality": 40]))
        let value = try JSONDecoder().decode(JSONValue.self, from: line)
        XCTAssertEqual(value["method"], "event")
        XCTAssertNil(value["id"], "events are notifications")
        XCTAssertEqual(value["params"]?["request"], 5)
        XCTAssertEqual(value["params"]?["type"], "face.frame")
        XCTAssertEqual(value["params"]?["quality"], 40)
        XCTAssertEqual(line.last, UInt8(ascii: "\n"))
    }

    func testResponsesAreTheBytesOfTheWholeEnvelope() throws {
        struct Envelope<R: Encodable>: Encodable {
            let jsonrpc = "2.0"
            let id: RequestID
            let result: R
        }
        struct Sample: Encodable {
            var name = "a\"b/ç\u{1}"
            var values: [Double] = [0.1, 1e-7, 3]
            var nested: [String: JSONValue] = ["z": .null, "a": .bool(true)]
        }
        for id in [RequestID.int(0), .int(-42), .int(.max), .string(""), .string("x\"y\\z/é\u{7}"), .null] {
            XCTAssertEqual(try RPCCodec.response(id: id, result: Sample()),
                           try JSONCoding.encoder.encode(Envelope(id: id, result: Sample())) + Data("\n".utf8))
            XCTAssertEqual(try RPCCodec.response(id: id, result: true),
                           try JSONCoding.encoder.encode(Envelope(id: id, result: true)) + Data("\n".utf8))
        }
    }

    func testErrorCodesAreStable() {
        // SPEC §6: clients depend on these numbers.
        let expected: [ErrorReason: Int] = [
            .invalidUser: 1001, .notFound: 1002, .permissionDenied: 1003, .invalidAAID: 1004, .busy: 1005,
            .canceled: 1006, .timeout: 1007, .notInitialized: 1008, .noCamera: 2001, .cameraError: 2002,
            .noFaceRegistered: 3001, .badQuality: 3002, .blinkTimeout: 3003, .spoofDetected: 3004,
            .badCapture: 4001, .noFingerRegistered: 4002, .lockedOut: 5001, .pinLocked: 5002, .pinFormat: 5003,
            .pinNotSet: 5004,
            // Beyond SPEC §6 (Docs/architecture.md "Limits"): per-uid shares and storage quotas.
            .limitReached: 1009, .quotaExceeded: 1010,
        ]
        XCTAssertEqual(expected.count, ErrorReason.allCases.count)
        for (reason, code) in expected {
            XCTAssertEqual(reason.code, code, "\(reason)")
            XCTAssertEqual(ErrorReason(code: code), reason)
        }
        let e = RPCError.app(.busy, "in use", hint: "wait", details: ["camera": "replay0"])
        XCTAssertEqual(e.reason, "busy")
        XCTAssertEqual(e.hint, "wait")
        XCTAssertEqual(e.data?["camera"], "replay0")
    }
}

final class ParamsTests: XCTestCase {
    private func decodeError<P: RPCParams>(_ type: P.Type, _ json: String) -> RPCError? {
        let value = try! JSONDecoder().decode(JSONValue.self, from: Data(json.utf8))
        do {
            _ = try P.decode(from: value)
            return nil
        } catch {
            return error
        }
    }

    func testInvalidParamsNameTheField() {
        XCTAssertEqual(decodeError(UserParams.self, "{}")?.field, "user")
        XCTAssertEqual(decodeError(UserParams.self, "{}")?.code, -32602)
        XCTAssertEqual(decodeError(UserParams.self, "{\"user\":5}")?.field, "user")
        XCTAssertEqual(decodeError(UserParams.self, "{\"user\":null}")?.field, "user")
        XCTAssertEqual(decodeError(UserParams.self, "{\"user\":\"a\",\"usr\":1}")?.field, "usr", "unknown fields are refused")
        XCTAssertEqual(decodeError(UserParams.self, "[\"a\"]")?.code, -32602, "positional params are refused")
        XCTAssertEqual(decodeError(SnapshotParams.self, "{\"warmup_frames\":61}")?.field, "warmup_frames")
        XCTAssertEqual(decodeError(SnapshotParams.self, "{\"timeout_ms\":\"fast\"}")?.field, "timeout_ms")
        XCTAssertNil(decodeError(SnapshotParams.self, "{\"camera\":\"replay0\",\"warmup_frames\":0}"))
        XCTAssertNil(decodeError(NoParams.self, "null"))
    }

    func testUserNamesFollowFIDORules() {
        for good in ["alice", "Ö Ünal", "user@example.org", String(repeating: "x", count: 128)] {
            XCTAssertNoThrow(try UserName.validate(good), good)
        }
        for bad in ["", String(repeating: "x", count: 129), "tab\there", "nul\u{0}", " lead", "bell\u{7}"] {
            XCTAssertThrowsError(try UserName.validate(bad)) { error in
                XCTAssertEqual((error as? RPCError)?.code, 1001, bad)
            }
        }
        XCTAssertEqual(decodeError(UserParams.self, "{\"user\":\"\"}")?.code, 1001)
    }
}
