import BiometricVocabulary

/// finger.capture: the best print of each expected finger; with liveness asked for, it waits
/// (until the deadline) for a verdict.
public struct FingerCaptureSession: FingerSession {
    public typealias Judgement = Never

    public struct Outcome: Sendable {
        public var prints: [CapturedPrint]
        public var liveness: LivenessVerdict
    }

    private var capture: FingerCaptureTracker
    public var spec: FingerCaptureSpec { capture.spec }
    public var timeLimitMs: Int { spec.timeoutMs }
    public var round: Int { 0 }
    public var progress: (captured: Int, needed: Int) { (0, 0) }

    public init(_ spec: FingerCaptureSpec, startedAt: UInt64) {
        capture = FingerCaptureTracker(spec, startedAt: startedAt)
    }

    public mutating func observe(_ sighting: FingerSighting, at now: UInt64) -> FingerStep<Outcome> {
        let usable = capture.usable(sighting)
        let late = capture.isPastDeadline(now)
        if capture.coversExpected(usable) && (!spec.checksLiveness || sighting.liveness != .noDecision || late) {
            return .decided(Outcome(prints: usable, liveness: sighting.liveness))
        }
        guard late else { return .progress }
        // Partial captures still count at the end (a finger may stay below par).
        if !usable.isEmpty { return .decided(Outcome(prints: usable, liveness: sighting.liveness)) }
        return .failed(capture.failure)
    }

    public mutating func judged(_ judgement: Never) -> FingerStep<Outcome> {}
}
