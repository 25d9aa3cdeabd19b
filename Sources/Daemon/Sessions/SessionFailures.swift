import BiometricFace
import BiometricFinger
import BiometricProtocol
import Foundation

/// A session's failure, typed, on its way out of the frame pump: the verify methods read the
/// verdict from it (`AttemptVerdict(failure)`), and it becomes its SPEC §6 error only at the
/// edge (`RPCError.from`).
enum SessionFailure: Error, Sendable {
    case face(FaceFailure)
    case finger(FingerFailure)
}

/// The one place where a session's typed failure becomes its SPEC §6 error (code, message,
/// hint, data).
extension RPCError {
    init(_ failure: FaceFailure) {
        switch failure {
        case .spoof(.challenge(let reason, let stepsDone), let score):
            self = .spoof("the head moves asked for were not made: \(reason)", cue: "challenge", livenessScore: score,
                          hint: "follow the moves shown (a recording cannot)", ["steps_done": .int(Int64(stepsDone))])
        case .spoof(.recapture(let share), let score):
            self = .spoof("the face looks re-captured from a screen (its fine detail is gone)", cue: "recapture",
                          livenessScore: score, ["high_frequency_share": .double(share)])
        case .spoof(.detector(let probability), let score):
            self = .spoof("the face looks like a print or a screen to the presentation-attack detector", cue: "detector",
                          livenessScore: score, ["real_probability": .double(probability)])
        case .spoof(.stillFrames(let difference), let score):
            self = .spoof("the camera gives the same picture frame after frame (a still image, not a live camera)", cue: "still_frames",
                          livenessScore: score, hint: "use a real camera", ["frame_difference": .double(difference)])
        case .spoof(.virtualCamera(let driver), let score):
            self = .spoof("the camera is a virtual capture device (driver \(driver)): its frames never passed a sensor", cue: "virtual_camera",
                          livenessScore: score, hint: "use a real camera (refuse_virtual_cameras)", ["driver": .string(driver)])
        case .spoof(.border(let fraction), let score):
            self = .spoof("the face is shown on a screen or a print (it sits inside straight borders)", cue: "border",
                          livenessScore: score, ["framed_fraction": .double(fraction)])
        case .noBlink(let timeoutMs, let score, let fps):
            var details: [String: JSONValue] = ["liveness_score": .int(Int64(score))]
            var hint = "blink once, naturally, while looking at the camera"
            if let fps { details["camera_fps"] = .double((fps * 10).rounded() / 10) }
            if (fps ?? 30) < 8 {
                hint = "the camera is too slow (under 8 fps) to see a blink; use a faster mode or more light"
            }
            self = .app(.blinkTimeout, "no blink within \(timeoutMs) ms", hint: hint, details: details)
        case .lowQuality(let threshold, let feedback, let enrolling):
            self = .app(.badQuality, enrolling ? "no frame reached quality \(threshold)" : "only frames below quality \(threshold) were seen",
                        hint: feedback.map(Self.describe).joined(separator: "; "),
                        details: ["feedback": .array(feedback.map { .string($0.rawValue) })])
        case .timeout(let timeoutMs, let sawFace):
            self = .app(.timeout, sawFace ? "no decision within \(timeoutMs) ms" : "no face seen within \(timeoutMs) ms",
                        hint: sawFace ? "keep still, then blink" : "look at the camera", details: ["face_seen": .bool(sawFace)])
        case .enrolmentIncomplete(let timeoutMs, let pose, let got, let needed, let feedback):
            self = .app(.timeout, "enrolment did not complete within \(timeoutMs) ms (pose \(pose.rawValue): \(got)/\(needed) frames)",
                        hint: "follow the guidance: \(feedback.map(Self.describe).joined(separator: ", "))")
        }
    }

    init(_ failure: FingerFailure) {
        switch failure {
        case .spoof:
            self = .app(.spoofDetected, "the fingers look like a print or a screen, not a live hand",
                        hint: "present your real fingers to the camera", details: ["liveness": "fake", "spoof_attempt": true])
        case .noFingers(let timeoutMs):
            self = .app(.timeout, "no fingers seen within \(timeoutMs / 1000) s",
                        hint: "hold your hand in front of the camera, fingers together and pointing up")
        case .lowQuality(let best, let threshold, let feedback):
            self = .app(.badCapture, "no usable fingers found (best quality \(best), needed \(threshold))",
                        hint: Self.fingerHint(feedback), details: ["feedback": .string(feedback.rawValue)])
        case .noTemplate(let fingers, let feedback):
            let which = fingers.map { $0.name.replacingOccurrences(of: "_", with: " ") }.joined(separator: ", ")
            self = .app(.badCapture, "prints were made, but the \(fingers.count == 1 ? "print" : "prints") of \(which) "
                            + "gave no fingerprint template (too few clear minutiae)",
                        hint: "hold the finger still, a little closer, in focus and well lit",
                        details: ["feedback": .string(feedback.rawValue), "fingers": .array(fingers.map { .string($0.name) })])
        }
    }

    /// spoof_detected (3004) for the cue that fired: `data.cue`, the liveness score capped at 20.
    private static func spoof(_ message: String, cue: String, livenessScore: Int, hint: String = "present your real face to the camera",
                              _ details: [String: JSONValue]) -> RPCError
    {
        var all = details
        all["liveness_score"] = .int(Int64(min(livenessScore, 20)))
        all["spoof_attempt"] = true
        all["cue"] = .string(cue)
        return .app(.spoofDetected, message, hint: hint, details: all)
    }

    /// A SPEC §5 feedback code as words.
    static func describe(_ feedback: Feedback) -> String {
        feedback.rawValue.replacingOccurrences(of: "_", with: " ")
    }

    /// What to do about the hand's distance, as the hint of a failed finger capture.
    static func fingerHint(_ feedback: Feedback) -> String {
        switch feedback {
        case .tooClose: "move your hand back from the camera"
        case .tooFar, .moveCloser: "move your hand closer to the camera: the ridges are not resolved yet"
        case .holdStill: "hold still: the ridges are blurred by motion"
        case .focus: "the ridges are out of focus: move a little back or closer, with good light"
        case .showPalm: "show the palm side of the hand you named, fingertips toward the camera"
        case .optimal: "hold still, with your fingers in focus and well lit"
        default: "hold your fingers in front of the camera"
        }
    }
}
