import BiometricVocabulary

/// What one finger capture keeps across its frames, the same whichever detector finds the
/// fingers (`FingerCapture`, and `ClassicalFingerCapture` as its baseline): the best print of
/// each finger, the liveness evidence, and the distance scale of the frame size in use.
struct CaptureKeeper {
    private let calibration: DistanceCalibration
    private let mode: CaptureMode
    private var scale: (width: Int, height: Int, scale: DistanceScale)?
    private var best: [FingerPosition: CapturedPrint] = [:]
    var liveness: FingerLiveness

    init(options: FingerCaptureOptions) {
        calibration = options.distance ?? .default
        mode = options.mode
        liveness = FingerLiveness(level: options.liveness)
    }

    /// The distance scale for frames of this size (computed once per size).
    mutating func distanceScale(frameWidth: Int, frameHeight: Int) -> DistanceScale {
        if let scale, scale.width == frameWidth, scale.height == frameHeight { return scale.scale }
        let s = calibration.scale(frameWidth: frameWidth, frameHeight: frameHeight, mode: mode)
        scale = (frameWidth, frameHeight, s)
        return s
    }

    /// Keeps the print `image` makes when `quality` beats the finger's best so far (the image is
    /// only made then; one that cannot be made is not kept).
    mutating func offer(_ position: FingerPosition, quality: Int, box: FingerBox, image: () throws -> FingerprintImage) {
        guard quality > (best[position]?.quality ?? -1), let print = try? image() else { return }
        best[position] = CapturedPrint(position: position, image: print, quality: quality, box: box)
    }

    /// The best print of each finger seen so far, index→little (or the thumb).
    var bestPrints: [CapturedPrint] { best.values.sorted { $0.position.digit < $1.position.digit } }

    /// Forgets the best prints and the liveness evidence (a new capture, or an enrolment round).
    mutating func startNewCapture() {
        liveness.reset()
        best.removeAll()
    }
}
