import BiometricVocabulary

/// Settings of a verify or identify session (the caller applies SPEC defaults).
public struct FaceAuthenticationSettings: Sendable {
    /// Liveness in `livenessMode` (and the presentation-attack cues); false: image mode.
    public var liveness: Bool
    public var matchingThreshold: Double
    public var qualityThreshold: Int
    public var livenessThreshold: Int
    public var blinkTimeoutMs: Int
    public var timeoutMs: Int
    /// How an attempt decides: on the first `attempt.frames` judged (good) frames of one tracked
    /// face, fused into one comparison. Image mode decides as soon as they are in; liveness mode
    /// when they are in and the face is live. No other frame is judged.
    public var attempt = FaceAttemptRule.standard
    /// blink, challenge (with `challenge`), passive or passive+blink (`FaceLivenessCheck`).
    public var livenessMode = LivenessMode.blink
    /// Challenge-response liveness: the moves to ask for (nil: not challenge mode).
    public var challenge: [ChallengeLiveness.Action]?
    public var challengeStepTimeoutMs = 5000
    /// A face already in view when the attempt began does not count (a lock screen whose face
    /// service starts when the screen locks, issue 36): no frame is judged until the camera has
    /// seen nobody for `FaceArrival.absenceMs` over `FaceArrival.absenceFrames` frames; then the
    /// face that arrives is judged as usual.
    public var requireArrival = false

    public init(liveness: Bool, matchingThreshold: Double, qualityThreshold: Int, livenessThreshold: Int, blinkTimeoutMs: Int,
                timeoutMs: Int, livenessMode: LivenessMode = .blink, challenge: [ChallengeLiveness.Action]? = nil,
                challengeStepTimeoutMs: Int = 5000)
    {
        self.livenessMode = livenessMode
        self.liveness = liveness
        self.matchingThreshold = matchingThreshold
        self.qualityThreshold = qualityThreshold
        self.livenessThreshold = livenessThreshold
        self.blinkTimeoutMs = blinkTimeoutMs
        self.timeoutMs = timeoutMs
        self.challenge = challenge
        self.challengeStepTimeoutMs = challengeStepTimeoutMs
    }
}

/// What "a face that arrives" and "a camera that cannot see" mean, in frames and time.
public enum FaceArrival {
    /// Nobody in view for this long (and `absenceFrames` frames) before a face counts as new.
    public static let absenceMs: UInt64 = 1000
    public static let absenceFrames = 2
    /// Frames whose mean grey level is below this (0–255) and that show no face are dark: a
    /// covered lens, a closed lid, an IR emitter that is off (`authctl doctor`'s limit).
    public static let darkBrightness = 25.0
    /// Only dark frames, and no face, for this long and this many frames from the start: the
    /// camera cannot see anybody, and the attempt ends at once instead of at its time-out.
    public static let darkMs: UInt64 = 1500
    public static let darkFrames = 3
}

/// How a verify or identify capture ended.
public struct FaceAuthenticationOutcome: Sendable, Equatable {
    /// The attempt's SPEC §4 score: its judged frames fused into one comparison
    /// (`FaceAttemptRule`), calibrated per attempt. 0 until decided.
    public var bestScore = 0.0
    public var matched = false
    /// live or not_checked: a spoof ends the session with `FaceFailure.spoof`.
    public var liveness = FaceLiveness.notChecked
    public var livenessScore = 0
    public var goodFrames = 0
    /// The most faces seen in one judged frame (more than one only in image mode, which takes the
    /// subject of the scene).
    public var facesSeen = 0
}

/// The part verify and identify share: liveness (keep-still, blink, challenge moves, replay and
/// re-capture cues), the quality gate, and when to decide. What a template scores is the
/// wrapper's business: it counts each judged frame with `judgedFrame()` and, once
/// `attemptComplete`, settles the attempt's one comparison with `settle(score:matched:)`.
struct FaceAuthentication: Sendable {
    let settings: FaceAuthenticationSettings
    let deadlineNs: UInt64
    private var liveness: FaceLivenessCheck
    private var replayCue: ReplayCue
    private var recaptureCue = RecaptureCue()
    private var sawFace = false
    private(set) var outcome = FaceAuthenticationOutcome()
    /// This frame, between `observe` and `conclude`.
    private var frame: (observation: FaceObservation, ns: UInt64, live: Bool)?
    /// The last frame's feedback (reported if the session ends without a good frame).
    private var lastFeedback: [Feedback] = []
    /// `requireArrival`: whether the face in view may be judged (nobody was seen first), and
    /// the absence seen so far.
    private var arrived: Bool
    private var absentSince: UInt64?
    private var absentFrames = 0
    /// Dark frames without a face since the start (nil once anything else was seen).
    private var darkSince: UInt64?
    private var darkFrames = 0
    private var onlyDark = true

    init(_ settings: FaceAuthenticationSettings, startedAt: UInt64) {
        self.settings = settings
        deadlineNs = startedAt + UInt64(max(0, settings.timeoutMs)) * 1_000_000
        replayCue = ReplayCue()
        arrived = !settings.requireArrival
        liveness = FaceLivenessCheck(livenessThreshold: settings.livenessThreshold, mode: settings.livenessMode,
                                     challenge: settings.challenge, stepTimeoutMs: settings.challengeStepTimeoutMs)
    }

    /// The liveness part of a frame. Returns a failure, or whether this frame's template is
    /// wanted; `restarted` is set when another face took over (the wrapper forgets its matches).
    mutating func observe(_ observation: FaceObservation, at now: UInt64, restarted: inout Bool) -> Result<Bool, FaceFailure> {
        let s = settings
        lastFeedback = observation.feedback
        // A camera that cannot see anybody (only dark frames from the start): said at once.
        if onlyDark, observation.box == nil, let b = observation.frameBrightness, b < FaceArrival.darkBrightness {
            darkSince = darkSince ?? now
            darkFrames += 1
            if darkFrames >= FaceArrival.darkFrames, now - darkSince! >= FaceArrival.darkMs * 1_000_000 {
                return .failure(.lowQuality(threshold: s.qualityThreshold, feedback: [.tooDark], enrolling: false))
            }
        } else {
            onlyDark = false
        }
        // A face must arrive: until nobody has been in view for a while, no frame counts.
        if !arrived {
            if observation.box == nil {
                absentSince = absentSince ?? now
                absentFrames += 1
                arrived = absentFrames >= FaceArrival.absenceFrames && now - absentSince! >= FaceArrival.absenceMs * 1_000_000
            } else {
                absentSince = nil
                absentFrames = 0
            }
            frame = (observation, now, false)
            return .success(false)
        }
        if observation.box != nil { sawFace = true }
        if observation.trackRestarted {
            // Another face: keep-still, blink and the attempt's frames must all come from one
            // tracked face, so they start again (image mode: the frames).
            if s.liveness {
                liveness.reset()
                replayCue = ReplayCue()
                recaptureCue = RecaptureCue()
            }
            outcome = FaceAuthenticationOutcome()
            restarted = true
        }
        var live = !s.liveness
        if s.liveness {
            // The cues first: in passive modes their levels are part of the one passive score.
            if let features = observation.recapture, let box = observation.box {
                recaptureCue.observe(features, faceWidth: box.width)
            }
            if let mask = observation.borderMask { replayCue.observe(borderMask: mask) }
            var evidence = FaceLivenessCheck.PassiveEvidence(observation)
            evidence.framedFraction = replayCue.judgedFraction
            evidence.highFrequencyShare = recaptureCue.level
            switch liveness.observe(landmarks: observation.landmarks, pose: observation.pose, at: now, passive: evidence) {
            case .failedChallenge(let reason, let stepsDone):
                return .failure(.spoof(.challenge(reason: reason, stepsDone: stepsDone), livenessScore: liveness.score))
            case .failedPassive(.detector(let p), let score):
                return .failure(.spoof(.detector(realProbability: (p * 1000).rounded() / 1000), livenessScore: score))
            case .failedPassive(.stillFrames(let d), let score):
                return .failure(.spoof(.stillFrames(medianDifference: (d * 1000).rounded() / 1000), livenessScore: score))
            case .failedPassive(.border(let f), let score):
                return .failure(.spoof(.border(framedFraction: (f * 100).rounded() / 100), livenessScore: score))
            case .failedPassive(.recapture(let h), let score):
                return .failure(.spoof(.recapture(highFrequencyShare: (h * 1e5).rounded() / 1e5), livenessScore: score))
            case .live: live = true
            case .pending: live = false
            }
            outcome.livenessScore = liveness.score
            // Blink and challenge: the cues refuse at their own thresholds (passive modes: above,
            // through the passive score and liveness_threshold).
            if !s.livenessMode.isPassive, recaptureCue.isSpoof {
                let share = ((recaptureCue.level ?? 0) * 1e5).rounded() / 1e5
                return .failure(.spoof(.recapture(highFrequencyShare: share), livenessScore: outcome.livenessScore))
            }
            // A face big enough for the re-capture cue is judged by it before it may pass. Passive
            // mode does not wait the cue's 1.5 s: the detector judges that case (a screen held so
            // close that no border shows) on its first frames; the cue still refuses if it fires.
            if live, s.livenessMode != .passive, recaptureCue.level == nil,
               (observation.box?.width ?? 0) >= RecaptureCue.minimumFaceWidth { live = false }
            // Passive: the border cue has seen its frames before a face may pass, or, for the early
            // pass of a clearly live face (PassiveLiveness.earlyFrames), none of its first frames
            // sat inside borders.
            if live, s.livenessMode.isPassive, replayCue.framesSeen < replayCue.minimumFrames {
                live = liveness.passedEarly && replayCue.noneFramed(within: PassiveLiveness.earlyFrames)
            }
            if !s.livenessMode.isPassive, replayCue.isSpoof {
                let fraction = (replayCue.framedFraction * 100).rounded() / 100
                return .failure(.spoof(.border(framedFraction: fraction), livenessScore: outcome.livenessScore))
            }
        }
        frame = (observation, now, live)
        let good = observation.isUsable && observation.qualityScore >= s.qualityThreshold
        if good && !attemptComplete { outcome.facesSeen = max(outcome.facesSeen, observation.faceCount) }
        return .success(good && !attemptComplete)
    }

    /// A frame as both matching sessions take it: `observe`, then the frame's end when no
    /// template is wanted (the session judges the template and concludes it itself).
    mutating func step(_ observation: FaceObservation, at now: UInt64, restarted: inout Bool) -> FaceStep<FaceAuthenticationOutcome> {
        switch observe(observation, at: now, restarted: &restarted) {
        case .failure(let failure): return .failed(failure)
        case .success(true): return .needTemplate
        case .success(false): return conclude(extraction: nil)
        }
    }

    /// The attempt has all the frames it decides on.
    var attemptComplete: Bool { outcome.goodFrames >= settings.attempt.frames }

    /// This frame was judged (its template scored by the wrapper).
    mutating func judgedFrame() {
        outcome.goodFrames += 1
    }

    /// The attempt's one comparison, once complete.
    mutating func settle(score: Double, matched: Bool) {
        outcome.bestScore = score
        outcome.matched = matched
    }

    /// The end of a frame: decided, failed (no blink in time), or the progress to show.
    mutating func conclude(extraction: Extraction?) -> FaceStep<FaceAuthenticationOutcome> {
        guard let (observation, now, live) = frame else { return .failed(.timeout(timeoutMs: settings.timeoutMs, sawFace: sawFace)) }
        frame = nil
        let action = settings.liveness ? liveness.action : nil
        let progress = FaceProgress(observation: observation, livenessAction: action, livenessScore: outcome.livenessScore,
                                    extraction: extraction, captured: outcome.goodFrames, needed: settings.attempt.frames,
                                    throttleKey: liveness.phaseKey)
        if settings.liveness {
            if live && attemptComplete {
                var decided = outcome
                decided.liveness = .live
                return .decided(decided, progress)
            }
            if liveness.blinkOverdue(at: now, timeoutMs: settings.blinkTimeoutMs) {
                return .failed(.noBlink(timeoutMs: settings.blinkTimeoutMs, livenessScore: liveness.blinkScore,
                                        cameraFPS: liveness.measuredFPS))
            }
        } else if attemptComplete {
            return .decided(outcome, progress)
        }
        if now >= deadlineNs, let failure = expired(now: now) { return .failed(failure) }
        return .progress(progress)
    }

    func expired(now: UInt64) -> FaceFailure? {
        guard now >= deadlineNs else { return nil }
        if outcome.goodFrames == 0 && sawFace {
            return .lowQuality(threshold: settings.qualityThreshold, feedback: lastFeedback, enrolling: false)
        }
        return .timeout(timeoutMs: settings.timeoutMs, sawFace: sawFace)
    }
}
