import Foundation

/// A strict RFC 8259 reader straight from bytes into `JSONValue`, for the hot path of every call
/// (the envelope of each request line). Foundation's JSONDecoder reaches the same values through
/// Codable's generic containers and a thrown error per type it tries, which cost most of a
/// `daemon.status` round trip. It accepts exactly what JSONDecoder accepts into `JSONValue`
/// (the differential test in ProtocolTests checks this on a corpus and on random mutations),
/// including JSONDecoder's leniencies: a trailing comma, a leading byte-order mark, and the first
/// of two equal member names.
public enum JSONReader {
    public struct Failure: Error, Sendable, Equatable {
        /// Byte offset of the problem.
        public var offset: Int
        public var message: String
    }

    /// Deeper nesting is refused (JSONDecoder's limit too), so hostile input cannot exhaust the stack.
    public static let maxDepth = 512

    public static func read(_ bytes: UnsafeRawBufferPointer) throws(Failure) -> JSONValue {
        var parser = Parser(bytes: bytes)
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { parser.at = 3 }
        parser.skipSpace()
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.at == bytes.count else { throw parser.fail("unexpected data after the value") }
        return value
    }

    public static func read<C: ContiguousBytes>(_ bytes: C) throws(Failure) -> JSONValue {
        let result = bytes.withUnsafeBytes { raw -> Result<JSONValue, Failure> in
            do throws(Failure) { return .success(try read(raw)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    private struct Parser {
        let bytes: UnsafeRawBufferPointer
        var at = 0

        init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        func fail(_ message: String) -> Failure { Failure(offset: at, message: message) }

        var current: UInt8? { at < bytes.count ? bytes[at] : nil }

        mutating func skipSpace() {
            while at < bytes.count {
                switch bytes[at] {
                case 0x20, 0x09, 0x0A, 0x0D: at += 1
                default: return
                }
            }
        }

        mutating func value(depth: Int) throws(Failure) -> JSONValue {
            guard let byte = current else { throw fail("unexpected end of input") }
            switch byte {
            case UInt8(ascii: "{"): return try object(depth: depth + 1)
            case UInt8(ascii: "["): return try array(depth: depth + 1)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
            default: throw fail("unexpected character")
            }
        }

        mutating func literal(_ word: StaticString) throws(Failure) {
            let n = word.utf8CodeUnitCount
            guard at + n <= bytes.count else { throw fail("unexpected end of input") }
            for i in 0..<n where bytes[at + i] != word.utf8Start[i] { throw fail("unexpected character") }
            at += n
        }

        mutating func object(depth: Int) throws(Failure) -> JSONValue {
            guard depth <= JSONReader.maxDepth else { throw fail("nested too deeply") }
            at += 1
            var members: [String: JSONValue] = [:]
            skipSpace()
            if current == UInt8(ascii: "}") {
                at += 1
                return .object(members)
            }
            while true {
                skipSpace()
                if current == UInt8(ascii: "}"), !members.isEmpty {
                    at += 1
                    return .object(members)
                }
                guard current == UInt8(ascii: "\"") else { throw fail("expected a member name") }
                let key = try string()
                skipSpace()
                guard current == UInt8(ascii: ":") else { throw fail("expected ':'") }
                at += 1
                skipSpace()
                let element = try value(depth: depth)
                if members[key] == nil { members[key] = element }
                skipSpace()
                switch current {
                case UInt8(ascii: ",")?: at += 1
                case UInt8(ascii: "}")?: at += 1; return .object(members)
                default: throw fail("expected ',' or '}'")
                }
            }
        }

        mutating func array(depth: Int) throws(Failure) -> JSONValue {
            guard depth <= JSONReader.maxDepth else { throw fail("nested too deeply") }
            at += 1
            var elements: [JSONValue] = []
            skipSpace()
            if current == UInt8(ascii: "]") {
                at += 1
                return .array(elements)
            }
            while true {
                skipSpace()
                if current == UInt8(ascii: "]"), !elements.isEmpty {
                    at += 1
                    return .array(elements)
                }
                elements.append(try value(depth: depth))
                skipSpace()
                switch current {
                case UInt8(ascii: ",")?: at += 1
                case UInt8(ascii: "]")?: at += 1; return .array(elements)
                default: throw fail("expected ',' or ']'")
                }
            }
        }

        mutating func string() throws(Failure) -> String {
            at += 1  // the opening quote
            let start = at
            // Fast path: no escapes, so the bytes are the string (after UTF-8 validation).
            while at < bytes.count {
                let b = bytes[at]
                if b == UInt8(ascii: "\"") {
                    let raw = UnsafeRawBufferPointer(rebasing: bytes[start..<at])
                    guard let s = String(validating: raw, as: UTF8.self) else { throw fail("invalid UTF-8") }
                    at += 1
                    return s
                }
                if b == UInt8(ascii: "\\") { break }
                if b < 0x20 { throw fail("control character in a string") }
                at += 1
            }
            guard at < bytes.count else { throw fail("unterminated string") }
            var out = [UInt8](UnsafeRawBufferPointer(rebasing: bytes[start..<at]))
            while at < bytes.count {
                let b = bytes[at]
                switch b {
                case UInt8(ascii: "\""):
                    at += 1
                    guard let s = String(validating: out, as: UTF8.self) else { throw fail("invalid UTF-8") }
                    return s
                case UInt8(ascii: "\\"):
                    at += 1
                    guard let e = current else { throw fail("unterminated string") }
                    at += 1
                    switch e {
                    case UInt8(ascii: "\""): out.append(0x22)
                    case UInt8(ascii: "\\"): out.append(0x5C)
                    case UInt8(ascii: "/"): out.append(0x2F)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"): try unicodeEscape(into: &out)
                    default: throw fail("invalid escape")
                    }
                case 0..<0x20:
                    throw fail("control character in a string")
                default:
                    out.append(b)
                    at += 1
                }
            }
            throw fail("unterminated string")
        }

        mutating func hex4() throws(Failure) -> UInt32 {
            guard at + 4 <= bytes.count else { throw fail("unterminated escape") }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let c = bytes[at]
                let d: UInt8
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): d = c - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): d = c - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): d = c - UInt8(ascii: "A") + 10
                default: throw fail("invalid \\u escape")
                }
                v = v << 4 | UInt32(d)
                at += 1
            }
            return v
        }

        /// `\uXXXX`, with surrogate pairs; a lone surrogate is an error (as in JSONDecoder).
        mutating func unicodeEscape(into out: inout [UInt8]) throws(Failure) {
            var scalar = try hex4()
            if (0xD800...0xDBFF).contains(scalar) {
                guard at + 2 <= bytes.count, bytes[at] == UInt8(ascii: "\\"), bytes[at + 1] == UInt8(ascii: "u") else {
                    throw fail("unpaired surrogate")
                }
                at += 2
                let low = try hex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw fail("unpaired surrogate") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw fail("unpaired surrogate")
            }
            guard let u = Unicode.Scalar(scalar) else { throw fail("invalid \\u escape") }
            out.append(contentsOf: UTF8.encode(u)!)
        }

        /// An integer that fits Int64 becomes `.int`; any other number `.double` (JSONValue's rule).
        mutating func number() throws(Failure) -> JSONValue {
            let start = at
            var integral = true
            if current == UInt8(ascii: "-") { at += 1 }
            guard let first = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else {
                throw fail("invalid number")
            }
            if first == UInt8(ascii: "0") {
                at += 1
                if let c = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) { throw fail("leading zero") }
            } else {
                digits()
            }
            if current == UInt8(ascii: ".") {
                integral = false
                at += 1
                guard digits() > 0 else { throw fail("invalid number") }
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                integral = false
                at += 1
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { at += 1 }
                guard digits() > 0 else { throw fail("invalid number") }
            }
            let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self)
            if integral, let i = Int64(text) { return .int(i) }
            guard let d = Double(text), d.isFinite else { throw fail("number out of range") }
            // A whole number written with a fraction or exponent ("1.0", "1e2") is an integer to
            // JSONDecoder too.
            if d.rounded() == d, d >= -9.2e18, d <= 9.2e18, let i = Int64(exactly: d) { return .int(i) }
            return .double(d)
        }

        @discardableResult
        mutating func digits() -> Int {
            let start = at
            while let c = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) { at += 1 }
            return at - start
        }
    }
}
