import CFaceVision

/// A cue beyond blinking: a face replayed on a screen or shown on a print sits inside straight
/// borders (bezel, video window, paper edge) that a live face in a room does not have on two or
/// more sides. Judged over many frames, so one door frame or shelf edge does not decide.
public struct ReplayCue: Sendable {
    public private(set) var framesSeen = 0
    public private(set) var framesFramed = 0
    /// Frames needed before the cue may decide.
    public let minimumFrames: Int
    /// Fraction of framed frames at which the face counts as replayed. On the real clips in
    /// ../shared/data the live selfie has 0 % framed frames and its screen replay 78 % (Docs/face.md).
    public let spoofFraction: Double

    /// The shipped `spoofFraction` (where `PassiveScore.border` is 50).
    public static let defaultSpoofFraction = 0.2

    public init(minimumFrames: Int = 15, spoofFraction: Double = defaultSpoofFraction) {
        self.minimumFrames = minimumFrames
        self.spoofFraction = spoofFraction
    }

    /// Sides with a border (bit mask of CVIS_BORDER_*), or nil when it could not be measured.
    public static func borderSides(_ image: ImageRef, box: FaceBox) -> Int? {
        let b = cvis_face_box(x: Float(box.x), y: Float(box.y), width: Float(box.width), height: Float(box.height), score: 1)
        let mask = Int(cvis_face_border_sides(image.view, b))
        return mask >= 0 ? mask : nil
    }

    /// A frame is "framed" when borders run along two or more sides of the face.
    public static func isFramed(_ mask: Int) -> Bool { mask.nonzeroBitCount >= 2 }

    /// Whether each of the first frames (up to 8) was framed: the early passive pass needs its
    /// frames clean.
    public private(set) var firstFrames: [Bool] = []

    public mutating func observe(borderMask: Int) {
        framesSeen += 1
        if Self.isFramed(borderMask) { framesFramed += 1 }
        if firstFrames.count < 8 { firstFrames.append(Self.isFramed(borderMask)) }
    }

    /// At least `n` frames seen and none of the first `n` framed.
    public func noneFramed(within n: Int) -> Bool { firstFrames.count >= n && !firstFrames.prefix(n).contains(true) }

    public var framedFraction: Double { framesSeen > 0 ? Double(framesFramed) / Double(framesSeen) : 0 }

    /// The framed fraction once the cue may decide (nil before its minimum frames).
    public var judgedFraction: Double? { framesSeen >= minimumFrames ? framedFraction : nil }
    public var isSpoof: Bool { framesSeen >= minimumFrames && framedFraction >= spoofFraction }
}
