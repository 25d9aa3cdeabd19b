/// What the user presents to the camera.
public enum CaptureMode: String, Sendable, CaseIterable {
    /// Index to little finger of one hand, at once (a "four-finger slap").
    case fingers
    /// The thumb alone.
    case thumb
}

/// A fingertip (distal phalanx) box in frame pixels. `x`, `y`, `width`, `height` are the box before
/// rotation (top-left corner and size, `height` along the finger); it is rotated by `angle` degrees
/// clockwise on screen about its centre. Angle 0 = finger pointing up, 90 = pointing right.
public struct FingerBox: Sendable, Equatable {
    public var x: Double
    public var y: Double
    public var width: Double
    public var height: Double
    /// Degrees clockwise on screen, -180…180; 0 = pointing up.
    public var angle: Double

    public init(x: Double, y: Double, width: Double, height: Double, angle: Double) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
        self.angle = angle
    }

    public init(centreX: Double, centreY: Double, width: Double, height: Double, angle: Double) {
        self.init(x: centreX - width / 2, y: centreY - height / 2, width: width, height: height, angle: angle)
    }

    public var centreX: Double { x + width / 2 }
    public var centreY: Double { y + height / 2 }
}

/// A fingertip's print quality as events report it.
public enum QualityLevel: String, Sendable, CaseIterable {
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

/// What the user should do about the distance.
public enum DistanceFeedback: String, Sendable, CaseIterable {
    case noFingers = "no_fingers"
    case tooClose = "too_close"
    case tooFar = "too_far"
    case optimal
}

/// Limits on the 0–1 distance scale (see `DistanceScale`): `min` the closest distance at which the
/// fingers can still be measured, `optimalMin`…`optimalMax` the capture range, `max` the farthest
/// at which fingers are still tracked.
public struct DistanceRange: Sendable, Equatable {
    public var min: Double
    public var optimalMin: Double
    public var optimalMax: Double
    public var max: Double

    public init(min: Double, optimalMin: Double, optimalMax: Double, max: Double) {
        self.min = min
        self.optimalMin = optimalMin
        self.optimalMax = optimalMax
        self.max = max
    }
}

/// One fingertip in one frame.
public struct FingerObservation: Sendable {
    public var position: FingerPosition
    public var box: FingerBox
    /// 0–100 (see `FingerQuality`).
    public var quality: Int
    public var level: QualityLevel

    public init(position: FingerPosition, box: FingerBox, quality: Int, level: QualityLevel) {
        self.position = position
        self.box = box
        self.quality = quality
        self.level = level
    }
}

/// Everything a `finger.frame` event says about one frame.
public struct FingerFrameAnalysis: Sendable {
    /// Index→little (thumb mode: the thumb), amputated fingers left out.
    public var fingers: [FingerObservation]
    /// 0–1, nil when no fingers were found.
    public var distance: Double?
    public var distanceRange: DistanceRange
    public var feedback: DistanceFeedback

    public init(fingers: [FingerObservation], distance: Double?, distanceRange: DistanceRange, feedback: DistanceFeedback) {
        self.fingers = fingers
        self.distance = distance
        self.distanceRange = distanceRange
        self.feedback = feedback
    }
}

/// How hard to look for a fake finger (SPEC finger.capture `liveness`). Each level adds checks to
/// the one below; see Docs/finger-camera.md for what each catches and what it cannot.
public enum LivenessLevel: String, Sendable, CaseIterable {
    case none
    case veryLow = "very_low"
    case low
    case medium
}

public enum LivenessVerdict: String, Sendable {
    case live, fake
    case noDecision = "no_decision"
}

/// The best print of one finger within a capture.
public struct CapturedPrint: Sendable {
    public var position: FingerPosition
    /// Contact-like: grey, ridges dark, 500 ppi, background masked.
    public var image: FingerprintImage
    public var quality: Int
    public var box: FingerBox

    public init(position: FingerPosition, image: FingerprintImage, quality: Int, box: FingerBox) {
        self.position = position
        self.image = image
        self.quality = quality
        self.box = box
    }
}

public struct FingerCaptureOptions: Sendable {
    public var mode: CaptureMode
    public var hand: Hand
    /// Fingers the user does not have (index, middle, ring, little; thumb is ignored).
    public var amputated: Set<Digit>
    /// The camera's calibration; nil = `DistanceCalibration.default`.
    public var distance: DistanceCalibration?
    public var liveness: LivenessLevel

    public init(mode: CaptureMode = .fingers, hand: Hand = .right, amputated: Set<Digit> = [],
                distance: DistanceCalibration? = nil, liveness: LivenessLevel = .low) {
        self.mode = mode
        self.hand = hand
        self.amputated = amputated
        self.distance = distance
        self.liveness = liveness
    }

    /// The digits expected in the frame, index→little (or the thumb).
    public var expectedDigits: [Digit] {
        switch mode {
        case .thumb: [.thumb]
        case .fingers: [Digit.index, .middle, .ring, .little].filter { !amputated.contains($0) }
        }
    }
}
