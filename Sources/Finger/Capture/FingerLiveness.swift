import BiometricVocabulary

/// Accumulates liveness cues over the frames of one capture and decides at the end.
///
/// Cues (all measured, none learned):
/// - colour (very_low and up): the skin found has skin chroma (YCrCb Cr) and saturation. Catches
///   grey prints, grey/IR-looking screens and bleached casts; not a colour print of a hand.
/// - shading (low and up): a real fingertip is a rounded surface, so its brightness falls off
///   toward the sides (edge/centre 0.44–0.93 on 40 real photos, median ≈ 0.78); a flat picture
///   lit evenly by the room is near 1. Catches flat, evenly lit prints and screens; not a photo
///   print or screen that kept the original shading (their ratio is that of the photographed
///   finger), nor a 3-D mould (silicone finger).
/// - periodic texture (medium): halftone dots and display pixel grids put narrow spectral peaks at
///   2–3.3 px periods on the fingertip; skin does not (peak/mean ≤ 10.9 on 42 real photos, rendered
///   paper 15–18, rendered screen ≈ 40). Needs the pattern resolved by the camera: a fine photo
///   print or a dense phone screen far enough away shows no peak.
/// A verdict needs `minimumFrames` frames with fingers; any cue that is clearly failed gives fake,
/// all cues passed give live.
struct FingerLiveness {
    let level: LivenessLevel
    private var saturations: [Double] = []
    private var crs: [Double] = []
    private var shadingRatios: [Double] = []
    private var periodicities: [Double] = []
    private(set) var frames = 0

    /// Thresholds, set from rendered live/paper/screen scenes and the real ksahib and
    /// contactless3d photos (Docs/finger-camera.md has the numbers).
    static let minimumSaturation = 0.12
    static let minimumCr = 135.0
    static let maximumShadingRatio = 0.95
    static let maximumPeriodicity = 14.0

    var minimumFrames: Int { level == .medium ? 5 : 3 }

    init(level: LivenessLevel) { self.level = level }

    mutating func reset() { self = FingerLiveness(level: level) }

    /// One frame's cues. `colour` nil on IR/grey frames.
    mutating func add(colour: (saturation: Double, cr: Double)?, shadingRatios ratios: [Double], periodicities: [Double]) {
        guard level != .none, !ratios.isEmpty else { return }
        frames += 1
        if let colour {
            saturations.append(colour.saturation)
            crs.append(colour.cr)
        }
        shadingRatios.append(median(ratios))
        if !periodicities.isEmpty { self.periodicities.append(median(periodicities)) }
    }

    var verdict: LivenessVerdict {
        guard level != .none, frames >= minimumFrames else { return .noDecision }
        var checked = 0
        // Colour.
        if !saturations.isEmpty {
            checked += 1
            if median(saturations) < Self.minimumSaturation || median(crs) < Self.minimumCr { return .fake }
        }
        if level == .low || level == .medium {
            checked += 1
            if median(shadingRatios) > Self.maximumShadingRatio { return .fake }
        }
        if level == .medium, !periodicities.isEmpty {
            checked += 1
            if median(periodicities) > Self.maximumPeriodicity { return .fake }
        }
        return checked > 0 ? .live : .noDecision
    }

    /// The evidence so far, for benches and logs: frames and each cue's median (no biometric data).
    var summary: String {
        func m(_ v: [Double]) -> String { v.isEmpty ? "-" : String(format: "%.2f", median(v)) }
        return "frames \(frames) last shading \(shadingRatios.last.map { String(format: "%.2f", $0) } ?? "-") periodicity \(periodicities.last.map { String(format: "%.1f", $0) } ?? "-"); medians: saturation \(m(saturations)) cr \(m(crs)) shading \(m(shadingRatios)) periodicity \(m(periodicities))"
    }

    private func median(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        return sorted[sorted.count / 2]
    }
}
