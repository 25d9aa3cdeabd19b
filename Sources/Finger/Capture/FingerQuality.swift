import CFingerVision

/// Print quality of a fingertip crop, 0–100, from three measures taken on the 500-ppi contact-like
/// print (see cvis_hand_fingertip_print):
/// - ridge-orientation coherence (structure tensor over ~2 ridge periods): ridges that are there
///   and continuous give 0.6–0.8, blur or noise 0.2–0.3;
/// - ridge contrast: the band-passed grey-level amplitude in the camera's own levels (a print
///   drowned in noise has coherent-looking but faint ridges);
/// - focus: band-pass (ridge frequency) energy against finer detail.
/// Weights and ranges were set on rendered scenes (sharp vs blurred vs too far) and checked on the
/// contactless3d photos (Docs/finger-camera.md).
public enum FingerQuality {
    public static func score(_ q: cvis_print_quality) -> Int {
        guard q.foreground > 0.2 else { return 0 }
        let coherence = clamp((Double(q.coherence) - 0.25) / 0.45)
        let contrast = clamp(Double(q.contrast) / 0.5)
        let focus = clamp(Double(q.focus))
        let area = clamp(Double(q.foreground) / 0.6)
        return Int((100 * area * (0.5 * coherence + 0.35 * contrast + 0.15 * focus)).rounded())
    }

    private static func clamp(_ v: Double) -> Double { min(1, max(0, v)) }
}
