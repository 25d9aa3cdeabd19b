import BiometricVocabulary

/// The events of SPEC §5 as types. The daemon sends them through `JSONWriter` from `fields` (the
/// hot path: up to 15 a second per session, no Codable containers); clients decode them with
/// Codable. `fields` writes every SPEC field, null included, so the wire stays the same shape.
public protocol EventPayload: Codable, Sendable {
    /// `face.frame`, `finger.frame`, ...
    var eventType: String { get }
    /// The event's members, without `request` and `type` (the envelope adds them).
    var fields: [String: JSONValue] { get }
}

extension EventPayload {
    public func encode(to encoder: any Encoder) throws {
        try JSONValue.object(fields).encode(to: encoder)
    }
}

/// A progress event about one camera frame (face.frame, finger.frame): it carries that frame's
/// size (SPEC §5 `frame_width`, `frame_height`), and the preview while the session has one on.
public protocol FrameProgressEvent: EventPayload {
    var frameWidth: Int? { get set }
    var frameHeight: Int? { get set }
    var preview: FramePreview? { get set }
}

extension FrameProgressEvent {
    /// The frame size, both members or none.
    public var frame: FrameSize? {
        get { frameWidth.flatMap { w in frameHeight.map { FrameSize(width: w, height: $0) } } }
        set {
            frameWidth = newValue?.width
            frameHeight = newValue?.height
        }
    }
}

/// Every event type the daemon sends (SPEC §5). Clients switch over it exhaustively (the
/// terminal renderer gives each one words), so a new kind cannot ship without them.
public enum EventKind: String, CaseIterable, Sendable {
    case faceFrame = "face.frame"
    case fingerFrame = "finger.frame"
    case authFactor = "auth.factor"
    case cameraAdded = "camera.added"
    case cameraRemoved = "camera.removed"
}

/// face.frame: what one frame showed, and what the person is asked to do.
public struct FaceFrameEvent: FrameProgressEvent, Equatable {
    public var eventType: String { "face.frame" }
    public var box: PixelRect?
    /// Degrees, one decimal.
    public var yaw: Double?
    public var pitch: Double?
    public var roll: Double?
    public var quality: Int
    public var brightness: Double?
    public var sharpness: Double?
    public var feedback: [Feedback]
    public var livenessAction: LivenessAction?
    public var livenessScore: Int
    /// Enrolment's countdown before capture starts.
    public var countdownS: Int?
    public var extraction: Extraction?
    public var framesCaptured: Int
    public var framesNeeded: Int
    /// Present only when more than one face is in view.
    public var faces: Int?
    /// The analysed frame's size, in the pixels the boxes are measured in (set by the daemon's
    /// frame pump on every event).
    public var frameWidth: Int?
    public var frameHeight: Int?
    /// Present while the session's preview is on, at its rate.
    public var preview: FramePreview?

    enum CodingKeys: String, CodingKey {
        case box, yaw, pitch, roll, quality, brightness, sharpness, feedback, extraction, faces, preview
        case frameWidth = "frame_width"
        case frameHeight = "frame_height"
        case livenessAction = "liveness_action"
        case livenessScore = "liveness_score"
        case countdownS = "countdown_s"
        case framesCaptured = "frames_captured"
        case framesNeeded = "frames_needed"
    }

    public init(box: PixelRect?, yaw: Double?, pitch: Double?, roll: Double?, quality: Int, brightness: Double?,
                sharpness: Double?, feedback: [Feedback], livenessAction: LivenessAction? = nil, livenessScore: Int = 0,
                countdownS: Int? = nil, extraction: Extraction? = nil, framesCaptured: Int = 0, framesNeeded: Int = 0,
                faces: Int? = nil) {
        self.box = box
        self.yaw = yaw
        self.pitch = pitch
        self.roll = roll
        self.quality = quality
        self.brightness = brightness
        self.sharpness = sharpness
        self.feedback = feedback
        self.livenessAction = livenessAction
        self.livenessScore = livenessScore
        self.countdownS = countdownS
        self.extraction = extraction
        self.framesCaptured = framesCaptured
        self.framesNeeded = framesNeeded
        self.faces = faces
    }

    public var fields: [String: JSONValue] {
        var f: [String: JSONValue] = [
            "box": box.map(\.json) ?? .null,
            "yaw": .orNull(yaw), "pitch": .orNull(pitch), "roll": .orNull(roll),
            "quality": .int(Int64(quality)),
            "brightness": .orNull(brightness), "sharpness": .orNull(sharpness),
            "feedback": .array(feedback.map { .string($0.rawValue) }),
            "liveness_action": livenessAction.map { .string($0.rawValue) } ?? .null,
            "liveness_score": .int(Int64(livenessScore)),
            "countdown_s": countdownS.map { .int(Int64($0)) } ?? .null,
            "extraction": extraction.map { .string($0.rawValue) } ?? .null,
            "frames_captured": .int(Int64(framesCaptured)),
            "frames_needed": .int(Int64(framesNeeded)),
        ]
        if let faces { f["faces"] = .int(Int64(faces)) }
        if let frameWidth, let frameHeight {
            f["frame_width"] = .int(Int64(frameWidth))
            f["frame_height"] = .int(Int64(frameHeight))
        }
        if let preview { f["preview"] = preview.json }
        return f
    }
}

/// finger.frame: the fingertips found, the hand's distance and what to do about it.
public struct FingerFrameEvent: FrameProgressEvent, Equatable {
    public var eventType: String { "finger.frame" }

    public struct Finger: Codable, Sendable, Equatable {
        /// right_index, left_thumb, ...
        public var position: String
        /// The fingertip box before rotation; `angle` is in degrees clockwise, 0 = pointing up.
        public var box: PixelRect
        public var angle: Double
        public var quality: QualityLevel

        public init(position: String, box: PixelRect, angle: Double, quality: QualityLevel) {
            self.position = position
            self.box = box
            self.angle = angle
            self.quality = quality
        }
    }

    public var fingers: [Finger]
    /// 0–1, null when no fingers were found.
    public var distance: Double?
    public var distanceRange: DistanceRange
    /// One of no_fingers, too_close, too_far, optimal.
    public var feedback: Feedback
    public var framesCaptured: Int
    public var framesNeeded: Int
    /// The analysed frame's size, in the pixels the boxes are measured in (set by the daemon's
    /// frame pump on every event).
    public var frameWidth: Int?
    public var frameHeight: Int?
    /// Present while the session's preview is on, at its rate.
    public var preview: FramePreview?

    enum CodingKeys: String, CodingKey {
        case fingers, distance, feedback, preview
        case frameWidth = "frame_width"
        case frameHeight = "frame_height"
        case distanceRange = "distance_range"
        case framesCaptured = "frames_captured"
        case framesNeeded = "frames_needed"
    }

    public init(fingers: [Finger], distance: Double?, distanceRange: DistanceRange, feedback: Feedback, framesCaptured: Int,
                framesNeeded: Int) {
        self.fingers = fingers
        self.distance = distance
        self.distanceRange = distanceRange
        self.feedback = feedback
        self.framesCaptured = framesCaptured
        self.framesNeeded = framesNeeded
    }

    public var fields: [String: JSONValue] {
        let r = distanceRange
        var f: [String: JSONValue] = [
            "fingers": .array(fingers.map { f in
                .object(["position": .string(f.position), "box": f.box.json, "angle": .double(f.angle),
                         "quality": .string(f.quality.rawValue)])
            }),
            "distance": .orNull(distance),
            "distance_range": .object(["min": .double(r.min), "optimal_min": .double(r.optimalMin),
                                       "optimal_max": .double(r.optimalMax), "max": .double(r.max)]),
            "feedback": .string(feedback.rawValue),
            "frames_captured": .int(Int64(framesCaptured)),
            "frames_needed": .int(Int64(framesNeeded)),
        ]
        if let frameWidth, let frameHeight {
            f["frame_width"] = .int(Int64(frameWidth))
            f["frame_height"] = .int(Int64(frameHeight))
        }
        if let preview { f["preview"] = preview.json }
        return f
    }
}

/// auth.factor: auth.authenticate / key.sign start a factor (`index` of `of`, from 0).
public struct AuthFactorEvent: EventPayload, Equatable {
    public var eventType: String { "auth.factor" }
    /// face | finger | pin
    public var factor: String
    /// What to show the person ("Face", "Fingerprint", "PIN").
    public var name: String
    public var index: Int
    public var of: Int

    public init(factor: String, name: String, index: Int, of: Int) {
        self.factor = factor
        self.name = name
        self.index = index
        self.of = of
    }

    public var fields: [String: JSONValue] {
        ["factor": .string(factor), "name": .string(name), "index": .int(Int64(index)), "of": .int(Int64(of))]
    }
}

/// camera.added / camera.removed, to a connection that called camera.watch.
public struct CameraChangeEvent: EventPayload, Equatable {
    public enum Change: String, Sendable {
        case added = "camera.added"
        case removed = "camera.removed"
    }
    public var change: Change
    public var camera: CameraInfo
    public var eventType: String { change.rawValue }

    enum CodingKeys: String, CodingKey {
        case camera, type
    }

    public init(_ change: Change, camera: CameraInfo) {
        self.change = change
        self.camera = camera
    }

    /// Decodes the event's `type` too (an event line carries it beside the fields).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let type = try c.decode(String.self, forKey: .type)
        guard let change = Change(rawValue: type) else {
            throw DecodingError.dataCorruptedError(forKey: .type, in: c, debugDescription: "not a camera event: \(type)")
        }
        self.change = change
        camera = try c.decode(CameraInfo.self, forKey: .camera)
    }

    public var fields: [String: JSONValue] {
        // CameraInfo is plain values: encoding cannot fail.
        ["camera": (try? JSONValue(encoding: camera)) ?? .null]
    }
}

extension PixelRect {
    var json: JSONValue {
        .object(["x": .int(Int64(x)), "y": .int(Int64(y)), "width": .int(Int64(width)), "height": .int(Int64(height))])
    }
}

extension JSONValue {
    static func orNull(_ value: Double?) -> JSONValue { value.map { .double($0) } ?? .null }
}
