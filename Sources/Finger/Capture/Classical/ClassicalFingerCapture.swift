import BiometricCore
import BiometricVocabulary
import CFingerVision
import Foundation

/// The camera side as it was before the hand models (issue 34): skin masks and finger outlines
/// find and name the fingers, prints are scaled from a nominal finger width. Kept only as the
/// baseline `biometricd-finger-bench camera` measures `FingerCapture` against in the same run
/// (Docs/finger-camera.md); the daemon does not use it.
///
/// One per capture, used from one thread at a time (native scratch buffers: not Sendable).
public final class ClassicalFingerCapture {
    public let options: FingerCaptureOptions
    private let engine: OpaquePointer
    private var tracker = FingerBoxSmoother()
    private var kept: CaptureKeeper
    /// Detector output, reused every frame.
    private let found = UnsafeMutableBufferPointer<cvis_finger>.allocate(capacity: 16)
    /// Print scratch per digit (output pixels, mask), reused every frame.
    private var scratch: [Digit: (pixels: [UInt8], mask: [UInt8])] = [:]

    /// Bounding box (angle 0) of the skin region holding the fingers in the last analysed frame,
    /// nil when none was found: the "hand box" (for benchmarks against annotated hand boxes).
    public private(set) var handRegion: FingerBox?

    /// Resolution of the prints made (the print side's extractor expects 500 ppi).
    public static let printPPI = 500

    public init(options: FingerCaptureOptions) {
        self.options = options
        kept = CaptureKeeper(options: options)
        var status = CVIS_OK
        // Creating an engine only allocates an empty struct; failure means out of memory.
        engine = cvis_hand_engine_create(&status)!
    }

    deinit {
        cvis_hand_engine_free(engine)
        found.deallocate()
    }

    /// Forgets tracks, best prints and liveness evidence (a new capture with the same options).
    public func reset() {
        tracker.reset()
        kept.startNewCapture()
    }

    public func bestPrints() -> [CapturedPrint] { kept.bestPrints }
    public func livenessVerdict() -> LivenessVerdict { kept.liveness.verdict }
    public func distanceScale(frameWidth: Int, frameHeight: Int) -> DistanceScale {
        kept.distanceScale(frameWidth: frameWidth, frameHeight: frameHeight)
    }

    public func analyse(_ frame: Frame) -> FingerFrameAnalysis {
        let distanceScale = distanceScale(frameWidth: frame.width, frameHeight: frame.height)
        let noFingers = FingerFrameAnalysis(fingers: [], distance: nil, distanceRange: distanceScale.range, feedback: .noFingers)
        let colourPlane = frame.bgr
        let view = cvis_image_view(pixels: colourPlane?.pointer ?? frame.grey.pointer, width: Int32(frame.width),
                                   height: Int32(frame.height), channels: colourPlane == nil ? 1 : 3)
        var status = CVIS_OK
        let count = cvis_hand_find_fingers(engine, view, 0, 0, found.baseAddress, Int32(found.count), &status)
        var stats = cvis_hand_stats()
        handRegion = count > 0 && cvis_hand_last_stats(engine, &stats) == CVIS_OK && stats.hand_width > 0
            ? FingerBox(x: Double(stats.hand_x), y: Double(stats.hand_y), width: Double(stats.hand_width),
                        height: Double(stats.hand_height), angle: 0)
            : nil
        guard count > 0 else {
            _ = tracker.update([])
            return noFingers
        }
        let candidates = (0..<Int(count)).map { ClassicalCandidate(found[$0]) }
        let named = ClassicalFingerSelection.select(candidates, options: options, tracked: tracker.boxes)
        guard !named.isEmpty else {
            _ = tracker.update([])
            return noFingers
        }
        let smoothed = tracker.update(named.map { ($0.0, $0.1.box) })
        let grey = cvis_image_view(pixels: frame.grey.pointer, width: Int32(frame.width), height: Int32(frame.height),
                                   channels: 1)

        var observations: [FingerObservation] = []
        var shading: [Double] = []
        var periodic: [Double] = []
        var equivalentWidths: [Double] = []
        for (position, candidate) in named {
            let box = candidate.box // this frame's, for the print (the smoothed one lags)
            let quality = makePrint(position: position, box: box, grey: grey)
            let shown = smoothed[position] ?? box
            observations.append(FingerObservation(position: position, box: shown, quality: quality ?? 0,
                                                  level: QualityLevel(quality: quality)))
            let nominal = Double(cvis_hand_nominal_width_mm(Int32(position.digit.order)))
            equivalentWidths.append(candidate.width * DistanceCalibration.nominalWidthMM / nominal)
            if let ratio = candidate.shadingRatio { shading.append(ratio) }
            if options.liveness == .medium {
                let p = cvis_hand_region_periodicity(grey, box.native, &status)
                if p >= 1 { periodic.append(Double(p)) } // 0: not measurable at this distance
            }
        }
        if options.liveness != .none {
            let colour: (Double, Double)? = colourPlane != nil ? (Double(stats.mean_saturation), Double(stats.mean_cr)) : nil
            kept.liveness.add(colour: colour, shadingRatios: shading, periodicities: periodic)
        }
        let width = equivalentWidths.reduce(0, +) / Double(equivalentWidths.count)
        return FingerFrameAnalysis(fingers: observations, distance: distanceScale.distance(fingerWidth: width),
                                   distanceRange: distanceScale.range, feedback: distanceScale.feedback(fingerWidth: width))
    }

    /// Cuts the fingertip out as a 500-ppi contact-like print into the digit's scratch buffers;
    /// keeps it when it is the best of its finger so far. Returns its quality (nil: not measurable).
    private func makePrint(position: FingerPosition, box: FingerBox, grey: cvis_image_view) -> Int? {
        // Output width = the finger's nominal width at 500 ppi; scale = that over the measured width.
        let nominalMM = Double(cvis_hand_nominal_width_mm(Int32(position.digit.order)))
        let outWidth = Int((nominalMM / 25.4 * Double(Self.printPPI)).rounded())
        let outHeight = Int((Double(outWidth) * box.height / box.width).rounded())
        guard box.width > 4, FingerprintImage.sideRange.contains(outWidth), FingerprintImage.sideRange.contains(outHeight)
        else { return nil }
        let scale = Float(Double(outWidth) / box.width)
        var buffers = scratch[position.digit] ?? ([], [])
        scratch[position.digit] = nil // keep the arrays uniquely referenced while writing
        if buffers.pixels.count != outWidth * outHeight {
            buffers = ([UInt8](repeating: 0, count: outWidth * outHeight), [UInt8](repeating: 0, count: outWidth * outHeight))
        }
        var measures = cvis_print_quality()
        let status = buffers.pixels.withUnsafeMutableBufferPointer { out in
            buffers.mask.withUnsafeMutableBufferPointer { mask in
                cvis_hand_fingertip_print(engine, grey, box.native, scale, out.baseAddress, mask.baseAddress, Int32(outWidth),
                                          Int32(outHeight), &measures)
            }
        }
        defer { scratch[position.digit] = buffers }
        guard status == CVIS_OK else { return nil }
        let quality = FingerQuality.score(measures)
        kept.offer(position, quality: quality, box: box) {
            try FingerprintImage(width: outWidth, height: outHeight, pixels: buffers.pixels, ppi: Self.printPPI, mask: buffers.mask)
        }
        return quality
    }
}

extension FingerBox {
    var native: cvis_rotated_box {
        cvis_rotated_box(cx: Float(centreX), cy: Float(centreY), width: Float(width), height: Float(height), angle: Float(angle))
    }
}
