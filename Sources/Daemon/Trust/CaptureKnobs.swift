import BiometricAuth
import BiometricProtocol

/// The wire params mapped into the floors' terms (`CaptureAsk`), and the floors' refusal.

extension LivenessMode {
    /// The checks a face liveness mode runs (`LivenessChecks`).
    var checks: LivenessChecks {
        switch self {
        case .blink: .blink
        case .challenge: [.blink, .moves]
        case .passive: .passive
        case .passiveBlink: [.passive, .blink]
        }
    }
}

extension FaceCaptureOptions {
    var captureAsk: CaptureAsk {
        let image = (mode ?? .default) == .image
        return CaptureAsk(modality: .face, matchingThreshold: matchingThreshold, qualityThreshold: qualityThreshold,
                          faceLiveness: image ? [] : livenessMode?.checks, livenessThreshold: livenessThreshold)
    }
}

extension FaceVerifyParams: CaptureKnobs {
    var captureAsk: CaptureAsk { capture.captureAsk }
}

extension FaceIdentifyParams: CaptureKnobs {
    var captureAsk: CaptureAsk { capture.captureAsk }
}

extension FingerAuthParams: CaptureKnobs {
    var captureAsk: CaptureAsk {
        CaptureAsk(modality: .finger, matchingThreshold: threshold, qualityThreshold: capture.qualityThreshold,
                   fingerLiveness: capture.liveness)
    }
}

/// A caller who is not an administrator asked for a knob below its floor (`CaptureDecision.refused`):
/// permission_denied (1003) with `data.field` (the wire name) and `data.floor`, before any camera opens.
struct FloorRefusal: Error, Sendable, Equatable {
    var loosening: CaptureDecision.Loosening
    var modality: CallerLimits.Modality

    /// The param the knob is on the wire, per modality.
    var field: String {
        switch (loosening.knob, modality) {
        case (.matchingThreshold, .face): "matching_threshold"
        case (.matchingThreshold, .finger): "threshold"
        case (.qualityThreshold, _): "quality_threshold"
        case (.livenessThreshold, _): "liveness_threshold"
        case (.livenessMode, _): "liveness_mode"
        case (.livenessLevel, _): "liveness"
        case (.liveness, .face): "mode"
        case (.liveness, .finger): "liveness"
        }
    }
}

extension RPCError {
    init(_ refusal: FloorRefusal) {
        let l = refusal.loosening, field = refusal.field
        let floor: JSONValue = Double(l.floor).map { .double($0) } ?? .string(l.floor)
        switch (l.knob, refusal.modality) {
        case (.liveness, .face):
            self = .app(.permissionDenied, "mode image (no liveness check) needs an administrator",
                        hint: "leave mode out: liveness is what refuses a photo of you", details: ["field": .string(field), "floor": floor])
        case (.liveness, .finger):
            self = .app(.permissionDenied, "liveness none needs an administrator", hint: "leave liveness out (\(l.floor))",
                        details: ["field": .string(field), "floor": floor])
        default:
            self = .app(.permissionDenied, "\(field) \(l.asked) is below \(l.floor): only an administrator may loosen it",
                        hint: "leave it out, or ask for \(l.floor) or stricter", details: ["field": .string(field), "floor": floor])
        }
    }
}
