/// The finger modality's words (SPEC §4, §5): what is presented, hands and digits, liveness levels
/// and verdicts, print quality, the distance scale's limits.

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
/// one below; see Docs/finger-camera.md for what each catches and what it cannot. Ordered by
/// strictness (the caller floors compare levels, Auth's CallerLimits).
public enum LivenessLevel: String, WireEnum, Comparable {
    case none
    case veryLow = "very_low"
    case low
    case medium
    public static let `default` = Self.low

    public static func < (a: Self, b: Self) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}

/// A finger result's `liveness`.
public enum LivenessVerdict: String, WireEnum {
    case live, fake
    case noDecision = "no_decision"
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

/// Limits on the 0–1 distance scale (see `DistanceScale`): `min` the closest distance at which the
/// fingers can still be measured, `optimalMin`…`optimalMax` the capture range, `max` the farthest
/// at which fingers are still tracked.
public struct DistanceRange: Codable, Sendable, Equatable {
    public var min: Double
    public var optimalMin: Double
    public var optimalMax: Double
    public var max: Double

    enum CodingKeys: String, CodingKey {
        case min, max
        case optimalMin = "optimal_min"
        case optimalMax = "optimal_max"
    }

    public init(min: Double, optimalMin: Double, optimalMax: Double, max: Double) {
        self.min = min
        self.optimalMin = optimalMin
        self.optimalMax = optimalMax
        self.max = max
    }
}
