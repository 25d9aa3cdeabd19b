/// The wire's own closed vocabularies (SPEC §4: choices only the params know) and the numeric
/// parameters' ranges and defaults, each declared once. The words the biometric domain shares
/// with the wire (feedback codes, liveness modes and verdicts, hands and digits, factors, match
/// candidates, the `WireEnum` coding) are in BiometricVocabulary, re-exported here so that a
/// client of the contract sees one module: their raw values and coding are the wire's.
@_exported import BiometricVocabulary

/// A numeric parameter: its wire name, the range it accepts and its default, declared once beside
/// the field. Params check with it; the daemon reads the value through it (`setting(p.field)`).
public struct Setting<Value: Comparable & Sendable>: Sendable {
    public let field: String
    public let range: ClosedRange<Value>
    public let defaultValue: Value

    public init(_ field: String, _ range: ClosedRange<Value>, default defaultValue: Value) {
        precondition(range.contains(defaultValue), "the default of \(field) is outside its range")
        self.field = field
        self.range = range
        self.defaultValue = defaultValue
    }

    /// A parameter named by its type's coding key: the wire name is written once, in CodingKeys.
    public init(_ key: some CodingKey, _ range: ClosedRange<Value>, default defaultValue: Value) {
        self.init(key.stringValue, range, default: defaultValue)
    }

    /// -32602 with `data.field` when `value` is given and out of range.
    public func check(_ value: Value?) throws(RPCError) { try Check.range(value, range, field: field) }

    /// The value given, or the default.
    public func callAsFunction(_ value: Value?) -> Value { value ?? defaultValue }
}

// MARK: - Modes and choices (SPEC §4)

/// face.enroll `mode`: one frontal pose, or five (front, left, right, up, down).
public enum FaceEnrolMode: String, WireEnum {
    case simple, full
    public static let `default` = Self.simple
}

/// face.verify / face.identify `mode`: match a still image, or check liveness first.
public enum FaceCaptureMode: String, WireEnum {
    case image, liveness
    public static let `default` = Self.liveness
}

/// The image format of captured prints (finger.capture `image_format`).
public enum ImageFormat: String, WireEnum {
    case none, png, jpeg, wsq
    public static let `default` = Self.none
}

/// The encoding of an extracted finger template (finger.extract `format`).
public enum TemplateFormat: String, WireEnum {
    case biometricd
    case iso19794_2
    public static let `default` = Self.biometricd
}
