import BiometricCore
import BiometricVocabulary

/// face.verify: one user's templates against the frames of one tracked, live face. Each judged
/// frame is scored against the nearest reference (per comparison, `calibration`); the attempt
/// decides once on its first frames fused (`FaceAttemptRule`), so the threshold's FAR holds per
/// attempt.
public struct FaceVerification: FaceMatchingSession {
    public typealias Judgement = FaceTemplate
    public typealias Outcome = FaceAuthenticationOutcome

    private var core: FaceAuthentication
    private let references: [FaceTemplate]
    private let calibration: FARCalibration
    /// The per-comparison scores of this face's judged frames, in order.
    private(set) var frameScores: [Double] = []

    /// Whether the attempt scores the two networks fused: some reference is v2 and the second
    /// network is loaded. Then each judged frame also gets the second network's chip embedding
    /// (`secondEmbedding`), v2 references are scored on the fused distance and the attempt is
    /// calibrated by `FaceAttemptRule.standardFused`; v1 references keep the dlib score.
    public let fused: Bool
    /// Whether the pipeline had the second network loaded (the re-enrol hint needs it).
    public let secondNetworkLoaded: Bool
    /// The settings the session runs with (SPEC defaults applied by the caller).
    public var settings: FaceAuthenticationSettings { core.settings }

    /// `calibration` scores one frame against one v1 template (per comparison: `FaceCalibration.lfw`,
    /// which `settings.attempt`'s calibration was fitted on top of). `secondNetwork`: the pipeline
    /// has the second network loaded (else v2 templates are scored on their dlib part alone).
    public init(_ settings: FaceAuthenticationSettings, references: [FaceTemplate], calibration: FARCalibration, startedAt: UInt64,
                secondNetwork: Bool = false) {
        fused = secondNetwork && references.contains { $0.second != nil }
        secondNetworkLoaded = secondNetwork
        var settings = settings
        if fused { settings.attempt = .standardFused }
        core = FaceAuthentication(settings, startedAt: startedAt)
        self.references = fused ? references : references.map { $0.second == nil ? $0 : $0.dlibOnly }
        self.calibration = calibration
    }

    /// Image mode claims nothing about who is present: it takes the image's subject, as
    /// face.extract does. Liveness mode refuses an ambiguous scene (`multiple_faces`).
    public func subjectRule(stillImages: Bool) -> FaceSubjectRule { core.settings.liveness ? .dominantOnly : .stillImage }

    public mutating func observe(_ observation: FaceObservation, at ns: UInt64) -> FaceStep<Outcome> {
        var restarted = false
        let step = core.step(observation, at: ns, restarted: &restarted)
        if restarted { frameScores = [] }
        return step
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
    /// A v2 reference against a probe with the second embedding is scored on the fused distance
    /// (`FaceFusion.calibration`), anything else on the dlib distance (`calibration`); both are
    /// the same scale (−12·log10 FAR per comparison), so the best of them is the frame's score.
    public static func score(_ probe: FaceTemplate, against references: [FaceTemplate], calibration: FARCalibration) -> Double {
        guard !references.isEmpty else { return calibration.score(2) }
        return references.map { reference in
            if let d = probe.fusedDistance(to: reference) { return FaceFusion.calibration.score(d) }
            return calibration.score(probe.distance(to: reference))
        }.max()!
    }
}
