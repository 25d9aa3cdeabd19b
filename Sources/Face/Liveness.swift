import BiometricVocabulary

/// Liveness by keep-still then blink (Ezio FaceID): the face must hold steady for a time, then
/// the eyes must close and re-open. A printed photo or a still screen never blinks.
///
/// The blink is judged against the person's own open-eye level measured while they keep still,
/// so narrow or wide eyes and small faces work alike.
public struct BlinkLiveness: Sendable {
    public enum Phase: Sendable, Equatable {
        case keepStill
        case blink
        case done
    }

    public enum Outcome: Sendable, Equatable {
        case pending
        case live
    }

    /// How long the face must be steady, from `liveness_threshold` 0–100: 300 ms + 10 ms per step
    /// (800 ms at the default 50).
    public let stillDurationNs: UInt64
    /// Landmark motion between frames, as a fraction of the eye distance, below which the face counts as still.
    public let stillTolerance = 0.035
    /// The eye is closed below this fraction of the open-eye baseline, and open again above `reopenRatio`.
    public let closeRatio = 0.72
    public let reopenRatio = 0.86

    public private(set) var phase: Phase = .keepStill
    private var stillSinceNs: UInt64?
    private var lastPoints: [SIMD2<Double>]?
    private var openSamples: [Double] = []
    /// The person's open-eye level (eye aspect ratio), measured while they kept still.
    public private(set) var baseline: Double?
    private var closedFrames = 0
    private var sawClosed = false
    private var lastTimestamp: UInt64?
    private var frameIntervals: [Double] = []
    public private(set) var blinkDetectedAtFrame: Int?
    private var frameIndex = 0

    public init(livenessThreshold: Int) {
        stillDurationNs = UInt64(300 + 10 * max(0, min(100, livenessThreshold))) * 1_000_000
    }

    /// 0–100: 0 at start, 50 once the face held still, 100 with a blink.
    public var score: Int {
        switch phase {
        case .keepStill:
            return 0
        case .blink:
            return sawClosed ? 75 : 50
        case .done:
            return 100
        }
    }

    /// The action to show the user.
    public var action: LivenessAction? {
        switch phase {
        case .keepStill: .keepStill
        case .blink: .blink
        case .done: nil
        }
    }

    /// Frames per second seen so far (median interval), nil before a few frames.
    public var measuredFPS: Double? {
        guard frameIntervals.count >= 3 else { return nil }
        let median = frameIntervals.sorted()[frameIntervals.count / 2]
        return median > 0 ? 1e9 / median : nil
    }

    /// A blink lasts ~100–400 ms; below ~8 fps it may fall between frames.
    public var cameraTooSlow: Bool { (measuredFPS ?? 30) < 8 }

    /// Feeds one frame's landmarks (nil when no face was found in it).
    public mutating func observe(_ landmarks: Landmarks?, timestampNs: UInt64) -> Outcome {
        frameIndex += 1
        if let last = lastTimestamp, timestampNs > last {
            frameIntervals.append(Double(timestampNs - last))
            if frameIntervals.count > 30 { frameIntervals.removeFirst() }
        }
        lastTimestamp = timestampNs
        guard let landmarks else {
            // Losing the face restarts the keep-still phase (and does not count as a blink).
            if phase == .keepStill { stillSinceNs = nil }
            lastPoints = nil
            return phase == .done ? .live : .pending
        }
        let ear = landmarks.eyeAspectRatio
        switch phase {
        case .keepStill:
            let moved = motion(landmarks)
            lastPoints = landmarks.points
            guard let moved, moved < stillTolerance else {
                stillSinceNs = moved == nil ? timestampNs : nil
                openSamples.removeAll()
                if moved == nil { openSamples.append(ear) }
                return .pending
            }
            if stillSinceNs == nil { stillSinceNs = timestampNs }
            openSamples.append(ear)
            if timestampNs - stillSinceNs! >= stillDurationNs, openSamples.count >= 3 {
                // The open-eye level: an upper median, robust to a blink during keep-still.
                let sorted = openSamples.sorted()
                baseline = sorted[min(sorted.count - 1, sorted.count * 2 / 3)]
                phase = .blink
            }
            return .pending
        case .blink:
            lastPoints = landmarks.points
            guard let baseline, baseline > 0 else { return .pending }
            if ear < baseline * closeRatio {
                closedFrames += 1
                sawClosed = true
            } else if sawClosed && ear > baseline * reopenRatio {
                phase = .done
                blinkDetectedAtFrame = frameIndex
                return .live
            }
            return .pending
        case .done:
            return .live
        }
    }

    /// Mean landmark displacement since the last frame, relative to the eye distance.
    private func motion(_ landmarks: Landmarks) -> Double? {
        guard let last = lastPoints else { return nil }
        let scale = max(landmarks.interocular, 1)
        var total = 0.0
        for (a, b) in zip(last, landmarks.points) { total += distance(a, b) }
        return total / Double(landmarks.points.count) / scale
    }
}
