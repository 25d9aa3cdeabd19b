import Foundation

/// Any JSON value. Used where the shape is not known up front: JSON-RPC envelopes, ids,
/// params before they are decoded into a method's own type, and event fields.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    public var boolValue: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    public var intValue: Int64? {
        switch self {
        case .int(let i): return i
        case .double(let d) where d.rounded() == d && abs(d) < 9e15: return Int64(d)
        default: return nil
        }
    }
    public var doubleValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { return a } else { return nil } }
    public var objectValue: [String: JSONValue]? { if case .object(let o) = self { return o } else { return nil } }
}

extension JSONValue: Codable {
    public init(from decoder: Decoder) throws {
        if let direct = decoder as? JSONValueDecoder {
            // The value is at hand: what the generic route below would rebuild from it.
            self = JSONValueDecoder.normalized(direct.value)
            return
        }
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let b = try? container.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? container.decode(Int64.self) {
            self = .int(i)
        } else if let d = try? container.decode(Double.self) {
            self = .double(d)
        } else if let s = try? container.decode(String.self) {
            self = .string(s)
        } else if let a = try? container.decode([JSONValue].self) {
            self = .array(a)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let b): try container.encode(b)
        case .int(let i): try container.encode(i)
        case .double(let d): try container.encode(d)
        case .string(let s): try container.encode(s)
        case .array(let a): try container.encode(a)
        case .object(let o): try container.encode(o)
        }
    }
}

extension JSONValue {
    /// Converts any Encodable into a JSONValue: what JSONDecoder reads from JSONEncoder's bytes of
    /// it (a whole Double as `.int`, a non-finite one as its string), built in one pass by
    /// `JSONValueEncoder` without writing and parsing the bytes.
    public init<T: Encodable>(encoding value: T) throws {
        self = JSONValueDecoder.normalized(try JSONValueEncoder.encode(value))
    }

    /// Decodes this value as `T`, in one pass (`JSONValueDecoder`): it accepts and refuses
    /// what JSONDecoder did on this value's JSON, with the same errors.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONValueDecoder.decode(type, from: self)
    }

    /// How `decode(_:through:)` reads a value as a type.
    public enum DecodingPath: Sendable, CaseIterable {
        /// `JSONValueDecoder` straight from the value (what `decode(_:)` does).
        case direct
        /// The former path: JSONEncoder writes the value, JSONDecoder reads it back. Kept as the
        /// reference the direct decoder is checked against (ProtocolTests) and measured against
        /// (biometricd-bench --only params).
        case foundation
    }

    public func decode<T: Decodable>(_ type: T.Type, through path: DecodingPath) throws -> T {
        switch path {
        case .direct:
            return try JSONValueDecoder.decode(type, from: self)
        case .foundation:
            let data = try JSONCoding.encoder.encode(self)
            return try JSONCoding.decoder.decode(T.self, from: data)
        }
    }
}

/// The project's JSON settings: compact (one value per line), sorted keys. No key strategy: it
/// would also rewrite the keys of free-form objects; wire names are spelled in CodingKeys.
public enum JSONCoding {
    public static var encoder: JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        e.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return e
    }
    public static var decoder: JSONDecoder {
        let d = JSONDecoder()
        return d
    }
}
