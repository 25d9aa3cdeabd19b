import Foundation

/// `preview: {fps, width}` of face and finger sessions (issue 25): while it is on, progress events
/// carry a downscaled JPEG of the frame for a greeter or kiosk to show. Left out, nothing is
/// encoded and the frame path is as before.
public struct PreviewRequest: Codable, Sendable, Equatable {
    /// Previews per second at most (the events themselves go out at up to 15 a second).
    public var fps: Int?
    public static let fps = Setting("preview.fps", 1...15, default: 5)
    /// Width of the preview in pixels; the height follows the frame's aspect. A frame narrower
    /// than this is sent at its own width (never upscaled).
    public var width: Int?
    public static let width = Setting("preview.width", 64...1280, default: 320)

    static let fields = wireNames(CodingKeys.self)

    enum CodingKeys: String, CodingKey, CaseIterable {
        case fps, width
    }

    public init(fps: Int? = nil, width: Int? = nil) {
        self.fps = fps
        self.width = width
    }

    /// Refuses unknown members (a typo must not silently fall back to the default), as the
    /// methods' own params do.
    public init(from decoder: any Decoder) throws {
        if case .object(let members) = try JSONValue(from: decoder),
           let unknown = members.keys.sorted().first(where: { !Self.fields.contains($0) }) {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                    debugDescription: "unknown member '\(unknown)'; accepted: fps, width"))
        }
        let c = try decoder.container(keyedBy: CodingKeys.self)
        fps = try c.decodeIfPresent(Int.self, forKey: .fps)
        width = try c.decodeIfPresent(Int.self, forKey: .width)
    }

    /// -32602 with `data.field` `preview.fps` / `preview.width` when out of range.
    public func validate() throws(RPCError) {
        try Self.fps.check(fps)
        try Self.width.check(width)
    }

    /// Nanoseconds between two previews.
    public var intervalNs: UInt64 { 1_000_000_000 / UInt64(Self.fps(fps)) }
}

/// The size of the frame an event describes, in the camera's pixels (after rotation): what the
/// event's boxes are measured in. Every face.frame and finger.frame carries it (as `frame_width`,
/// `frame_height`).
public struct FrameSize: Codable, Sendable, Equatable {
    public var width: Int
    public var height: Int

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }
}

/// A point in whole pixels.
public struct PixelPoint: Codable, Sendable, Equatable {
    public var x: Int
    public var y: Int
    public init(x: Int, y: Int) {
        self.x = x
        self.y = y
    }
}

/// The downscaled frame a progress event carries while a preview is on, with what the event
/// found drawn in the preview's own coordinates (a UI overlays them without scaling).
public struct FramePreview: Codable, Sendable, Equatable {
    /// The JPEG file's bytes (base64 on the wire).
    public var jpeg: Data
    public var width: Int
    public var height: Int
    /// face.frame: the face box and the 68 landmarks; null / empty when no face.
    @Nullable public var box: PixelRect?
    public var landmarks: [PixelPoint]
    /// finger.frame: each fingertip's box, in the order of the event's `fingers`.
    public var fingers: [PixelRect]

    enum CodingKeys: String, CodingKey {
        case jpeg, width, height, box, landmarks, fingers
    }

    public init(jpeg: Data, width: Int, height: Int, box: PixelRect? = nil, landmarks: [PixelPoint] = [], fingers: [PixelRect] = []) {
        self.jpeg = jpeg
        self.width = width
        self.height = height
        self.box = box
        self.landmarks = landmarks
        self.fingers = fingers
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        guard let bytes = Data(base64Encoded: try c.decode(String.self, forKey: .jpeg)) else {
            throw DecodingError.dataCorruptedError(forKey: .jpeg, in: c, debugDescription: "preview jpeg is not base64")
        }
        jpeg = bytes
        width = try c.decode(Int.self, forKey: .width)
        height = try c.decode(Int.self, forKey: .height)
        box = try c.decodeIfPresent(PixelRect.self, forKey: .box)
        landmarks = try c.decodeIfPresent([PixelPoint].self, forKey: .landmarks) ?? []
        fingers = try c.decodeIfPresent([PixelRect].self, forKey: .fingers) ?? []
    }
}

/// The size a preview of a `frame`-sized frame gets for a requested width: that width (never wider
/// than the frame), the height by the frame's aspect, both at least 1.
public func previewSize(of frame: FrameSize, width requested: Int) -> FrameSize {
    let width = max(1, min(requested, frame.width))
    let height = max(1, Int((Double(frame.height) * Double(width) / Double(frame.width)).rounded()))
    return FrameSize(width: width, height: height)
}

/// Maps frame coordinates into a preview's: what the preview's box, landmarks and finger boxes
/// are measured in.
public struct PreviewScale: Sendable, Equatable {
    public let frame: FrameSize
    public let preview: FrameSize

    public init(frame: FrameSize, width: Int) {
        self.frame = frame
        preview = previewSize(of: frame, width: width)
    }

    private var sx: Double { Double(preview.width) / Double(frame.width) }
    private var sy: Double { Double(preview.height) / Double(frame.height) }

    public func rect(x: Double, y: Double, width: Double, height: Double) -> PixelRect {
        PixelRect(x: Int((x * sx).rounded()), y: Int((y * sy).rounded()), width: Int((width * sx).rounded()),
                  height: Int((height * sy).rounded()))
    }

    public func point(x: Double, y: Double) -> PixelPoint { PixelPoint(x: Int((x * sx).rounded()), y: Int((y * sy).rounded())) }
}
