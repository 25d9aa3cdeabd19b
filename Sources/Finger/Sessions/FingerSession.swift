import BiometricVocabulary

/// A finger session (capture, enrol, verify/identify) as a state machine: the runner analyses
/// each frame with a `FingerCapture` and hands what it saw over; the session answers what comes
/// next. It reads no clock and touches no camera, so every branch is testable with synthetic
/// sightings.
public protocol FingerSession: Sendable {
    /// What the runner gets for the prints the session asked to be processed.
    associatedtype Judgement: Sendable
    associatedtype Outcome: Sendable

    var spec: FingerCaptureSpec { get }
    /// The session's own time limit in ms (all rounds); the runner adds a margin for a hung analysis.
    var timeLimitMs: Int { get }
    /// Bumped when a new capture starts (enrolment rounds): the runner starts a fresh analyser.
    var round: Int { get }
    /// Captures done and needed, for the progress events.
    var progress: (captured: Int, needed: Int) { get }

    /// What one frame left the analyser with, at `now` (monotonic nanoseconds).
    mutating func observe(_ sighting: FingerSighting, at now: UInt64) -> FingerStep<Outcome>
    /// The result of processing the prints asked for by the last `.needPrints`.
    mutating func judged(_ judgement: Judgement) -> FingerStep<Outcome>
}

/// What a finger session asks for after a frame.
public enum FingerStep<Outcome: Sendable>: Sendable {
    /// Keep capturing.
    case progress
    /// Process these prints (extract; for authentication also match) and hand the result to `judged(_:)`.
    case needPrints([CapturedPrint])
    case decided(Outcome)
    case failed(FingerFailure)
}

/// The analyser's state after a frame: the frame's analysis, the best print of each finger so
/// far, and the liveness verdict of the frames seen.
public struct FingerSighting: Sendable {
    public var analysis: FingerFrameAnalysis
    public var prints: [CapturedPrint]
    public var liveness: LivenessVerdict

    public init(analysis: FingerFrameAnalysis, prints: [CapturedPrint], liveness: LivenessVerdict) {
        self.analysis = analysis
        self.prints = prints
        self.liveness = liveness
    }
}

/// Why a finger session failed. The daemon maps each case to one SPEC §6 error in one place.
public enum FingerFailure: Error, Sendable, Equatable {
    /// Liveness was asked for and the fingers look like a print or a screen.
    case spoof
    /// No fingers were seen at all within the time.
    case noFingers(timeoutMs: Int)
    /// Fingers were seen, but no print reached the quality threshold.
    case lowQuality(bestQuality: Int, threshold: Int, feedback: Feedback)
    /// Prints reached the quality threshold, but those of `fingers` gave no template (too few
    /// clear minutiae): good enough to try, not to use. Verification fails so only when no
    /// finger gave one; enrolment, which needs every expected finger, when any did not.
    case noTemplate(fingers: [FingerPosition], feedback: Feedback)
}

/// A capture request, resolved: what to look for, which fingers to expect, and when to give up.
public struct FingerCaptureSpec: Sendable {
    public var options: FingerCaptureOptions
    public var expected: [FingerPosition]
    public var qualityThreshold: Int
    /// Per capture (each enrolment round has its own).
    public var timeoutMs: Int

    public init(options: FingerCaptureOptions, qualityThreshold: Int, timeoutMs: Int) {
        self.options = options
        expected = options.expectedDigits.map { FingerPosition(options.hand, $0) }
        self.qualityThreshold = qualityThreshold
        self.timeoutMs = timeoutMs
    }

    public var checksLiveness: Bool { options.liveness != .none }
}

/// The part every finger session shares: one capture's deadline, which prints are usable, what
/// was seen (for the failure), and the liveness gate.
struct FingerCaptureTracker: Sendable {
    let spec: FingerCaptureSpec
    private(set) var deadlineNs: UInt64
    private var sawFingers = false
    private var lastQualities: [Int] = []
    private var lastFeedback = Feedback.noFingers
    /// The fingers whose print gave no template the last time one was asked for. Only for
    /// `failure`: a capture that ends so ends in `.noTemplate` naming them, not in a quality the
    /// prints did reach.
    private var withoutTemplate: Set<FingerPosition> = []

    init(_ spec: FingerCaptureSpec, startedAt: UInt64) {
        self.spec = spec
        deadlineNs = startedAt + UInt64(max(0, spec.timeoutMs)) * 1_000_000
    }

    /// The prints at or above the quality threshold.
    mutating func usable(_ sighting: FingerSighting) -> [CapturedPrint] {
        lastFeedback = sighting.analysis.feedback
        if !sighting.analysis.fingers.isEmpty {
            sawFingers = true
            lastQualities = sighting.analysis.fingers.map(\.quality)
        }
        return sighting.prints.filter { $0.quality >= spec.qualityThreshold }
    }

    /// What extraction made of the prints asked for: the positions that gave a template.
    mutating func extracted(asked: Set<FingerPosition>, gave: Set<FingerPosition>) {
        withoutTemplate = withoutTemplate.union(asked).subtracting(gave)
    }

    func coversExpected(_ prints: [CapturedPrint]) -> Bool { Set(prints.map(\.position)).isSuperset(of: spec.expected) }

    func isPastDeadline(_ now: UInt64) -> Bool { now >= deadlineNs }

    /// Refuses a fake finger when liveness was asked for.
    func livenessFailure(_ verdict: LivenessVerdict) -> FingerFailure? {
        spec.checksLiveness && verdict == .fake ? .spoof : nil
    }

    /// Why the capture ended without a result. (A verification whose prints gave some template
    /// ends with a result, matched or not, so it gets here only when none gave one.)
    var failure: FingerFailure {
        if !withoutTemplate.isEmpty {
            return .noTemplate(fingers: withoutTemplate.sorted { $0.isoCode < $1.isoCode }, feedback: lastFeedback)
        }
        return sawFingers ? .lowQuality(bestQuality: lastQualities.max() ?? 0, threshold: spec.qualityThreshold, feedback: lastFeedback)
            : .noFingers(timeoutMs: spec.timeoutMs)
    }
}
