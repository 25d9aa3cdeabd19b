import BiometricVocabulary

/// The events of SPEC §5 as types. The daemon sends them through their Codable conformance
/// (`JSONValueEncoder`, then `JSONWriter`: the same path as results), clients decode them with
/// Codable. Every SPEC field is on the wire, null included: a field that is null rather than
/// absent when it has no value is `@Nullable`, so that each wire name is spelled once (CodingKeys).
public protocol EventPayload: Codable, Sendable {
    /// `face.frame`, `finger.frame`, ...
    var eventType: String { get }
}

/// A field that is always on the wire (the SPEC lists it as always present): nil is written as
/// null (a plain Optional is left out by synthesized Codable), and read back from null or from an
/// absent key (an older daemon's line). With it a result or event needs no hand-written
/// `encode(to:)` repeating its keys.
@propertyWrapper
public struct Nullable<Value: Codable & Sendable>: Codable, Sendable {
    public var wrappedValue: Value?

    public init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        wrappedValue = c.decodeNil() ? nil : try c.decode(Value.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        if let wrappedValue { try c.encode(wrappedValue) } else { try c.encodeNil() }
    }
}

extension Nullable: Equatable where Value: Equatable {}

extension KeyedDecodingContainer {
    /// What synthesized `init(from:)` calls for a `@Nullable` field: an absent key is nil too.
    public func decode<V>(_ type: Nullable<V>.Type, forKey key: Key) throws -> Nullable<V> {
        Nullable(wrappedValue: try decodeIfPresent(V.self, forKey: key))
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
    @Nullable public var box: PixelRect?
    /// Degrees, one decimal.
    @Nullable public var yaw: Double?
    @Nullable public var pitch: Double?
    @Nullable public var roll: Double?
    public var quality: Int
    @Nullable public var brightness: Double?
    @Nullable public var sharpness: Double?
    public var feedback: [Feedback]
    @Nullable public var livenessAction: LivenessAction?
    public var livenessScore: Int
    /// Enrolment's countdown before capture starts.
    @Nullable public var countdownS: Int?
    @Nullable public var extraction: Extraction?
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
    @Nullable public var distance: Double?
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

    /// The camera only: `type` is the envelope's (`RPCCodec.event`).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(camera, forKey: .camera)
    }
}
