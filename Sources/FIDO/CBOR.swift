/// CBOR (RFC 8949) as CTAP2 uses it.
///
/// CTAP2 messages are small, untrusted and arrive from any process that can open the HID node, so
/// the decoder is written to fail, never to trap: every length is checked against the bytes that
/// remain before anything is allocated, nesting is bounded, and every failure is a typed
/// `CBORError` that maps to a CTAP2 status byte. Only what CTAP2 uses is accepted: definite-length
/// items of major types 0–5 and the simple values false/true/null/undefined. Tags, floats and
/// indefinite lengths are refused (CTAP2 §8 "Message Encoding" forbids them in requests).
///
/// The encoder always writes CTAP2 canonical form (CTAP 2.1 §8 "CTAP2 canonical CBOR encoding
/// form"): shortest integer encodings, definite lengths, and map keys sorted by their encoded
/// bytes, length first then bytewise — which puts integer keys before text keys and 1, 3 before
/// -1, -2, -3 in a COSE key, as the standard requires.
public indirect enum CBORValue: Sendable, Hashable {
    case unsigned(UInt64)
    /// The negative integer -1 - n.
    case negative(UInt64)
    case bytes([UInt8])
    case text(String)
    case array([CBORValue])
    /// Entries in the order read (decoder) or given (encoder); the encoder sorts them.
    case map([CBORMapEntry])
    case bool(Bool)
    case null
    case undefined

    /// A signed integer value: `.unsigned` or `.negative`.
    public static func int(_ value: Int) -> CBORValue {
        value >= 0 ? .unsigned(UInt64(value)) : .negative(UInt64(-(value + 1)))
    }

    /// The value as an Int if it is an integer that fits.
    public var intValue: Int? {
        switch self {
        case .unsigned(let n): return n <= UInt64(Int.max) ? Int(n) : nil
        case .negative(let n): return n <= UInt64(Int.max) ? -1 - Int(n) : nil
        default: return nil
        }
    }

    public var bytesValue: [UInt8]? { if case .bytes(let b) = self { return b } else { return nil } }
    public var textValue: String? { if case .text(let t) = self { return t } else { return nil } }
    public var boolValue: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    public var arrayValue: [CBORValue]? { if case .array(let a) = self { return a } else { return nil } }
    public var mapValue: [CBORMapEntry]? { if case .map(let m) = self { return m } else { return nil } }

    /// The value under `key` when this is a map.
    public subscript(key: CBORValue) -> CBORValue? {
        guard case .map(let entries) = self else { return nil }
        return entries.first(where: { $0.key == key })?.value
    }

    public subscript(key: Int) -> CBORValue? { self[.int(key)] }
    public subscript(key: String) -> CBORValue? { self[.text(key)] }
}

public struct CBORMapEntry: Sendable, Hashable {
    public var key: CBORValue
    public var value: CBORValue
    public init(_ key: CBORValue, _ value: CBORValue) {
        self.key = key
        self.value = value
    }
}

extension CBORValue: ExpressibleByIntegerLiteral, ExpressibleByStringLiteral, ExpressibleByBooleanLiteral {
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(stringLiteral value: String) { self = .text(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

/// Why a byte string is not acceptable CBOR. Every case is a CTAP2 status (see `ctapStatus`).
public enum CBORError: Error, Sendable, Equatable {
    /// The input ended inside an item.
    case truncated
    /// Bytes remain after the top-level item.
    case trailingBytes
    /// Reserved additional-information values 28–30, or a break byte outside an indefinite item.
    case malformed
    /// Indefinite lengths, tags, floats or an unassigned simple value: legal CBOR, not CTAP2.
    case unsupported
    /// A text string that is not UTF-8.
    case invalidUTF8
    /// The same key twice in one map.
    case duplicateKey
    /// Deeper than the decoder's nesting limit.
    case tooDeep
    /// More bytes than the decoder's size limit, or a declared length beyond the input.
    case tooLarge

    /// The CTAP2 status for this failure, decided here only: CTAP2_ERR_REQUEST_TOO_LARGE for
    /// input past the size limit, CTAP2_ERR_INVALID_CBOR for everything else.
    public var ctapStatus: CTAPStatus {
        switch self {
        case .tooLarge: return .requestTooLarge
        default: return .invalidCBOR
        }
    }
}

/// Decodes one CBOR item with bounds on depth and size.
public struct CBORDecoder: Sendable {
    /// Maximum nesting of arrays and maps (a top-level map is depth 1). CTAP2 requires authenticators to handle depth 4;
    /// 16 leaves room for extensions and still bounds recursion.
    public var maxDepth: Int
    /// Maximum input size in bytes; the largest CTAPHID message is 7609 bytes.
    public var maxSize: Int

    public init(maxDepth: Int = 16, maxSize: Int = 7609) {
        self.maxDepth = maxDepth
        self.maxSize = maxSize
    }

    /// Decodes exactly one item filling all of `bytes`.
    public func decode(_ bytes: [UInt8]) throws(CBORError) -> CBORValue {
        guard bytes.count <= maxSize else { throw .tooLarge }
        var reader = Reader(bytes: bytes, maxDepth: maxDepth)
        let value = try reader.item(depth: 0)
        guard reader.offset == bytes.count else { throw .trailingBytes }
        return value
    }

    private struct Reader {
        let bytes: [UInt8]
        let maxDepth: Int
        var offset = 0

        var remaining: Int { bytes.count - offset }

        mutating func byte() throws(CBORError) -> UInt8 {
            guard offset < bytes.count else { throw .truncated }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func take(_ count: UInt64) throws(CBORError) -> ArraySlice<UInt8> {
            guard count <= UInt64(remaining) else { throw .truncated }
            let n = Int(count)
            defer { offset += n }
            return bytes[offset..<offset + n]
        }

        /// The argument of a head whose additional information is `info`.
        mutating func argument(_ info: UInt8) throws(CBORError) -> UInt64 {
            switch info {
            case 0...23: return UInt64(info)
            case 24...27:
                let width = 1 << Int(info - 24)
                var value: UInt64 = 0
                for b in try take(UInt64(width)) { value = value << 8 | UInt64(b) }
                return value
            case 31: throw .unsupported  // indefinite length
            default: throw .malformed  // 28–30 are reserved
            }
        }

        mutating func item(depth: Int) throws(CBORError) -> CBORValue {
            let head = try byte()
            let major = head >> 5
            let info = head & 0x1f
            switch major {
            case 0: return .unsigned(try argument(info))
            case 1: return .negative(try argument(info))
            case 2: return .bytes(Array(try take(try argument(info))))
            case 3:
                let raw = try take(try argument(info))
                guard let text = String(validating: raw, as: UTF8.self) else { throw .invalidUTF8 }
                return .text(text)
            case 4:
                guard depth < maxDepth else { throw .tooDeep }
                let count = try argument(info)
                // Each item takes at least one byte: a count beyond the rest cannot be honest,
                // and checking first keeps a hostile count from reserving memory.
                guard count <= UInt64(remaining) else { throw .truncated }
                var items: [CBORValue] = []
                items.reserveCapacity(Int(count))
                for _ in 0..<count { items.append(try item(depth: depth + 1)) }
                return .array(items)
            case 5:
                guard depth < maxDepth else { throw .tooDeep }
                let count = try argument(info)
                guard count <= UInt64(remaining / 2) else { throw .truncated }
                var entries: [CBORMapEntry] = []
                entries.reserveCapacity(Int(count))
                var seen = Set<CBORValue>()
                for _ in 0..<count {
                    let key = try item(depth: depth + 1)
                    guard seen.insert(key).inserted else { throw .duplicateKey }
                    entries.append(CBORMapEntry(key, try item(depth: depth + 1)))
                }
                return .map(entries)
            case 6: throw .unsupported  // tags
            default:  // 7: simple values and floats
                switch info {
                case 20: return .bool(false)
                case 21: return .bool(true)
                case 22: return .null
                case 23: return .undefined
                case 31: throw .malformed  // a break outside an indefinite item
                case 28...30: throw .malformed
                default: throw .unsupported
                }
            }
        }
    }
}

/// Encodes values in CTAP2 canonical form.
public enum CBOREncoder {
    public static func encode(_ value: CBORValue) -> [UInt8] {
        var out: [UInt8] = []
        append(value, to: &out)
        return out
    }

    public static func append(_ value: CBORValue, to out: inout [UInt8]) {
        switch value {
        case .unsigned(let n): head(0, n, &out)
        case .negative(let n): head(1, n, &out)
        case .bytes(let b):
            head(2, UInt64(b.count), &out)
            out.append(contentsOf: b)
        case .text(let t):
            let utf8 = Array(t.utf8)
            head(3, UInt64(utf8.count), &out)
            out.append(contentsOf: utf8)
        case .array(let items):
            head(4, UInt64(items.count), &out)
            for item in items { append(item, to: &out) }
        case .map(let entries):
            head(5, UInt64(entries.count), &out)
            let encoded = entries.map { (encode($0.key), $0.value) }
                .sorted { canonicalOrder($0.0, $1.0) }
            for (key, value) in encoded {
                out.append(contentsOf: key)
                append(value, to: &out)
            }
        case .bool(let b): out.append(b ? 0xf5 : 0xf4)
        case .null: out.append(0xf6)
        case .undefined: out.append(0xf7)
        }
    }

    /// CTAP2 canonical key order: shorter encodings first, then bytewise.
    static func canonicalOrder(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        if a.count != b.count { return a.count < b.count }
        return a.lexicographicallyPrecedes(b)
    }

    private static func head(_ major: UInt8, _ argument: UInt64, _ out: inout [UInt8]) {
        let m = major << 5
        switch argument {
        case 0..<24: out.append(m | UInt8(argument))
        case 24...0xff: out.append(contentsOf: [m | 24, UInt8(argument)])
        case 0x100...0xffff: out.append(contentsOf: [m | 25, UInt8(argument >> 8), UInt8(argument & 0xff)])
        case 0x1_0000...0xffff_ffff:
            out.append(m | 26)
            for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(argument >> UInt64(shift) & 0xff)) }
        default:
            out.append(m | 27)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(argument >> UInt64(shift) & 0xff)) }
        }
    }
}
