import Foundation

/// Encodes any `Encodable` straight into a `JSONValue` (no bytes in between): the one writer path
/// for results. What `JSONWriter` then writes from it is byte for byte what `JSONCoding.encoder`
/// writes (sorted keys, the same numbers, `Data` as base64, non-finite doubles as
/// "inf"/"-inf"/"nan"; JSONWriterTests), so a type's wire names live only in its `CodingKeys`.
public enum JSONValueEncoder {
    public static func encode<T: Encodable>(_ value: T) throws -> JSONValue {
        let slot = Slot()
        try slot.encode(value, at: [])
        return slot.resolved ?? .object([:])
    }
}

/// Where one value is written. Containers are handed out before their members are written, so a
/// slot holds its members and becomes a `JSONValue` only when the whole value is done.
private final class Slot {
    enum Content {
        case empty
        case value(JSONValue)
        case object(Members<[String: Slot]>)
        case array(Members<[Slot]>)
    }

    var content = Content.empty

    var resolved: JSONValue? {
        switch content {
        case .empty: nil
        case .value(let value): value
        case .object(let members): .object(members.slots.compactMapValues(\.resolved))
        case .array(let members): .array(members.slots.map { $0.resolved ?? .null })
        }
    }

    func objectMembers() -> Members<[String: Slot]> {
        if case .object(let members) = content { return members }
        let members = Members<[String: Slot]>([:])
        content = .object(members)
        return members
    }

    func arrayMembers() -> Members<[Slot]> {
        if case .array(let members) = content { return members }
        let members = Members<[Slot]>([])
        content = .array(members)
        return members
    }

    func encode<T: Encodable>(_ value: T, at path: [any CodingKey]) throws {
        if let big = value as? UInt64, big > UInt64(Int64.max) {
            // JSONValue holds Int64; JSONEncoder writes such a number exactly, so this path must not.
            throw EncodingError.invalidValue(value, EncodingError.Context(codingPath: path, debugDescription: "beyond Int64"))
        }
        if let big = value as? UInt, big > UInt(Int64.max) {
            throw EncodingError.invalidValue(value, EncodingError.Context(codingPath: path, debugDescription: "beyond Int64"))
        }
        if let direct = Self.direct(value) {
            content = .value(direct)
        } else {
            try value.encode(to: ValueEncoder(codingPath: path, slot: self))
        }
    }

    /// Scalars, and the types JSONEncoder writes in its own way.
    static func direct<T: Encodable>(_ value: T) -> JSONValue? {
        switch value {
        case let v as String: .string(v)
        case let v as Bool: .bool(v)
        case let v as Int: number(v)
        case let v as Int64: number(v)
        case let v as Int32: number(v)
        case let v as Int16: number(v)
        case let v as Int8: number(v)
        case let v as UInt: number(v)
        case let v as UInt64: number(v)
        case let v as UInt32: number(v)
        case let v as UInt16: number(v)
        case let v as UInt8: number(v)
        case let v as Double: floating(v)
        // A Float as JSONEncoder writes it: its shortest decimal form, not the widened double's.
        case let v as Float: v.isFinite ? .double(Double(v.description) ?? Double(v)) : floating(Double(v))
        case let v as Data: .string(v.base64EncodedString())
        case let v as URL: .string(v.absoluteString)
        case let v as JSONValue: v
        default: nil
        }
    }

    static func number<I: BinaryInteger>(_ value: I) -> JSONValue { Int64(exactly: value).map { .int($0) } ?? .double(Double(value)) }

    static func floating(_ value: Double) -> JSONValue {
        if value.isNaN { return .string("nan") }
        if value.isInfinite { return .string(value > 0 ? "inf" : "-inf") }
        return .double(value)
    }
}

/// A container's member slots (shared by the container values Codable copies around).
private final class Members<Storage> {
    var slots: Storage
    init(_ slots: Storage) { self.slots = slots }
}

private struct ValueEncoder: Encoder {
    let codingPath: [any CodingKey]
    let slot: Slot
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(KeyedContainer<Key>(codingPath: codingPath, members: slot.objectMembers()))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        UnkeyedContainer(codingPath: codingPath, members: slot.arrayMembers())
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { SingleContainer(codingPath: codingPath, slot: slot) }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let codingPath: [any CodingKey]
    let members: Members<[String: Slot]>

    private func slot(_ key: any CodingKey) -> Slot {
        let slot = Slot()
        members.slots[key.stringValue] = slot
        return slot
    }

    mutating func encodeNil(forKey key: Key) throws { slot(key).content = .value(.null) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { try slot(key).encode(value, at: codingPath + [key]) }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        ValueEncoder(codingPath: codingPath + [key], slot: slot(key)).container(keyedBy: keyType)
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        ValueEncoder(codingPath: codingPath + [key], slot: slot(key)).unkeyedContainer()
    }
    mutating func superEncoder() -> any Encoder { ValueEncoder(codingPath: codingPath, slot: slot(SuperKey())) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { ValueEncoder(codingPath: codingPath + [key], slot: slot(key)) }
}

/// The key JSONEncoder uses for `superEncoder()`.
private struct SuperKey: CodingKey {
    var stringValue: String { "super" }
    var intValue: Int? { nil }
    init() {}
    init?(stringValue: String) { nil }
    init?(intValue: Int) { nil }
}

private struct IndexKey: CodingKey {
    let index: Int
    var stringValue: String { "Index \(index)" }
    var intValue: Int? { index }
    init(_ index: Int) { self.index = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.init(intValue) }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let codingPath: [any CodingKey]
    let members: Members<[Slot]>
    var count: Int { members.slots.count }

    private func next() -> (Slot, [any CodingKey]) {
        let slot = Slot()
        let path = codingPath + [IndexKey(members.slots.count)]
        members.slots.append(slot)
        return (slot, path)
    }

    mutating func encodeNil() throws { next().0.content = .value(.null) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        let (slot, path) = next()
        try slot.encode(value, at: path)
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let (slot, path) = next()
        return ValueEncoder(codingPath: path, slot: slot).container(keyedBy: keyType)
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let (slot, path) = next()
        return ValueEncoder(codingPath: path, slot: slot).unkeyedContainer()
    }
    mutating func superEncoder() -> any Encoder {
        let (slot, path) = next()
        return ValueEncoder(codingPath: path, slot: slot)
    }
}

private struct SingleContainer: SingleValueEncodingContainer {
    let codingPath: [any CodingKey]
    let slot: Slot
    mutating func encodeNil() throws { slot.content = .value(.null) }
    mutating func encode<T: Encodable>(_ value: T) throws { try slot.encode(value, at: codingPath) }
}
