import BiometricCamera
import BiometricCore
@testable import BiometricFinger
import BiometricProtocol
import CFingerVision
import CHandScene
import CImaging
import Foundation
import XCTest
import TestRequirements

/// The camera side on rendered scenes (an open hand whose fingertips carry real FVC2002 prints):
/// finding and naming fingers, distance feedback, quality, contact prints, liveness.
///
/// The hand models must see the whole hand before it is close enough for prints (at 180 px a
/// finger at 1280×720 the palm is below the frame), as a user brings a hand toward a camera: in
/// mode fingers `run` first shows the hand approaching from 60 px fingers.
final class CaptureTests: XCTestCase {
    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    static let prints = repo + "/../shared/data/fingers/fvc2002_db2_b/images"
    static let hands = repo + "/../shared/data/hands"

    /// The hand models from ./models (scripts/setup.sh installs them), loaded once.
    nonisolated(unsafe) static var loadedModels: HandModels?
    static func handModels() throws -> HandModels {
        if let loadedModels { return loadedModels }
        guard let models = try? HandModels(folder: repo + "/models") else {
            throw missing("hand models not installed in \(repo)/models: run scripts/setup.sh")
        }
        loadedModels = models
        return models
    }

    // MARK: Scenes

    struct Scene {
        var hand: Hand = .right
        var thumb = false
        var fingerWidth: Float = 180
        var attack: cvis_scene_attack = CVIS_SCENE_LIVE
        var empty = false
        var blur: Float = 0
        var amputated: Set<Digit> = []
        var prints = ["101_1", "102_1", "103_1", "104_1"]
        var tipY: Float = 0.1
    }

    /// Decoded FVC prints (grey), by name.
    nonisolated(unsafe) static var printCache: [String: (Int32, Int32, [UInt8])] = [:]

    static func loadPrint(_ name: String) throws -> (Int32, Int32, [UInt8]) {
        if let cached = Self.printCache[name] { return cached }
        let path = "\(Self.prints)/\(name).tif"
        guard FileManager.default.fileExists(atPath: path) else { throw missing("FVC2002 prints not found at \(Self.prints)") }
        var status = CVIS_OK
        let image = try XCTUnwrap(cvis_image_read(path, 0, &status))
        defer { cvis_image_free(image) }
        let w = cvis_image_width(image), h = cvis_image_height(image)
        var grey = [UInt8](repeating: 0, count: Int(w * h))
        XCTAssertEqual(cvis_image_copy(image, &grey, nil), CVIS_OK)
        Self.printCache[name] = (w, h, grey)
        return (w, h, grey)
    }

    /// Renders frame `index` of a scene as a colour camera frame.
    static func frame(_ scene: Scene, index: Int, width: Int32 = 1280, height: Int32 = 720) throws -> Frame {
        let printData = try scene.prints.map(Self.loadPrint)
        var p = cvis_scene_params()
        p.width = width
        p.height = height
        p.right_hand = scene.hand == .right ? 1 : 0
        p.thumb_mode = scene.thumb ? 1 : 0
        p.finger_width = scene.fingerWidth
        p.tip_x = 0.5
        p.tip_y = scene.thumb ? 0.12 : scene.tipY
        p.blur_sigma = scene.blur
        p.attack = Int32(scene.attack.rawValue)
        p.empty = scene.empty ? 1 : 0
        p.absent = scene.amputated.reduce(0) { $0 | (1 << UInt32($1.order)) }
        p.seed = 7
        p.frame_index = UInt32(index)
        p.print_ppi = 569
        var bgr = [UInt8](repeating: 0, count: Int(width * height * 3))
        // All prints in one buffer, so one pointer scope covers them.
        let joined = printData.flatMap(\.2)
        var offsets: [Int] = []
        var offset = 0
        for d in printData {
            offsets.append(offset)
            offset += d.2.count
        }
        let status: cvis_status = joined.withUnsafeBufferPointer { all in
            withUnsafeMutableBytes(of: &p.prints) { raw in
                let slots = raw.bindMemory(to: UnsafePointer<UInt8>?.self)
                for (i, o) in offsets.enumerated() { slots[i] = all.baseAddress! + o }
            }
            withUnsafeMutableBytes(of: &p.print_width) { raw in
                for (i, d) in printData.enumerated() { raw.bindMemory(to: Int32.self)[i] = d.0 }
            }
            withUnsafeMutableBytes(of: &p.print_height) { raw in
                for (i, d) in printData.enumerated() { raw.bindMemory(to: Int32.self)[i] = d.1 }
            }
            return cvis_hand_render_scene(&p, &bgr)
        }
        XCTAssertEqual(status, CVIS_OK, String(cString: cvis_last_error()))
        let pool = PixelBufferPool(limit: 0)
        let grey = pool.buffer(count: Int(width * height))
        let colour = PixelBufferPool(limit: 0).buffer(count: Int(width * height * 3))
        let fourcc = UInt32(66) | UInt32(71) << 8 | UInt32(82) << 16 | UInt32(51) << 24 // BGR3
        XCTAssertEqual(cvis_convert_frame(fourcc, bgr, bgr.count, width, height, 0, grey.pointer, colour.pointer), CVIS_OK)
        return Frame(width: Int(width), height: Int(height), grey: grey, bgr: colour, timestampNs: UInt64(index) * 33_000_000,
                     sequence: UInt64(index), isInfrared: false)
    }

    /// Analyses `count` frames of a scene (in mode fingers after the hand's approach, whose
    /// frames are not returned); returns the analyses.
    func frame(_ scene: Scene, index: Int, width: Int32 = 1280, height: Int32 = 720) throws -> Frame {
        try Self.frame(scene, index: index, width: width, height: height)
    }

    func run(_ scene: Scene, frames count: Int = 3, options: FingerCaptureOptions, capture: FingerCapture? = nil)
        throws -> (FingerCapture, [FingerFrameAnalysis])
    {
        try Self.run(scene, frames: count, options: options, capture: capture)
    }

    static func run(_ scene: Scene, frames count: Int = 3, options: FingerCaptureOptions, capture: FingerCapture? = nil)
        throws -> (FingerCapture, [FingerFrameAnalysis])
    {
        let capture = try capture ?? FingerCapture(options: options, models: Self.handModels())
        if options.mode == .fingers, !scene.empty {
            for (i, width) in stride(from: Float(60), to: scene.fingerWidth, by: 10).enumerated() {
                var far = scene
                far.fingerWidth = width
                _ = capture.analyse(try frame(far, index: 100 + i))
            }
            // The capture proper starts with the hand close: what the approach left (prints of
            // far frames, liveness evidence) is forgotten, the hand stays followed.
            capture.startNewCapture()
        }
        var analyses: [FingerFrameAnalysis] = []
        for i in 0..<count { analyses.append(capture.analyse(try frame(scene, index: i))) }
        return (capture, analyses)
    }

    // MARK: Finding and naming fingers

    func testRightHandFourFingersIndexToLittle() throws {
        let (_, analyses) = try run(Scene(hand: .right), options: FingerCaptureOptions(hand: .right, liveness: .none))
        for analysis in analyses {
            XCTAssertEqual(analysis.fingers.map(\.position.name), ["right_index", "right_middle", "right_ring", "right_little"])
            // Palm toward the camera: a right hand's index is on the image's right.
            let xs = analysis.fingers.map(\.box.centreX)
            XCTAssertEqual(xs, xs.sorted(by: >))
            // Widths as rendered (middle 180 px; index 17 mm, ring 16, little 14.5 at 180/17 px/mm).
            let widths = analysis.fingers.map(\.box.width)
            for (w, expected) in zip(widths, [180.0, 180, 169.4, 153.5]) {
                XCTAssertEqual(w, expected, accuracy: expected * 0.12)
            }
            // Fingers up, fanned: angles within ±25° of vertical, boxes in the upper half.
            for f in analysis.fingers {
                XCTAssertLessThan(abs(f.box.angle), 25)
                XCTAssertLessThan(f.box.centreY, 500)
            }
            XCTAssertEqual(analysis.feedback, .optimal)
        }
    }

    func testLeftHandFourFingersIndexToLittle() throws {
        let (_, analyses) = try run(Scene(hand: .left), frames: 2, options: FingerCaptureOptions(hand: .left, liveness: .none))
        for analysis in analyses {
            XCTAssertEqual(analysis.fingers.map(\.position.name), ["left_index", "left_middle", "left_ring", "left_little"])
            let xs = analysis.fingers.map(\.box.centreX)
            XCTAssertEqual(xs, xs.sorted(by: <))
        }
    }

    func testAmputatedFingerIsLeftOut() throws {
        let options = FingerCaptureOptions(hand: .right, amputated: [.middle], liveness: .none)
        let (_, analyses) = try run(Scene(hand: .right, amputated: [.middle]), frames: 2, options: options)
        for analysis in analyses {
            XCTAssertEqual(analysis.fingers.map(\.position.digit), [.index, .ring, .little])
        }
    }

    func testThumbModeGivesOneBox() throws {
        let options = FingerCaptureOptions(mode: .thumb, hand: .right, liveness: .none)
        let (capture, analyses) = try run(Scene(thumb: true, fingerWidth: 160, prints: ["105_1"]), frames: 2, options: options)
        for analysis in analyses {
            XCTAssertEqual(analysis.fingers.map(\.position.name), ["right_thumb"])
            XCTAssertLessThan(abs(analysis.fingers[0].box.angle - 12), 10) // rendered at 12° clockwise
        }
        XCTAssertEqual(capture.bestPrints().map(\.position.name), ["right_thumb"])
    }

    func testEmptyFrameHasNoFingers() throws {
        let (capture, analyses) = try run(Scene(empty: true), frames: 2, options: FingerCaptureOptions(liveness: .medium))
        for analysis in analyses {
            XCTAssertTrue(analysis.fingers.isEmpty)
            XCTAssertNil(analysis.distance)
            XCTAssertEqual(analysis.feedback, .noFingers)
        }
        XCTAssertTrue(capture.bestPrints().isEmpty)
        XCTAssertEqual(capture.livenessVerdict(), .noDecision)
    }

    // MARK: Distance

    func testDistanceFeedbackFollowsFingerWidth() throws {
        let options = FingerCaptureOptions(liveness: .none)
        let far = try run(Scene(fingerWidth: 70), frames: 1, options: options).1[0]
        let optimal = try run(Scene(fingerWidth: 180), frames: 1, options: options).1[0]
        let close = try run(Scene(fingerWidth: 290, tipY: 0.05), frames: 1, options: options).1[0]
        XCTAssertEqual(far.feedback, .tooFar)
        XCTAssertEqual(optimal.feedback, .optimal)
        XCTAssertEqual(close.feedback, .tooClose)
        let d = try [far, optimal, close].map { try XCTUnwrap($0.distance) }
        XCTAssertGreaterThan(d[0], d[1])
        XCTAssertGreaterThan(d[1], d[2])
        let r = optimal.distanceRange
        XCTAssertTrue((r.optimalMin...r.optimalMax).contains(d[1]))
        XCTAssertGreaterThan(d[0], r.optimalMax)
        XCTAssertLessThan(d[2], r.optimalMin)
    }

    /// Prints are unrolled as far as the ridges stay resolved (period × cos φ ≥ the gate's 4 px),
    /// never less than 60° nor more than 80°.
    func testPrintsAreUnrolledAsFarAsTheRidgesAreResolved() {
        XCTAssertEqual(FingerCapture.unrollDegrees(ridgePeriod: 5), 60, "a finger near the gate's limit: 60°")
        XCTAssertEqual(FingerCapture.unrollDegrees(ridgePeriod: 8), 60, accuracy: 1e-4)
        XCTAssertEqual(FingerCapture.unrollDegrees(ridgePeriod: 16), 75.52, accuracy: 0.01, "a sharp close-up")
        XCTAssertEqual(FingerCapture.unrollDegrees(ridgePeriod: 40), 80, "never seen edge-on")
        let periods = stride(from: 4.0, through: 30, by: 0.5).map { FingerCapture.unrollDegrees(ridgePeriod: $0) }
        XCTAssertEqual(periods, periods.sorted(), "ridges seen larger never unroll less far")
    }

    func testDistanceRangeIsMonotonic() {
        let cameras = [DistanceCalibration(), DistanceCalibration(horizontalFOVDegrees: 60, minimumFocusMM: 100),
                       DistanceCalibration(horizontalFOVDegrees: 78, minimumFocusMM: 300),
                       DistanceCalibration(optimalFingerWidthPixels: 120...200)]
        for camera in cameras {
            for (w, h) in [(640, 480), (1280, 720), (1920, 1080), (3840, 2160)] {
                for mode in CaptureMode.allCases {
                    let scale = camera.scale(frameWidth: w, frameHeight: h, mode: mode)
                    let r = scale.range
                    XCTAssertLessThan(r.min, r.optimalMin, "\(camera) \(w)x\(h) \(mode)")
                    XCTAssertLessThanOrEqual(r.optimalMin, r.optimalMax, "\(camera) \(w)x\(h) \(mode)")
                    XCTAssertLessThan(r.optimalMax, r.max, "\(camera) \(w)x\(h) \(mode)")
                    XCTAssertTrue(r.min >= 0 && r.max <= 1)
                    // Wider finger = closer = smaller distance.
                    var last = 2.0
                    for width in stride(from: 20.0, through: 800, by: 20) {
                        let d = scale.distance(fingerWidth: width)
                        XCTAssertLessThanOrEqual(d, last)
                        last = d
                    }
                }
            }
        }
        // 4 px per 0.45 mm ridge on a 17 mm finger: 151 px, whatever the camera.
        let hd = DistanceCalibration().scale(frameWidth: 1920, frameHeight: 1080, mode: .fingers)
        XCTAssertEqual(hd.optimalMinWidth, 17 / 0.45 * 4, accuracy: 0.5)
        // A fixed-focus webcam (focus ≥ 300 mm) cannot reach it at 1280 px: the optimum collapses.
        let webcam = DistanceCalibration(horizontalFOVDegrees: 78, minimumFocusMM: 300)
            .scale(frameWidth: 1280, frameHeight: 720, mode: .fingers)
        XCTAssertEqual(webcam.optimalMinWidth, webcam.optimalMaxWidth)
        XCTAssertLessThan(webcam.optimalMaxWidth, 151)
    }

    // MARK: Quality and prints

    func testSharpScoresHigherThanBlurred() throws {
        let options = FingerCaptureOptions(liveness: .none)
        let sharp = try run(Scene(), frames: 1, options: options).1[0]
        let blurred = try run(Scene(blur: 2.5), frames: 1, options: options).1[0]
        XCTAssertEqual(sharp.fingers.count, 4)
        XCTAssertEqual(blurred.fingers.count, 4)
        let sharpMean = Double(sharp.fingers.map(\.quality).reduce(0, +)) / 4
        let blurredMean = Double(blurred.fingers.map(\.quality).reduce(0, +)) / 4
        XCTAssertGreaterThan(sharpMean, blurredMean + 30, "sharp \(sharp.fingers.map(\.quality)) blurred \(blurred.fingers.map(\.quality))")
        XCTAssertTrue(sharp.fingers.allSatisfy { $0.level == .high }, "\(sharp.fingers.map(\.quality))")
        XCTAssertTrue(blurred.fingers.allSatisfy { $0.level == .low }, "\(blurred.fingers.map(\.quality))")
    }

    func testContactPrintsAre500PPIWithMaskAndDarkRidges() throws {
        let (capture, _) = try run(Scene(), frames: 3, options: FingerCaptureOptions(liveness: .none))
        let prints = capture.bestPrints()
        XCTAssertEqual(prints.map(\.position.digit), [.index, .middle, .ring, .little])
        for p in prints {
            let image = p.image
            XCTAssertEqual(image.ppi, 500)
            // Scaled by its own ridges: their period is the 500-ppi period prints are made at.
            let finger = image.pixels.map { $0 == 255 ? UInt8(0) : 255 }
            var status = CVIS_OK, area: Float = 0
            let period = cvis_ridge_period(image.pixels, finger, Int32(image.width), Int32(image.height), &area, &status)
            // (±12 %: a fingerprint's ridge period itself varies that much between the pad's centre,
            // where it is measured in the frame, and the rest of the print.)
            XCTAssertEqual(Double(period), Double(FingerCapture.printRidgePeriod), accuracy: 1.0, "\(p.position)")
            XCTAssertGreaterThan(area, 0.6)
            // Then sized by its own ridges measured finely over the whole print.
            let fine = cvis_print_ridge_period(image.pixels, finger, Int32(image.width), Int32(image.height), &status)
            XCTAssertEqual(Double(fine), Double(FingerCapture.printFinePeriod), accuracy: 0.03 * Double(FingerCapture.printFinePeriod), "\(p.position)")
            // No separate mask: the background is white in the pixels (what the PNG holds).
            XCTAssertNil(image.mask)
            let inside = image.pixels.filter { $0 != 255 }.map(Int.init)
            XCTAssertGreaterThan(Double(inside.count) / Double(image.pixels.count), 0.5)
            XCTAssertEqual(image.pixels[0], 255, "the corner above the rounded tip is background")
            // Ridges dark on light valleys: both populations present, around mid-grey.
            let dark = inside.filter { $0 < 100 }.count, light = inside.filter { $0 > 156 }.count
            XCTAssertGreaterThan(dark, inside.count / 6)
            XCTAssertGreaterThan(light, inside.count / 6)
            // The ridge pattern is there: orientation coherent at the 500-ppi ridge frequency.
            var q = cvis_print_quality()
            XCTAssertEqual(cvis_hand_print_quality(image.pixels, finger, Int32(image.width), Int32(image.height), &q), CVIS_OK)
            XCTAssertGreaterThan(q.coherence, 0.55)
            XCTAssertGreaterThan(p.quality, 60)
        }
    }

    func testContactPrintHasRidgesWhereTheSourcePrintHasThem() throws {
        // Polarity: the rendered ridges are darker skin, so the camera print must correlate
        // positively with the source print when both are band-passed — checked by rendering the
        // same scene with and without ridges: only the print with ridges has ridge coherence.
        let plain = try run(Scene(prints: []), frames: 1, options: FingerCaptureOptions(liveness: .none)).1[0]
        let ridged = try run(Scene(), frames: 1, options: FingerCaptureOptions(liveness: .none)).1[0]
        XCTAssertEqual(plain.fingers.count, 4)
        XCTAssertGreaterThan(ridged.fingers.map(\.quality).min()!, plain.fingers.map(\.quality).max()! + 30)
    }

    func testCameraPrintsFeedTheMinutiaExtractorAndMatchTheirFinger() throws {
        // The seam to the print side: camera prints (rendered from impression 1 of FVC fingers
        // 101–104) must give minutiae, and match impression 2 of the same finger better than
        // impression 2 of another finger.
        let (capture, _) = try run(Scene(), frames: 3, options: FingerCaptureOptions(liveness: .none))
        let prints = capture.bestPrints()
        XCTAssertEqual(prints.count, 4)
        let extractor = FingerprintExtractor()
        let matcher = FingerMatcher()
        var genuine: [Double] = [], impostor: [Double] = []
        let fingers = ["101", "102", "103", "104"]
        let contact = try fingers.map { name -> FingerTemplate in
            let (w, h, pixels) = try Self.loadPrint("\(name)_2")
            return try extractor.extract(try FingerprintImage(width: Int(w), height: Int(h), pixels: pixels, ppi: 569))
        }
        for (i, p) in prints.enumerated() {
            let template = try extractor.extract(p.image, position: p.position)
            XCTAssertGreaterThanOrEqual(template.minutiae.count, 12, "\(p.position)")
            for (j, reference) in contact.enumerated() {
                let score = matcher.score(probe: template, reference: reference)
                if i == j { genuine.append(score) } else { impostor.append(score) }
            }
        }
        print("camera print vs contact impression 2: genuine \(genuine), impostor \(impostor)")
        // Each camera print scores its own finger above every other finger.
        for i in 0..<4 {
            let others = impostor[(i * 3)..<(i * 3 + 3)]
            XCTAssertGreaterThan(genuine[i], others.max()!, "finger \(fingers[i]): genuine \(genuine[i]) impostors \(Array(others))")
        }
    }

    // MARK: Liveness

    func testPaperAttackIsFakeAndLiveHandIsLiveAtMedium() throws {
        let options = FingerCaptureOptions(liveness: .medium)
        let live = try run(Scene(), frames: 5, options: options).0
        let paper = try run(Scene(attack: CVIS_SCENE_PAPER), frames: 5, options: options).0
        let screen = try run(Scene(attack: CVIS_SCENE_SCREEN), frames: 5, options: options).0
        XCTAssertEqual(live.livenessVerdict(), .live)
        XCTAssertEqual(paper.livenessVerdict(), .fake)
        XCTAssertEqual(screen.livenessVerdict(), .fake)
    }

    /// A loaded machine analyses one frame in ten: the hand can jump between two analysed frames.
    /// What lies where the fingertips were (the palm of the hand now far away, the background) must
    /// not be followed as fingertips: its flat shading would be liveness evidence against a live hand.
    func testAHandThatJumpsAwayIsLookedForAfreshNotFollowed() throws {
        let (capture, close) = try run(Scene(fingerWidth: 190), frames: 3, options: FingerCaptureOptions(liveness: .medium))
        XCTAssertEqual(close.last?.fingers.count, 4, "the close hand is followed")
        // The hand is suddenly far (fingers 70–110 px): every fingertip found is of that hand.
        for (i, width) in [Float(70), 90, 110].enumerated() {
            let far = capture.analyse(try frame(Scene(fingerWidth: width), index: 200 + i))
            for finger in far.fingers {
                XCTAssertLessThan(finger.box.width, Double(width) * 1.5,
                                  "frame \(i) (fingers \(width) px): \(finger.position.name) is \(Int(finger.box.width)) px wide, followed from the close hand")
            }
        }
        for i in 0..<5 { _ = capture.analyse(try frame(Scene(fingerWidth: 190), index: 300 + i)) }
        XCTAssertEqual(capture.livenessVerdict(), .live)
    }

    func testLivenessNeedsFramesAndNoneDecidesNothing() throws {
        let one = try run(Scene(), frames: 1, options: FingerCaptureOptions(liveness: .low)).0
        XCTAssertEqual(one.livenessVerdict(), .noDecision)
        let none = try run(Scene(attack: CVIS_SCENE_PAPER), frames: 3, options: FingerCaptureOptions(liveness: .none)).0
        XCTAssertEqual(none.livenessVerdict(), .noDecision)
    }
}
