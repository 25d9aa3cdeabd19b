import BiometricVocabulary
import CFingerVision
import Foundation

/// A camera's optics as far as finger distance is concerned: filled from the daemon's config per
/// camera, resolved against the frame size into a `DistanceScale` when frames arrive.
///
/// Why finger width: the camera cannot measure distance, but the apparent width of a finger
/// (≈ 17 mm for an adult index/middle finger) is inversely proportional to it, and it is also
/// what decides whether ridges are resolved. See Docs/finger-camera.md for the derivation.
public struct DistanceCalibration: Sendable, Equatable {
    /// Horizontal field of view of the camera (degrees). Laptop webcams ≈ 65–80, phone main
    /// cameras ≈ 65–75.
    public var horizontalFOVDegrees: Double
    /// Closest distance the camera focuses at (mm). Fixed-focus webcams ≈ 300+, autofocus phone
    /// cameras ≈ 70–100.
    public var minimumFocusMM: Double
    /// Explicit optimal middle-finger width in pixels; overrides the optics when set.
    public var optimalFingerWidthPixels: ClosedRange<Double>?

    public init(horizontalFOVDegrees: Double = 70, minimumFocusMM: Double = 70) {
        self.horizontalFOVDegrees = min(max(horizontalFOVDegrees, 10), 170)
        self.minimumFocusMM = max(minimumFocusMM, 10)
        self.optimalFingerWidthPixels = nil
    }

    /// A camera configured by the finger width (pixels) it gives good prints at.
    public init(optimalFingerWidthPixels: ClosedRange<Double>) {
        self.init()
        self.optimalFingerWidthPixels = max(optimalFingerWidthPixels.lowerBound, 8)...max(optimalFingerWidthPixels.upperBound, 8)
    }

    public static let `default` = DistanceCalibration()

    /// Ridge period of adult fingers (mm): 0.4–0.5 mm.
    public static let ridgePeriodMM = 0.45
    /// Pixels per ridge period a print needs to be usable (Nyquist is 2; 4 leaves room for the
    /// camera's MTF and the resampling to 500 ppi).
    public static let pixelsPerRidge = 4.0
    /// Nominal middle-finger width (mm) the scale is expressed in.
    public static var nominalWidthMM: Double { Double(cvis_hand_nominal_width_mm(2)) }
    /// How wide four spread fingers are, in finger widths (4 widths + 3 gaps of ~0.2).
    public static let fourFingerSpan = 4.6

    /// The scale for frames of this size.
    public func scale(frameWidth: Int, frameHeight: Int, mode: CaptureMode) -> DistanceScale {
        let width = Double(max(frameWidth, 1)), height = Double(max(frameHeight, 1))
        // Smallest usable width: enough pixels per ridge period.
        let ridgeLimit = Self.nominalWidthMM / Self.ridgePeriodMM * Self.pixelsPerRidge
        // Largest that fits: four fingers in 85 % of the frame width, or one fingertip's box in 85 %
        // of the frame height (box height ≈ 1.35 widths; the thumb is 20 mm wide vs 17).
        let oneFinger = mode == .thumb ? 17.0 / 20.0 : 1.0
        let fitLimit = mode == .fingers
            ? 0.85 * width / Self.fourFingerSpan
            : 0.85 * height / 1.35 * oneFinger
        // Nothing fits at all beyond this: the fingers fill the frame.
        let fillLimit = mode == .fingers ? width / Self.fourFingerSpan : height / 1.35 * oneFinger
        var optimalMin: Double, optimalMax: Double
        if let explicit = optimalFingerWidthPixels {
            optimalMin = explicit.lowerBound
            optimalMax = explicit.upperBound
        } else {
            // Focus: a finger at the minimum focus distance is f·W/d pixels wide.
            let focalPx = width / 2 / tan(horizontalFOVDegrees * .pi / 360)
            let focusLimit = focalPx * Self.nominalWidthMM / minimumFocusMM
            optimalMin = ridgeLimit
            optimalMax = min(fitLimit, focusLimit)
            // A camera that cannot reach 4 px per ridge anywhere in focus: the best it can do is
            // the focus/fit limit; report that as a (degenerate) optimum rather than none.
            if optimalMax < optimalMin { optimalMin = optimalMax }
        }
        let closest = max(fillLimit, optimalMax * 1.15)
        let farthest = optimalMin / 2 // 2 px per ridge: ridges gone, fingers still found
        return DistanceScale(closestWidth: closest, optimalMaxWidth: optimalMax, optimalMinWidth: optimalMin,
                             farthestWidth: farthest)
    }
}

/// Finger widths (pixels, middle-finger equivalent) bounding each zone, and the 0–1 distance
/// scale: distance = 0.9 × farthestWidth / width, i.e. proportional to the physical distance,
/// 0.9 at the far limit (headroom for a gauge), clamped to 0…1.
public struct DistanceScale: Sendable, Equatable {
    public var closestWidth: Double
    public var optimalMaxWidth: Double
    public var optimalMinWidth: Double
    public var farthestWidth: Double

    public func distance(fingerWidth: Double) -> Double {
        guard fingerWidth > 0 else { return 1 }
        return min(1, max(0, 0.9 * farthestWidth / fingerWidth))
    }

    public var range: DistanceRange {
        DistanceRange(min: rounded(distance(fingerWidth: closestWidth)),
                      optimalMin: rounded(distance(fingerWidth: optimalMaxWidth)),
                      optimalMax: rounded(distance(fingerWidth: optimalMinWidth)),
                      max: rounded(distance(fingerWidth: farthestWidth)))
    }

    public func feedback(fingerWidth: Double?) -> Feedback {
        guard let fingerWidth else { return .noFingers }
        if fingerWidth > optimalMaxWidth { return .tooClose }
        if fingerWidth < optimalMinWidth { return .tooFar }
        return .optimal
    }

    private func rounded(_ v: Double) -> Double { (v * 1000).rounded() / 1000 }
}
