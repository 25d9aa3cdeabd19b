import BiometricProtocol

/// Keep-still, then the blink, and with a challenge the head moves asked for: the active part of
/// face liveness, frame by frame. Verify and identify run it inside their sessions; the face
/// bench runs it on real clips.
public struct FaceLivenessCheck: Sendable {
    public enum Verdict: Sendable, Equatable {
        case pending
        case live
        /// The moves asked for were not made (or the wrong one was).
        case failedChallenge(reason: String, stepsDone: Int)
    }

    private let livenessThreshold: Int
    private let sequence: [ChallengeLiveness.Action]?
    private let stepTimeoutMs: Int
    private(set) var blink: BlinkLiveness
    private(set) var challenge: ChallengeLiveness?
    /// When the blink (with a challenge: the moves) was first asked for.
    public private(set) var blinkAskedAt: UInt64?

    public init(livenessThreshold: Int, challenge: [ChallengeLiveness.Action]? = nil, stepTimeoutMs: Int = 5000) {
        self.livenessThreshold = livenessThreshold
        sequence = challenge
        self.stepTimeoutMs = stepTimeoutMs
        blink = BlinkLiveness(livenessThreshold: livenessThreshold)
        self.challenge = challenge.map { ChallengeLiveness(sequence: $0, stepTimeoutMs: stepTimeoutMs) }
    }

    /// Starts again (another face took over).
    public mutating func reset() {
        self = FaceLivenessCheck(livenessThreshold: livenessThreshold, challenge: sequence, stepTimeoutMs: stepTimeoutMs)
    }

    public mutating func observe(landmarks: Landmarks?, pose: HeadPose?, at now: UInt64) -> Verdict {
        let blinked = blink.observe(landmarks, timestampNs: now) == .live
        guard var c = challenge else {
            if blink.phase != .keepStill, blinkAskedAt == nil { blinkAskedAt = now }
            return blinked ? .live : .pending
        }
        // After keep-still, the moves; the blink may come at any time.
        if blink.phase != .keepStill, c.state == .waiting, let rest = pose { c.start(rest: rest, at: now) }
        let state = c.observe(pose, at: now)
        challenge = c
        if case .failed(let why) = state { return .failedChallenge(reason: why, stepsDone: c.completed) }
        if state == .passed, blinkAskedAt == nil { blinkAskedAt = now }
        return blinked && state == .passed ? .live : .pending
    }

    /// Whether the blink is still awaited after `timeoutMs` of asking for it.
    public func blinkOverdue(at now: UInt64, timeoutMs: Int) -> Bool {
        guard let start = blinkAskedAt, blink.phase != .done, now > start else { return false }
        return now - start > UInt64(timeoutMs) * 1_000_000
    }

    /// `liveness_score` 0–100. Blink mode: 50 once the face held still, 75 with the eyes seen
    /// closed, 100 with the blink. Challenge mode: 40 once still, + 40 shared by the moves done,
    /// + 20 for the blink. A fired presentation-attack cue caps it at 20 (the spoof error says so).
    public var score: Int {
        guard let challenge else { return blink.score }
        guard blink.phase != .keepStill else { return 0 }
        return 40 + Int((40 * challenge.progress).rounded()) + (blink.phase == .done ? 20 : 0)
    }

    /// What the person is asked to do now (SPEC §5 liveness_action, plus the challenge moves).
    public var action: LivenessAction? {
        guard let challenge, blink.phase != .keepStill else { return blink.action }
        if let move = challenge.action { return LivenessAction(move) }
        return challenge.state == .passed && blink.phase != .done ? .blink : nil
    }

    /// A key that changes with every phase and step (progress events go out at each change).
    public var phaseKey: String { "\(blink.phase)\(action?.rawValue ?? "")" }
    public var phase: BlinkLiveness.Phase { blink.phase }
    public var measuredFPS: Double? { blink.measuredFPS }
    public var blinkScore: Int { blink.score }
    public var challengeState: ChallengeLiveness.State? { challenge?.state }
}
