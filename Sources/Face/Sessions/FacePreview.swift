import BiometricCore
import BiometricProtocol

extension FaceObservation {
    /// The live preview of `frame` (issue 25): the frame downscaled to `width`, with this
    /// observation's face box and 68 landmarks in the preview's coordinates, so a greeter draws
    /// them over the image as they are.
    public func preview(of frame: Frame, width: Int) throws(ImageEncodeError) -> FramePreview {
        let scale = PreviewScale(frame: FrameSize(width: frame.width, height: frame.height), width: width)
        let jpeg = try frame.previewJPEG(width: scale.preview.width, height: scale.preview.height)
        return FramePreview(jpeg: jpeg, width: scale.preview.width, height: scale.preview.height,
                            box: box.map { scale.rect(x: $0.x, y: $0.y, width: $0.width, height: $0.height) },
                            landmarks: box == nil ? [] : (landmarks?.points ?? []).map { scale.point(x: $0.x, y: $0.y) })
    }
}
