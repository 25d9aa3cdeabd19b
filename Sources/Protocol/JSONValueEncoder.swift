import Foundation

/// An `Encoder` that builds a `JSONValue` straight from any `Encodable`, so results and events
/// go out on one path (`Encodable` → `JSONValueEncoder` → `JSONWriter`) instead of JSONEncoder
/// for some and hand-written `JSONValue` builders for the hot ones (which spelled every wire
/// name a second time beside CodingKeys).
///
/// The contract: `JSONWriter.write(try JSONValueEncoder.encode(x))` is the same bytes as
/// `JSONCoding.encoder.encode(x)` (swift-foundation's JSONEncoder with sorted keys, slashes not
/// escaped, non-finite floats as "inf"/"-inf"/"nan"), or a thrown error where those bytes cannot
/// be held by a `JSONValue`. So it follows JSONEncoder (swift-foundation's `__JSONEncoder`):
/// - `encodeIfPresent` leaves a nil out, `encodeNil` writes null; the last write to a key wins;
/// - a nested value that encodes nothing is `{}`; a top-level one is
///   `EncodingError.invalidValue` ("Top-level T did not encode any values.");
/// - Data is base64, URL its `absoluteString`, Date its `Date.encode(to:)` (seconds since 2001,
///   JSONEncoder's `.deferredToDate`), Decimal its `description` as a number;
/// - Double and Float are their `description` without a trailing ".0", non-finite ones as the
///   project's strings (kept as a non-finite `.double`; `JSONWriter` writes the same string).
/// Refused with `EncodingError.invalidValue`, because `JSONValue` has no number that prints
/// JSONEncoder's text (the daemon sends none of them; `JSONValueEncoderTests` checks the refusals):
/// an unsigned integer above `Int64.max`, a Float whose text is not that of any Double (1e+10
/// is a Float's text, a Double prints 10000000000), a Decimal that is neither a whole Int64 nor
/// the text of a Double, or is NaN.
///
/// Speed: it is on every reply and event, so the common leaves (String, Bool, integers, Double,
/// [String], JSONValue) are written without a nested encoder, and the encoder for a nested
/// value is reused once that value is done.
public enum JSONValueEncoder {
    public static func encode<T: Encodable>(_ value: T) throws -> JSONValue {
        // The value is encoded into this node itself (its single-value container), not a child.
        let encoder = Node(parent: nil, key: nil)
        try encoder.encode(value)
        guard let result = encoder.take() else {
            throw EncodingError.invalidValue(value, .init(codingPath: [], debugDescription: "Top-level \(T.self) did not encode any values."))
        }
        return result
    }
}

// MARK: - The encoder

extension JSONValueEncoder {
    /// What one value's encoder has been given so far.
    enum Storage {
        case empty
        case value(JSONValue)
        case object(ObjectRef)
        case array(ArrayRef)
    }

    /// A keyed container's members. Containers are values that the `Encodable` may keep and write
    /// to later (nested containers, super encoders), so they share this reference; a nested
    /// container or super encoder is kept as its own `Node` and read when the parent is done.
    /// The hot stored properties here and in `Node` skip the runtime's exclusivity checks (they
    /// showed in the profile of daemon.status): one encoding runs on one thread and no access to
    /// them overlaps another (each is a single get or set).
    final class ObjectRef {
        @exclusivity(unchecked) var members: [String: JSONValue]
        @exclusivity(unchecked) var nested: [String: Node] = [:]
        init(_ members: [String: JSONValue]) { self.members = members }
        /// Sized for the objects the daemon sends (daemon.status has 12 members), so that filling
        /// one seldom rehashes.
        init() {
            members = [:]
            members.reserveCapacity(12)
        }

        func set(_ value: JSONValue, _ key: String) {
            members[key] = value
            if !nested.isEmpty { nested[key] = nil }
        }

        func set(_ node: Node, _ key: String) {
            nested[key] = node
            members[key] = nil
        }

        var value: JSONValue {
            guard !nested.isEmpty else { return .object(members) }
            var all = members
            for (key, node) in nested { all[key] = node.take() ?? .object([:]) }
            return .object(all)
        }
    }

    final class ArrayRef {
        @exclusivity(unchecked) var elements: [JSONValue]
        /// Nested containers and super encoders by position; their slot holds null until then.
        var nested: [(index: Int, node: Node)] = []
        init(_ elements: [JSONValue] = []) { self.elements = elements }

        var value: JSONValue {
            guard !nested.isEmpty else { return .array(elements) }
            var all = elements
            for (index, node) in nested { all[index] = node.take() ?? .object([:]) }
            return .array(all)
        }
    }

    /// The encoder of one value (and its single-value container). Its coding path is its
    /// parent's plus its key, walked only when asked (errors), not built on every value.
    final class Node: Encoder, SingleValueEncodingContainer {
        /// The encoder this one's value goes into: held while a nested value is encoded (and let
        /// go when this encoder becomes the parent's spare, so that no cycle is left).
        @exclusivity(unchecked) private var parent: Node?
        /// The same for a nested container or super encoder, which its parent's storage holds:
        /// weak, so that they do not hold each other.
        private weak var deferredParent: Node?
        @exclusivity(unchecked) var key: (any CodingKey)?
        @exclusivity(unchecked) var storage: Storage = .empty
        /// A finished child encoder, reused for the next nested value (JSONEncoder does the same).
        @exclusivity(unchecked) private var spare: Node?

        init(parent: Node?, key: (any CodingKey)?, deferred: Bool = false) {
            if deferred { deferredParent = parent } else { self.parent = parent }
            self.key = key
        }

        var codingPath: [any CodingKey] {
            var path: [any CodingKey] = []
            var node: Node? = self
            while let n = node {
                if let key = n.key { path.append(key) }
                node = n.parent ?? n.deferredParent
            }
            return path.reversed()
        }

        var userInfo: [CodingUserInfoKey: Any] { [:] }

        /// What was encoded, nil when nothing was.
        func take() -> JSONValue? {
            switch storage {
            case .empty: nil
            case .value(let v): v
            case .object(let ref): ref.value
            case .array(let ref): ref.value
            }
        }

        // MARK: Encoder

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            KeyedEncodingContainer(KeyedContainer<Key>(encoder: self, ref: objectRef()))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            UnkeyedContainer(encoder: self, ref: arrayRef())
        }

        func singleValueContainer() -> any SingleValueEncodingContainer { self }

        /// JSONEncoder: the same container again when asked twice, an object value turned back
        /// into a container, anything else a programming error.
        private func objectRef() -> ObjectRef {
            switch storage {
            case .object(let ref): return ref
            case .empty:
                let ref = ObjectRef()
                storage = .object(ref)
                return ref
            case .value(.object(let members)):
                let ref = ObjectRef(members)
                storage = .object(ref)
                return ref
            default:
                preconditionFailure("Attempt to push new keyed encoding container when already previously encoded at this path.")
            }
        }

        private func arrayRef() -> ArrayRef {
            switch storage {
            case .array(let ref): return ref
            case .empty:
                let ref = ArrayRef()
                storage = .array(ref)
                return ref
            case .value(.array(let elements)):
                let ref = ArrayRef(elements)
                storage = .array(ref)
                return ref
            default:
                preconditionFailure("Attempt to push new unkeyed encoding container when already previously encoded at this path.")
            }
        }

        // MARK: Values

        /// `value` as a JSONValue (nil when it encoded nothing), under `key` below this encoder.
        func wrap<T: Encodable>(_ value: T, key: (any CodingKey)? = nil) throws -> JSONValue? {
            // The leaves every result and event is made of, without a nested encoder. The type
            // tests are on the static type: the compiler has opened any existential by now.
            if T.self == String.self { return .string(unsafeBitCast(value, to: String.self)) }
            if T.self == Int.self { return .int(Int64(unsafeBitCast(value, to: Int.self))) }
            if T.self == Bool.self { return .bool(unsafeBitCast(value, to: Bool.self)) }
            if T.self == Double.self { return .double(unsafeBitCast(value, to: Double.self)) }
            if T.self == [String].self { return .array(unsafeBitCast(value, to: [String].self).map { .string($0) }) }
            if T.self == JSONValue.self { return unsafeBitCast(value, to: JSONValue.self) }
            // JSONEncoder's own spellings of Foundation types.
            if T.self == Data.self { return .string(unsafeBitCast(value, to: Data.self).base64EncodedString()) }
            if T.self == URL.self { return .string(unsafeBitCast(value, to: URL.self).absoluteString) }
            if T.self == Decimal.self { return try Self.number(unsafeBitCast(value, to: Decimal.self), at: path(key)) }

            var child = childEncoder(key)
            defer { recycle(&child) }
            try value.encode(to: child)
            return child.take()
        }

        /// An encoder for a nested value: the spare one when there is one.
        private func childEncoder(_ key: (any CodingKey)?) -> Node {
            if let spare {
                self.spare = nil
                spare.parent = self
                spare.key = key
                return spare
            }
            return Node(parent: self, key: key)
        }

        private func recycle(_ child: inout Node) {
            guard spare == nil, isKnownUniquelyReferenced(&child) else { return }
            child.storage = .empty
            child.parent = nil
            spare = child
        }

        /// An encoder whose value its parent reads when the parent is done (nested containers
        /// and super encoders).
        func deferredEncoder(_ key: any CodingKey) -> Node {
            Node(parent: self, key: key, deferred: true)
        }

        func path(_ key: (any CodingKey)?) -> [any CodingKey] {
            guard let key else { return codingPath }
            return codingPath + [key]
        }

        static func integer<T: FixedWidthInteger>(_ value: T, at path: @autoclosure () -> [any CodingKey]) throws -> JSONValue {
            guard let i = Int64(exactly: value) else {
                throw EncodingError.invalidValue(value, .init(
                    codingPath: path(), debugDescription: "\(T.self) \(value) is above Int64.max: a JSONValue cannot hold it"))
            }
            return .int(i)
        }

        /// JSONEncoder writes a Float's own description; kept when a Double prints the same text.
        static func float(_ value: Float, at path: @autoclosure () -> [any CodingKey]) throws -> JSONValue {
            guard value.isFinite else { return .double(Double(value)) }
            var text = value.description
            if text.hasSuffix(".0") { text.removeLast(2) }
            if let d = Double(text), JSONValueDecoder.text(of: d) == text { return .double(d) }
            throw EncodingError.invalidValue(value, .init(
                codingPath: path(), debugDescription: "Float \(text) is written by JSONEncoder as no Double is: a JSONValue cannot hold it"))
        }

        /// JSONEncoder writes a Decimal's description as the number.
        static func number(_ value: Decimal, at path: @autoclosure () -> [any CodingKey]) throws -> JSONValue {
            let text = value.description
            if let i = Int64(text) { return .int(i) }
            if let d = Double(text), d.isFinite, JSONValueDecoder.text(of: d) == text { return .double(d) }
            throw EncodingError.invalidValue(value, .init(
                codingPath: path(), debugDescription: "Decimal \(text) is written by JSONEncoder as no Int64 or Double is: a JSONValue cannot hold it"))
        }

        // MARK: SingleValueEncodingContainer

        private func set(_ value: JSONValue) {
            guard case .empty = storage else {
                preconditionFailure("Attempt to encode value through single value container when previously value already encoded.")
            }
            storage = .value(value)
        }

        func encodeNil() throws { set(.null) }
        func encode(_ value: Bool) throws { set(.bool(value)) }
        func encode(_ value: String) throws { set(.string(value)) }
        func encode(_ value: Double) throws { set(.double(value)) }
        func encode(_ value: Float) throws { set(try Self.float(value, at: self.codingPath)) }
        func encode(_ value: Int) throws { set(.int(Int64(value))) }
        func encode(_ value: Int8) throws { set(.int(Int64(value))) }
        func encode(_ value: Int16) throws { set(.int(Int64(value))) }
        func encode(_ value: Int32) throws { set(.int(Int64(value))) }
        func encode(_ value: Int64) throws { set(.int(value)) }
        func encode(_ value: UInt) throws { set(try Self.integer(value, at: self.codingPath)) }
        func encode(_ value: UInt8) throws { set(.int(Int64(value))) }
        func encode(_ value: UInt16) throws { set(.int(Int64(value))) }
        func encode(_ value: UInt32) throws { set(.int(Int64(value))) }
        func encode(_ value: UInt64) throws { set(try Self.integer(value, at: self.codingPath)) }
        func encode<T: Encodable>(_ value: T) throws {
            guard case .empty = storage else {
                preconditionFailure("Attempt to encode value through single value container when previously value already encoded.")
            }
            // Encoded in place (this encoder is the value's), as JSONEncoder does.
            if let leaf = try leafValue(value) {
                storage = .value(leaf)
            } else {
                try value.encode(to: self)
            }
        }

        /// The fast leaves of `wrap`, for a value encoded through a single-value container.
        private func leafValue<T: Encodable>(_ value: T) throws -> JSONValue? {
            if T.self == String.self || T.self == Int.self || T.self == Bool.self || T.self == Double.self
                || T.self == [String].self || T.self == JSONValue.self || T.self == Data.self || T.self == URL.self
                || T.self == Decimal.self {
                return try wrap(value, key: nil)
            }
            return nil
        }
    }
}

// MARK: - Containers

extension JSONValueEncoder {
    /// JSONEncoder's coding keys for an array element ("Index n") and a super encoder ("super"):
    /// the decoder's, which JSONDecoder spells the same.
    typealias IndexKey = JSONValueDecoder.IndexKey
    typealias SuperKey = JSONValueDecoder.SuperKey

    struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let encoder: Node
        let ref: ObjectRef

        var codingPath: [any CodingKey] { encoder.codingPath }

        private func at(_ key: some CodingKey) -> [any CodingKey] { codingPath + [key] }

        mutating func encodeNil(forKey key: Key) throws { ref.set(.null, key.stringValue) }
        mutating func encode(_ value: Bool, forKey key: Key) throws { ref.set(.bool(value), key.stringValue) }
        mutating func encode(_ value: String, forKey key: Key) throws { ref.set(.string(value), key.stringValue) }
        mutating func encode(_ value: Double, forKey key: Key) throws { ref.set(.double(value), key.stringValue) }
        mutating func encode(_ value: Float, forKey key: Key) throws { ref.set(try Node.float(value, at: at(key)), key.stringValue) }
        mutating func encode(_ value: Int, forKey key: Key) throws { ref.set(.int(Int64(value)), key.stringValue) }
        mutating func encode(_ value: Int8, forKey key: Key) throws { ref.set(.int(Int64(value)), key.stringValue) }
        mutating func encode(_ value: Int16, forKey key: Key) throws { ref.set(.int(Int64(value)), key.stringValue) }
        mutating func encode(_ value: Int32, forKey key: Key) throws { ref.set(.int(Int64(value)), key.stringValue) }
        mutating func encode(_ value: Int64, forKey key: Key) throws { ref.set(.int(value), key.stringValue) }
        mutating func encode(_ value: UInt, forKey key: Key) throws { ref.set(try Node.integer(value, at: at(key)), key.stringValue) }
        mutating func encode(_ value: UInt8, forKey key: Key) throws { ref.set(.int(Int64(value)), key.stringValue) }
        mutating func encode(_ value: UInt16, forKey key: Key) throws { ref.set(.int(Int64(value)), key.stringValue) }
        mutating func encode(_ value: UInt32, forKey key: Key) throws { ref.set(.int(Int64(value)), key.stringValue) }
        mutating func encode(_ value: UInt64, forKey key: Key) throws { ref.set(try Node.integer(value, at: at(key)), key.stringValue) }

        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            ref.set(try encoder.wrap(value, key: key) ?? .object([:]), key.stringValue)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
            let node = nestedNode(key)
            return node.container(keyedBy: keyType)
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            nestedNode(key).unkeyedContainer()
        }

        /// The node of the nested container under `key`: the one already there (JSONEncoder
        /// reuses it), or a new one, holding the value already written under it if any.
        private func nestedNode(_ key: Key) -> Node {
            if let node = ref.nested[key.stringValue] { return node }
            let node = encoder.deferredEncoder(key)
            if let existing = ref.members[key.stringValue] { node.storage = .value(existing) }
            ref.set(node, key.stringValue)
            return node
        }

        mutating func superEncoder() -> any Encoder { superEncoder(key: SuperKey()) }
        mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(key: key) }

        private func superEncoder(key: some CodingKey) -> any Encoder {
            let node = encoder.deferredEncoder(key)
            ref.set(node, key.stringValue)
            return node
        }
    }

    struct UnkeyedContainer: UnkeyedEncodingContainer {
        let encoder: Node
        let ref: ArrayRef

        var codingPath: [any CodingKey] { encoder.codingPath }
        var count: Int { ref.elements.count }

        private var nextKey: any CodingKey { IndexKey(count) }

        private func at() -> [any CodingKey] { codingPath + [IndexKey(count)] }

        mutating func encodeNil() throws { ref.elements.append(.null) }
        mutating func encode(_ value: Bool) throws { ref.elements.append(.bool(value)) }
        mutating func encode(_ value: String) throws { ref.elements.append(.string(value)) }
        mutating func encode(_ value: Double) throws { ref.elements.append(.double(value)) }
        mutating func encode(_ value: Float) throws { ref.elements.append(try Node.float(value, at: at())) }
        mutating func encode(_ value: Int) throws { ref.elements.append(.int(Int64(value))) }
        mutating func encode(_ value: Int8) throws { ref.elements.append(.int(Int64(value))) }
        mutating func encode(_ value: Int16) throws { ref.elements.append(.int(Int64(value))) }
        mutating func encode(_ value: Int32) throws { ref.elements.append(.int(Int64(value))) }
        mutating func encode(_ value: Int64) throws { ref.elements.append(.int(value)) }
        mutating func encode(_ value: UInt) throws { ref.elements.append(try Node.integer(value, at: at())) }
        mutating func encode(_ value: UInt8) throws { ref.elements.append(.int(Int64(value))) }
        mutating func encode(_ value: UInt16) throws { ref.elements.append(.int(Int64(value))) }
        mutating func encode(_ value: UInt32) throws { ref.elements.append(.int(Int64(value))) }
        mutating func encode(_ value: UInt64) throws { ref.elements.append(try Node.integer(value, at: at())) }

        mutating func encode<T: Encodable>(_ value: T) throws {
            ref.elements.append(try encoder.wrap(value, key: nextKey) ?? .object([:]))
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            nestedNode().container(keyedBy: keyType)
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            nestedNode().unkeyedContainer()
        }

        mutating func superEncoder() -> any Encoder { nestedNode() }

        private func nestedNode() -> Node {
            let node = encoder.deferredEncoder(nextKey)
            ref.nested.append((count, node))
            ref.elements.append(.null)
            return node
        }
    }
}
