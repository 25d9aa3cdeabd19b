/// finger.enroll: `rounds` captures of every expected finger (each its own capture with its own
/// time limit); per finger the capture that agrees best with the others is kept.
public struct FingerEnrolment: FingerSession {
    /// The templates extracted from the prints asked for (a print that gave none is absent).
    public typealias Judgement = [FingerPosition: FingerTemplate]

    public struct Outcome: Sendable {
        /// Per expected finger, the template kept, in the order of `spec.expected`.
        public var chosen: [(position: FingerPosition, template: FingerTemplate, captures: Int)]
        public var rounds: Int
    }

    public let rounds: Int
    private let matcher: FingerMatcher
    private var capture: FingerCaptureTracker
    private var captures: [FingerPosition: [FingerTemplate]] = [:]
    public private(set) var round = 0
    private var now: UInt64 = 0
    /// The prints asked for were the capture's last chance (its deadline had passed).
    private var lastChance = false
    /// The fingers whose prints were asked for.
    private var asked: Set<FingerPosition> = []

    public init(_ spec: FingerCaptureSpec, rounds: Int, matcher: FingerMatcher, startedAt: UInt64) {
        self.rounds = max(1, rounds)
        self.matcher = matcher
        capture = FingerCaptureTracker(spec, startedAt: startedAt)
    }

    public var spec: FingerCaptureSpec { capture.spec }
    public var timeLimitMs: Int { spec.timeoutMs * rounds }
    public var progress: (captured: Int, needed: Int) { (round, rounds) }

    public mutating func observe(_ sighting: FingerSighting, at now: UInt64) -> FingerStep<Outcome> {
        self.now = now
        let usable = capture.usable(sighting)
        let late = capture.isPastDeadline(now)
        // At the end partial captures still get a try (a finger may stay below par).
        if capture.coversExpected(usable) || (late && !usable.isEmpty) {
            if let failure = capture.livenessFailure(sighting.liveness) { return .failed(failure) }
            if !(spec.checksLiveness && sighting.liveness == .noDecision) {
                lastChance = late
                asked = Set(usable.map(\.position))
                return .needPrints(usable)
            }
        }
        return late ? .failed(capture.failure) : .progress
    }

    public mutating func judged(_ templates: [FingerPosition: FingerTemplate]) -> FingerStep<Outcome> {
        capture.extracted(asked: asked, gave: Set(templates.keys))
        // Every expected finger must give a template, else keep capturing.
        guard Set(templates.keys).isSuperset(of: spec.expected) else { return lastChance ? .failed(capture.failure) : .progress }
        for (position, template) in templates { captures[position, default: []].append(template) }
        round += 1
        guard round >= rounds else {
            capture = FingerCaptureTracker(spec, startedAt: now)
            return .progress
        }
        return .decided(Outcome(chosen: spec.expected.compactMap { position in
            guard let candidates = captures[position], !candidates.isEmpty else { return nil }
            return (position, Self.mostAgreeing(candidates, matcher: matcher), candidates.count)
        }, rounds: rounds))
    }

    /// The capture that agrees best with the others (the sum of its scores against them), then
    /// the best quality.
    static func mostAgreeing(_ candidates: [FingerTemplate], matcher: FingerMatcher) -> FingerTemplate {
        let scored = candidates.enumerated().map { i, t in
            (t, candidates.enumerated().filter { $0.offset != i }.map { matcher.score(probe: t, reference: $0.element) }.reduce(0, +))
        }
        return scored.max { ($0.1, $0.0.quality) < ($1.1, $1.0.quality) }!.0
    }
}
