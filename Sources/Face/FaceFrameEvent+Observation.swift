import BiometricProtocol

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
}

extension FaceBox {
    /// The box in whole pixels, as the protocol reports it (truncated, as before).
    public var pixelRect: PixelRect { PixelRect(x: Int(x), y: Int(y), width: Int(width), height: Int(height)) }
}

extension LivenessAction {
    /// The action that asks for a challenge move.
    public init(_ move: ChallengeLiveness.Action) {
        switch move {
        case .turnLeft: self = .turnLeft
        case .turnRight: self = .turnRight
        case .lookUp: self = .lookUp
        case .nod: self = .nod
        }
    }
}
