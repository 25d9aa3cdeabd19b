import BiometricVocabulary

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

/// One fingertip in one frame.
public struct FingerObservation: Sendable {
    public var position: FingerPosition
    public var box: FingerBox
    /// 0–100 (see `FingerQuality`).
    public var quality: Int
    public var level: QualityLevel
}

/// Everything a `finger.frame` event says about one frame.
public struct FingerFrameAnalysis: Sendable {
    /// Index→little (thumb mode: the thumb), amputated fingers left out.
    public var fingers: [FingerObservation]
    /// 0–1, nil when no fingers were found.
    public var distance: Double?
    public var distanceRange: DistanceRange
    /// One of no_fingers, show_palm, too_close, too_far, move_closer, hold_still, focus, optimal.
    public var feedback: Feedback
}

/// The best print of one finger within a capture.
public struct CapturedPrint: Sendable {
    public var position: FingerPosition
    /// Contact-like: grey, ridges dark, 500 ppi, background masked.
    public var image: FingerprintImage
    public var quality: Int
    public var box: FingerBox
}

public struct FingerCaptureOptions: Sendable {
    public var mode: CaptureMode
    /// The finger shown in mode single (thumb … little).
    public var finger: Digit
    public var hand: Hand
    /// Fingers the user does not have (index, middle, ring, little; thumb is ignored).
    public var amputated: Set<Digit>
    /// The camera's calibration; nil = `DistanceCalibration.default`.
    public var distance: DistanceCalibration?
    public var liveness: LivenessLevel

    public init(mode: CaptureMode = .fingers, finger: Digit = .index, hand: Hand = .right, amputated: Set<Digit> = [],
                distance: DistanceCalibration? = nil, liveness: LivenessLevel = .low) {
        self.mode = mode
        self.finger = finger
        self.hand = hand
        self.amputated = amputated
        self.distance = distance
        self.liveness = liveness
    }

    /// The digits expected in the frame, index→little (or the thumb).
    public var expectedDigits: [Digit] {
        switch mode {
        case .thumb: [.thumb]
        case .single: [finger]
        case .fingers: [Digit.index, .middle, .ring, .little].filter { !amputated.contains($0) }
        }
    }
}
