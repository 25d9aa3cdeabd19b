/// The closed vocabularies (SPEC §4, §5) that the biometric domain and the wire contract share,
/// as enums, each declared once. Face, Finger and Auth decide in these words; BiometricProtocol
/// (the JSON-RPC contract, which re-exports this module) carries them on the wire unchanged, and
/// the daemon maps the rest of the domain onto the wire. A value that is not on a list is refused
/// where it enters (the params decoder), never compared as a string further in.

/// A string enum on the wire. Decoding an unknown name throws `WireEnumError`, which the params
/// decoder turns into -32602 with the field and the accepted names.
public protocol WireEnum: RawRepresentable<String>, CaseIterable, Codable, Sendable, Hashable {
    /// The accepted names, in the order error messages list them.
    static var wireNames: [String] { get }
}

extension WireEnum {
    public static var wireNames: [String] { allCases.map(\.rawValue) }

    public init(from decoder: any Decoder) throws {
        let name = try decoder.singleValueContainer().decode(String.self)
        guard let value = Self(rawValue: name) else {
            throw WireEnumError(codingPath: decoder.codingPath, allowed: Self.wireNames, got: name)
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(rawValue)
    }
}

/// A wire enum's name that is not on its list.
public struct WireEnumError: Error, Sendable {
    public var codingPath: [any CodingKey]
    public var allowed: [String]
    public var got: String
}
