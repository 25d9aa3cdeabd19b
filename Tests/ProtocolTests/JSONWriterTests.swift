@testable import BiometricProtocol
import Foundation
import XCTest

/// JSONWriter must write exactly the bytes of the project's JSONEncoder.
final class JSONWriterTests: XCTestCase {
    private func encoder(_ value: some Encodable) throws -> [UInt8] { Array(try JSONCoding.encoder.encode(value)) }

    func testSameBytesAsJSONEncoderOnRandomValues() throws {
        var state: UInt64 = 0x2545_F491_4F6C_DD1D
        func next() -> UInt64 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return state
        }
        let strings = ["", "a", "é", "😀", "a/b", "q\"uote", "back\\slash", "\u{0}\u{1}\u{8}\u{9}\u{A}\u{C}\u{D}\u{1F}\u{7F}",
                       "face.frame", "Z", "zz", "ä", "_", "A b"]
        let doubles: [Double] = [0, -0.0, 1, -1, 0.5, 0.1, 1e-7, 1e21, 1e22, 123456789.125, .pi, -2.5e-300, 3.0, 48.0,
                                 Double(Int64.max), .nan, .infinity, -.infinity, 0.30000000000000004, 5e-324]
        func random(_ depth: Int) -> JSONValue {
            switch next() % (depth > 3 ? 5 : 7) {
            case 0: return .null
            case 1: return .bool(next() % 2 == 0)
            case 2: return .int(Int64(bitPattern: next()) >> Int64(next() % 64))
            case 3: return .double(doubles[Int(next() % UInt64(doubles.count))])
            case 4: return .string(strings[Int(next() % UInt64(strings.count))])
            case 5: return .array((0..<Int(next() % 4)).map { _ in random(depth + 1) })
            default:
                var o: [String: JSONValue] = [:]
                for _ in 0..<Int(next() % 5) { o[strings[Int(next() % UInt64(strings.count))]] = random(depth + 1) }
                return .object(o)
            }
        }
        for _ in 0..<5000 {
            let value = random(0)
            XCTAssertEqual(JSONWriter.write(value), try encoder(value), "\(value)")
        }
    }

    /// SPEC fields that are always present: nil is written as null, and read back from null or from
    /// an absent key (an older daemon's reply).
    func testAlwaysPresentOptionalsAreWrittenAsNull() throws {
        func text(_ value: some Encodable) throws -> String { String(decoding: try JSONCoding.encoder.encode(value), as: UTF8.self) }
        XCTAssertEqual(try text(PINResult(ok: true, retriesLeft: nil)), #"{"ok":true,"retries_left":null}"#)
        XCTAssertEqual(try text(FingerIdentifyResult(user: nil, score: 0, position: nil, candidates: [], liveness: .fake, durationMs: 1)),
                       #"{"candidates":[],"duration_ms":1,"liveness":"fake","position":null,"score":0,"user":null}"#)
        var verify = FingerVerifyResult(match: true, score: 2, threshold: 48, position: "right_index", liveness: .live, captures: 1, durationMs: 9)
        XCTAssertEqual(try text(verify), #"{"captures":1,"duration_ms":9,"liveness":"live","match":true,"position":"right_index","score":2,"threshold":48}"#,
                       "reenroll_hint and authenticated stay out when nil")
        verify.position = nil
        XCTAssertTrue(try text(verify).contains(#""position":null"#))
        XCTAssertNil(try JSONCoding.decoder.decode(PINResult.self, from: Data(#"{"ok":true}"#.utf8)).retriesLeft)
        XCTAssertNil(try JSONCoding.decoder.decode(PINResult.self, from: Data(#"{"ok":true,"retries_left":null}"#.utf8)).retriesLeft)
        XCTAssertEqual(try JSONCoding.decoder.decode(PINResult.self, from: Data(#"{"ok":true,"retries_left":2}"#.utf8)).retriesLeft, 2)
        XCTAssertThrowsError(try JSONCoding.decoder.decode(PINResult.self, from: Data(#"{"ok":true,"retries_left":"2"}"#.utf8)))
    }

    func testEventsAreTheSameLineAsBefore() throws {
        struct Call: Encodable {
            let jsonrpc = "2.0"
            let method = "event"
            let params: Event
        }
        let event = Event(request: .string("r/1"), type: "face.frame",
                          fields: ["box": .object(["x": 1, "width": 20]), "yaw": .double(-3.5), "feedback": ["too_far"], "countdown_s": .null])
        XCTAssertEqual(try RPCCodec.event(event), try JSONCoding.encoder.encode(Call(params: event)) + Data("\n".utf8))
    }
}
