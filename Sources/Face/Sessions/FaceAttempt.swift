import BiometricCore

/// How one verify or identify attempt decides (SPEC §4: "a threshold states the false-accept rate
/// of one attempt, not of one frame").
///
/// A frame's score is calibrated per comparison (`FaceCalibration.lfw`): the FAR of one probe
/// against one template. An attempt that matched whenever any of its frames scored over the
/// threshold gave an impostor one chance per frame; best of 5 different photos had about five
/// times the stated FAR. So an attempt makes one comparison: the mean of the per-frame scores of
/// its first `frames` judged frames, mapped to the SPEC scale by `calibration`, which is fitted on
/// LFW impostor attempts run through this very rule (`biometricd-face-bench attempts --write`).
/// That calibration is the upper envelope of two attacks: one photo shown for every frame (the
/// mean is then one frame's score, whose FAR the per-comparison calibration states) and
/// `frames` different photos of one impostor; so `score = −12·log10(per-attempt FAR)` whatever
/// the impostor shows. See Docs/face.md "Per-attempt FAR".
public struct FaceAttemptRule: Sendable {
    /// How many judged frames of one tracked face the decision takes: the first ones, no more.
    public let frames: Int
    /// The fused value (`fused(_:)`, a mean score / 100) → per-attempt FAR.
    public let calibration: FARCalibration

    public init(frames: Int, calibration: FARCalibration) {
        precondition(frames >= 1)
        self.frames = frames
        self.calibration = calibration
    }

    /// What the daemon ships: `FaceCalibration.attemptFrames` frames, `FaceCalibration.attempt`.
    public static let standard = FaceAttemptRule(frames: FaceCalibration.attemptFrames, calibration: FaceCalibration.attempt)
    /// Fused (v2) verification: the same frames, on per-frame scores of the fused distance
    /// (`FaceFusion.calibration`), calibrated by `FaceFusion.attempt`
    /// (`biometricd-face-bench attempts --fused --write`).
    public static let standardFused = FaceAttemptRule(frames: FaceCalibration.attemptFrames, calibration: FaceFusion.attempt)

    /// The fused value of per-frame SPEC scores (0–100): their mean, as a fraction (0–1). A frame
    /// in which a candidate was not ranked counts as 0.
    public static func fused<C: Collection>(_ frameScores: C) -> Double where C.Element == Double {
        guard !frameScores.isEmpty else { return 0 }
        return frameScores.reduce(0) { $0 + max(0, min(100, $1)) } / Double(frameScores.count) / 100
    }

    /// The attempt's SPEC score from its frames' scores: nil until `frames` are in; later frames
    /// are not looked at (one comparison per attempt).
    public func score<C: Collection>(frameScores: C) -> Double? where C.Element == Double {
        guard frameScores.count >= frames else { return nil }
        return calibration.score(Self.fused(frameScores.prefix(frames)))
    }

    /// The attempt's decision: its score, and whether it reaches `threshold`. Nil until enough frames.
    public func decide<C: Collection>(frameScores: C, threshold: Double) -> (score: Double, matched: Bool)? where C.Element == Double {
        guard let s = score(frameScores: frameScores) else { return nil }
        return (s, s >= threshold)
    }
}
