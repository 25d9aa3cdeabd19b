import Foundation

/// Writes a `JSONValue` as the project's JSON: the same bytes as `JSONCoding.encoder` (sorted
/// keys, slashes not escaped, one line), without Codable's generic containers. Every result and
/// event goes out through it, built by `JSONValueEncoder` (the differential tests in
/// ProtocolTests compare both with JSONEncoder).
public enum JSONWriter {
    public static func write(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(value, into: &out)
        return out
    }

    public static func write(_ value: JSONValue, into out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let i): out.append(contentsOf: String(i).utf8)
        case .double(let d): writeDouble(d, into: &out)
        case .string(let s): writeString(s, into: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (i, e) in elements.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                write(e, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            // JSONEncoder's .sortedKeys orders names by their UTF-8 bytes. The members are sorted
            // as pairs, so that no value is looked up by its name again.
            let sorted = members.sorted { precedes($0.key, $1.key) }
            for (i, member) in sorted.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                writeString(member.key, into: &out)
                out.append(UInt8(ascii: ":"))
                write(member.value, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// As JSONEncoder with `convertToString(positiveInfinity: "inf", negativeInfinity: "-inf",
    /// nan: "nan")`: whole numbers without ".0", others as Swift prints them.
    static func writeDouble(_ d: Double, into out: inout [UInt8]) {
        if d.isNaN { return writeString("nan", into: &out) }
        if d.isInfinite { return writeString(d > 0 ? "inf" : "-inf", into: &out) }
        var text = d.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        out.append(contentsOf: text.utf8)
    }

    /// `a` before `b` in the order of their UTF-8 bytes: memcmp on the strings' own storage
    /// (native and small strings have it; a bridged one is compared byte by byte).
    static func precedes(_ a: String, _ b: String) -> Bool {
        let fast = a.utf8.withContiguousStorageIfAvailable { x in
            b.utf8.withContiguousStorageIfAvailable { y in
                let n = min(x.count, y.count)
                if n > 0, let p = x.baseAddress, let q = y.baseAddress {
                    let c = memcmp(p, q, n)
                    if c != 0 { return c < 0 }
                }
                return x.count < y.count
            }
        }
        if let fast, let result = fast { return result }
        return a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        let done: Void? = s.utf8.withContiguousStorageIfAvailable { bytes in
            // Runs that need no escape are copied whole.
            var start = 0
            for (i, byte) in bytes.enumerated() where needsEscape(byte) {
                if start < i { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<i])) }
                escape(byte, into: &out)
                start = i + 1
            }
            if start < bytes.count { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...])) }
        }
        if done == nil {
            for byte in s.utf8 {
                if needsEscape(byte) { escape(byte, into: &out) } else { out.append(byte) }
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    @inline(__always)
    private static func needsEscape(_ byte: UInt8) -> Bool { byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") }

    /// One byte that JSON strings cannot hold as it is.
    private static func escape(_ byte: UInt8, into out: inout [UInt8]) {
        switch byte {
        case UInt8(ascii: "\""): out.append(contentsOf: #"\""#.utf8)
        case UInt8(ascii: "\\"): out.append(contentsOf: #"\\"#.utf8)
        case 0x08: out.append(contentsOf: #"\b"#.utf8)
        case 0x0C: out.append(contentsOf: #"\f"#.utf8)
        case 0x0A: out.append(contentsOf: #"\n"#.utf8)
        case 0x0D: out.append(contentsOf: #"\r"#.utf8)
        case 0x09: out.append(contentsOf: #"\t"#.utf8)
        case 0..<0x20:
            let hex = Array("0123456789abcdef".utf8)
            out.append(contentsOf: #"\u00"#.utf8)
            out.append(hex[Int(byte >> 4)])
            out.append(hex[Int(byte & 0xF)])
        default: out.append(byte)
        }
    }
}
