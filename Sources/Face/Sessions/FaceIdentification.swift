import BiometricProtocol

/// face.identify: every frame's template ranked against the gallery; the best score per user
/// over the frames of one tracked, live face decides.
public struct FaceIdentification: FaceSession {
    /// The gallery's ranking of one template: users with their scores, best first.
    public typealias Judgement = [Candidate]

    public struct Outcome: Sendable, Equatable {
        public var capture: FaceAuthenticationOutcome
        /// The best five users over all frames, best first (ties by name).
        public var candidates: [Candidate]
        /// The recognised user: the top candidate, when the capture matched.
        public var user: String?
        /// The runner-up is within the margin: the caller should ask for a second factor.
        public var stepUpRequired: Bool
    }

    private var core: FaceAuthentication
    private let margin: Double
    private var bestPerUser: [String: Double] = [:]

    public init(_ settings: FaceAuthenticationSettings, margin: Double, startedAt: UInt64) {
        core = FaceAuthentication(settings, startedAt: startedAt)
        self.margin = margin
    }

    public var poseTarget: FaceQuality.PoseTarget { .front }
    public var measuresBorders: Bool { core.settings.liveness }
    public var embeddingViews: EmbeddingViews { .mirrored }
    public var timeLimitMs: Int { core.settings.timeoutMs }

    public mutating func observe(_ observation: FaceObservation, at ns: UInt64) -> FaceStep<Outcome> {
        var restarted = false
        let result = core.observe(observation, at: ns, restarted: &restarted)
        if restarted { bestPerUser = [:] }
        switch result {
        case .failure(let failure): return .failed(failure)
        case .success(true): return .needTemplate
        case .success(false): return finish(core.conclude(extraction: nil))
        }
    }

    public mutating func judged(_ ranked: [Candidate]) -> FaceStep<Outcome> {
        for c in ranked { bestPerUser[c.user] = max(bestPerUser[c.user] ?? 0, c.score) }
        let top = ranked.first?.score ?? 0
        core.record(score: top, matched: top >= core.settings.matchingThreshold)
        return finish(core.conclude(extraction: .success))
    }

    public func expired(now: UInt64) -> FaceFailure? { core.expired(now: now) }

    private func finish(_ step: FaceStep<FaceAuthenticationOutcome>) -> FaceStep<Outcome> {
        switch step {
        case .progress(let p): return .progress(p)
        case .needTemplate: return .needTemplate
        case .failed(let f): return .failed(f)
        case .decided(let capture, let p):
            let candidates = bestPerUser.map { Candidate(user: $0.key, score: $0.value) }
                .sorted { $0.score != $1.score ? $0.score > $1.score : $0.user < $1.user }
                .prefix(5).map { $0 }
            let matched = capture.matched && !candidates.isEmpty
            let stepUp = matched && candidates.count > 1 && candidates[0].score - candidates[1].score < margin
            return .decided(Outcome(capture: capture, candidates: candidates, user: matched ? candidates[0].user : nil,
                                    stepUpRequired: stepUp), p)
        }
    }
}
