import BiometricCore

/// The per-attempt score calibration (SPEC §4: a threshold states the FAR of one attempt), for
/// `FaceAttemptRule`: fused value (mean per-frame score / 100) → log10 per-attempt FAR.
/// PLACEHOLDER until `biometricd-face-bench attempts --write` generates it: the identity (an
/// attempt scores the mean of its frames' scores).
extension FaceCalibration {
    /// How many judged frames one attempt fuses.
    public static let attemptFrames = 3
    public static let attempt = FARCalibration(.similarity, knots: attemptKnots, source: "identity (placeholder)")
    static let attemptKnots: [FARCalibration.Knot] = [
        .init(0.0, 0.0),
        .init(1.0, -8.333),
    ]
}
