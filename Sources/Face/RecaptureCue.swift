import CFaceVision

/// Re-capture features of the face region alone, for a replay held so close that no border is
/// in view (`cvis_face_recapture_features`). Measured on the clips we have (Docs/face.md,
/// `biometricd-face-bench recapture`); only `highFrequencyShare` is used in the decision.
public struct RecaptureFeatures: Sendable, Equatable {
    /// Strongest high-frequency spectral peak over its band's median (log10): display moiré.
    public var moire: Double
    /// Spectral energy above half the Nyquist frequency / all but DC: fine texture.
    public var highFrequencyShare: Double
    public var saturation: Double
    /// Fraction of near-white pixels.
    public var glare: Double

    public static let names = ["moire", "hf_share", "saturation", "glare"]
    public var values: [Double] { [moire, highFrequencyShare, saturation, glare] }

    public static func measure(_ image: ImageRef, box: FaceBox) -> RecaptureFeatures? {
        var out = (Float(0), Float(0), Float(0), Float(0))
        let b = cvis_face_box(x: Float(box.x), y: Float(box.y), width: Float(box.width), height: Float(box.height), score: 1)
        let status = withUnsafeMutableBytes(of: &out) { raw in
            cvis_face_recapture_features(image.view, b, raw.baseAddress!.assumingMemoryBound(to: Float.self))
        }
        guard status == CVIS_OK else { return nil }
        return RecaptureFeatures(moire: Double(out.0), highFrequencyShare: Double(out.1), saturation: Double(out.2), glare: Double(out.3))
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

    public mutating func observe(_ features: RecaptureFeatures, faceWidth: Double) {
        guard faceWidth >= Self.minimumFaceWidth else { return }
        samples.append(features.highFrequencyShare)
        if samples.count > Self.window { samples.removeFirst() }
    }

    /// The median high-frequency share of the window, nil before enough frames.
    public var level: Double? {
        guard samples.count >= Self.minimumFrames else { return nil }
        return samples.sorted()[samples.count / 2]
    }

    public var isSpoof: Bool { (level ?? 1) < Self.threshold }
}
