import BiometricVocabulary

/// face.enroll: a countdown with guidance, then `framesPerPose` good frames at each pose target
/// (simple: front; full: front, left, right, up, down), fused into one template per pose.
public struct FaceEnrolment: FaceSession {
    public typealias Judgement = FaceTemplate

    public struct Outcome: Sendable, Equatable {
        /// One template per pose: the quality-weighted fusion of its frames.
        public var templates: [(pose: FaceQuality.PoseTarget, template: FaceTemplate, frames: Int)]
        public var framesUsed: Int
        /// The most faces seen in one frame used (more than one only from still images).
        public var facesSeen = 1

        public static func == (a: Outcome, b: Outcome) -> Bool {
            a.framesUsed == b.framesUsed && a.templates.count == b.templates.count
                && zip(a.templates, b.templates).allSatisfy { $0.pose == $1.pose && $0.template == $1.template && $0.frames == $1.frames }
        }
    }

    public let targets: [FaceQuality.PoseTarget]
    public let framesPerPose: Int
    public let qualityThreshold: Int
    public let countdownS: Int
    public let timeoutMs: Int
    private let countdownEndNs: UInt64
    private var captured: [(FaceQuality.PoseTarget, FaceTemplate)] = []
    private var targetIndex = 0
    private var got = 0
    private var lowQuality = 0
    private var lastFeedback: [Feedback] = []
    /// The frame waiting for its template.
    private var pending: FaceObservation?
    private var facesSeen = 1

    public init(targets: [FaceQuality.PoseTarget], framesPerPose: Int, qualityThreshold: Int, countdownS: Int, timeoutMs: Int,
                startedAt: UInt64)
    {
        self.targets = targets.isEmpty ? [.front] : targets
        self.framesPerPose = max(1, framesPerPose)
        self.qualityThreshold = qualityThreshold
        self.countdownS = max(0, countdownS)
        self.timeoutMs = timeoutMs
        countdownEndNs = startedAt + UInt64(self.countdownS) * 1_000_000_000
    }

    public var poseTarget: FaceQuality.PoseTarget { targets[min(targetIndex, targets.count - 1)] }
    public var measuresBorders: Bool { false }
    public var embeddingViews: EmbeddingViews { .jittered }
    /// Stored templates carry the second network's chip + mirror when it is loaded (v2); the
    /// pipeline leaves it out without the model (v1).
    public var secondEmbedding: SecondEmbedding { .chipAndMirror }
    public var timeLimitMs: Int { timeoutMs + countdownS * 1000 }
    /// From a replay camera of still images the subject is chosen (`FaceSubjectRule.stillImage`);
    /// a live camera's ambiguous scene is refused (enrolling a bystander is worse than a retry).
    public func subjectRule(stillImages: Bool) -> FaceSubjectRule { stillImages ? .stillImage : .dominantOnly }
    private var needed: Int { framesPerPose * targets.count }

    public mutating func observe(_ observation: FaceObservation, at ns: UInt64) -> FaceStep<Outcome> {
        if ns < countdownEndNs {
            // Countdown: the person gets ready while guidance already shows.
            let left = Int((Double(countdownEndNs - ns) / 1e9).rounded(.up))
            return .progress(FaceProgress(observation: observation, countdown: left, captured: 0, needed: needed,
                                          throttleKey: "countdown\(left)"))
        }
        lastFeedback = observation.feedback
        var extraction: Extraction?
        if let pose = observation.pose, observation.isUsable, poseTarget.accepts(pose) {
            if observation.qualityScore >= qualityThreshold {
                pending = observation
                return .needTemplate
            }
            lowQuality += 1
            extraction = .failed
        }
        return step(observation, extraction: extraction)
    }

    public mutating func judged(_ template: FaceTemplate) -> FaceStep<Outcome> {
        guard let observation = pending else { return .failed(.timeout(timeoutMs: timeoutMs, sawFace: false)) }
        pending = nil
        facesSeen = max(facesSeen, observation.faceCount)
        captured.append((poseTarget, template))
        got += 1
        return step(observation, extraction: .success)
    }

    private mutating func step(_ observation: FaceObservation, extraction: Extraction?) -> FaceStep<Outcome> {
        let progress = FaceProgress(observation: observation, extraction: extraction, captured: captured.count, needed: needed,
                                    throttleKey: "\(poseTarget)\(got)\(extraction?.rawValue ?? "")")
        if got >= framesPerPose {
            targetIndex += 1
            got = 0
            if targetIndex >= targets.count { return .decided(outcome, progress) }
        }
        return .progress(progress)
    }

    private var outcome: Outcome {
        var templates: [(pose: FaceQuality.PoseTarget, template: FaceTemplate, frames: Int)] = []
        for target in targets {
            let frames = captured.filter { $0.0 == target }.map(\.1)
            if let fused = FaceTemplate.fused(frames) { templates.append((target, fused, frames.count)) }
        }
        return Outcome(templates: templates, framesUsed: captured.count, facesSeen: facesSeen)
    }

    public func expired(now: UInt64) -> FaceFailure? {
        guard now >= countdownEndNs + UInt64(max(0, timeoutMs)) * 1_000_000 else { return nil }
        if captured.isEmpty && lowQuality > 0 {
            return .lowQuality(threshold: qualityThreshold, feedback: lastFeedback, enrolling: true)
        }
        return .enrolmentIncomplete(timeoutMs: timeoutMs, pose: poseTarget, got: got, needed: framesPerPose, feedback: lastFeedback)
    }
}
