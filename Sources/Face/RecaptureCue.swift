import CVision

/// Re-capture features of the face region alone, for a replay held so close that no border is
/// in view (`cvis_face_recapture_features`: moiré peak, high-frequency share, saturation, glare).
/// Measured on the clips we have (Docs/face.md, `biometricd-face-bench recapture`).
public enum RecaptureFeatures {
    public static let names = ["moire", "hf_share", "saturation", "glare"]

    public static func measure(_ image: ImageRef, box: FaceBox) -> [Double]? {
        var out = [Float](repeating: 0, count: Int(CVIS_RECAPTURE_FEATURES))
        let b = cvis_face_box(x: Float(box.x), y: Float(box.y), width: Float(box.width), height: Float(box.height), score: 1)
        guard cvis_face_recapture_features(image.view, b, &out) == CVIS_OK else { return nil }
        return out.map(Double.init)
    }
}

/// A cue for a replay with no border in view: a face re-captured from a screen loses its finest
/// detail (the high-frequency share of its spectrum falls). Judged only on faces at least
/// `minimumFaceWidth` pixels wide (a smaller face is enlarged for the measure and has no fine
/// detail to lose), as the median of the last 60 such frames once 45 were seen.
///
/// The threshold sits below every 2 s window of the live clips we have (Docs/face.md has the
/// curve); it catches most windows of the one screen replay we have. It cannot catch a replay on
/// a display sharp enough to keep skin texture at the camera's resolution, a high-quality print,
/// a mask, or anything shown to a camera whose own optics are softer than the re-capture.
public struct RecaptureCue: Sendable {
    public static let minimumFaceWidth = 120.0
    public static let threshold = 0.0004
    public static let window = 60
    public static let minimumFrames = 45
    private var samples: [Double] = []

    public init() {}

    public mutating func observe(features: [Double], faceWidth: Double) {
        guard faceWidth >= Self.minimumFaceWidth, features.count > 1 else { return }
        samples.append(features[1])
        if samples.count > Self.window { samples.removeFirst() }
    }

    /// The median high-frequency share of the window, nil before enough frames.
    public var level: Double? {
        guard samples.count >= Self.minimumFrames else { return nil }
        return samples.sorted()[samples.count / 2]
    }

    public var isSpoof: Bool { (level ?? 1) < Self.threshold }
}
