import BiometricCore
import BiometricProtocol

/// face.verify: one user's templates against the frames of one tracked, live face. Each judged
/// frame is scored against the nearest reference (per comparison, `calibration`); the attempt
/// decides once on its first frames fused (`FaceAttemptRule`), so the threshold's FAR holds per
/// attempt.
public struct FaceVerification: FaceSession {
    public typealias Judgement = FaceTemplate
    public typealias Outcome = FaceAuthenticationOutcome

    private var core: FaceAuthentication
    private let references: [FaceTemplate]
    private let calibration: FARCalibration
    /// The per-comparison scores of this face's judged frames, in order.
    private(set) var frameScores: [Double] = []

    /// `calibration` scores one frame against one template (per comparison: `FaceCalibration.lfw`,
    /// which `settings.attempt`'s calibration was fitted on top of).
    public init(_ settings: FaceAuthenticationSettings, references: [FaceTemplate], calibration: FARCalibration, startedAt: UInt64) {
        core = FaceAuthentication(settings, startedAt: startedAt)
        self.references = references
        self.calibration = calibration
    }

    public var poseTarget: FaceQuality.PoseTarget { .front }
    public var measuresBorders: Bool { core.settings.liveness }
    public var measuresPassive: Bool { core.settings.liveness && core.settings.livenessMode.isPassive }
    public var embeddingViews: EmbeddingViews { .mirrored }
    public var timeLimitMs: Int { core.settings.timeoutMs }

    public mutating func observe(_ observation: FaceObservation, at ns: UInt64) -> FaceStep<Outcome> {
        var restarted = false
        let result = core.observe(observation, at: ns, restarted: &restarted)
        if restarted { frameScores = [] }
        switch result {
        case .failure(let failure): return .failed(failure)
        case .success(true): return .needTemplate
        case .success(false): return core.conclude(extraction: nil)
        }
    }

    public mutating func judged(_ probe: FaceTemplate) -> FaceStep<Outcome> {
        frameScores.append(Self.score(probe, against: references, calibration: calibration))
        core.judgedFrame()
        if let decision = core.settings.attempt.decide(frameScores: frameScores, threshold: core.settings.matchingThreshold) {
            core.settle(score: decision.score, matched: decision.matched)
        }
        return core.conclude(extraction: .success)
    }

    public func expired(now: UInt64) -> FaceFailure? { core.expired(now: now) }

    /// The SPEC §4 score of `probe`'s nearest reference: one comparison (face.match, one frame).
    public static func score(_ probe: FaceTemplate, against references: [FaceTemplate], calibration: FARCalibration) -> Double {
        let best = references.map { probe.distance(to: $0) }.min() ?? 2
        return calibration.score(best)
    }
}
