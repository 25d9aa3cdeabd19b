import BiometricVocabulary
import CFingerVision
import Foundation

/// One hand as the landmark model saw it in a frame: 21 points in frame pixels (0 wrist; 1–4
/// thumb; 5–8 index; 9–12 middle; 13–16 ring; 17–20 little, base joint first, tip last).
public struct HandObservation: Sendable {
    public var x: [Double]
    public var y: [Double]
    /// The model's hand presence, 0–1.
    public var presence: Double
    /// The model's raw handedness, 0–1 (> 0.5: the hand MediaPipe labels "right").
    public var handedness: Double
    /// The palm detector's score when this frame found the hand anew, nil when it was tracked.
    public var palmScore: Double?

    public init(x: [Double], y: [Double], presence: Double, handedness: Double, palmScore: Double? = nil) {
        self.x = x
        self.y = y
        self.presence = presence
        self.handedness = handedness
        self.palmScore = palmScore
    }

    init(_ l: cvis_hand_landmarks) {
        var l = l
        x = withUnsafeBytes(of: &l.x) { Array($0.bindMemory(to: Float.self)).map(Double.init) }
        y = withUnsafeBytes(of: &l.y) { Array($0.bindMemory(to: Float.self)).map(Double.init) }
        presence = Double(l.presence)
        handedness = Double(l.handedness)
        palmScore = l.palm_score > 0 ? Double(l.palm_score) : nil
    }

    /// The landmarks of a digit's fingertip and of its last joint (DIP; the thumb's IP).
    public static func tipAndJoint(_ digit: Digit) -> (tip: Int, joint: Int) {
        let tip = 4 * (digit.order + 1)
        return (tip, tip - 1)
    }

    /// Where to look for a digit's fingertip: from its last joint to its tip, the width guessed
    /// from that segment (a distal phalanx is about as long as it is wide; the fingertip
    /// measurement finds the real width).
    public func seed(_ digit: Digit) -> cvis_fingertip_seed {
        let (t, j) = Self.tipAndJoint(digit)
        let length = hypot(x[t] - x[j], y[t] - y[j])
        return cvis_fingertip_seed(tip_x: Float(x[t]), tip_y: Float(y[t]), base_x: Float(x[j]), base_y: Float(y[j]),
                                   width: Float(max(4, Self.widthPerSegment * length)))
    }

    /// How far this hand's tip landmark of `digit` is from a measured fingertip (pixels).
    func tipDistance(_ digit: Digit, to tip: Fingertip) -> Double {
        let t = Self.tipAndJoint(digit).tip
        return hypot(x[t] - tip.tipX, y[t] - tip.tipY)
    }

    /// Finger width ≈ 0.9 × the joint-to-tip segment (median over the subhih photos where both
    /// sides were found; 0.65–1.4 from finger to finger).
    static let widthPerSegment = 0.9

    /// The bounding box of the 21 points (angle 0).
    public var bounds: FingerBox {
        let x0 = x.min() ?? 0, x1 = x.max() ?? 0, y0 = y.min() ?? 0, y1 = y.max() ?? 0
        return FingerBox(x: x0, y: y0, width: x1 - x0, height: y1 - y0, angle: 0)
    }

    /// Which way the hand's thumb side lies as the camera sees it: the sign of (middle-finger
    /// knuckle → its first joint) × (little-finger knuckle → index knuckle). With the fingers up,
    /// positive = the index is on the image's right of the little finger.
    var chirality: Double {
        let ux = x[10] - x[9], uy = y[10] - y[9]
        let sx = x[5] - x[17], sy = y[5] - y[17]
        return ux * sy - uy * sx
    }

    /// Whether the landmarks the side check uses (the index, middle and little knuckles and the
    /// middle finger's first joint) lie in a `width` × `height` frame, 2 % in from its edges: only
    /// then do they say which side faces the camera (outside it the model extrapolates them).
    public func palmInView(width: Int, height: Int) -> Bool {
        let mx = 0.02 * Double(width), my = 0.02 * Double(height)
        return [5, 9, 10, 17].allSatisfy { x[$0] >= mx && y[$0] >= my && x[$0] <= Double(width) - mx && y[$0] <= Double(height) - my }
    }

    /// Whether this is the palm of `hand` turned toward the camera (image not mirrored).
    ///
    /// Seen from the camera, a right palm with the fingers up has its thumb and index on the
    /// image's right (the back of a right hand, or a left palm, has them on the left): the
    /// landmarks' chirality says which side of the declared hand faces the camera. The model's own
    /// handedness also sees the back of a hand from its nails and knuckles: when it is confident
    /// the hand is the other one (the back of the other hand has the same chirality as this
    /// palm), the palm is refused too. On the 12 11k Hands photos (4 backs) the chirality alone
    /// decides every one; the handedness agreed with the true hand on 11 of 12.
    public func showsPalm(of hand: Hand) -> Bool {
        let rightPalm = chirality > 0
        guard rightPalm == (hand == .right) else { return false }
        switch hand {
        case .right: return handedness >= Self.confidentlyOther
        case .left: return handedness <= 1 - Self.confidentlyOther
        }
    }

    /// Handedness this far from the declared hand overrides the chirality.
    static let confidentlyOther = 0.2
}
