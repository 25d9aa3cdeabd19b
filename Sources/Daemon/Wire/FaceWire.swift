import BiometricCore
import BiometricFace
import BiometricProtocol

// Where the face domain meets the wire: the SPEC §5 face.frame event and its preview built from
// a session's observations. Face speaks only the shared vocabulary (BiometricVocabulary); what the
// wire adds — whole-pixel boxes, tenths of a degree, rounding, the preview's coordinates — is
// decided here, once.

extension FaceObservation {
    /// This frame's part of the SPEC §5 face.frame event (the session adds liveness and counts).
    public var event: FaceFrameEvent {
        func tenth(_ v: Double) -> Double { (v * 10).rounded() / 10 }
        return FaceFrameEvent(
            box: box?.pixelRect,
            yaw: pose.map { tenth($0.yaw) }, pitch: pose.map { tenth($0.pitch) }, roll: pose.map { tenth($0.roll) },
            quality: qualityScore, brightness: measures.map { $0.brightness.rounded() },
            sharpness: measures.map { $0.sharpness.rounded() }, feedback: feedback,
            faces: faceCount > 1 ? faceCount : nil)
    }

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

extension FaceProgress {
    /// The SPEC §5 face.frame event.
    public var event: FaceFrameEvent {
        var e = observation.event
        e.livenessAction = livenessAction
        e.livenessScore = livenessScore
        e.countdownS = countdown
        e.extraction = extraction
        e.framesCaptured = captured
        e.framesNeeded = needed
        return e
    }
}

extension FaceBox {
    /// The box in whole pixels, as the protocol reports it (truncated, as before).
    public var pixelRect: PixelRect { PixelRect(x: Int(x), y: Int(y), width: Int(width), height: Int(height)) }
}
