@testable import BiometricProtocol
import Foundation
import XCTest

/// JSONReader must accept and produce exactly what Foundation's JSONDecoder does into JSONValue:
/// the wire behaviour stays the same while the hot path gets faster.
final class JSONReaderTests: XCTestCase {
    private func foundation(_ bytes: [UInt8]) -> JSONValue? {
        try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))
    }

    private func reader(_ bytes: [UInt8]) -> JSONValue? {
        try? JSONReader.read(bytes)
    }

    private func mismatches(_ inputs: [[UInt8]]) -> [String] {
        inputs.compactMap { input in
            let a = foundation(input), b = reader(input)
            guard a != b else { return nil }
            return "\(String(decoding: input, as: UTF8.self).debugDescription): JSONDecoder \(a.map { "\($0)" } ?? "error"), JSONReader \(b.map { "\($0)" } ?? "error")"
        }
    }

    static let corpus: [String] = [
        #"{"jsonrpc":"2.0","id":1,"method":"daemon.status"}"#,
        #"{"jsonrpc":"2.0","id":"a\"b","method":"user.get","params":{"user":"ann"}}"#,
        #"[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"},7]"#,
        "42", "-0", "0", "-", "01", "1.", ".5", "1e", "1e+", "1E2", "1e-2", "1.0", "1.5", "-1.25e3", "2.0e0",
        "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
        "1e400", "-1e400", "1e-400", "123456789012345678901234567890", "0.1", "1.7976931348623157e308",
        "true", "false", "null", "tru", "nul", "True", "\"\"", "\"abc", "\"a\\u0041\"", "\"\\ud83d\\ude00\"",
        "\"\\ud83d\"", "\"\\ude00\"", "\"\\ud83dx\"", "\"\\u00e9\"", "\"\\uZZZZ\"", "\"\\x\"", "\"\\/\"",
        "\"tab\there\"", "\"é\"", "[]", "{}", "[1,]", "{\"a\":1,}", "[,1]", "{\"a\"}", "{\"a\":}", "{1:2}",
        "{\"a\":1,\"a\":2}", "  {\"a\" : [ 1 , 2 ] }  ", "[1] x", "[1]\n", "\t[1]", "", " ", "[", "]", "{",
        "[[[[[[[[[[]]]]]]]]]]", "\"\\u0000\"", "{\"\":null}", "[true,false,null,0,-0.0,\"\"]",
        "[1e2,1E+2,100.0,1.00e2]", "[-1.0,-0.5e1]", "[0.30000000000000004]", "[5e-324]",
        "[1.7976931348623157e309]", "{\"a\":{\"b\":{\"c\":[{\"d\":null}]}}}",
    ]

    func testAgreesWithJSONDecoderOnTheCorpus() {
        var inputs = Self.corpus.map { Array($0.utf8) }
        inputs.append([0x7B, 0x22, 0xFF, 0xFE, 0x22, 0x7D])  // invalid UTF-8 in a name
        inputs.append([0x22, 0xC3, 0x28, 0x22])  // invalid UTF-8 in a string
        inputs.append([0x22, 0xED, 0xA0, 0x80, 0x22])  // an encoded surrogate
        inputs.append([0x22, 0xF0, 0x9F, 0x98, 0x80, 0x22])  // 😀 as UTF-8
        inputs.append([0xEF, 0xBB, 0xBF] + Array("{}".utf8))  // a byte-order mark
        let found = mismatches(inputs)
        XCTAssert(found.isEmpty, found.joined(separator: "\n"))
    }

    func testAgreesWithJSONDecoderOnMutatedRequests() {
        // Deterministic mutations (xorshift) of real request lines: flipped, dropped, inserted bytes.
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return state
        }
        let seeds = Self.corpus.prefix(3).map { Array($0.utf8) }
            + [Array(#"{"jsonrpc":"2.0","id":12,"method":"face.verify","params":{"user":"ann","timeout_ms":3000,"threshold":48.5,"liveness":true}}"#.utf8)]
        let alphabet = Array(#"{}[]":,.-+eE0123456789\ "tfnu/"#.utf8) + [0x00, 0x1F, 0x7F, 0xC3, 0xA9, 0xFF]
        var inputs: [[UInt8]] = []
        for i in 0..<20_000 {
            var bytes = seeds[i % seeds.count]
            for _ in 0..<(1 + Int(next() % 3)) where !bytes.isEmpty {
                let at = Int(next() % UInt64(bytes.count))
                switch next() % 3 {
                case 0: bytes[at] = alphabet[Int(next() % UInt64(alphabet.count))]
                case 1: bytes.remove(at: at)
                default: bytes.insert(alphabet[Int(next() % UInt64(alphabet.count))], at: at)
                }
            }
            inputs.append(bytes)
        }
        let found = mismatches(inputs)
        XCTAssert(found.isEmpty, "\(found.count) mismatches, first:\n" + found.prefix(20).joined(separator: "\n"))
    }

    func testDeepNestingIsAnErrorNotACrash() {
        let deep = Array(String(repeating: "[", count: 100_000).utf8)
        XCTAssertThrowsError(try JSONReader.read(deep))
        let ok = Array((String(repeating: "[", count: 100) + String(repeating: "]", count: 100)).utf8)
        XCTAssertNotNil(reader(ok))
    }
}
