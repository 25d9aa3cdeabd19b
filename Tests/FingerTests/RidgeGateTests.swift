import BiometricCore
@testable import BiometricFinger
import BiometricProtocol
import CFingerVision
import CImaging
import Foundation
import XCTest
import TestRequirements

/// The ridge gate's rules, and junk fed through the capture: none of it may become a print.
final class RidgeGateTests: XCTestCase {
    // MARK: The rules

    func testResolvedRidgesInTheHumanBandPass() {
        // 180 px finger, 4.6 px ridges (39 across), ridges over 80 % of the pad.
        XCTAssertEqual(RidgeGate.judge(sidesFound: true, width: 180, period: 4.6, area: 0.8, moving: false), .resolved)
    }

    func testTooFewPixelsPerRidgeAsksToComeCloser() {
        XCTAssertEqual(RidgeGate.judge(sidesFound: true, width: 130, period: 3.3, area: 0.9, moving: false), .refused(.moveCloser))
        // A 15-px finger: nothing measurable, and 4 px per ridge would need ~156 px.
        XCTAssertEqual(RidgeGate.judge(sidesFound: true, width: 15, period: 0, area: 0, moving: false), .refused(.moveCloser))
        XCTAssertEqual(RidgeGate.judge(sidesFound: false, width: 27, period: 0, area: 0, moving: false), .refused(.moveCloser))
    }

    func testUnresolvedRidgesAtAResolvableSizeAreFocusOrMotion() {
        XCTAssertEqual(RidgeGate.judge(sidesFound: true, width: 300, period: 0, area: 0, moving: false), .refused(.focus))
        XCTAssertEqual(RidgeGate.judge(sidesFound: true, width: 300, period: 7.5, area: 0.2, moving: true), .refused(.holdStill))
    }

    func testRidgesMustBeResolvedInSourcePixels() {
        // 4-px "ridges" in a frame blown up 4× by repeating pixels are the repetition itself.
        XCTAssertEqual(RidgeGate.judge(sidesFound: true, width: 120, period: 4.0, area: 0.9, moving: false, repeated: 4),
                       .refused(.moveCloser))
        // 20-px ridges in a phone photo upscaled 2× are 10 source pixels apart: resolved.
        XCTAssertEqual(RidgeGate.judge(sidesFound: true, width: 600, period: 20, area: 0.7, moving: false, repeated: 2), .resolved)
    }

    func testRidgesAlongThePixelGridAreNotAFinger() {
        // Most ridge blocks exactly along the rows/columns: JPEG blocks, not skin.
        XCTAssertEqual(RidgeGate.judge(sidesFound: true, width: 250, period: 9.8, area: 0.9, moving: false, gridded: 0.72),
                       .refused(.focus))
        // A real pad has a few blocks there by chance.
        XCTAssertEqual(RidgeGate.judge(sidesFound: true, width: 250, period: 9.8, area: 0.9, moving: false, gridded: 0.28),
                       .resolved)
    }

    func testAPeriodOutsideTheHumanBandIsNotRidges() {
        // 32-px JPEG blocks on a 200-px "finger": 6 periods across.
        XCTAssertEqual(RidgeGate.judge(sidesFound: true, width: 200, period: 32, area: 0.9, moving: false), .refused(.focus))
        // Fine texture on a big blob: 100 periods across.
        XCTAssertEqual(RidgeGate.judge(sidesFound: true, width: 500, period: 5, area: 0.9, moving: false), .refused(.focus))
    }

    // MARK: Junk through the capture

    /// A colour frame from packed BGR bytes.
    func colourFrame(_ bgr: [UInt8], width: Int, height: Int) -> Frame {
        let grey = PixelBufferPool(limit: 0).buffer(count: width * height)
        let colour = PixelBufferPool(limit: 0).buffer(count: width * height * 3)
        let fourcc = UInt32(66) | UInt32(71) << 8 | UInt32(82) << 16 | UInt32(51) << 24 // BGR3
        XCTAssertEqual(cvis_convert_frame(fourcc, bgr, bgr.count, Int32(width), Int32(height), 0, grey.pointer, colour.pointer), CVIS_OK)
        return Frame(width: width, height: height, grey: grey, bgr: colour, timestampNs: 0, sequence: 0, isInfrared: false)
    }

    /// Shows `frame` `count` times to a capture in each mode; fails on any print.
    func assertNoPrint(_ frame: Frame, _ what: String, count: Int = 3, modes: [CaptureMode] = CaptureMode.allCases,
                       file: StaticString = #filePath, line: UInt = #line) throws {
        for mode in modes {
            let capture = FingerCapture(options: FingerCaptureOptions(mode: mode, liveness: .none), models: try CaptureTests.handModels())
            var feedback: [Feedback] = []
            for _ in 0..<count { feedback.append(capture.analyse(frame).feedback) }
            XCTAssertEqual(capture.bestPrints().count, 0, "\(what), mode \(mode): a print was made (measures \(capture.lastMeasures))",
                           file: file, line: line)
            XCTAssertFalse(feedback.contains(.optimal), "\(what), mode \(mode): \(feedback)", file: file, line: line)
        }
    }

    func testNoiseNeverBecomesAPrint() throws {
        var rng = SplitMix64(seed: 5)
        let bytes = (0..<(1280 * 720 * 3)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        try assertNoPrint(colourFrame(bytes, width: 1280, height: 720), "white noise")
        // Smoothed noise: blobs of skin-like size, no ridges.
        let coarse = (0..<(160 * 90 * 3)).map { _ in UInt8.random(in: 60...220, using: &rng) }
        try assertNoPrint(colourFrame(upscaled(coarse, width: 160, height: 90, by: 8, smooth: true), width: 1280, height: 720),
                          "blobby noise")
    }

    /// Nearest-neighbour (blocks) or bilinear upscaling of packed BGR.
    func upscaled(_ bgr: [UInt8], width: Int, height: Int, by k: Int, smooth: Bool = false) -> [UInt8] {
        let w = width * k, h = height * k
        var out = [UInt8](repeating: 0, count: w * h * 3)
        for y in 0..<h {
            for x in 0..<w {
                for c in 0..<3 {
                    let v: Double
                    if smooth {
                        let sx = min(max((Double(x) + 0.5) / Double(k) - 0.5, 0), Double(width - 1))
                        let sy = min(max((Double(y) + 0.5) / Double(k) - 0.5, 0), Double(height - 1))
                        let x0 = Int(sx), y0 = Int(sy), x1 = min(x0 + 1, width - 1), y1 = min(y0 + 1, height - 1)
                        let fx = sx - Double(x0), fy = sy - Double(y0)
                        func p(_ xx: Int, _ yy: Int) -> Double { Double(bgr[(yy * width + xx) * 3 + c]) }
                        v = (p(x0, y0) * (1 - fx) + p(x1, y0) * fx) * (1 - fy) + (p(x0, y1) * (1 - fx) + p(x1, y1) * fx) * fy
                    } else {
                        v = Double(bgr[((y / k) * width + x / k) * 3 + c])
                    }
                    out[(y * w + x) * 3 + c] = UInt8(v.rounded())
                }
            }
        }
        return out
    }

    func testUpscaledJPEGBlocksNeverBecomeAPrint() throws {
        // A webcam photo of an open hand at arm's length (fingers ~30 px), compressed hard (JPEG
        // quality 20) and the hand blown up 4×: fingers ~120 px wide made of 32-px JPEG blocks,
        // no ridges — what the old pipeline turned into "prints". Bilinear (a digital zoom) and
        // pixel repetition.
        let path = CaptureTests.hands + "/subhih_handsdataset/images/2_pic00029.jpg" // hand box 233–440 × 0–281
        guard FileManager.default.fileExists(atPath: path) else { throw missing("\(path) not found") }
        let photo = try Frame(contentsOfFile: path)
        let jpeg = try Frame(encoded: try photo.encoded(as: .jpeg(quality: 20)), maxPixels: 0)
        let (x0, y0, w, h) = (176, 0, 320, 180)
        var crop = [UInt8](repeating: 0, count: w * h * 3)
        let src = try XCTUnwrap(jpeg.bgr).pointer
        for y in 0..<h { for x in 0..<(w * 3) { crop[y * w * 3 + x] = src[(y0 + y) * jpeg.width * 3 + x0 * 3 + x] } }
        for smooth in [false, true] {
            try assertNoPrint(colourFrame(upscaled(crop, width: w, height: h, by: 4, smooth: smooth), width: 4 * w, height: 4 * h),
                              "JPEG blocks upscaled \(smooth ? "bilinear" : "by pixel repetition")")
        }
        // A rendered far hand the same way, by pixel repetition. (Not bilinear: the renderer
        // samples its prints at 30 px without the low-pass a lens gives, and the aliased prints
        // become ridge-like moiré no camera makes.)
        let small = try CaptureTests.frame(CaptureTests.Scene(fingerWidth: 30, tipY: 0.15), index: 0, width: 320, height: 180)
        let decoded = try Frame(encoded: try small.encoded(as: .jpeg(quality: 20)), maxPixels: 0)
        let bgr = Array(UnsafeBufferPointer(start: decoded.bgr!.pointer, count: 320 * 180 * 3))
        try assertNoPrint(colourFrame(upscaled(bgr, width: 320, height: 180, by: 4), width: 1280, height: 720),
                          "a rendered far hand, JPEG, upscaled by pixel repetition")
    }

    func testARidgelessFingerNeverBecomesAPrint() throws {
        // A finger-shaped, skin-coloured blob at print distance with no ridges on it.
        let blob = try CaptureTests.frame(CaptureTests.Scene(thumb: true, fingerWidth: 200, prints: []), index: 0)
        try assertNoPrint(blob, "a ridgeless thumb-sized blob", modes: [.thumb, .single])
        let (capture, analyses) = try CaptureTests.run(CaptureTests.Scene(prints: []), frames: 3, options: FingerCaptureOptions(liveness: .none))
        XCTAssertEqual(capture.bestPrints().count, 0, "ridgeless fingers at print distance")
        XCTAssertEqual(analyses.last?.fingers.count, 4)
        XCTAssertEqual(analyses.last?.feedback, .focus, "ridges should be resolved at 180 px but are not there")
    }

    func testAFifteenPixelFingerNeverBecomesAPrint() throws {
        let (capture, analyses) = try CaptureTests.run(CaptureTests.Scene(fingerWidth: 15, tipY: 0.4), frames: 3,
                                                options: FingerCaptureOptions(liveness: .none))
        XCTAssertEqual(capture.bestPrints().count, 0)
        for a in analyses where !a.fingers.isEmpty {
            XCTAssertTrue([.tooFar, .moveCloser].contains(a.feedback), "\(a.feedback)")
        }
        try assertNoPrint(try CaptureTests.frame(CaptureTests.Scene(fingerWidth: 15, tipY: 0.4), index: 0), "15-px fingers")
    }

    func testNailsAndTheBackOfTheHandNeverBecomeAPrint() throws {
        // 11k Hands photos of the back of a right hand (nails toward the camera).
        for name in ["Hand_0000002.jpg", "Hand_0000084.jpg"] {
            let path = CaptureTests.hands + "/subhih_handsdataset/images/" + name
            guard FileManager.default.fileExists(atPath: path) else { throw missing("\(path) not found") }
            let frame = try Frame(contentsOfFile: path)
            let capture = FingerCapture(options: FingerCaptureOptions(hand: .right, liveness: .none), models: try CaptureTests.handModels())
            let a = capture.analyse(frame)
            XCTAssertEqual(a.fingers.count, 4, name)
            XCTAssertEqual(a.feedback, .showPalm, name)
            XCTAssertEqual(capture.bestPrints().count, 0, name)
            // A nail close-up (the middle fingertip cut out at full resolution and blown up 3×).
            let hand = try XCTUnwrap(capture.lastHand)
            let (tip, _) = HandObservation.tipAndJoint(.middle)
            let cx = Int(hand.x[tip]), cy = Int(hand.y[tip]) + 40, side = 240
            var crop = [UInt8](repeating: 0, count: side * side * 3)
            let src = try XCTUnwrap(frame.bgr).pointer
            for y in 0..<side {
                for x in 0..<side {
                    let fx = min(max(cx - side / 2 + x, 0), frame.width - 1), fy = min(max(cy - side / 2 + y, 0), frame.height - 1)
                    for c in 0..<3 { crop[(y * side + x) * 3 + c] = src[(fy * frame.width + fx) * 3 + c] }
                }
            }
            try assertNoPrint(colourFrame(upscaled(crop, width: side, height: side, by: 3, smooth: true), width: 3 * side, height: 3 * side),
                              "a nail close-up from \(name)", modes: [.single, .thumb])
        }
    }

    func testFacesAndBackgroundsNeverBecomeAPrint() throws {
        let lfw = CaptureTests.repo + "/../shared/data/faces/lfw/images"
        var faces = 0
        for name in ["Tony_Blair/Tony_Blair_0018.jpg", "Aaron_Eckhart/Aaron_Eckhart_0001.jpg"] {
            let path = lfw + "/" + name
            guard FileManager.default.fileExists(atPath: path) else { continue }
            faces += 1
            try assertNoPrint(try Frame(contentsOfFile: path), "a face (\(name))")
        }
        if faces == 0 { throw missing("LFW not found at \(lfw)") }
        // A webcam photo: a face, a shirt, a wall and a far open hand.
        let path = CaptureTests.hands + "/subhih_handsdataset/images/2_pic00029.jpg"
        if FileManager.default.fileExists(atPath: path) { try assertNoPrint(try Frame(contentsOfFile: path), "a webcam scene") }
        // The rendered background with no hand.
        try assertNoPrint(try CaptureTests.frame(CaptureTests.Scene(empty: true), index: 0), "an empty scene")
    }
}
