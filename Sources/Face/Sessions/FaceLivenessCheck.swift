import BiometricVocabulary

/// The liveness of one tracked face, frame by frame, in each `liveness_mode`: keep-still then the
/// blink; with a challenge the head moves asked for; passive, the presentation-attack detector
/// and the frame noise (`PassiveLiveness`); passive+blink, both. Verify and identify run it
/// inside their sessions (with the border and re-capture cues beside it); the face bench and the
/// clip tests run it on real clips.
public struct FaceLivenessCheck: Sendable {
    public enum Verdict: Sendable, Equatable {
        case pending
        case live
        /// The moves asked for were not made (or the wrong one was).
        case failedChallenge(reason: String, stepsDone: Int)
        /// Passive liveness refused the face; `score` is its liveness_score.
        case failedPassive(PassiveSpoof, score: Int)
    }

    /// What passive liveness sees of one frame (measured by the pipeline in liveness sessions).
    public struct PassiveEvidence: Sendable, Equatable {
        public var reading: AntispoofReading?
        public var frameDifference: Double?
        /// A colour frame: the detector was trained on colour, so a grey (IR) camera's frames are
        /// not given to it.
        public var colour: Bool
        /// One face to work on (the detector's readings count only then).
        public var usable: Bool
        /// The border cue's framed fraction once it has judged (`ReplayCue.judgedFraction`).
        public var framedFraction: Double?
        /// The re-capture cue's level once it has judged (`RecaptureCue.level`).
        public var highFrequencyShare: Double?

        public init(reading: AntispoofReading?, frameDifference: Double?, colour: Bool, usable: Bool,
                    framedFraction: Double? = nil, highFrequencyShare: Double? = nil) {
            self.reading = reading
            self.frameDifference = frameDifference
            self.colour = colour
            self.usable = usable
            self.framedFraction = framedFraction
            self.highFrequencyShare = highFrequencyShare
        }

        public init(_ observation: FaceObservation) {
            self.init(reading: observation.antispoof, frameDifference: observation.frameDifference,
                      colour: observation.colour, usable: observation.isUsable)
        }
    }

    public let mode: LivenessMode
    private let livenessThreshold: Int
    private let sequence: [ChallengeLiveness.Action]?
    private let stepTimeoutMs: Int
    private(set) var blink: BlinkLiveness
    private(set) var challenge: ChallengeLiveness?
    private(set) var passive: PassiveLiveness?
    /// The passive verdict as of the last frame (a live verdict can still turn into a refusal
    /// when the border or re-capture cue judges later).
    public private(set) var passiveVerdict = PassiveVerdict.pending
    /// A grey frame was seen in a passive mode: the detector cannot judge it, so the blink is
    /// asked for instead (Docs/face.md "Passive liveness", grey cameras).
    public private(set) var greyCamera = false
    /// When the blink (with a challenge: the moves) was first asked for.
    public private(set) var blinkAskedAt: UInt64?

    /// `mode` .challenge needs `challenge` (the moves); without it the mode is blink.
    public init(livenessThreshold: Int, mode: LivenessMode = .blink, challenge: [ChallengeLiveness.Action]? = nil,
                stepTimeoutMs: Int = 5000) {
        self.livenessThreshold = livenessThreshold
        self.mode = challenge != nil ? .challenge : mode == .challenge ? .blink : mode
        sequence = challenge
        self.stepTimeoutMs = stepTimeoutMs
        blink = BlinkLiveness(livenessThreshold: livenessThreshold)
        self.challenge = challenge.map { ChallengeLiveness(sequence: $0, stepTimeoutMs: stepTimeoutMs) }
        passive = self.mode.isPassive ? PassiveLiveness(livenessThreshold: livenessThreshold) : nil
    }

    /// Starts again (another face took over).
    public mutating func reset() {
        self = FaceLivenessCheck(livenessThreshold: livenessThreshold, mode: mode, challenge: sequence, stepTimeoutMs: stepTimeoutMs)
    }

    /// Whether this session waits for a blink: blink and challenge modes, passive+blink, and
    /// passive mode on a grey camera.
    public var needsBlink: Bool { passive == nil || mode == .passiveBlink || greyCamera }

    public mutating func observe(landmarks: Landmarks?, pose: HeadPose?, at now: UInt64,
                                 passive evidence: PassiveEvidence? = nil) -> Verdict {
        let blinked = blink.observe(landmarks, timestampNs: now) == .live
        if var p = passive {
            if let evidence, landmarks != nil {
                if !evidence.colour { greyCamera = true }
                p.observe(reading: evidence.usable && evidence.colour ? evidence.reading : nil, frameDifference: evidence.frameDifference)
            }
            if let evidence { p.observe(framedFraction: evidence.framedFraction, highFrequencyShare: evidence.highFrequencyShare) }
            passive = p
            passiveVerdict = p.verdict
            if case .spoof(let why, let score) = passiveVerdict { return .failedPassive(why, score: score) }
            if needsBlink, blink.phase != .keepStill, blinkAskedAt == nil { blinkAskedAt = now }
            // Grey: the detector gives no verdict, but a still picture must still be refused.
            let passed = greyCamera ? p.noiseCleared : passiveVerdict != .pending
            return passed && (!needsBlink || blinked) ? .live : .pending
        }
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
        guard needsBlink, let start = blinkAskedAt, blink.phase != .done, now > start else { return false }
        return now - start > UInt64(timeoutMs) * 1_000_000
    }

    /// `liveness_score` 0–100. Blink mode: 50 once the face held still, 75 with the eyes seen
    /// closed, 100 with the blink. Challenge mode: 40 once still, + 40 shared by the moves done,
    /// + 20 for the blink. Passive: the lowest of the judged cues (`PassiveScore`: detector,
    /// frame noise, border, re-capture; each 50 where it refuses); passive+blink: the lower of that
    /// and the blink's; a grey camera in passive mode: the lower of the cues and the blink's.
    /// A fired presentation-attack cue caps it at 20 (the spoof error says so).
    public var score: Int {
        if passive != nil {
            let passiveScore: Int? = switch passiveVerdict {
            case .pending: nil
            case .live(_, let s), .spoof(_, let s): s
            }
            if greyCamera { return min(blink.score, passive?.score.lowest.map { Int($0.score.rounded()) } ?? 100) }
            guard let passiveScore else { return 0 }
            return mode == .passiveBlink ? min(passiveScore, blink.score) : passiveScore
        }
        guard let challenge else { return blink.score }
        guard blink.phase != .keepStill else { return 0 }
        return 40 + Int((40 * challenge.progress).rounded()) + (blink.phase == .done ? 20 : 0)
    }

    /// What the person is asked to do now (SPEC §5 liveness_action, plus the challenge moves);
    /// nothing in passive mode.
    public var action: LivenessAction? {
        if passive != nil { return needsBlink ? blink.action : nil }
        guard let challenge, blink.phase != .keepStill else { return blink.action }
        if let move = challenge.action { return LivenessAction(move) }
        return challenge.state == .passed && blink.phase != .done ? .blink : nil
    }

    /// A key that changes with every phase and step (progress events go out at each change).
    public var phaseKey: String { "\(blink.phase)\(action?.rawValue ?? "")\(passiveVerdict == .pending ? "" : "p")" }
    public var phase: BlinkLiveness.Phase { blink.phase }
    /// Whether the passive verdict is live by the early pass (`PassiveLiveness.early`).
    public var passedEarly: Bool { passive?.passedEarly ?? false }
    public var measuredFPS: Double? { blink.measuredFPS }
    public var blinkScore: Int { blink.score }
    public var challengeState: ChallengeLiveness.State? { challenge?.state }
}
