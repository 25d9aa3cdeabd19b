import BiometricCore
import BiometricProtocol

extension FingerFrameAnalysis {
    /// The live preview of `frame` (issue 25): the frame downscaled to `width`, with each
    /// fingertip's box (before rotation, as in the event) in the preview's coordinates.
    public func preview(of frame: Frame, width: Int) throws(ImageEncodeError) -> FramePreview {
        let scale = PreviewScale(frame: FrameSize(width: frame.width, height: frame.height), width: width)
        let jpeg = try frame.previewJPEG(width: scale.preview.width, height: scale.preview.height)
        return FramePreview(jpeg: jpeg, width: scale.preview.width, height: scale.preview.height,
                            fingers: fingers.map { scale.rect(x: $0.box.x, y: $0.box.y, width: $0.box.width, height: $0.box.height) })
    }
}
