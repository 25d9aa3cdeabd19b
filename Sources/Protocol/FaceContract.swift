import BiometricVocabulary

/// The face methods' contract (SPEC §4): params with their ranges and defaults, and results.

extension Method {
    public static let faceEnroll = "face.enroll"
    public static let faceVerify = "face.verify"
    public static let faceIdentify = "face.identify"
    public static let faceList = "face.list"
    public static let faceRemove = "face.remove"
    public static let faceAdd = "face.add"
    public static let faceExport = "face.export"
    public static let faceSet = "face.set"
    public static let faceReset = "face.reset"
    public static let faceExtract = "face.extract"
    public static let faceMatch = "face.match"
}

public struct FaceEnrollParams: RPCParams, Encodable {
    public static let fields = wireNames(CodingKeys.self)
    public var user: String
    public var camera: String?
    /// simple | full (front, left, right, up, down) [simple]
    public var mode: FaceEnrolMode?
    public var frames: Int?
    public static let frames = Setting(CodingKeys.frames, 1...10, default: 4)
    public var countdownS: Int?
    public static let countdownS = Setting(CodingKeys.countdownS, 0...30, default: 5)
    public var qualityThreshold: Int?
    public static let qualityThreshold = FaceCaptureOptions.qualityThreshold
    public var timeoutMs: Int?
    public static let timeoutMs = FaceCaptureOptions.timeoutMs
    /// Progress events carry a downscaled JPEG of the frame while on (issue 25).
    public var preview: PreviewRequest?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case user, camera, mode, frames, preview
        case countdownS = "countdown_s"
        case qualityThreshold = "quality_threshold"
        case timeoutMs = "timeout_ms"
    }

    public init(user: String, camera: String? = nil, mode: FaceEnrolMode? = nil, frames: Int? = nil, countdownS: Int? = nil,
                qualityThreshold: Int? = nil, timeoutMs: Int? = nil, preview: PreviewRequest? = nil) {
        self.user = user
        self.camera = camera
        self.mode = mode
        self.frames = frames
        self.countdownS = countdownS
        self.qualityThreshold = qualityThreshold
        self.timeoutMs = timeoutMs
        self.preview = preview
    }

    public func validate() throws(RPCError) {
        try UserName.validate(user)
        try Self.frames.check(frames)
        try Self.countdownS.check(countdownS)
        try Self.qualityThreshold.check(qualityThreshold)
        try Self.timeoutMs.check(timeoutMs)
        try preview?.validate()
    }
}

public struct FaceEnrollResult: Codable, Sendable {
    public var templates: [String]
    public var framesUsed: Int
    /// The most faces seen in one frame used (set when more than one: the subject was chosen,
    /// from a replay camera of still images; a live camera refuses an ambiguous scene).
    public var facesSeen: Int?
    enum CodingKeys: String, CodingKey {
        case templates
        case framesUsed = "frames_used"
        case facesSeen = "faces_seen"
    }
    public init(templates: [String], framesUsed: Int) {
        self.templates = templates
        self.framesUsed = framesUsed
    }
}

/// The capture and liveness params that face.verify and face.identify share. They travel flat
/// beside the method's own fields (as SPEC §4 lists them); each range and default is declared once
/// here, beside its field.
public struct FaceCaptureOptions: Codable, Sendable, Equatable {
    static let fields = wireNames(CodingKeys.self)
    /// image | liveness [liveness]
    public var mode: FaceCaptureMode?
    public var matchingThreshold: Double?
    public static let matchingThreshold = Setting<Double>(CodingKeys.matchingThreshold, 0...72, default: 48)
    public var qualityThreshold: Int?
    public static let qualityThreshold = Setting(CodingKeys.qualityThreshold, 0...100, default: 48)
    public var livenessThreshold: Int?
    public static let livenessThreshold = Setting(CodingKeys.livenessThreshold, 0...100, default: 50)
    public var blinkTimeoutMs: Int?
    public static let blinkTimeoutMs = Setting(CodingKeys.blinkTimeoutMs, 0...30000, default: 5000)
    public var timeoutMs: Int?
    public static let timeoutMs = Setting(CodingKeys.timeoutMs, 1000...300_000, default: 30000)
    /// blink: keep still, then blink. challenge: keep still, then a random sequence of head moves
    /// (turn_left, turn_right, look_up, nod), and a blink at some point. passive: the
    /// presentation-attack detector and the replay cues on the first frames, nothing asked.
    /// passive+blink: both. Left out: the daemon's `face_liveness_mode` [passive].
    public var livenessMode: LivenessMode?
    /// Moves in challenge mode.
    public var challengeSteps: Int?
    public static let challengeSteps = Setting(CodingKeys.challengeSteps, 1...4, default: 2)
    /// For each move.
    public var challengeStepTimeoutMs: Int?
    public static let challengeStepTimeoutMs = Setting(CodingKeys.challengeStepTimeoutMs, 1000...30000, default: 5000)
    /// Progress events carry a downscaled JPEG of the frame while on (issue 25).
    public var preview: PreviewRequest?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case mode, preview
        case matchingThreshold = "matching_threshold"
        case qualityThreshold = "quality_threshold"
        case livenessThreshold = "liveness_threshold"
        case blinkTimeoutMs = "blink_timeout_ms"
        case timeoutMs = "timeout_ms"
        case livenessMode = "liveness_mode"
        case challengeSteps = "challenge_steps"
        case challengeStepTimeoutMs = "challenge_step_timeout_ms"
    }

    public init(mode: FaceCaptureMode? = nil, matchingThreshold: Double? = nil, qualityThreshold: Int? = nil,
                livenessThreshold: Int? = nil, blinkTimeoutMs: Int? = nil, timeoutMs: Int? = nil, livenessMode: LivenessMode? = nil,
                challengeSteps: Int? = nil, challengeStepTimeoutMs: Int? = nil, preview: PreviewRequest? = nil) {
        self.preview = preview
        self.mode = mode
        self.matchingThreshold = matchingThreshold
        self.qualityThreshold = qualityThreshold
        self.livenessThreshold = livenessThreshold
        self.blinkTimeoutMs = blinkTimeoutMs
        self.timeoutMs = timeoutMs
        self.livenessMode = livenessMode
        self.challengeSteps = challengeSteps
        self.challengeStepTimeoutMs = challengeStepTimeoutMs
    }

    public func validate() throws(RPCError) {
        try Self.matchingThreshold.check(matchingThreshold)
        try Self.qualityThreshold.check(qualityThreshold)
        try Self.livenessThreshold.check(livenessThreshold)
        try Self.blinkTimeoutMs.check(blinkTimeoutMs)
        try Self.timeoutMs.check(timeoutMs)
        try Self.challengeSteps.check(challengeSteps)
        try Self.challengeStepTimeoutMs.check(challengeStepTimeoutMs)
        try preview?.validate()
    }
}

public struct FaceVerifyParams: RPCParams, Encodable {
    public static let fields = FaceCaptureOptions.fields.union(wireNames(CodingKeys.self))
    public var user: String
    public var camera: String?
    public var capture: FaceCaptureOptions

    enum CodingKeys: String, CodingKey, CaseIterable {
        case user, camera
    }

    public init(user: String, camera: String? = nil, capture: FaceCaptureOptions) {
        self.user = user
        self.camera = camera
        self.capture = capture
    }

    public init(user: String, camera: String? = nil, mode: FaceCaptureMode? = nil, matchingThreshold: Double? = nil,
                qualityThreshold: Int? = nil, livenessThreshold: Int? = nil, blinkTimeoutMs: Int? = nil, timeoutMs: Int? = nil,
                livenessMode: LivenessMode? = nil, challengeSteps: Int? = nil, challengeStepTimeoutMs: Int? = nil) {
        self.init(user: user, camera: camera, capture: FaceCaptureOptions(
            mode: mode, matchingThreshold: matchingThreshold, qualityThreshold: qualityThreshold, livenessThreshold: livenessThreshold,
            blinkTimeoutMs: blinkTimeoutMs, timeoutMs: timeoutMs, livenessMode: livenessMode, challengeSteps: challengeSteps,
            challengeStepTimeoutMs: challengeStepTimeoutMs))
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        user = try c.decode(String.self, forKey: .user)
        camera = try c.decodeIfPresent(String.self, forKey: .camera)
        capture = try FaceCaptureOptions(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(user, forKey: .user)
        try c.encodeIfPresent(camera, forKey: .camera)
        try capture.encode(to: encoder)
    }

    public func validate() throws(RPCError) {
        try UserName.validate(user)
        try capture.validate()
    }
}

public struct FaceVerifyResult: Codable, Sendable {
    public var match: Bool
    public var score: Double
    public var threshold: Double
    public var liveness: FaceLiveness
    public var livenessScore: Int
    public var spoofAttempt: Bool
    public var durationMs: Int
    /// How the attempt was scored: 2 = both face networks fused (v2 templates), 1 = dlib alone
    /// (v1 templates, or the second network not installed). Docs/face.md "Two networks, one score".
    public var templateVersion: Int?
    /// Set when the daemon could score both networks but the user has only version-1 templates:
    /// what to run to re-enrol (the old templates keep working meanwhile).
    public var reenrollHint: String?
    /// Whether this verification counts as a fresh authentication of the user on the connection
    /// (changes to their factors are then allowed for 5 minutes). A match proves that only on a
    /// trusted camera, with every setting at its floor, by a factor of the user's policy.
    public var authenticated: Bool?
    /// Image mode: the most faces seen in one judged frame (the subject, `FaceSubject`, was the
    /// dominant face or, among faces of similar size, the one nearest the centre). Nil in liveness
    /// mode, which refuses an ambiguous scene (`multiple_faces`).
    public var facesSeen: Int?

    enum CodingKeys: String, CodingKey {
        case match, score, threshold, liveness, authenticated
        case livenessScore = "liveness_score"
        case spoofAttempt = "spoof_attempt"
        case durationMs = "duration_ms"
        case templateVersion = "template_version"
        case reenrollHint = "reenroll_hint"
        case facesSeen = "faces_seen"
    }

    public init(match: Bool, score: Double, threshold: Double, liveness: FaceLiveness, livenessScore: Int, spoofAttempt: Bool,
                durationMs: Int) {
        self.match = match
        self.score = score
        self.threshold = threshold
        self.liveness = liveness
        self.livenessScore = livenessScore
        self.spoofAttempt = spoofAttempt
        self.durationMs = durationMs
    }
}

public struct FaceIdentifyParams: RPCParams, Encodable {
    public static let fields = FaceCaptureOptions.fields.union(wireNames(CodingKeys.self))
    public var camera: String?
    public var capture: FaceCaptureOptions
    /// Step-up when the best two users are within this many score points.
    public var margin: Double?
    public static let margin = Setting<Double>(CodingKeys.margin, 0...50, default: 5)

    enum CodingKeys: String, CodingKey, CaseIterable {
        case camera, margin
    }

    public init(camera: String? = nil, capture: FaceCaptureOptions = .init(), margin: Double? = nil) {
        self.camera = camera
        self.capture = capture
        self.margin = margin
    }

    public init(camera: String? = nil, mode: FaceCaptureMode? = nil, matchingThreshold: Double? = nil, qualityThreshold: Int? = nil,
                margin: Double? = nil, timeoutMs: Int? = nil, livenessMode: LivenessMode? = nil) {
        self.init(camera: camera, capture: FaceCaptureOptions(mode: mode, matchingThreshold: matchingThreshold,
                                                              qualityThreshold: qualityThreshold, timeoutMs: timeoutMs,
                                                              livenessMode: livenessMode), margin: margin)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        camera = try c.decodeIfPresent(String.self, forKey: .camera)
        margin = try c.decodeIfPresent(Double.self, forKey: .margin)
        capture = try FaceCaptureOptions(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(camera, forKey: .camera)
        try c.encodeIfPresent(margin, forKey: .margin)
        try capture.encode(to: encoder)
    }

    public func validate() throws(RPCError) {
        try capture.validate()
        try Self.margin.check(margin)
    }
}

public struct FaceIdentifyResult: Codable, Sendable {
    @Nullable public var user: String?
    public var score: Double
    public var candidates: [Candidate]
    public var stepUpRequired: Bool
    public var liveness: FaceLiveness
    public var durationMs: Int

    enum CodingKeys: String, CodingKey {
        case user, score, candidates, liveness
        case stepUpRequired = "step_up_required"
        case durationMs = "duration_ms"
    }

    public init(user: String?, score: Double, candidates: [Candidate], stepUpRequired: Bool, liveness: FaceLiveness, durationMs: Int) {
        self.user = user
        self.score = score
        self.candidates = candidates
        self.stepUpRequired = stepUpRequired
        self.liveness = liveness
        self.durationMs = durationMs
    }

    // Encode `user: null` explicitly: "nobody recognised" is an answer.
}

/// face.list and finger.list.
public struct TemplateListParams: RPCParams, Encodable {
    public static let fields = wireNames(CodingKeys.self)
    enum CodingKeys: String, CodingKey, CaseIterable { case user }
    /// Absent: every user's templates (admin).
    public var user: String?
    public init(user: String? = nil) { self.user = user }
    public func validate() throws(RPCError) { if let user { try UserName.validate(user) } }
}
public typealias FaceListParams = TemplateListParams

public struct FaceTemplateInfo: Codable, Sendable, Equatable {
    public var id: String
    public var user: String
    public var created: String
    public var quality: Int
    public var pose: String
    /// The template's format version: 1 = dlib alone, 2 = dlib + the second network (Docs/face.md).
    public var version: Int?
    public init(id: String, user: String, created: String, quality: Int, pose: String, version: Int? = nil) {
        self.id = id
        self.user = user
        self.created = created
        self.quality = quality
        self.pose = pose
        self.version = version
    }
}

public struct FaceListResult: Codable, Sendable {
    public var templates: [FaceTemplateInfo]
    public init(templates: [FaceTemplateInfo]) { self.templates = templates }
}

/// face.remove and finger.remove: one template, or all of the user's of that modality.
public struct TemplateRemoveParams: RPCParams, Encodable {
    public static let fields = wireNames(CodingKeys.self)
    public var user: String
    public var templateID: String?
    enum CodingKeys: String, CodingKey, CaseIterable {
        case user
        case templateID = "template_id"
    }
    public init(user: String, templateID: String? = nil) {
        self.user = user
        self.templateID = templateID
    }
    public func validate() throws(RPCError) { try UserName.validate(user) }
}
public typealias FaceRemoveParams = TemplateRemoveParams

public struct RemovedResult: Codable, Sendable {
    public var removed: Int
    public init(removed: Int) { self.removed = removed }
}

public struct FaceAddParams: RPCParams, Encodable {
    public static let fields = wireNames(CodingKeys.self)
    public var user: String
    /// base64 of a face template (face.export / face.extract).
    public var template: String
    /// The id to store it under (Incode addFace; e.g. the id it had where it was exported):
    /// 1–64 of A–Z a–z 0–9 . _ -, not used by another template. Absent: a new UUID.
    public var templateID: String?
    enum CodingKeys: String, CodingKey, CaseIterable {
        case user, template
        case templateID = "template_id"
    }
    public init(user: String, template: String, templateID: String? = nil) {
        self.user = user
        self.template = template
        self.templateID = templateID
    }
    public func validate() throws(RPCError) {
        try UserName.validate(user)
        if let id = templateID {
            guard (1...64).contains(id.utf8.count), id.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0)
                || (0x61...0x7A).contains($0) || $0 == 0x2E || $0 == 0x5F || $0 == 0x2D }) else {
                throw .invalidParams(field: "template_id", "'template_id' must be 1-64 of A-Z a-z 0-9 . _ -")
            }
        }
    }
}

public struct TemplateIDs: Codable, Sendable {
    public var templates: [String]
    public init(templates: [String]) { self.templates = templates }
}

public struct FaceExportResult: Codable, Sendable {
    public struct Item: Codable, Sendable, Equatable {
        public var id: String
        public var template: String
        public var quality: Int
        /// The template's format version (also byte 4 of the blob): 1 = dlib, 2 = dlib + second network.
        public var version: Int?
        public init(id: String, template: String, quality: Int, version: Int? = nil) {
            self.id = id
            self.template = template
            self.quality = quality
            self.version = version
        }
    }
    public var user: String
    /// SPEC §4: face.export answers `templates` (each can go back in through face.add or face.set).
    public var templates: [Item]
    public init(user: String, templates: [Item]) {
        self.user = user
        self.templates = templates
    }
}

public struct FaceSetParams: RPCParams, Encodable {
    public static let fields = wireNames(CodingKeys.self)
    enum CodingKeys: String, CodingKey, CaseIterable { case user, faces }
    public var user: String
    /// base64 templates; replaces all of the user's face templates ([] clears).
    public var faces: [String]
    public init(user: String, faces: [String]) {
        self.user = user
        self.faces = faces
    }
    public func validate() throws(RPCError) {
        try UserName.validate(user)
        guard faces.count <= 100 else { throw .invalidParams(field: "faces", "at most 100 templates per user") }
    }
}

public struct FaceExtractParams: RPCParams, Encodable {
    public static let fields = wireNames(CodingKeys.self)
    enum CodingKeys: String, CodingKey, CaseIterable { case image }
    /// base64 JPEG / PNG / PGM.
    public var image: String
    public init(image: String) { self.image = image }
}

public struct FaceExtractResult: Codable, Sendable {
    public var template: String
    public var box: PixelRect
    public var landmarks: [Double]
    public var yaw: Double
    public var pitch: Double
    public var roll: Double
    public var quality: Int
    public var feedback: [Feedback]
    /// Faces found in the image. With several, `subject` says which one the template is of.
    public var facesSeen: Int
    /// How the face was chosen: the only one, the dominant one (clearly the largest), or, among
    /// faces of similar size, the one nearest the image centre (`FaceSubject`).
    public var subject: FaceSubject
    enum CodingKeys: String, CodingKey {
        case template, box, landmarks, yaw, pitch, roll, quality, feedback, subject
        case facesSeen = "faces_seen"
    }
    public init(template: String, box: PixelRect, landmarks: [Double], yaw: Double, pitch: Double, roll: Double,
                quality: Int, feedback: [Feedback], facesSeen: Int = 1, subject: FaceSubject = .only) {
        self.template = template
        self.box = box
        self.landmarks = landmarks
        self.yaw = yaw
        self.pitch = pitch
        self.roll = roll
        self.quality = quality
        self.feedback = feedback
        self.facesSeen = facesSeen
        self.subject = subject
    }
}

/// An upright box in frame pixels: a face box, or a fingertip box before its rotation.
public struct PixelRect: Codable, Sendable, Equatable {
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int
    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }
}

public struct FaceMatchParams: RPCParams, Encodable {
    public static let fields = wireNames(CodingKeys.self)
    /// base64 of a face template or of an image.
    public var probe: String
    /// base64 of a face template or of an image.
    public var reference: String
    public var matchingThreshold: Double?
    public static let matchingThreshold = FaceCaptureOptions.matchingThreshold
    enum CodingKeys: String, CodingKey, CaseIterable {
        case probe, reference
        case matchingThreshold = "matching_threshold"
    }
    public init(probe: String, reference: String) {
        self.probe = probe
        self.reference = reference
    }
    public func validate() throws(RPCError) { try Self.matchingThreshold.check(matchingThreshold) }
}

public struct MatchResult: Codable, Sendable {
    public var score: Double
    public var match: Bool
    public var threshold: Double
    public init(score: Double, match: Bool, threshold: Double) {
        self.score = score
        self.match = match
        self.threshold = threshold
    }
}
