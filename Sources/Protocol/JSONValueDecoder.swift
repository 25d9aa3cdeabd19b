import Foundation

/// A `Decoder` that reads a `JSONValue` directly, so a call's params are decoded in one pass
/// instead of being written back to bytes (JSONEncoder) and parsed again (JSONDecoder).
///
/// It must accept and refuse exactly what that round trip did, with the same `DecodingError`s
/// (case, coding path, type, description), because the params decoder turns those errors into the
/// client's -32602 messages (`RPCParams.decode(from:)`). So it follows Foundation's JSONDecoder
/// (swift-foundation's JSONDecoderImpl) as it sees the value after JSONEncoder wrote it:
/// - a number is the text JSONEncoder writes for it (`.int` its digits, `.double` its
///   `description` without a trailing ".0"), and an integer field accepts it only when that text
///   is a whole number that fits (3.0 and 1e3 yes; 2.5, 1e300 and 2^63 for an Int no);
/// - a non-finite `.double` was written as the string "inf", "-inf" or "nan"
///   (`JSONCoding.encoder`'s strategy), so it reads as that string;
/// - a number that does not fit its type is not a `DecodingError` inside the value (JSONDecoder
///   raises its own internal error there, which `init(from:)`s that catch `DecodingError` do
///   not see) and becomes `dataCorrupted` with an empty coding path at the top, as there;
/// - `null` for a Bool is a type mismatch, for other scalars `valueNotFound`;
/// - Data is base64, URL a string, Date and Decimal as JSONDecoder's defaults.
/// `JSONValueDecoderTests` decodes every params type from valid and invalid bodies both ways.
struct JSONValueDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// A number JSONDecoder parses but its type cannot hold (JSONDecoder's internal
    /// `numberIsNotRepresentableInSwift`); `decode(_:)` turns it into its top-level error.
    struct NotRepresentable: Error {}

    /// Decodes `type` from `value`: JSONDecoder's `decode(_:from:)` on JSONEncoder's bytes of it.
    static func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        do {
            return try unwrap(value, as: type, path: [])
        } catch is NotRepresentable {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "The given data was not valid JSON."))
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        switch value {
        case .object(let members):
            return KeyedDecodingContainer(KeyedContainer<Key>(members: members, codingPath: codingPath))
        case .null:
            throw DecodingError.valueNotFound([String: Any].self, .init(
                codingPath: codingPath, debugDescription: "Cannot get keyed decoding container -- found null value instead"))
        default:
            throw DecodingError.typeMismatch([String: Any].self, .init(
                codingPath: codingPath,
                debugDescription: "Expected to decode \([String: Any].self) but found \(Self.kind(of: value)) instead."))
        }
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        switch value {
        case .array(let elements):
            return UnkeyedContainer(elements: elements, codingPath: codingPath)
        case .null:
            throw DecodingError.valueNotFound([Any].self, .init(
                codingPath: codingPath, debugDescription: "Cannot get unkeyed decoding container -- found null value instead"))
        default:
            throw DecodingError.typeMismatch([Any].self, .init(
                codingPath: codingPath,
                debugDescription: "Expected to decode \([Any].self) but found \(Self.kind(of: value)) instead."))
        }
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleValue(value: value, codingPath: codingPath) }
}

// MARK: - Values

extension JSONValueDecoder {
    /// JSONDecoder's `debugDataTypeDescription` of the value as JSONEncoder wrote it.
    static func kind(of value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool: "bool"
        case .int: "number"
        case .double(let d): d.isFinite ? "number" : "a string"
        case .string: "a string"
        case .array: "an array"
        case .object: "a dictionary"
        }
    }

    /// The text JSONEncoder writes for a finite Double.
    static func text(of d: Double) -> String {
        var s = d.description
        if s.hasSuffix(".0") { s.removeLast(2) }
        return s
    }

    /// `JSONCoding.encoder`'s spelling of a non-finite Double (nonConformingFloatEncodingStrategy).
    static func nonFiniteName(_ d: Double) -> String {
        d.isNaN ? "nan" : d > 0 ? "inf" : "-inf"
    }

    static func path(_ base: [any CodingKey], _ key: (any CodingKey)?) -> [any CodingKey] {
        guard let key else { return base }
        return base + [key]
    }

    static func typeMismatch(_ type: Any.Type, _ value: JSONValue, _ base: [any CodingKey], _ key: (any CodingKey)?) -> DecodingError {
        .typeMismatch(type, .init(codingPath: path(base, key),
                                  debugDescription: "Expected to decode \(type) but found \(kind(of: value)) instead."))
    }

    static func notNull<T>(_ value: JSONValue, _ type: T.Type, _ base: [any CodingKey], _ key: (any CodingKey)?) throws {
        if case .null = value {
            throw DecodingError.valueNotFound(type, .init(codingPath: path(base, key),
                                                          debugDescription: "Cannot get value of type \(type) -- found null value instead"))
        }
    }

    static func bool(_ value: JSONValue, _ base: [any CodingKey], _ key: (any CodingKey)?) throws -> Bool {
        guard case .bool(let b) = value else { throw typeMismatch(Bool.self, value, base, key) }
        return b
    }

    static func string(_ value: JSONValue, _ base: [any CodingKey], _ key: (any CodingKey)?) throws -> String {
        switch value {
        case .string(let s): return s
        case .double(let d) where !d.isFinite: return nonFiniteName(d)
        default:
            try notNull(value, String.self, base, key)
            throw typeMismatch(String.self, value, base, key)
        }
    }

    static func integer<T: FixedWidthInteger & Decodable>(_ value: JSONValue, as type: T.Type,
                                                          _ base: [any CodingKey], _ key: (any CodingKey)?) throws -> T {
        switch value {
        case .int(let i):
            guard let v = T(exactly: i) else { throw NotRepresentable() }
            return v
        case .double(let d) where d.isFinite:
            return try integer(d, as: type)
        default:
            try notNull(value, type, base, key)
            throw typeMismatch(type, value, base, key)
        }
    }

    /// JSONDecoder's integer parse of a Double's text: a whole number that fits; past 2^53 it
    /// re-reads the text as a Decimal, which JSONDecoder itself does here (rare: a params integer
    /// beyond ±9.2e18 or with a big exponent).
    static func integer<T: FixedWidthInteger & Decodable>(_ d: Double, as type: T.Type) throws -> T {
        guard let v = T(exactly: d) else { throw NotRepresentable() }
        if d.magnitude < 0x1p53 { return v }
        return try delegated(text(of: d), as: type)
    }

    static func floatingPoint<T: BinaryFloatingPoint & LosslessStringConvertible>(_ value: JSONValue, as type: T.Type,
                                                                                  _ base: [any CodingKey], _ key: (any CodingKey)?) throws -> T {
        switch value {
        case .int(let i):
            return T(i)
        case .double(let d) where d.isFinite:
            if T.self == Double.self { return d as! T }
            // Rounded once from the text, as strtof does in JSONDecoder.
            guard let v = T(text(of: d)), v.isFinite, v != 0 || d == 0 else { throw NotRepresentable() }
            return v
        default:
            try notNull(value, type, base, key)
            throw typeMismatch(type, value, base, key)
        }
    }

    /// JSONDecoder itself on one number's text, for the corners where it goes through Decimal.
    static func delegated<T: Decodable>(_ text: String, as type: T.Type) throws -> T {
        do {
            return try JSONDecoder().decode(type, from: Data(text.utf8))
        } catch DecodingError.dataCorrupted(let ctx) where ctx.codingPath.isEmpty {
            throw NotRepresentable()
        }
    }

    /// JSONDecoderImpl.unwrap: the types JSONDecoder reads itself, then `init(from:)`.
    static func unwrap<T: Decodable>(_ value: JSONValue, as type: T.Type, path base: [any CodingKey], _ key: (any CodingKey)? = nil) throws -> T {
        if type == Data.self {
            try notNull(value, Data.self, base, key)
            let s: String
            switch value {
            case .string(let string): s = string
            case .double(let d) where !d.isFinite: s = nonFiniteName(d)
            default: throw typeMismatch(String.self, value, base, key)
            }
            guard let data = Data(base64Encoded: s) else {
                throw DecodingError.dataCorrupted(.init(codingPath: path(base, key), debugDescription: "Encountered Data is not valid Base64."))
            }
            return data as! T
        }
        if type == Date.self {
            try notNull(value, Date.self, base, key)
        } else if type == URL.self {
            try notNull(value, URL.self, base, key)
            guard let url = URL(string: try string(value, base, key)) else {
                throw DecodingError.dataCorrupted(.init(codingPath: path(base, key), debugDescription: "Invalid URL string."))
            }
            return url as! T
        } else if type == Decimal.self {
            try notNull(value, Decimal.self, base, key)
            switch value {
            case .int(let i): return try delegated(String(i), as: type)
            case .double(let d) where d.isFinite: return try delegated(text(of: d), as: type)
            default: throw DecodingError.typeMismatch(Decimal.self, .init(codingPath: path(base, key), debugDescription: ""))
            }
        }
        return try T(from: JSONValueDecoder(value: value, codingPath: path(base, key)))
    }

    /// What `JSONValue.init(from:)` yields from JSONDecoder on JSONEncoder's bytes of `value`:
    /// the value itself, but a whole `.double` that Int64 reads becomes `.int` and a non-finite
    /// one the string it was written as.
    static func normalized(_ value: JSONValue) -> JSONValue {
        switch value {
        case .double(let d):
            guard d.isFinite else { return .string(nonFiniteName(d)) }
            if let i = try? integer(d, as: Int64.self) { return .int(i) }
            return value
        case .array(let elements):
            guard elements.contains(where: needsNormalizing) else { return value }
            return .array(elements.map(normalized))
        case .object(let members):
            guard members.values.contains(where: needsNormalizing) else { return value }
            return .object(members.mapValues(normalized))
        default:
            return value
        }
    }

    private static func needsNormalizing(_ value: JSONValue) -> Bool {
        switch value {
        case .double: true
        case .array(let elements): elements.contains(where: needsNormalizing)
        case .object(let members): members.values.contains(where: needsNormalizing)
        default: false
        }
    }
}

// MARK: - Containers

extension JSONValueDecoder {
    /// JSONDecoder's coding key for an array element: "Index n", intValue n.
    struct IndexKey: CodingKey {
        let index: Int
        init(_ index: Int) { self.index = index }
        init?(stringValue: String) { nil }
        init?(intValue: Int) { index = intValue }
        var stringValue: String { "Index \(index)" }
        var intValue: Int? { index }
    }

    struct SuperKey: CodingKey {
        init() {}
        init?(stringValue: String) { nil }
        init?(intValue: Int) { nil }
        var stringValue: String { "super" }
        var intValue: Int? { nil }
    }

    struct SingleValue: SingleValueDecodingContainer {
        let value: JSONValue
        let codingPath: [any CodingKey]

        func decodeNil() -> Bool { value == .null }
        func decode(_ type: Bool.Type) throws -> Bool { try JSONValueDecoder.bool(value, codingPath, nil) }
        func decode(_ type: String.Type) throws -> String { try JSONValueDecoder.string(value, codingPath, nil) }
        func decode(_ type: Double.Type) throws -> Double { try JSONValueDecoder.floatingPoint(value, as: type, codingPath, nil) }
        func decode(_ type: Float.Type) throws -> Float { try JSONValueDecoder.floatingPoint(value, as: type, codingPath, nil) }
        func decode(_ type: Int.Type) throws -> Int { try JSONValueDecoder.integer(value, as: type, codingPath, nil) }
        func decode(_ type: Int8.Type) throws -> Int8 { try JSONValueDecoder.integer(value, as: type, codingPath, nil) }
        func decode(_ type: Int16.Type) throws -> Int16 { try JSONValueDecoder.integer(value, as: type, codingPath, nil) }
        func decode(_ type: Int32.Type) throws -> Int32 { try JSONValueDecoder.integer(value, as: type, codingPath, nil) }
        func decode(_ type: Int64.Type) throws -> Int64 { try JSONValueDecoder.integer(value, as: type, codingPath, nil) }
        func decode(_ type: UInt.Type) throws -> UInt { try JSONValueDecoder.integer(value, as: type, codingPath, nil) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try JSONValueDecoder.integer(value, as: type, codingPath, nil) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try JSONValueDecoder.integer(value, as: type, codingPath, nil) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try JSONValueDecoder.integer(value, as: type, codingPath, nil) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try JSONValueDecoder.integer(value, as: type, codingPath, nil) }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try JSONValueDecoder.unwrap(value, as: type, path: codingPath) }
    }

    struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let members: [String: JSONValue]
        let codingPath: [any CodingKey]

        var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }
        func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

        private func value(_ key: some CodingKey) throws -> JSONValue {
            guard let value = members[key.stringValue] else {
                throw DecodingError.keyNotFound(key, .init(codingPath: codingPath,
                                                           debugDescription: "No value associated with key \(key) (\"\(key.stringValue)\")."))
            }
            return value
        }

        /// nil when the key is missing or null (JSONDecoder's decodeIfPresent).
        private func present(_ key: Key) -> JSONValue? {
            switch members[key.stringValue] {
            case nil, .null?: nil
            case let value?: value
            }
        }

        func decodeNil(forKey key: Key) throws -> Bool { try value(key) == .null }

        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try JSONValueDecoder.bool(value(key), codingPath, key) }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { try JSONValueDecoder.string(value(key), codingPath, key) }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try JSONValueDecoder.floatingPoint(value(key), as: type, codingPath, key) }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try JSONValueDecoder.floatingPoint(value(key), as: type, codingPath, key) }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try JSONValueDecoder.integer(value(key), as: type, codingPath, key) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try JSONValueDecoder.integer(value(key), as: type, codingPath, key) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try JSONValueDecoder.integer(value(key), as: type, codingPath, key) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try JSONValueDecoder.integer(value(key), as: type, codingPath, key) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try JSONValueDecoder.integer(value(key), as: type, codingPath, key) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try JSONValueDecoder.integer(value(key), as: type, codingPath, key) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try JSONValueDecoder.integer(value(key), as: type, codingPath, key) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try JSONValueDecoder.integer(value(key), as: type, codingPath, key) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try JSONValueDecoder.integer(value(key), as: type, codingPath, key) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try JSONValueDecoder.integer(value(key), as: type, codingPath, key) }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            try JSONValueDecoder.unwrap(value(key), as: type, path: codingPath, key)
        }

        func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
            try present(key).map { try JSONValueDecoder.bool($0, codingPath, key) }
        }
        func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
            try present(key).map { try JSONValueDecoder.string($0, codingPath, key) }
        }
        func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
            try present(key).map { try JSONValueDecoder.floatingPoint($0, as: type, codingPath, key) }
        }
        func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? {
            try present(key).map { try JSONValueDecoder.floatingPoint($0, as: type, codingPath, key) }
        }
        func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try integerIfPresent(key) }
        func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try integerIfPresent(key) }
        func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try integerIfPresent(key) }
        func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try integerIfPresent(key) }
        func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try integerIfPresent(key) }
        func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try integerIfPresent(key) }
        func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try integerIfPresent(key) }
        func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try integerIfPresent(key) }
        func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try integerIfPresent(key) }
        func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try integerIfPresent(key) }
        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
            try present(key).map { try JSONValueDecoder.unwrap($0, as: type, path: codingPath, key) }
        }

        private func integerIfPresent<T: FixedWidthInteger & Decodable>(_ key: Key) throws -> T? {
            try present(key).map { try JSONValueDecoder.integer($0, as: T.self, codingPath, key) }
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            try JSONValueDecoder(value: value(key), codingPath: codingPath + [key]).container(keyedBy: type)
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            try JSONValueDecoder(value: value(key), codingPath: codingPath + [key]).unkeyedContainer()
        }

        /// A missing key gives a decoder of null (JSONDecoder's `decoderForKeyNoThrow`).
        func superDecoder() throws -> any Decoder {
            JSONValueDecoder(value: members[SuperKey().stringValue] ?? .null, codingPath: codingPath + [SuperKey()])
        }

        func superDecoder(forKey key: Key) throws -> any Decoder {
            JSONValueDecoder(value: members[key.stringValue] ?? .null, codingPath: codingPath + [key])
        }
    }

    struct UnkeyedContainer: UnkeyedDecodingContainer {
        let elements: [JSONValue]
        let codingPath: [any CodingKey]
        private(set) var currentIndex = 0

        init(elements: [JSONValue], codingPath: [any CodingKey]) {
            self.elements = elements
            self.codingPath = codingPath
        }

        var count: Int? { elements.count }
        var isAtEnd: Bool { currentIndex >= elements.count }

        private var key: IndexKey { IndexKey(currentIndex) }

        private func next<T>(_ type: T.Type, _ message: String = "Unkeyed container is at end.") throws -> JSONValue {
            guard currentIndex < elements.count else {
                throw DecodingError.valueNotFound(type, .init(codingPath: codingPath + [key], debugDescription: message))
            }
            return elements[currentIndex]
        }

        /// The next element, or nil (missing or null); JSONDecoder moves on either way.
        private mutating func nextIfPresent<T>(_ decode: (JSONValue) throws -> T) throws -> T? {
            let result: T?
            if currentIndex < elements.count, elements[currentIndex] != .null {
                result = try decode(elements[currentIndex])
            } else {
                result = nil
            }
            currentIndex += 1
            return result
        }

        private mutating func advance<T>(_ result: T) -> T {
            currentIndex += 1
            return result
        }

        mutating func decodeNil() throws -> Bool {
            guard case .null = try next(Never.self) else { return false }
            currentIndex += 1
            return true
        }

        mutating func decode(_ type: Bool.Type) throws -> Bool { advance(try JSONValueDecoder.bool(next(type), codingPath, key)) }
        mutating func decode(_ type: String.Type) throws -> String { advance(try JSONValueDecoder.string(next(type), codingPath, key)) }
        mutating func decode(_ type: Double.Type) throws -> Double { advance(try JSONValueDecoder.floatingPoint(next(type), as: type, codingPath, key)) }
        mutating func decode(_ type: Float.Type) throws -> Float { advance(try JSONValueDecoder.floatingPoint(next(type), as: type, codingPath, key)) }
        mutating func decode(_ type: Int.Type) throws -> Int { try integer() }
        mutating func decode(_ type: Int8.Type) throws -> Int8 { try integer() }
        mutating func decode(_ type: Int16.Type) throws -> Int16 { try integer() }
        mutating func decode(_ type: Int32.Type) throws -> Int32 { try integer() }
        mutating func decode(_ type: Int64.Type) throws -> Int64 { try integer() }
        mutating func decode(_ type: UInt.Type) throws -> UInt { try integer() }
        mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try integer() }
        mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try integer() }
        mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try integer() }
        mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try integer() }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            advance(try JSONValueDecoder.unwrap(next(type), as: type, path: codingPath, key))
        }

        private mutating func integer<T: FixedWidthInteger & Decodable>() throws -> T {
            advance(try JSONValueDecoder.integer(next(T.self), as: T.self, codingPath, key))
        }

        mutating func decodeIfPresent(_ type: Bool.Type) throws -> Bool? {
            let (path, key) = (codingPath, key)
            return try nextIfPresent { try JSONValueDecoder.bool($0, path, key) }
        }
        mutating func decodeIfPresent(_ type: String.Type) throws -> String? {
            let (path, key) = (codingPath, key)
            return try nextIfPresent { try JSONValueDecoder.string($0, path, key) }
        }
        mutating func decodeIfPresent(_ type: Double.Type) throws -> Double? {
            let (path, key) = (codingPath, key)
            return try nextIfPresent { try JSONValueDecoder.floatingPoint($0, as: type, path, key) }
        }
        mutating func decodeIfPresent(_ type: Float.Type) throws -> Float? {
            let (path, key) = (codingPath, key)
            return try nextIfPresent { try JSONValueDecoder.floatingPoint($0, as: type, path, key) }
        }
        mutating func decodeIfPresent(_ type: Int.Type) throws -> Int? { try integerIfPresent() }
        mutating func decodeIfPresent(_ type: Int8.Type) throws -> Int8? { try integerIfPresent() }
        mutating func decodeIfPresent(_ type: Int16.Type) throws -> Int16? { try integerIfPresent() }
        mutating func decodeIfPresent(_ type: Int32.Type) throws -> Int32? { try integerIfPresent() }
        mutating func decodeIfPresent(_ type: Int64.Type) throws -> Int64? { try integerIfPresent() }
        mutating func decodeIfPresent(_ type: UInt.Type) throws -> UInt? { try integerIfPresent() }
        mutating func decodeIfPresent(_ type: UInt8.Type) throws -> UInt8? { try integerIfPresent() }
        mutating func decodeIfPresent(_ type: UInt16.Type) throws -> UInt16? { try integerIfPresent() }
        mutating func decodeIfPresent(_ type: UInt32.Type) throws -> UInt32? { try integerIfPresent() }
        mutating func decodeIfPresent(_ type: UInt64.Type) throws -> UInt64? { try integerIfPresent() }
        mutating func decodeIfPresent<T: Decodable>(_ type: T.Type) throws -> T? {
            let (path, key) = (codingPath, key)
            return try nextIfPresent { try JSONValueDecoder.unwrap($0, as: type, path: path, key) }
        }

        private mutating func integerIfPresent<T: FixedWidthInteger & Decodable>() throws -> T? {
            let (path, key) = (codingPath, key)
            return try nextIfPresent { try JSONValueDecoder.integer($0, as: T.self, path, key) }
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            let value = try next(KeyedDecodingContainer<NestedKey>.self)
            return advance(try JSONValueDecoder(value: value, codingPath: codingPath + [key]).container(keyedBy: type))
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            let value = try next((any UnkeyedDecodingContainer).self)
            return advance(try JSONValueDecoder(value: value, codingPath: codingPath + [key]).unkeyedContainer())
        }

        mutating func superDecoder() throws -> any Decoder {
            let value = try next((any Decoder).self, "Cannot get superDecoder() -- unkeyed container is at end.")
            return advance(JSONValueDecoder(value: value, codingPath: codingPath + [key]))
        }
    }
}
