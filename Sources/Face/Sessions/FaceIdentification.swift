import BiometricVocabulary

/// face.identify: each judged frame's template ranked against the gallery; per user, the
/// attempt's first frames are fused into one comparison (`FaceAttemptRule`: the mean of that
/// user's per-frame scores, 0 for a frame that did not rank them) and the best user decides.
public struct FaceIdentification: FaceMatchingSession {
    /// The gallery's ranking of one template: users with their scores, best first.
    public typealias Judgement = [Candidate]

    public struct Outcome: Sendable, Equatable {
        public var capture: FaceAuthenticationOutcome
        /// The best five users by their attempt score, best first (ties by name).
        public var candidates: [Candidate]
        /// The recognised user: the top candidate, when the capture matched.
        public var user: String?
        /// The runner-up is within the margin: the caller should ask for a second factor.
        public var stepUpRequired: Bool
    }

    private var core: FaceAuthentication
    private let margin: Double
    /// The rankings of this face's judged frames, in order.
    private var rankings: [[Candidate]] = []

    /// Whether frames carry the second network's chip and the attempt is calibrated for fused
    /// scores (`FaceAttemptRule.standardFused`): the gallery holds v2 templates and the network
    /// is loaded (`FaceGallerySet` then scores v2 templates fused, v1 ones on dlib).
    public let fused: Bool

    public init(_ settings: FaceAuthenticationSettings, margin: Double, startedAt: UInt64, fused: Bool = false) {
        var settings = settings
        if fused { settings.attempt = .standardFused }
        core = FaceAuthentication(settings, startedAt: startedAt)
        self.margin = margin
        self.fused = fused
    }

    /// The settings the session runs with (SPEC defaults applied by the caller).
    public var settings: FaceAuthenticationSettings { core.settings }

    public mutating func observe(_ observation: FaceObservation, at ns: UInt64) -> FaceStep<Outcome> {
        var restarted = false
        let step = core.step(observation, at: ns, restarted: &restarted)
        if restarted { rankings = [] }
        return finish(step)
    }

    public mutating func judged(_ ranked: [Candidate]) -> FaceStep<Outcome> {
        rankings.append(ranked)
        core.judgedFrame()
        if core.attemptComplete, let top = candidates.first {
            core.settle(score: top.score, matched: top.score >= core.settings.matchingThreshold)
        }
        return finish(core.conclude(extraction: .success))
    }

    public func expired(now: UInt64) -> FaceFailure? { core.expired(now: now) }

    /// Every user ranked in the attempt's frames with their attempt score, best five first
    /// (ties by name); empty until the attempt has its frames.
    var candidates: [Candidate] {
        let rule = core.settings.attempt
        guard rankings.count >= rule.frames else { return [] }
        let frames = rankings.prefix(rule.frames)
        let users = Set(frames.flatMap { $0.map(\.user) })
        return users.compactMap { user -> Candidate? in
            let scores = frames.map { ranked in ranked.first { $0.user == user }?.score ?? 0 }
            return rule.score(frameScores: scores).map { Candidate(user: user, score: $0) }
        }
        .sorted { $0.score != $1.score ? $0.score > $1.score : $0.user < $1.user }
        .prefix(5).map { $0 }
    }

    private func finish(_ step: FaceStep<FaceAuthenticationOutcome>) -> FaceStep<Outcome> {
        switch step {
        case .progress(let p): return .progress(p)
        case .needTemplate: return .needTemplate
        case .failed(let f): return .failed(f)
        case .decided(let capture, let p):
            let candidates = self.candidates
            let matched = capture.matched && !candidates.isEmpty
            let stepUp = matched && candidates.count > 1 && candidates[0].score - candidates[1].score < margin
            return .decided(Outcome(capture: capture, candidates: candidates, user: matched ? candidates[0].user : nil,
                                    stepUpRequired: stepUp), p)
        }
    }
}
