import BiometricVocabulary

/// The finger methods' contract (SPEC §4): params with their ranges and defaults, and results.

extension Method {
    public static let fingerCapture = "finger.capture"
    public static let fingerEnroll = "finger.enroll"
    public static let fingerVerify = "finger.verify"
    public static let fingerIdentify = "finger.identify"
    public static let fingerExtract = "finger.extract"
    public static let fingerMatch = "finger.match"
    public static let fingerList = "finger.list"
    public static let fingerRemove = "finger.remove"
    public static let fingerAdd = "finger.add"
    public static let fingerExport = "finger.export"
}

/// How a hand is presented to the camera; shared by capture, enrol, verify and identify.
public struct FingerCaptureSettings: Codable, Sendable, Equatable {
    /// Digits that can be amputated (the thumb is its own mode).
    public static let amputatable: [Digit] = [.index, .middle, .ring, .little]

    /// fingers | thumb | single [fingers]
    public var mode: CaptureMode?
    /// The finger shown in mode single [index] (thumb … little).
    public var finger: Digit?
    /// left | right [right]
    public var hand: Hand?
    /// Subset of index, middle, ring, little.
    public var amputated: [Digit]?
    /// none | very_low | low | medium [low]
    public var liveness: LivenessLevel?
    /// The least print quality a kept fingertip must reach.
    public var qualityThreshold: Int?
    public static let qualityThreshold = Setting(CodingKeys.qualityThreshold, 0...100, default: 40)
    public var timeoutS: Int?
    public static let timeoutS = Setting(CodingKeys.timeoutS, 1...120, default: 10)

    /// Progress events carry a downscaled JPEG of the frame while on (issue 25).
    public var preview: PreviewRequest?

    public init(mode: CaptureMode? = nil, finger: Digit? = nil, hand: Hand? = nil, amputated: [Digit]? = nil,
                liveness: LivenessLevel? = nil, qualityThreshold: Int? = nil, timeoutS: Int? = nil, preview: PreviewRequest? = nil) {
        self.preview = preview
        self.mode = mode
        self.finger = finger
        self.hand = hand
        self.amputated = amputated
        self.liveness = liveness
        self.qualityThreshold = qualityThreshold
        self.timeoutS = timeoutS
    }

    static let fields = wireNames(CodingKeys.self)

    enum CodingKeys: String, CodingKey, CaseIterable {
        case mode, finger, hand, amputated, liveness, preview
        case qualityThreshold = "quality_threshold"
        case timeoutS = "timeout_s"
    }

    public func validate() throws(RPCError) {
        if finger != nil, (mode ?? .default) != .single {
            throw .invalidParams(field: "finger", "parameter 'finger' names the finger of mode 'single'")
        }
        for (i, digit) in (amputated ?? []).enumerated() where !Self.amputatable.contains(digit) {
            let names = Self.amputatable.map(\.rawValue).joined(separator: ", ")
            throw .invalidParams(field: "amputated[\(i)]", "parameter 'amputated[\(i)]' must be one of \(names), got '\(digit.rawValue)'")
        }
        if let amputated {
            guard Set(amputated).count == amputated.count else {
                throw .invalidParams(field: "amputated", "parameter 'amputated' lists a finger twice")
            }
            guard (mode ?? .default) != .fingers || amputated.count < 4 else {
                throw .invalidParams(field: "amputated", "all four fingers are amputated: use mode 'thumb'")
            }
        }
        try Self.qualityThreshold.check(qualityThreshold)
        try Self.timeoutS.check(timeoutS)
        try preview?.validate()
    }
}

/// Params that embed `FingerCaptureSettings` (capture, enrol, verify/identify) decode them from
/// the same flat object as their own keys.
public struct FingerCaptureRequest: RPCParams, Encodable {
    public static let fields = FingerCaptureSettings.fields.union(wireNames(CodingKeys.self))
    public var camera: String?
    public var capture: FingerCaptureSettings
    /// none | png | jpeg | wsq [none]
    public var imageFormat: ImageFormat?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case camera
        case imageFormat = "image_format"
    }

    public init(camera: String? = nil, capture: FingerCaptureSettings = .init(), imageFormat: ImageFormat? = nil) {
        self.camera = camera
        self.capture = capture
        self.imageFormat = imageFormat
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        camera = try c.decodeIfPresent(String.self, forKey: .camera)
        imageFormat = try c.decodeIfPresent(ImageFormat.self, forKey: .imageFormat)
        capture = try FingerCaptureSettings(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(camera, forKey: .camera)
        try c.encodeIfPresent(imageFormat, forKey: .imageFormat)
        try capture.encode(to: encoder)
    }

    public func validate() throws(RPCError) {
        try capture.validate()
    }
}

public struct FingerBoxWire: Codable, Sendable, Equatable {
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int
    /// Degrees, clockwise from pointing up.
    public var angle: Double
    public init(x: Int, y: Int, width: Int, height: Int, angle: Double) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
        self.angle = angle
    }
}

public struct CapturedFinger: Codable, Sendable {
    /// right_index, left_thumb, ...
    public var position: String
    public var quality: Int
    public var box: FingerBoxWire
    /// base64 of the contact-like print (500 ppi) in the asked image_format.
    public var image: String?
    /// base64 of the finger template of this print.
    public var template: String?
    public var minutiae: Int?
    public init(position: String, quality: Int, box: FingerBoxWire, image: String? = nil, template: String? = nil,
                minutiae: Int? = nil) {
        self.position = position
        self.quality = quality
        self.box = box
        self.image = image
        self.template = template
        self.minutiae = minutiae
    }
}

public struct FingerCaptureResult: Codable, Sendable {
    public var fingers: [CapturedFinger]
    public var liveness: LivenessVerdict
    public var imageFormat: ImageFormat?
    public var durationMs: Int
    enum CodingKeys: String, CodingKey {
        case fingers, liveness
        case imageFormat = "image_format"
        case durationMs = "duration_ms"
    }
    public init(fingers: [CapturedFinger], liveness: LivenessVerdict, imageFormat: ImageFormat?, durationMs: Int) {
        self.fingers = fingers
        self.liveness = liveness
        self.imageFormat = imageFormat
        self.durationMs = durationMs
    }
}

public struct FingerEnrollParams: RPCParams, Encodable {
    public static let fields = FingerCaptureSettings.fields.union(wireNames(CodingKeys.self))
    public var user: String
    public var camera: String?
    public var capture: FingerCaptureSettings
    /// Captures per finger; the best prints are kept.
    public var captures: Int?
    public static let captures = Setting(CodingKeys.captures, 1...10, default: 3)

    enum CodingKeys: String, CodingKey, CaseIterable {
        case user, camera, captures
    }

    public init(user: String, camera: String? = nil, capture: FingerCaptureSettings = .init(), captures: Int? = nil) {
        self.user = user
        self.camera = camera
        self.capture = capture
        self.captures = captures
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        user = try c.decode(String.self, forKey: .user)
        camera = try c.decodeIfPresent(String.self, forKey: .camera)
        captures = try c.decodeIfPresent(Int.self, forKey: .captures)
        capture = try FingerCaptureSettings(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(user, forKey: .user)
        try c.encodeIfPresent(camera, forKey: .camera)
        try c.encodeIfPresent(captures, forKey: .captures)
        try capture.encode(to: encoder)
    }

    public func validate() throws(RPCError) {
        try UserName.validate(user)
        try capture.validate()
        try Self.captures.check(captures)
    }
}

public struct EnrolledFinger: Codable, Sendable, Equatable {
    public var id: String
    public var position: String
    public var quality: Int
    public init(id: String, position: String, quality: Int) {
        self.id = id
        self.position = position
        self.quality = quality
    }
}

public struct FingerEnrollResult: Codable, Sendable {
    public var templates: [EnrolledFinger]
    public var capturesUsed: Int
    enum CodingKeys: String, CodingKey {
        case templates
        case capturesUsed = "captures_used"
    }
    public init(templates: [EnrolledFinger], capturesUsed: Int) {
        self.templates = templates
        self.capturesUsed = capturesUsed
    }
}

/// finger.verify (with `user`) and finger.identify (without).
public struct FingerAuthParams: RPCParams, Encodable {
    public static let fields = FingerCaptureSettings.fields.union(wireNames(CodingKeys.self))
    public var user: String?
    public var camera: String?
    public var capture: FingerCaptureSettings
    /// On the FAR scale of SPEC §4.
    public var threshold: Double?
    public static let threshold = FingerMatchParams.threshold
    /// finger.verify only: base64 templates (biometricd or ISO/IEC 19794-2) supplied by the caller
    /// — the IDEMIA "card + finger" case, a door reading them from a badge — matched instead of
    /// the user's stored fingers (admin callers; same liveness and lockout rules).
    public var references: [String]?
    /// At most this many references (a badge holds a few fingers).
    public static let maxReferences = 10
    /// Longest base64 reference (an ISO record of 255 minutiae is ~2 KB).
    public static let maxReferenceLength = 64 * 1024

    enum CodingKeys: String, CodingKey, CaseIterable {
        case user, camera, threshold, references
    }

    public init(user: String? = nil, camera: String? = nil, capture: FingerCaptureSettings = .init(), threshold: Double? = nil,
                references: [String]? = nil) {
        self.user = user
        self.camera = camera
        self.capture = capture
        self.threshold = threshold
        self.references = references
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        user = try c.decodeIfPresent(String.self, forKey: .user)
        camera = try c.decodeIfPresent(String.self, forKey: .camera)
        threshold = try c.decodeIfPresent(Double.self, forKey: .threshold)
        references = try c.decodeIfPresent([String].self, forKey: .references)
        capture = try FingerCaptureSettings(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(user, forKey: .user)
        try c.encodeIfPresent(camera, forKey: .camera)
        try c.encodeIfPresent(threshold, forKey: .threshold)
        try c.encodeIfPresent(references, forKey: .references)
        try capture.encode(to: encoder)
    }

    public func validate() throws(RPCError) {
        if let user { try UserName.validate(user) }
        try capture.validate()
        try Self.threshold.check(threshold)
        if let references {
            guard user != nil else { throw .invalidParams(field: "references", "'references' needs 'user' (finger.verify)") }
            guard (1...Self.maxReferences).contains(references.count) else {
                throw .invalidParams(field: "references", "'references' must hold 1-\(Self.maxReferences) templates")
            }
            for (i, r) in references.enumerated() where r.utf8.count > Self.maxReferenceLength {
                throw .invalidParams(field: "references[\(i)]", "'references[\(i)]' is longer than \(Self.maxReferenceLength) bytes")
            }
        }
    }
}

public struct FingerVerifyResult: Codable, Sendable {
    public var match: Bool
    public var score: Double
    public var threshold: Double
    /// The finger that matched best (right_index, ...), null when no finger was seen.
    @Nullable public var position: String?
    public var liveness: LivenessVerdict
    public var captures: Int
    public var durationMs: Int
    /// Set when every enrolled finger of the user lacks the orientation field (templates stored
    /// before version 2, or ISO 19794-2 imports): they are matched on minutiae alone, which accepts
    /// fewer genuine attempts; what to run to re-enrol (Docs/finger-print.md item 9). Absent from
    /// the JSON when nil, and never set for caller-supplied references.
    public var reenrollHint: String?
    /// Whether this verification counts as a fresh authentication of the user on the connection
    /// (as face.verify's): never for caller-supplied references.
    public var authenticated: Bool?
    enum CodingKeys: String, CodingKey {
        case match, score, threshold, position, liveness, captures, authenticated
        case durationMs = "duration_ms"
        case reenrollHint = "reenroll_hint"
    }
    public init(match: Bool, score: Double, threshold: Double, position: String?, liveness: LivenessVerdict, captures: Int,
                durationMs: Int) {
        self.match = match
        self.score = score
        self.threshold = threshold
        self.position = position
        self.liveness = liveness
        self.captures = captures
        self.durationMs = durationMs
    }
}

public struct FingerIdentifyResult: Codable, Sendable {
    @Nullable public var user: String?
    public var score: Double
    @Nullable public var position: String?
    public var candidates: [Candidate]
    public var liveness: LivenessVerdict
    public var durationMs: Int
    enum CodingKeys: String, CodingKey {
        case user, score, position, candidates, liveness
        case durationMs = "duration_ms"
    }
    public init(user: String?, score: Double, position: String?, candidates: [Candidate], liveness: LivenessVerdict, durationMs: Int) {
        self.user = user
        self.score = score
        self.position = position
        self.candidates = candidates
        self.liveness = liveness
        self.durationMs = durationMs
    }
    // `user: null` is an answer ("nobody recognised"): encode it explicitly.
}

public struct FingerExtractParams: RPCParams, Encodable {
    public static let fields = wireNames(CodingKeys.self)
    enum CodingKeys: String, CodingKey, CaseIterable { case image, dpi, format }
    /// base64 PNG / JPEG / TIFF / PGM / WSQ (FBI WSQ, IAFIS-IC-0110 v3).
    public var image: String
    public var dpi: Int?
    public static let dpi = FingerMatchParams.dpi
    /// biometricd | iso19794_2 [biometricd]: the encoding of the returned template.
    public var format: TemplateFormat?
    public init(image: String, dpi: Int? = nil, format: TemplateFormat? = nil) {
        self.image = image
        self.dpi = dpi
        self.format = format
    }
    public func validate() throws(RPCError) {
        try Self.dpi.check(dpi)
    }
}

public struct MinutiaWire: Codable, Sendable, Equatable {
    /// Pixels at 500 ppi, top-left origin.
    public var x: Double
    public var y: Double
    /// Degrees, counter-clockwise from the x axis, ridge direction.
    public var angle: Double
    /// ending | bifurcation
    public var type: String
    public var quality: Int
    public init(x: Double, y: Double, angle: Double, type: String, quality: Int) {
        self.x = x
        self.y = y
        self.angle = angle
        self.type = type
        self.quality = quality
    }
}

public struct FingerExtractResult: Codable, Sendable {
    public var template: String
    public var format: TemplateFormat
    public var minutiae: [MinutiaWire]
    public var quality: Int
    public init(template: String, format: TemplateFormat, minutiae: [MinutiaWire], quality: Int) {
        self.template = template
        self.format = format
        self.minutiae = minutiae
        self.quality = quality
    }
}

public struct FingerMatchParams: RPCParams, Encodable {
    public static let fields = wireNames(CodingKeys.self)
    enum CodingKeys: String, CodingKey, CaseIterable { case probe, reference, threshold, dpi }
    /// base64 of a finger template or of a print image.
    public var probe: String
    /// base64 of a finger template or of a print image.
    public var reference: String
    public var threshold: Double?
    public static let threshold = Setting<Double>(CodingKeys.threshold, 0...100, default: 48)
    /// Resolution of image arguments (ppi).
    public var dpi: Int?
    public static let dpi = Setting(CodingKeys.dpi, 250...1000, default: 500)
    public init(probe: String, reference: String, threshold: Double? = nil, dpi: Int? = nil) {
        self.probe = probe
        self.reference = reference
        self.threshold = threshold
        self.dpi = dpi
    }
    public func validate() throws(RPCError) {
        try Self.threshold.check(threshold)
        try Self.dpi.check(dpi)
    }
}

public typealias FingerListParams = TemplateListParams

public struct FingerTemplateInfo: Codable, Sendable, Equatable {
    public var id: String
    public var user: String
    public var position: String
    public var created: String
    public var quality: Int
    public init(id: String, user: String, position: String, created: String, quality: Int) {
        self.id = id
        self.user = user
        self.position = position
        self.created = created
        self.quality = quality
    }
}

public struct FingerListResult: Codable, Sendable {
    public var templates: [FingerTemplateInfo]
    public init(templates: [FingerTemplateInfo]) { self.templates = templates }
}

public typealias FingerRemoveParams = TemplateRemoveParams

/// finger.add (admin): a template from elsewhere — biometricd or ISO/IEC 19794-2, told apart by
/// their headers — stored for `user`. An ISO record's finger views become one template each.
public struct FingerAddParams: RPCParams, Encodable {
    public static let fields = wireNames(CodingKeys.self)
    public var user: String
    /// base64 template (finger.export, finger.extract, or another system's ISO 19794-2 record).
    public var template: String
    /// biometricd | iso19794_2: when given, the template must be of that format.
    public var format: TemplateFormat?
    /// right_index, left_thumb, …: the finger, when the template does not say (or to correct it).
    public var position: String?
    /// The id to store it under (one template only): 1–64 of A–Z a–z 0–9 . _ -.
    public var templateID: String?
    enum CodingKeys: String, CodingKey, CaseIterable {
        case user, template, format, position
        case templateID = "template_id"
    }
    public init(user: String, template: String, format: TemplateFormat? = nil, position: String? = nil, templateID: String? = nil) {
        self.user = user
        self.template = template
        self.format = format
        self.position = position
        self.templateID = templateID
    }
    public func validate() throws(RPCError) {
        try UserName.validate(user)
        guard template.utf8.count <= FingerAuthParams.maxReferenceLength else {
            throw .invalidParams(field: "template", "'template' is longer than \(FingerAuthParams.maxReferenceLength) bytes")
        }
        if let id = templateID {
            guard (1...64).contains(id.utf8.count), id.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0)
                || (0x61...0x7A).contains($0) || $0 == 0x2E || $0 == 0x5F || $0 == 0x2D }) else {
                throw .invalidParams(field: "template_id", "'template_id' must be 1-64 of A-Z a-z 0-9 . _ -")
            }
        }
    }
}

/// finger.export (admin): a user's finger templates, each on its own (one ISO record per
/// template), so each can go back in through finger.add or be written to a badge.
public struct FingerExportParams: RPCParams, Encodable {
    public static let fields = wireNames(CodingKeys.self)
    enum CodingKeys: String, CodingKey, CaseIterable { case user, format }
    public var user: String
    /// biometricd | iso19794_2 [biometricd]
    public var format: TemplateFormat?
    public init(user: String, format: TemplateFormat? = nil) {
        self.user = user
        self.format = format
    }
    public func validate() throws(RPCError) { try UserName.validate(user) }
}

public struct FingerExportResult: Codable, Sendable {
    public struct Item: Codable, Sendable, Equatable {
        public var id: String
        public var position: String
        public var template: String
        public var quality: Int
        public init(id: String, position: String, template: String, quality: Int) {
            self.id = id
            self.position = position
            self.template = template
            self.quality = quality
        }
    }
    public var user: String
    public var format: TemplateFormat
    public var templates: [Item]
    public init(user: String, format: TemplateFormat, templates: [Item]) {
        self.user = user
        self.format = format
        self.templates = templates
    }
}
