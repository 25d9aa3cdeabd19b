import BiometricCore
import BiometricProtocol

/// face.verify: one user's templates against the frames of one tracked, live face.
public struct FaceVerification: FaceSession {
    public typealias Judgement = FaceTemplate
    public typealias Outcome = FaceAuthenticationOutcome

    private var core: FaceAuthentication
    private let references: [FaceTemplate]
    private let calibration: FARCalibration

    public init(_ settings: FaceAuthenticationSettings, references: [FaceTemplate], calibration: FARCalibration, startedAt: UInt64) {
        core = FaceAuthentication(settings, startedAt: startedAt)
        self.references = references
        self.calibration = calibration
    }

    public var poseTarget: FaceQuality.PoseTarget { .front }
    public var measuresBorders: Bool { core.settings.liveness }
    public var embeddingViews: EmbeddingViews { .mirrored }
    public var timeLimitMs: Int { core.settings.timeoutMs }

    public mutating func observe(_ observation: FaceObservation, at ns: UInt64) -> FaceStep<Outcome> {
        var restarted = false
        switch core.observe(observation, at: ns, restarted: &restarted) {
        case .failure(let failure): return .failed(failure)
        case .success(true): return .needTemplate
        case .success(false): return core.conclude(extraction: nil)
        }
    }

    public mutating func judged(_ probe: FaceTemplate) -> FaceStep<Outcome> {
        let score = Self.score(probe, against: references, calibration: calibration)
        core.record(score: score, matched: score >= core.settings.matchingThreshold)
        return core.conclude(extraction: .success)
    }

    public func expired(now: UInt64) -> FaceFailure? { core.expired(now: now) }

    /// The SPEC §4 score of `probe`'s nearest reference.
    public static func score(_ probe: FaceTemplate, against references: [FaceTemplate], calibration: FARCalibration) -> Double {
        let best = references.map { probe.distance(to: $0) }.min() ?? 2
        return calibration.score(best)
    }
}
