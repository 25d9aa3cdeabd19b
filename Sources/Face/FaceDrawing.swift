import BiometricCore
import CFaceVision

extension FaceObservation {
    /// Draws this observation's face box and landmarks (when found) into the frame's colour plane,
    /// in place, so a snapshot shows what the pipeline sees. The frame's pixels change: use it on a
    /// frame nothing else is reading. Returns false, drawing nothing, when there is no face box or
    /// the frame has no colour plane (IR).
    @discardableResult
    public func draw(on frame: Frame) -> Bool {
        guard let box, let bgr = frame.bgr else { return false }
        let b = cvis_face_box(x: Float(box.x), y: Float(box.y), width: Float(box.width), height: Float(box.height), score: 1)
        let width = Int32(frame.width), height = Int32(frame.height)
        if let flat = landmarks?.flat {
            _ = flat.withUnsafeBufferPointer { cvis_face_draw(bgr.pointer, width, height, b, $0.baseAddress) }
        } else {
            _ = cvis_face_draw(bgr.pointer, width, height, b, nil)
        }
        return true
    }
}
