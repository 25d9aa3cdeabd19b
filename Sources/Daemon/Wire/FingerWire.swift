import BiometricCore
import BiometricFinger
import BiometricProtocol

// Where the finger domain meets the wire: the SPEC §5 finger.frame event, its preview, and the
// boxes finger.capture reports, built from the capture's analyses. Finger speaks only the shared
// vocabulary (BiometricVocabulary); the wire's rounding and whole pixels are decided here, once.

extension FingerFrameAnalysis {
    /// The SPEC §5 finger.frame event, with the session's counts.
    public func event(captured: Int, needed: Int) -> FingerFrameEvent {
        FingerFrameEvent(
            fingers: fingers.map { f in
                FingerFrameEvent.Finger(position: f.position.name, box: f.box.pixelRect, angle: f.box.wire.angle,
                                        quality: f.level)
            },
            distance: distance.map { ($0 * 1000).rounded() / 1000 }, distanceRange: distanceRange, feedback: feedback,
            framesCaptured: captured, framesNeeded: needed)
    }

    /// The live preview of `frame` (issue 25): the frame downscaled to `width`, with each
    /// fingertip's box (before rotation, as in the event) in the preview's coordinates.
    public func preview(of frame: Frame, width: Int) throws(ImageEncodeError) -> FramePreview {
        let scale = PreviewScale(frame: FrameSize(width: frame.width, height: frame.height), width: width)
        let jpeg = try frame.previewJPEG(width: scale.preview.width, height: scale.preview.height)
        return FramePreview(jpeg: jpeg, width: scale.preview.width, height: scale.preview.height,
                            fingers: fingers.map { scale.rect(x: $0.box.x, y: $0.box.y, width: $0.box.width, height: $0.box.height) })
    }
}

extension FingerBox {
    /// The box before rotation, in whole pixels.
    public var pixelRect: PixelRect {
        PixelRect(x: Int(x.rounded()), y: Int(y.rounded()), width: Int(width.rounded()), height: Int(height.rounded()))
    }

    /// The box as results report it (finger.capture), its angle to a tenth of a degree.
    public var wire: FingerBoxWire {
        let r = pixelRect
        return FingerBoxWire(x: r.x, y: r.y, width: r.width, height: r.height, angle: (angle * 10).rounded() / 10)
    }
}
