@testable import BiometricFIDO
import XCTest

final class CBORTests: XCTestCase {
    let decoder = CBORDecoder()

    /// RFC 8949 Appendix A vectors for everything CTAP2 uses.
    func testRFC8949Vectors() throws {
        let vectors: [(String, CBORValue)] = [
            ("00", 0), ("01", 1), ("0a", 10), ("17", 23), ("1818", 24), ("1819", 25), ("1864", 100),
            ("1903e8", 1000), ("1a000f4240", 1_000_000), ("1b000000e8d4a51000", 1_000_000_000_000),
            ("1bffffffffffffffff", .unsigned(UInt64.max)), ("3bffffffffffffffff", .negative(UInt64.max)),
            ("20", -1), ("29", -10), ("3863", -100), ("3903e7", -1000),
            ("f4", false), ("f5", true), ("f6", .null), ("f7", .undefined),
            ("40", .bytes([])), ("4401020304", .bytes([1, 2, 3, 4])),
            ("60", ""), ("6161", "a"), ("6449455446", "IETF"), ("62225c", "\"\\"), ("62c3bc", "\u{00fc}"),
            ("63e6b0b4", "\u{6c34}"), ("64f0908591", "\u{10151}"),
            ("80", .array([])), ("83010203", .array([1, 2, 3])),
            ("8301820203820405", .array([1, .array([2, 3]), .array([4, 5])])),
            ("a0", .map([])), ("a201020304", .map([.init(1, 2), .init(3, 4)])),
            ("a26161016162820203", .map([.init("a", 1), .init("b", .array([2, 3]))])),
        ]
        for (hex, value) in vectors {
            XCTAssertEqual(try decoder.decode(bytes(hex)), value, hex)
            XCTAssertEqual(CBOREncoder.encode(value), bytes(hex), hex)
        }
    }

    /// CTAP2 canonical order: integer keys before text, 1, 3 before -1, -2, -3 (a COSE key), and
    /// shorter text keys before longer ones.
    func testEncoderSortsMapKeysCanonically() {
        let cose: CBORValue = .map([.init(-3, .bytes([3])), .init(-1, 1), .init(3, -7), .init(-2, .bytes([2])), .init(1, 2)])
        XCTAssertEqual(hex(CBOREncoder.encode(cose)), "a5010203262001214102224103")
        let mixed: CBORValue = .map([.init("type", 1), .init("alg", 2), .init(100, 3), .init(2, 4), .init("aa", 5)])
        let decoded = try? decoder.decode(CBOREncoder.encode(mixed))
        XCTAssertEqual(decoded?.mapValue?.map(\.key), [2, 100, "aa", "alg", "type"])
    }

    func testRefusesWhatCTAP2DoesNotUse() {
        let cases: [(String, CBORError)] = [
            ("5f42010243030405ff", .unsupported),  // indefinite byte string
            ("9fff", .unsupported),  // indefinite array
            ("bf6161ff", .unsupported),  // indefinite map
            ("c11a514b67b0", .unsupported),  // tag 1
            ("f93c00", .unsupported),  // half float
            ("fb3ff199999999999a", .unsupported),  // double
            ("f0", .unsupported),  // simple value 16
            ("ff", .malformed),  // lone break
            ("1c", .malformed), ("3d", .malformed), ("5e", .malformed),  // reserved additional info
            ("a201020103", .duplicateKey),
            ("62c328", .invalidUTF8),
            ("0000", .trailingBytes),
            ("", .truncated), ("18", .truncated), ("1a0000", .truncated),
            ("44010203", .truncated), ("83010203" + "04", .trailingBytes), ("830102", .truncated),
            ("a3010203", .truncated),
            // A hostile count: 2^64-1 array items in four bytes must fail before allocating.
            ("9bffffffffffffffff", .truncated), ("bbffffffffffffffff", .truncated),
            ("5bffffffffffffffff00", .truncated), ("7b7fffffffffffffff00", .truncated),
        ]
        for (input, expected) in cases {
            XCTAssertThrowsError(try decoder.decode(bytes(input)), input) { error in
                XCTAssertEqual(error as? CBORError, expected, input)
                XCTAssertEqual((error as? CBORError)?.ctapStatus, .invalidCBOR)
            }
        }
    }

    func testDepthAndSizeLimits() throws {
        let limited = CBORDecoder(maxDepth: 4, maxSize: 64)
        // Four nested containers (the CTAP2 minimum) pass; five do not.
        XCTAssertNoThrow(try limited.decode(bytes("8181818100")))
        XCTAssertNoThrow(try limited.decode(bytes("a1018181a0")))
        XCTAssertThrowsError(try limited.decode(bytes("81818181a0"))) { XCTAssertEqual($0 as? CBORError, .tooDeep) }
        XCTAssertThrowsError(try limited.decode([UInt8](repeating: 0, count: 65))) { error in
            XCTAssertEqual(error as? CBORError, .tooLarge)
            XCTAssertEqual((error as? CBORError)?.ctapStatus, .requestTooLarge)
        }
        // Thousands of nested arrays do not recurse past the limit (no stack overflow).
        let deep = [UInt8](repeating: 0x81, count: 7000) + [0]
        XCTAssertThrowsError(try decoder.decode(deep)) { XCTAssertEqual($0 as? CBORError, .tooDeep) }
    }

    /// ≥ 100,000 random and mutated inputs: each either decodes or throws a CBORError; a decoded
    /// value's canonical encoding decodes and re-encodes to the same bytes.
    func testFuzzNeverCrashes() throws {
        var rng = SplitMix64(seed: 0x5eed_f1d0)
        let seeds: [[UInt8]] = [
            bytes("a5010203262001214102224103"),
            CBOREncoder.encode(.map([
                .init(1, .bytes([UInt8](repeating: 7, count: 32))),
                .init(2, .map([.init("id", "example.com"), .init("name", "Example")])),
                .init(3, .map([.init("id", .bytes([1, 2, 3])), .init("name", "u"), .init("displayName", "U")])),
                .init(4, .array([.map([.init("alg", -7), .init("type", "public-key")])])),
                .init(7, .map([.init("rk", true), .init("uv", false)])),
            ])),
            bytes("8301820203820405"), bytes("a26161016162820203"),
        ]
        var decoded = 0
        var refused = 0
        for i in 0..<120_000 {
            var input: [UInt8]
            if i % 3 == 0 {
                input = (0..<Int(rng.next() % 48)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            } else {
                input = seeds[Int(rng.next() % UInt64(seeds.count))]
                for _ in 0...Int(rng.next() % 4) {
                    guard !input.isEmpty else { break }
                    let at = Int(rng.next() % UInt64(input.count))
                    switch rng.next() % 4 {
                    case 0: input[at] = UInt8(truncatingIfNeeded: rng.next())
                    case 1: input[at] ^= 1 << UInt8(rng.next() % 8)
                    case 2: input.remove(at: at)
                    default: input.insert(UInt8(truncatingIfNeeded: rng.next()), at: at)
                    }
                }
            }
            do {
                let value = try decoder.decode(input)
                decoded += 1
                // Canonical encoding is a fixed point: it decodes and re-encodes to the same bytes.
                let canonical = CBOREncoder.encode(value)
                XCTAssertEqual(CBOREncoder.encode(try decoder.decode(canonical)), canonical)
            } catch {
                refused += 1
            }
        }
        XCTAssertEqual(decoded + refused, 120_000)
        XCTAssertGreaterThan(decoded, 1000, "the mutations should leave some inputs valid")
        XCTAssertGreaterThan(refused, 1000)
    }
}

/// A small deterministic generator so fuzz failures reproduce.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}

func bytes(_ hex: String) -> [UInt8] {
    var out: [UInt8] = []
    var it = hex.makeIterator()
    while let a = it.next(), let b = it.next() { out.append(UInt8(String([a, b]), radix: 16)!) }
    return out
}

func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
