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
    /// The face sat inside straight borders in too many frames (`ReplayCue`): the framed fraction.
    case border(framedFraction: Double)
    /// The face's fine detail is gone (`RecaptureCue`): the median high-frequency share.
    case recapture(highFrequencyShare: Double)
}

/// The passive verdict: decided from the evidence of the first usable frames; the cues that judge
/// later (border, re-capture) can still turn it into a refusal until the session ends.
public enum PassiveVerdict: Sendable, Equatable {
    case pending
    /// `score` is `liveness_score` 0–100 (`PassiveScore`): the lowest of the judged cues.
    case live(realProbability: Double, score: Int)
    case spoof(PassiveSpoof, score: Int)
}

/// `liveness_score` in passive modes, decided here and nowhere else: each cue's measurement
/// mapped to 0–100 so that the value at which that cue refuses a face is 50 (the
/// `liveness_threshold` default), and the score is the **lowest** of the cues judged so far.
/// `liveness_threshold` gates on it: every judged cue must reach it. At 50 each cue decides as it
/// was measured (Docs/face.md "Passive liveness"); a higher threshold tightens all of them, a
/// lower one relaxes them. A threshold of 0 counts as 1: a cue at 0 (identical frames, a
/// detector certain of an attack) is never live.
///
/// | cue | 0 | 50 (refuses below) | 100 |
/// |---|---|---|---|
/// | detector: median real probability p | p = 0 | p = 0.2 | p = 1 (linear between) |
/// | frame noise: median difference d (grey levels) | d = 0 | d = 0.1 | d ≥ 0.5 |
/// | border: framed fraction f of ≥ 15 frames | f = 1 | f = 0.2 | f = 0 |
/// | re-capture: high-frequency share h (faces ≥ 120 px, 45 frames) | h = 0 | h = 0.0004 | h ≥ 0.0008 |
public struct PassiveScore: Sendable, Equatable {
    /// Each cue's score, nil while it has not judged.
    public var detector: Double?
    public var stillFrames: Double?
    public var border: Double?
    public var recapture: Double?

    public init(realProbability: Double? = nil, frameDifference: Double? = nil, framedFraction: Double? = nil,
                highFrequencyShare: Double? = nil) {
        detector = realProbability.map(Self.detector)
        stillFrames = frameDifference.map(Self.noise)
        border = framedFraction.map(Self.border)
        recapture = highFrequencyShare.map(Self.recapture)
    }

    /// Piecewise linear through (0, 0), (`at50`, 50), (`at100`, 100), clamped.
    static func rising(_ x: Double, at50: Double, at100: Double) -> Double {
        guard x.isFinite else { return 0 }
        if x <= 0 { return 0 }
        if x < at50 { return 50 * x / at50 }
        return min(100, 50 + 50 * (x - at50) / (at100 - at50))
    }

    public static func detector(_ p: Double) -> Double { rising(p, at50: PassiveLiveness.threshold, at100: 1) }
    public static func noise(_ d: Double) -> Double { rising(d, at50: PassiveLiveness.identicalDifference, at100: 0.5) }
    public static func border(_ f: Double) -> Double {
        rising(1 - f, at50: 1 - ReplayCue.defaultSpoofFraction, at100: 1)
    }
    public static func recapture(_ h: Double) -> Double {
        rising(h, at50: RecaptureCue.threshold, at100: 2 * RecaptureCue.threshold)
    }

    /// The judged cues, in the order a tie names them.
    var judged: [(cue: Cue, score: Double)] {
        [(Cue.stillFrames, stillFrames), (.detector, detector), (.border, border), (.recapture, recapture)]
            .compactMap { c, v in v.map { (c, $0) } }
    }

    public enum Cue: Sendable, Equatable { case detector, stillFrames, border, recapture }

    /// The lowest judged cue and its score (nil: none judged yet).
    public var lowest: (cue: Cue, score: Double)? {
        judged.reduce(nil) { best, c in best.map { $0.score <= c.score ? $0 : c } ?? c }
    }

    /// `liveness_score`: the lowest judged cue, rounded; 0 before any.
    public var value: Int { Int((lowest?.score ?? 0).rounded()) }

    /// The threshold a cue's score must reach (`liveness_threshold`, 0 counted as 1).
    public static func gate(_ livenessThreshold: Int) -> Double { Double(max(1, min(100, livenessThreshold))) }
}

/// Passive liveness: decide without asking the person for anything, from the detector's real
/// probability over the first usable frames of one tracked face, the frame-to-frame noise, and
/// the border and re-capture cues (measured beside it by FaceAuthentication and handed in), all
/// through one score (`PassiveScore`).
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
    /// A clearly live face passes on its first `earlyFrames` readings, without waiting for the
    /// whole window: when their median real probability is at least `earlyReal` (the networks' own
    /// boundary between the real and the attack classes, 2.5× the threshold), the `earlyFrames − 1`
    /// frame pairs between them are not the same picture, and none of those frames sat inside
    /// borders (`ReplayCue.noneFramed`, checked by FaceAuthentication). Any other face waits for
    /// the whole window (`frames` readings, `noisePairs` pairs, the border cue's 15 frames) as
    /// before, and refusals are decided only there. Chosen on the shared clips
    /// (`biometricd-face-bench passive-window`, Docs/face.md "Passive liveness"): every live session
    /// still passes, every attack is still refused, the highest attack median on 4 readings is
    /// 0.161 (the screen replay cropped to the face), and a clear live face passes at its 4th frame
    /// (133 ms at 30 fps) instead of the border cue's 15th (500 ms).
    public static let earlyFrames = 4
    public static let earlyReal = 0.5
    /// Mean absolute grey difference of the face region under which two frames count as the same
    /// picture (`liveness_threshold` 50). A live sensor's noise alone is ≳ 0.25 grey levels; a
    /// repeated image gives 0.
    public static let identicalDifference = 0.1

    /// The readings and frame pairs this instance decides on (the shipped `frames` and
    /// `noisePairs`, or others for the window-length measurements of the face bench).
    public let readingsNeeded: Int
    public let pairsNeeded: Int
    private var readings: [Double] = []
    private var differences: [Double] = []
    /// The border cue's framed fraction once it has judged (its minimum frames seen).
    private var framedFraction: Double?
    /// The re-capture cue's level once it has judged (faces big enough, its minimum frames).
    private var highFrequencyShare: Double?
    private let gate: Double

    /// `livenessThreshold` (0–100, `liveness_threshold`): the score every judged cue must reach.
    public init(livenessThreshold: Int = 50, frames: Int = PassiveLiveness.frames, noisePairs: Int = PassiveLiveness.noisePairs) {
        gate = PassiveScore.gate(livenessThreshold)
        readingsNeeded = max(1, frames)
        pairsNeeded = max(1, noisePairs)
    }

    /// A usable frame's detector reading (nil: not measured in this frame).
    public mutating func observe(reading: AntispoofReading?, frameDifference: Double?) {
        if let reading, readings.count < readingsNeeded { readings.append(reading.real) }
        if let frameDifference, differences.count < pairsNeeded { differences.append(frameDifference) }
    }

    /// The border and re-capture cues' current levels (nil: that cue has not judged yet).
    public mutating func observe(framedFraction: Double?, highFrequencyShare: Double?) {
        self.framedFraction = framedFraction
        self.highFrequencyShare = highFrequencyShare
    }

    public var readingsSeen: Int { readings.count }

    /// The median frame difference once its pairs are measured.
    var noiseLevel: Double? { differences.count >= pairsNeeded ? Self.median(differences) : nil }

    /// Enough frame pairs measured, and they were not the same picture.
    public var noiseCleared: Bool {
        guard let d = noiseLevel else { return false }
        return PassiveScore.noise(d) >= gate
    }

    /// The median real probability so far (nil before any reading).
    public var realProbability: Double? { Self.median(readings) }

    /// The score of the cues judged so far.
    public var score: PassiveScore {
        PassiveScore(realProbability: readings.count >= readingsNeeded ? Self.median(readings) : nil, frameDifference: noiseLevel,
                     framedFraction: framedFraction, highFrequencyShare: highFrequencyShare)
    }

    /// The early pass (`earlyFrames`): the median of the first readings and frame differences,
    /// when they clear `earlyReal`, the gate and the noise threshold; nil otherwise (or while the
    /// readings are not in).
    public var early: (realProbability: Double, score: Int)? {
        let e = Self.earlyFrames
        guard readingsNeeded >= e, readings.count >= e, differences.count >= e - 1,
              let p = Self.median(Array(readings.prefix(e))), let d = Self.median(Array(differences.prefix(e - 1))) else { return nil }
        let detector = PassiveScore.detector(p), noise = PassiveScore.noise(d)
        guard p >= Self.earlyReal, detector >= gate, noise >= gate else { return nil }
        return (p, Int(min(detector, noise).rounded()))
    }

    /// Whether the current live verdict is the early pass (the whole window not yet in).
    public var passedEarly: Bool {
        guard case .live = verdict else { return false }
        return score.detector == nil || score.stillFrames == nil
    }

    /// The decision; the one place passive liveness is decided. A judged cue under the gate
    /// refuses at once (the lowest one is named); live once the detector and the noise are in and
    /// nothing is under the gate, or earlier for a clearly live face (`early`).
    public var verdict: PassiveVerdict {
        let score = self.score
        if let low = score.lowest, low.score < gate {
            let value = Int(low.score.rounded())
            switch low.cue {
            case .stillFrames: return .spoof(.stillFrames(medianDifference: noiseLevel ?? 0), score: value)
            case .detector: return .spoof(.detector(realProbability: Self.median(readings) ?? 0), score: value)
            case .border: return .spoof(.border(framedFraction: framedFraction ?? 0), score: value)
            case .recapture: return .spoof(.recapture(highFrequencyShare: highFrequencyShare ?? 0), score: value)
            }
        }
        guard score.detector != nil, score.stillFrames != nil, let p = Self.median(readings) else {
            if let early { return .live(realProbability: early.realProbability, score: min(early.score, score.lowest.map { Int($0.score.rounded()) } ?? 100)) }
            return .pending
        }
        return .live(realProbability: p, score: score.value)
    }

    /// `liveness_score` of the detector's probability alone (`PassiveScore.detector`, rounded).
    public static func score(realProbability p: Double) -> Int {
        Int(PassiveScore.detector(max(0, min(1, p))).rounded())
    }

    /// The probability a detector score stands for (the inverse of `score`).
    static func probability(score: Int) -> Double {
        let s = Double(score)
        return s <= 50 ? threshold * s / 50 : threshold + (1 - threshold) * (s - 50) / 50
    }

    public static func median(_ values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let n = sorted.count
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2
    }
}
