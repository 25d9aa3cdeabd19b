import BiometricVocabulary

/// The quality gate that sees ridges: a fingertip becomes a print only when its ridges are
/// resolved — measured in the frame (cvis_fingertip_measure), not assumed from the distance.
///
/// Why each rule:
/// - **≥ 4 pixels per ridge period.** Nyquist is 2; the lens and the resampling to 500 ppi need
///   the rest. Below it minutiae are guesses.
/// - **Ridges in the human band relative to the finger**: an adult fingertip is 14–22 mm wide and
///   its ridges 0.35–0.55 mm apart, so 25–60 ridge periods fit across it (measured: 26–42 on the
///   real close-ups). 20–65 leaves room for the width measure. A "period" far outside it is not a
///   fingerprint: JPEG blocks, fabric, noise or the wrong object.
/// - **Enough ridge area**: at least half of the pad's centre shows one clear ridge direction and
///   spacing that flows on into a neighbouring block (a smeared, defocused or partly hidden pad
///   does not, nor do JPEG ringing, pores or speckle, which give isolated peaks).
/// - **Camera pixels**: in an image blown up k× by repeating pixels (a digital zoom, some phone
///   pipelines) the 4 pixels per ridge must be source pixels: period / k ≥ 4 (the repetition
///   itself looks like perfect ridges k pixels apart).
/// - **Not the pixel grid**: JPEG's 8×8 blocks (blown up by a zoom) give periodic edges exactly
///   along the frame's rows and columns; skin ridges run every way, so only a few of a pad's ridge
///   blocks happen to lie within 4° of the grid (≈ 9 % for random directions; at most 0.28 on the
///   real close-ups, 0.72 on upscaled JPEG blocks). More than half on the grid is not a finger.
/// When the ridges are not there, the width says why: a finger too small to hold 4 px per
/// nominal ridge is too far (`move_closer`); otherwise the ridges are blurred — by motion when the
/// fingertip moved since the last frame (`hold_still`), else by focus (`focus`).
public enum RidgeGate {
    public static let minimumPixelsPerRidge = 4.0
    public static let ridgesAcross = 20.0...65.0
    public static let minimumRidgeArea = 0.5
    /// The share of ridge blocks along the frame's rows/columns above which they are the pixel grid.
    public static let maximumGridded = 0.5
    /// Ridge periods across a nominal finger (17 mm / 0.437 mm), to predict the period from a width.
    public static let nominalRidgesAcross = 39.0

    public enum Verdict: Sendable, Equatable {
        case resolved
        case refused(Feedback)
    }

    /// - Parameters:
    ///   - sidesFound: the fingertip's sides and apex were found (else `width` is a guess).
    ///   - width: finger width in pixels.
    ///   - period: measured ridge period in pixels, 0 when none was found.
    ///   - area: share of the pad's centre with ridges, 0–1.
    ///   - moving: the fingertip moved noticeably since the previous frame.
    ///   - repeated: the factor the frame was blown up by, repeating pixels (1: not).
    ///   - gridded: share of the ridge blocks whose spacing lies along the frame's rows or columns.
    public static func judge(sidesFound: Bool, width: Double, period: Double, area: Double, moving: Bool,
                             repeated: Double = 1, gridded: Double = 0) -> Verdict {
        let unresolved: Verdict = width / nominalRidgesAcross < minimumPixelsPerRidge
            ? .refused(.moveCloser) : .refused(moving ? .holdStill : .focus)
        guard sidesFound, period > 0, area >= minimumRidgeArea, gridded <= maximumGridded else { return unresolved }
        guard period >= minimumPixelsPerRidge * max(1, repeated) else { return .refused(.moveCloser) }
        guard ridgesAcross.contains(width / period) else { return .refused(moving ? .holdStill : .focus) }
        return .resolved
    }
}
