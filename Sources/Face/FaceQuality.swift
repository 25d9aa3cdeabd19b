import BiometricVocabulary

/// Turns raw measures of a face into a 0–100 quality and the feedback hints of SPEC §5.
///
/// Each factor maps to 0…1 by a ramp between "unusable" and "good"; the quality is their weighted
/// mean, held down by the worst factor (a sharp face in the dark is still unusable). The ramps
/// were set on LFW photos and the real clips in ../shared/data (Docs/face.md).
public struct FaceQuality: Sendable, Equatable {
    public var score: Int
    public var feedback: [Feedback]

    public struct Measures: Sendable, Equatable {
        public var brightness: Double
        public var contrast: Double
        public var sharpness: Double
    }

    /// Where the user should turn for a guided (full-mode) pose; nil = frontal.
    public enum PoseTarget: String, Sendable, CaseIterable {
        case front, left, right, up, down

        /// Whether `pose` satisfies this target.
        public func accepts(_ pose: HeadPose) -> Bool {
            switch self {
            case .front: abs(pose.yaw) < 18 && abs(pose.pitch) < 18
            case .left: pose.yaw > 15 && pose.yaw < 45 && abs(pose.pitch) < 20
            case .right: pose.yaw < -15 && pose.yaw > -45 && abs(pose.pitch) < 20
            case .up: pose.pitch > 10 && pose.pitch < 35 && abs(pose.yaw) < 20
            case .down: pose.pitch < -10 && pose.pitch > -35 && abs(pose.yaw) < 20
            }
        }

        /// The hint that moves `pose` toward this target.
        public func hint(for pose: HeadPose) -> Feedback? {
            if accepts(pose) { return nil }
            switch self {
            case .front:
                if pose.yaw > 18 { return .turnRight }
                if pose.yaw < -18 { return .turnLeft }
                return pose.pitch > 18 ? .lookDown : .lookUp
            case .left: return pose.yaw <= 15 ? .turnLeft : .turnRight
            case .right: return pose.yaw >= -15 ? .turnRight : .turnLeft
            case .up: return pose.pitch <= 10 ? .lookUp : .lookDown
            case .down: return pose.pitch >= -10 ? .lookDown : .lookUp
            }
        }
    }

    static func ramp(_ value: Double, _ bad: Double, _ good: Double) -> Double {
        min(1, max(0, (value - bad) / (good - bad)))
    }

    /// - Parameters:
    ///   - box: the face; `frameWidth`/`frameHeight` the frame it is in.
    ///   - target: the pose asked for (frontal by default).
    public static func assess(box: FaceBox, pose: HeadPose, measures: Measures, frameWidth: Int, frameHeight: Int,
                              target: PoseTarget = .front) -> FaceQuality
    {
        var feedback: [Feedback] = []
        let b = measures.brightness
        let brightness = b < 128 ? ramp(b, 35, 80) : ramp(255 - b, 255 - 235, 255 - 185)
        if b < 60 { feedback.append(.tooDark) } else if b > 210 { feedback.append(.tooBright) }
        let contrast = ramp(measures.contrast, 6, 24)
        if measures.contrast < 8 && b >= 60 && b <= 210 { feedback.append(b < 128 ? .tooDark : .tooBright) }
        let sharpness = ramp(measures.sharpness, 20, 120)
        if measures.sharpness < 35 { feedback.append(.blurry) }

        // Size: the face should span 15–60 % of the frame width (and at least ~64 px).
        let side = max(box.width, box.height)
        let relative = side / Double(max(frameWidth, 1))
        let size = min(ramp(side, 40, 90), ramp(relative, 0.06, 0.15), ramp(0.85 - relative, 0, 0.25))
        if side < 80 || relative < 0.13 { feedback.append(.moveCloser) } else if relative > 0.62 { feedback.append(.moveBack) }

        // Position: centre within the middle part of the frame, box inside it.
        let dx = abs(box.centerX - Double(frameWidth) / 2) / Double(max(frameWidth, 1))
        let dy = abs(box.centerY - Double(frameHeight) / 2) / Double(max(frameHeight, 1))
        let inside = box.x >= 0 && box.y >= 0 && box.x + box.width <= Double(frameWidth) && box.y + box.height <= Double(frameHeight)
        if dx > 0.25 || dy > 0.25 || !inside { feedback.append(.centerFace) }
        let position = inside ? min(ramp(0.4 - dx, 0, 0.2), ramp(0.4 - dy, 0, 0.2)) : 0.3

        // Pose relative to the target.
        let poseScore: Double
        if target == .front {
            poseScore = ramp(40 - max(abs(pose.yaw), abs(pose.pitch)), 0, 28)
            if abs(pose.yaw) > 20 || abs(pose.pitch) > 20 { feedback.append(.faceForward) }
        } else {
            poseScore = target.accepts(pose) ? 1 : 0.5
            if let hint = target.hint(for: pose) { feedback.append(hint) }
        }

        let factors = [brightness, contrast, sharpness, size, position, poseScore]
        let weights = [0.2, 0.1, 0.25, 0.2, 0.1, 0.15]
        let mean = zip(factors, weights).reduce(0) { $0 + $1.0 * $1.1 }
        let worst = factors.min() ?? 0
        let score = Int((100 * min(mean, 0.35 + worst)).rounded())
        return FaceQuality(score: max(0, min(100, score)), feedback: feedback)
    }
}
