/// The protocol's closed vocabularies (SPEC §4, §5) as enums, and the numeric parameters' ranges
/// and defaults, each declared once. Face, Finger, the daemon and the client all use these: a
/// value that is not on the list is refused where it enters (the params decoder), never compared
/// as a string further in.

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

/// face.verify / face.identify `liveness_mode`: keep still then blink, random head moves too,
/// passive (a trained presentation-attack detector and the replay cues, nothing asked of the
/// person), or passive and the blink both (unattended doors). Left out, the daemon's
/// `face_liveness_mode` applies (built in: `default`).
public enum LivenessMode: String, WireEnum {
    case blink, challenge, passive
    case passiveBlink = "passive+blink"
    public static let `default` = Self.passive

    /// Whether the passive detector decides (it needs the anti-spoofing models).
    public var isPassive: Bool { self == .passive || self == .passiveBlink }
}

/// What the user presents to the finger camera.
public enum CaptureMode: String, WireEnum {
    /// Index to little finger of one hand, at once (a "four-finger slap").
    case fingers
    /// The thumb alone: the thumb of the hand the hand models see (index…little folded), or a
    /// thumb held close to the camera on its own.
    case thumb
    /// Any one finger held close to the camera (the caller names it, `finger` [index]): found on
    /// its own, the hand need not be in view; its scale comes from its ridges, never from a
    /// nominal finger width.
    case single
    public static let `default` = Self.fingers
}

/// Which hand.
public enum Hand: String, WireEnum {
    case right, left
    public static let `default` = Self.right
    public static var wireNames: [String] { ["left", "right"] }
}

/// The five digits of a hand, thumb first.
public enum Digit: String, WireEnum, Comparable {
    case thumb, index, middle, ring, little

    /// Thumb to little finger, 0–4.
    public var order: Int { Self.allCases.firstIndex(of: self)! }

    public static func < (a: Digit, b: Digit) -> Bool { a.order < b.order }
}

/// How hard to look for a fake finger (finger.capture `liveness`). Each level adds checks to the
/// one below; see Docs/finger-camera.md for what each catches and what it cannot.
public enum LivenessLevel: String, WireEnum {
    case none
    case veryLow = "very_low"
    case low
    case medium
    public static let `default` = Self.low
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

/// auth.policy.set `mode`: a preset list of factors.
public enum PolicyMode: String, WireEnum {
    case none, biometric, password
}

// MARK: - Results

/// A face result's `liveness`.
public enum FaceLiveness: String, WireEnum {
    case live, spoof
    case notChecked = "not_checked"
}

/// A finger result's `liveness`.
public enum LivenessVerdict: String, WireEnum {
    case live, fake
    case noDecision = "no_decision"
}

// MARK: - Events (SPEC §5)

/// What the person should do: the `feedback` codes of face.frame (a list) and finger.frame (one).
public enum Feedback: String, WireEnum {
    // face.frame
    case noFace = "no_face"
    case multipleFaces = "multiple_faces"
    case moveCloser = "move_closer"
    case moveBack = "move_back"
    case centerFace = "center_face"
    case tooDark = "too_dark"
    case tooBright = "too_bright"
    case blurry
    case faceForward = "face_forward"
    case turnLeft = "turn_left"
    case turnRight = "turn_right"
    case lookUp = "look_up"
    case lookDown = "look_down"
    // finger.frame
    case noFingers = "no_fingers"
    case tooClose = "too_close"
    case tooFar = "too_far"
    case optimal
    // Fingers found but their ridges not resolved yet (under ~4 pixels per ridge): move_closer,
    // shared with face.frame above.
    /// Ridges should be resolved at this distance but are smeared: the hand moved.
    case holdStill = "hold_still"
    /// Ridges should be resolved at this distance but are not: out of focus (or not a finger).
    case focus
    /// The back of the hand (or the other hand) is toward the camera.
    case showPalm = "show_palm"
}

/// face.frame `liveness_action`: the liveness step asked for now (challenge mode adds the moves).
public enum LivenessAction: String, WireEnum {
    case keepStill = "keep_still"
    case blink
    case turnLeft = "turn_left"
    case turnRight = "turn_right"
    case lookUp = "look_up"
    case nod
}

/// face.frame `extraction`: what happened to the frame sent to the matcher.
public enum Extraction: String, WireEnum {
    case extracting, success, failed
}

/// finger.frame: a fingertip's print quality.
public enum QualityLevel: String, WireEnum {
    /// Not measurable (the box could not be cut out, or too little finger in it).
    case unavailable
    case low, medium, high

    /// The level of a 0–100 quality: high ≥ 60, medium ≥ 35 (calibrated on rendered scenes:
    /// sharp prints at optimal distance score 80–95, optically blurred ones < 25).
    public init(quality: Int?) {
        guard let quality else {
            self = .unavailable
            return
        }
        self = quality >= 60 ? .high : quality >= 35 ? .medium : .low
    }
}
