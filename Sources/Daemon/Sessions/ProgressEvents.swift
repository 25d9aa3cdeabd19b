import BiometricCamera
import BiometricFace
import BiometricFinger
import BiometricProtocol

/// A session's progress events: ~15 per second at most, but a change of phase (`key`) always
/// goes out at once.
struct ProgressEvents {
    let context: CallContext
    let type: String
    private var lastNs: UInt64 = 0
    private var lastKey: String?
    static let intervalNs: UInt64 = 66_000_000

    init(context: CallContext, type: String) {
        self.context = context
        self.type = type
    }

    mutating func send(_ fields: @autoclosure () -> [String: JSONValue], at now: UInt64, key: String) {
        guard key != lastKey || now &- lastNs >= Self.intervalNs else { return }
        lastNs = now
        lastKey = key
        context.emit(type, fields())
    }
}

extension FaceProgress {
    /// The SPEC §5 face.frame fields.
    var eventFields: [String: JSONValue] {
        observation.eventFields(livenessAction: livenessAction, livenessScore: livenessScore, countdown: countdown,
                                extraction: extraction, captured: captured, needed: needed, extraFeedback: extraFeedback)
    }
}

extension FaceObservation {
    /// The SPEC §5 face.frame fields.
    func eventFields(livenessAction: String? = nil, livenessScore: Int = 0, countdown: Int? = nil, extraction: String? = nil,
                     captured: Int = 0, needed: Int = 0, extraFeedback: [String] = []) -> [String: JSONValue]
    {
        var fields: [String: JSONValue] = [
            "box": box.map { .object(["x": .int(Int64($0.x)), "y": .int(Int64($0.y)), "width": .int(Int64($0.width)), "height": .int(Int64($0.height))]) } ?? .null,
            "yaw": pose.map { .double(($0.yaw * 10).rounded() / 10) } ?? .null,
            "pitch": pose.map { .double(($0.pitch * 10).rounded() / 10) } ?? .null,
            "roll": pose.map { .double(($0.roll * 10).rounded() / 10) } ?? .null,
            "quality": .int(Int64(qualityScore)),
            "brightness": measures.map { .double($0.brightness.rounded()) } ?? .null,
            "sharpness": measures.map { .double($0.sharpness.rounded()) } ?? .null,
            "feedback": .array((feedback + extraFeedback).map { .string($0) }),
            "liveness_action": livenessAction.map { .string($0) } ?? .null,
            "liveness_score": .int(Int64(livenessScore)),
            "countdown_s": countdown.map { .int(Int64($0)) } ?? .null,
            "extraction": extraction.map { .string($0) } ?? .null,
            "frames_captured": .int(Int64(captured)),
            "frames_needed": .int(Int64(needed)),
        ]
        if faceCount > 1 { fields["faces"] = .int(Int64(faceCount)) }
        return fields
    }
}

extension FingerBox {
    var wire: FingerBoxWire {
        FingerBoxWire(x: Int(x.rounded()), y: Int(y.rounded()), width: Int(width.rounded()), height: Int(height.rounded()),
                      angle: (angle * 10).rounded() / 10)
    }
}

extension FingerFrameAnalysis {
    /// The SPEC §5 finger.frame fields.
    func eventFields(captured: Int, needed: Int) -> [String: JSONValue] {
        let r = distanceRange
        return [
            "fingers": .array(fingers.map { f in
                let b = f.box.wire
                return .object([
                    "position": .string(f.position.name),
                    "box": .object(["x": .int(Int64(b.x)), "y": .int(Int64(b.y)), "width": .int(Int64(b.width)), "height": .int(Int64(b.height))]),
                    "angle": .double(b.angle),
                    "quality": .string(f.level.rawValue),
                ])
            }),
            "distance": distance.map { .double(($0 * 1000).rounded() / 1000) } ?? .null,
            "distance_range": .object(["min": .double(r.min), "optimal_min": .double(r.optimalMin),
                                       "optimal_max": .double(r.optimalMax), "max": .double(r.max)]),
            "feedback": .string(feedback.rawValue),
            "frames_captured": .int(Int64(captured)),
            "frames_needed": .int(Int64(needed)),
        ]
    }
}

enum ProgressGuidance {
    static func finger(_ feedback: DistanceFeedback) -> String {
        switch feedback {
        case .noFingers: "hold your fingers in front of the camera"
        case .tooClose: "move your hand back from the camera"
        case .tooFar: "move your hand closer to the camera"
        case .optimal: "hold still, with your fingers in focus and well lit"
        }
    }
}
