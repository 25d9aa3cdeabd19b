import BiometricVocabulary

/// A face session (enrol, verify, identify) as a state machine: the runner analyses each frame
/// and hands the observation over; the session answers what comes next. It reads no clock and
/// touches no camera, so every branch is testable with synthetic observations
/// (libfprint's fpi-ssm; NIO's state/action handlers).
public protocol FaceSession: Sendable {
    /// What the runner gets for a template the session asked for (verify: the template itself;
    /// identify: the gallery's ranking of it).
    associatedtype Judgement: Sendable
    associatedtype Outcome: Sendable

    /// The head pose the tracker should prefer now (enrolment walks through several).
    var poseTarget: FaceQuality.PoseTarget { get }
    /// Whether frames need the replay-cue measurements (liveness sessions).
    var measuresBorders: Bool { get }
    /// Whether frames need the frame noise and the passive detector (passive liveness sessions).
    var measuresPassive: Bool { get }
    /// How many views an embedding averages (enrolment: jittered).
    var embeddingViews: EmbeddingViews { get }
    /// Which of the second network's embeddings the template needs (none: dlib only, v1).
    var secondEmbedding: SecondEmbedding { get }
    /// The session's own time limit in ms (countdown included); the runner adds a margin for a hung analysis.
    var timeLimitMs: Int { get }
    /// Which face to use when several are found; `stillImages`: the camera plays still images
    /// (a replay of a folder of photos).
    func subjectRule(stillImages: Bool) -> FaceSubjectRule

    /// One analysed frame, stamped at `ns` (monotonic nanoseconds at capture).
    mutating func observe(_ observation: FaceObservation, at ns: UInt64) -> FaceStep<Outcome>
    /// The judgement of the template asked for by the last `.needTemplate`.
    mutating func judged(_ judgement: Judgement) -> FaceStep<Outcome>
    /// Whether the session has run out of time at `now` (the runner asks after each `.progress`).
    func expired(now: UInt64) -> FaceFailure?
}

extension FaceSession {
    public func subjectRule(stillImages: Bool) -> FaceSubjectRule { .dominantOnly }
    public var measuresPassive: Bool { false }
    public var secondEmbedding: SecondEmbedding { .none }
}

/// face.verify and face.identify: one tracked, frontal face judged for an attempt. What the
/// runner must compute for each frame follows from the caller's settings, the same for both.
public protocol FaceMatchingSession: FaceSession {
    /// The settings the session runs with (SPEC defaults applied by the caller).
    var settings: FaceAuthenticationSettings { get }
    /// Whether frames carry the second network's chip and the attempt is fused (v2 templates).
    var fused: Bool { get }
}

extension FaceMatchingSession {
    public var poseTarget: FaceQuality.PoseTarget { .front }
    public var measuresBorders: Bool { settings.liveness }
    public var measuresPassive: Bool { settings.liveness && settings.livenessMode.isPassive }
    public var embeddingViews: EmbeddingViews { .mirrored }
    public var secondEmbedding: SecondEmbedding { fused ? .chip : .none }
    public var timeLimitMs: Int { settings.timeoutMs }
}

/// What a face session asks for after a frame.
public enum FaceStep<Outcome: Sendable>: Sendable {
    /// Keep going; show this.
    case progress(FaceProgress)
    /// Compute this frame's template and hand its judgement to `judged(_:)`.
    case needTemplate
    /// Done; this frame's progress is the last one shown.
    case decided(Outcome, FaceProgress)
    case failed(FaceFailure)
}

/// What one frame showed the person (SPEC §5 face.frame) and when it is worth sending again.
public struct FaceProgress: Sendable {
    public var observation: FaceObservation
    public var livenessAction: LivenessAction?
    public var livenessScore = 0
    public var countdown: Int?
    /// Set when this frame went to the matcher.
    public var extraction: Extraction?
    public var captured = 0
    public var needed = 0
    /// Events are rate-limited, but a change of this key (a new phase or step) always goes out.
    public var throttleKey: String
}

/// Why a face session failed, with what the person (or the caller) needs to know about it.
/// The daemon maps each case to one SPEC §6 error in one place.
public enum FaceFailure: Error, Sendable, Equatable {
    /// A presentation-attack cue fired; `livenessScore` is the score reached before it.
    case spoof(SpoofCue, livenessScore: Int)
    /// The face held still but did not blink within the blink timeout.
    case noBlink(timeoutMs: Int, livenessScore: Int, cameraFPS: Double?)
    /// Faces were seen, but none good enough: the feedback of the last frame.
    case lowQuality(threshold: Int, feedback: [Feedback], enrolling: Bool)
    /// No decision within the session's time.
    case timeout(timeoutMs: Int, sawFace: Bool)
    /// Enrolment ran out of time at `pose`, with `got` of `needed` frames.
    case enrolmentIncomplete(timeoutMs: Int, pose: FaceQuality.PoseTarget, got: Int, needed: Int, feedback: [Feedback])
}

/// The presentation-attack cue that ended a session.
public enum SpoofCue: Sendable, Equatable {
    /// The head moves asked for were not made (challenge liveness).
    case challenge(reason: String, stepsDone: Int)
    /// The face's fine detail is gone: re-captured from a screen.
    case recapture(highFrequencyShare: Double)
    /// The face sits inside straight borders: a screen or a print.
    case border(framedFraction: Double)
    /// The passive detector judged the face a print or a screen (median real probability).
    case detector(realProbability: Double)
    /// Consecutive frames were the same picture: a still image, not a live sensor.
    case stillFrames(medianDifference: Double)
    /// The camera is a virtual capture device (no sensor behind it) and
    /// `refuse_virtual_cameras` refuses it before capture (`VirtualCameraRule`, in Auth).
    case virtualCamera(driver: String)
}
