import BiometricVocabulary

/// finger.verify and finger.identify: keep capturing; each finger's print is extracted and
/// matched whenever it improves, until a match (and, when asked for, a live verdict) or the
/// deadline. Prints matched but never well enough are a negative result, not an error.
public struct FingerAuthentication: FingerSession {
    /// The ranked matches of each print asked for (a print that gave no template is absent).
    public typealias Judgement = [FingerPosition: [FingerMatch]]

    public struct Outcome: Sendable, Equatable {
        public var matched: Bool
        public var score: Double
        /// The best reference matched, and the finger that matched it.
        public var best: FingerMatch?
        public var position: FingerPosition?
        /// The best five users over every print, best first (ties by name).
        public var candidates: [Candidate]
        public var liveness: LivenessVerdict
        /// Prints extracted and matched.
        public var captures: Int
    }

    public let threshold: Double
    private var capture: FingerCaptureTracker
    private var extractedQuality: [FingerPosition: Int] = [:]
    private var bestPerUser: [String: Double] = [:]
    private var score = 0.0
    private var best: FingerMatch?
    private var position: FingerPosition?
    private var captures = 0
    /// Between `.needPrints` and `judged`: the frame's verdict, whether the deadline had passed and
    /// the fingers asked for.
    private var pending: (liveness: LivenessVerdict, late: Bool, asked: Set<FingerPosition>)?

    public init(_ spec: FingerCaptureSpec, threshold: Double, startedAt: UInt64) {
        self.threshold = threshold
        capture = FingerCaptureTracker(spec, startedAt: startedAt)
    }

    public var spec: FingerCaptureSpec { capture.spec }
    public var timeLimitMs: Int { spec.timeoutMs }
    public var round: Int { 0 }
    public var progress: (captured: Int, needed: Int) { (0, 0) }

    public mutating func observe(_ sighting: FingerSighting, at now: UInt64) -> FingerStep<Outcome> {
        let usable = capture.usable(sighting)
        let late = capture.isPastDeadline(now)
        if capture.coversExpected(usable) || (late && !usable.isEmpty) {
            if let failure = capture.livenessFailure(sighting.liveness) { return .failed(failure) }
            // Only a print better than the last one matched of its finger (by 5) is worth matching again.
            let improved = usable.filter { $0.quality >= (extractedQuality[$0.position] ?? -100) + 5 }
            for print in improved { extractedQuality[print.position] = print.quality }
            if !improved.isEmpty {
                pending = (sighting.liveness, late, Set(improved.map(\.position)))
                return .needPrints(improved)
            }
            if let decided = decision(sighting.liveness) { return decided }
        }
        return late ? end() : .progress
    }

    public mutating func judged(_ matches: [FingerPosition: [FingerMatch]]) -> FingerStep<Outcome> {
        let (liveness, late, asked) = pending ?? (.noDecision, false, [])
        pending = nil
        capture.extracted(asked: asked, gave: Set(matches.keys))
        for (position, ranked) in matches.sorted(by: { $0.key.isoCode < $1.key.isoCode }) {
            captures += 1
            for match in ranked where match.score > bestPerUser[match.user] ?? -1 { bestPerUser[match.user] = match.score }
            if let top = ranked.first, top.score > score { (score, best, self.position) = (top.score, top, position) }
        }
        if let decided = decision(liveness) { return decided }
        return late ? end() : .progress
    }

    private func decision(_ liveness: LivenessVerdict) -> FingerStep<Outcome>? {
        guard score >= threshold, !spec.checksLiveness || liveness == .live else { return nil }
        return .decided(outcome(matched: true, liveness: liveness))
    }

    /// The deadline passed: prints matched are a negative result; none is the capture's failure.
    private func end() -> FingerStep<Outcome> {
        captures > 0 ? .decided(outcome(matched: false, liveness: .noDecision)) : .failed(capture.failure)
    }

    private func outcome(matched: Bool, liveness: LivenessVerdict) -> Outcome {
        let candidates = bestPerUser.map { Candidate(user: $0.key, score: $0.value) }
            .sorted { $0.score != $1.score ? $0.score > $1.score : $0.user < $1.user }
            .prefix(5).map { $0 }
        return Outcome(matched: matched, score: score, best: best, position: position, candidates: candidates,
                       liveness: liveness, captures: captures)
    }
}

/// One stored reference a print matched, with the SPEC §4 score.
public struct FingerMatch: Sendable, Equatable {
    public var user: String
    public var templateID: String
    public var position: String?
    public var score: Double

    public init(user: String, templateID: String, position: String?, score: Double) {
        self.user = user
        self.templateID = templateID
        self.position = position
        self.score = score
    }
}
