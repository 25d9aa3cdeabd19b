import BiometricCore

/// One frame's reading of the passive presentation-attack detector (Minivision's Silent-Face
/// MiniFASNetV2 and MiniFASNetV1SE): the probability that the face is real, per network and
/// averaged as upstream does.
public struct AntispoofReading: Sendable, Equatable {
    /// The two networks' real-class softmax averaged: what decides.
    public var real: Double
    public var v2: Double
    public var v1se: Double

    public init(real: Double, v2: Double, v1se: Double) {
        self.real = real
        self.v2 = v2
        self.v1se = v1se
    }
}

/// Frame-to-frame sensor noise of the face region. A live sensor never gives two identical
/// frames: photon and read noise change every pixel a little, even when nothing moves. A still
/// image played by a replay camera (or a virtual device looping a picture) repeats the very same
/// bytes. Measured on a 32×32 grid of grey pixels, sampled without interpolation (averaging would
/// wash out the noise it is looking for).
public enum FrameNoise {
    public static let grid = 32

    /// The grey pixels at a `grid`×`grid` lattice inside `box` (clamped to the frame).
    public static func patch(_ frame: Frame, box: FaceBox) -> [UInt8] {
        let n = grid
        let w = frame.width, h = frame.height
        let grey = frame.grey.pointer
        return [UInt8](unsafeUninitializedCapacity: n * n) { out, count in
            for j in 0..<n {
                let y = min(h - 1, max(0, Int(box.y + (Double(j) + 0.5) * box.height / Double(n))))
                for i in 0..<n {
                    let x = min(w - 1, max(0, Int(box.x + (Double(i) + 0.5) * box.width / Double(n))))
                    out[j * n + i] = grey[y * w + x]
                }
            }
            count = n * n
        }
    }

    /// Mean absolute difference of two patches, in grey levels.
    public static func difference(_ a: [UInt8], _ b: [UInt8]) -> Double {
        guard a.count == b.count, !a.isEmpty else { return .infinity }
        var total = 0
        for k in 0..<a.count { total += abs(Int(a[k]) - Int(b[k])) }
        return Double(total) / Double(a.count)
    }
}

/// Why passive liveness refused a face.
public enum PassiveSpoof: Sendable, Equatable {
    /// The detector judged the face a print or a screen: the median real probability of its frames.
    case detector(realProbability: Double)
    /// Consecutive frames were (nearly) identical: a still image, not a live sensor. The median
    /// frame-to-frame difference of the face region in grey levels.
    case stillFrames(medianDifference: Double)
}

/// The passive verdict: decided once, from the evidence of the first usable frames.
public enum PassiveVerdict: Sendable, Equatable {
    case pending
    /// `score` is `liveness_score` 0–100 (`PassiveLiveness.score(realProbability:)`).
    case live(realProbability: Double, score: Int)
    case spoof(PassiveSpoof, score: Int)
}

/// Passive liveness: decide without asking the person for anything, from the detector's real
/// probability over the first usable frames of one tracked face and the frame-to-frame noise.
/// The border and re-capture cues run beside it (FaceAuthentication) and refuse on their own.
///
/// Numbers (Docs/face.md "Passive liveness", `biometricd-face-bench passive`): the shared live
/// clips' per-frame real probability has a median of 0.63 and 0.99 (0.40 and 0.95 cropped to the
/// face), the screen replay's 0.000 (0.000 cropped, 95th percentile 0.107); 0.2 sits between.
/// A median of 8 frames, not one frame, decides: single frames of the small cropped live clip
/// dip to 0.2.
public struct PassiveLiveness: Sendable {
    /// Detector readings the decision waits for (the first usable frames of the face).
    public static let frames = 8
    /// Median real probability at which a face counts as real (`liveness_threshold` 50).
    public static let threshold = 0.2
    /// Frame pairs whose noise is measured before deciding.
    public static let noisePairs = 6
    /// Mean absolute grey difference of the face region under which two frames count as the same
    /// picture. A live sensor's noise alone is ≳ 1 grey level; a repeated image gives 0.
    public static let identicalDifference = 0.1

    private var readings: [Double] = []
    private var differences: [Double] = []
    private let threshold: Double

    /// `livenessThreshold` (0–100, `liveness_threshold`) moves the decision along the score: 50
    /// is `PassiveLiveness.threshold`, 0 accepts any face, 100 only a probability of 1.
    public init(livenessThreshold: Int = 50) {
        threshold = Self.probability(score: max(0, min(100, livenessThreshold)))
    }

    /// A usable frame's detector reading (nil: not measured in this frame).
    public mutating func observe(reading: AntispoofReading?, frameDifference: Double?) {
        if let reading, readings.count < Self.frames { readings.append(reading.real) }
        if let frameDifference, differences.count < Self.noisePairs { differences.append(frameDifference) }
    }

    public var readingsSeen: Int { readings.count }

    /// Enough frame pairs measured, and they were not the same picture.
    public var noiseCleared: Bool {
        differences.count >= Self.noisePairs && (Self.median(differences) ?? 0) >= Self.identicalDifference
    }

    /// The median real probability so far (nil before any reading).
    public var realProbability: Double? { Self.median(readings) }

    /// The decision, once there is enough evidence; the one place passive liveness is decided.
    public var verdict: PassiveVerdict {
        if differences.count >= Self.noisePairs, let d = Self.median(differences), d < Self.identicalDifference {
            return .spoof(.stillFrames(medianDifference: d), score: 0)
        }
        guard readings.count >= Self.frames, differences.count >= Self.noisePairs, let p = Self.median(readings) else {
            return .pending
        }
        let score = Self.score(realProbability: p)
        return p >= threshold ? .live(realProbability: p, score: score) : .spoof(.detector(realProbability: p), score: score)
    }

    /// `liveness_score` from the detector's probability: piecewise linear, so that the shipped
    /// threshold maps to 50 (the `liveness_threshold` default), 0 to 0 and 1 to 100.
    public static func score(realProbability p: Double) -> Int {
        let p = max(0, min(1, p))
        let s = p < threshold ? 50 * p / threshold : 50 + 50 * (p - threshold) / (1 - threshold)
        return Int(s.rounded())
    }

    /// The probability a score stands for (the inverse of `score`).
    static func probability(score: Int) -> Double {
        let s = Double(score)
        return s <= 50 ? threshold * s / 50 : threshold + (1 - threshold) * (s - 50) / 50
    }

    static func median(_ values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let n = sorted.count
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2
    }
}
