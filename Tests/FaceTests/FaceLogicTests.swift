@testable import BiometricFace
import BiometricProtocol
import Foundation
import XCTest

/// Landmarks of a frontal face (a mean iBUG-68 shape) scaled into a box, with eyes opened by `eyeOpen`.
func syntheticLandmarks(x: Double = 200, y: Double = 150, size: Double = 200, eyeOpen: Double = 1) -> Landmarks {
    // Mean shape in unit coordinates (dlib's 68-point layout, roughly).
    var p = [SIMD2<Double>](repeating: .zero, count: 68)
    for i in 0..<17 { let t = Double(i) / 16; p[i] = SIMD2(0.05 + 0.9 * t, 0.35 + 0.55 * sin(.pi * t) * 0.9 + 0.1) }
    for i in 17..<22 { p[i] = SIMD2(0.15 + 0.06 * Double(i - 17), 0.22) }
    for i in 22..<27 { p[i] = SIMD2(0.58 + 0.06 * Double(i - 22), 0.22) }
    for i in 27..<31 { p[i] = SIMD2(0.5, 0.35 + 0.05 * Double(i - 27)) }
    for i in 31..<36 { p[i] = SIMD2(0.42 + 0.04 * Double(i - 31), 0.58) }
    func eye(_ start: Int, _ cx: Double) {
        let h = 0.045 * eyeOpen
        p[start] = SIMD2(cx - 0.09, 0.35)
        p[start + 1] = SIMD2(cx - 0.03, 0.35 - h)
        p[start + 2] = SIMD2(cx + 0.03, 0.35 - h)
        p[start + 3] = SIMD2(cx + 0.09, 0.35)
        p[start + 4] = SIMD2(cx + 0.03, 0.35 + h)
        p[start + 5] = SIMD2(cx - 0.03, 0.35 + h)
    }
    eye(36, 0.3)
    eye(42, 0.7)
    for i in 48..<68 { let t = Double(i - 48) / 19 * 2 * .pi; p[i] = SIMD2(0.5 + 0.15 * cos(t), 0.75 + 0.05 * sin(t)) }
    return Landmarks(points: p.map { SIMD2(x + $0.x * size, y + $0.y * size) })
}

final class LandmarkTests: XCTestCase {
    func testEyeAspectRatioFallsWhenEyesClose() {
        let open = syntheticLandmarks().eyeAspectRatio
        let closed = syntheticLandmarks(eyeOpen: 0.2).eyeAspectRatio
        XCTAssertEqual(open, 0.5, accuracy: 0.01)
        XCTAssertLessThan(closed, open * 0.3)
        XCTAssertEqual(syntheticLandmarks(size: 50).eyeAspectRatio, open, accuracy: 1e-9, "EAR does not depend on face size")
    }
}

final class BlinkLivenessTests: XCTestCase {
    /// Feeds frames at `fps`; `eye(i)` gives the eye opening of frame i.
    private func run(fps: Double, frames: Int, jitter: Double = 0, eye: (Int) -> Double) -> (BlinkLiveness, Int?) {
        var liveness = BlinkLiveness(livenessThreshold: 50)
        for i in 0..<frames {
            let l = syntheticLandmarks(x: 200 + jitter * Double(i % 2), eyeOpen: eye(i))
            if liveness.observe(l, timestampNs: UInt64(Double(i) / fps * 1e9)) == .live { return (liveness, i) }
        }
        return (liveness, nil)
    }

    func testStillPhotoNeverBecomesLive() {
        let (liveness, liveAt) = run(fps: 30, frames: 300) { _ in 1 }
        XCTAssertNil(liveAt)
        XCTAssertEqual(liveness.phase, .blink, "it held still, then waits for a blink that never comes")
        XCTAssertEqual(liveness.score, 50)
    }

    func testBlinkAfterKeepStillIsLiveAtEveryFrameRate() {
        for fps in [15.0, 30, 60] {
            // Keep still 1 s, then a 200 ms blink.
            let blinkStart = Int(1.2 * fps), blinkFrames = max(1, Int(0.2 * fps))
            let (liveness, liveAt) = run(fps: fps, frames: Int(3 * fps)) { i in
                (blinkStart..<(blinkStart + blinkFrames)).contains(i) ? 0.15 : 1
            }
            XCTAssertNotNil(liveAt, "blink seen at \(fps) fps")
            XCTAssertEqual(liveness.score, 100)
            XCTAssertEqual(liveness.measuredFPS ?? 0, fps, accuracy: 0.5)
            XCTAssertFalse(liveness.cameraTooSlow)
        }
    }

    func testBlinkDuringKeepStillDoesNotCount() {
        // The eyes close only before the keep-still time has passed: not live.
        let (_, liveAt) = run(fps: 30, frames: 90) { i in (5..<10).contains(i) ? 0.1 : 1 }
        XCTAssertNil(liveAt)
    }

    func testMovingFaceNeverFinishesKeepStill() {
        var liveness = BlinkLiveness(livenessThreshold: 50)
        for i in 0..<120 {
            let l = syntheticLandmarks(x: 200 + Double(i % 2) * 20, eyeOpen: i > 60 && i < 66 ? 0.1 : 1)
            XCTAssertEqual(liveness.observe(l, timestampNs: UInt64(i) * 33_000_000), .pending)
        }
        XCTAssertEqual(liveness.phase, .keepStill)
        XCTAssertEqual(liveness.action, .keepStill)
    }

    func testSlowCameraIsReported() {
        let (liveness, _) = run(fps: 5, frames: 20) { _ in 1 }
        XCTAssertTrue(liveness.cameraTooSlow)
    }
}

final class FaceQualityTests: XCTestCase {
    let good = FaceQuality.Measures(brightness: 120, contrast: 40, sharpness: 300)

    private func assess(box: FaceBox = FaceBox(x: 220, y: 140, width: 200, height: 200), pose: HeadPose = .frontal,
                        measures: FaceQuality.Measures? = nil, target: FaceQuality.PoseTarget = .front) -> FaceQuality {
        FaceQuality.assess(box: box, pose: pose, measures: measures ?? good, frameWidth: 640, frameHeight: 480, target: target)
    }

    func testGoodFrontalFaceScoresHighWithNoHints() {
        let q = assess()
        XCTAssertGreaterThanOrEqual(q.score, 90)
        XCTAssertEqual(q.feedback, [])
    }

    func testEachProblemGivesItsHintAndLowersQuality() {
        let base = assess().score
        let cases: [(FaceQuality, Feedback)] = [
            (assess(measures: .init(brightness: 25, contrast: 5, sharpness: 300)), .tooDark),
            (assess(measures: .init(brightness: 245, contrast: 5, sharpness: 300)), .tooBright),
            (assess(measures: .init(brightness: 120, contrast: 40, sharpness: 10)), .blurry),
            (assess(box: FaceBox(x: 300, y: 220, width: 50, height: 50)), .moveCloser),
            (assess(box: FaceBox(x: 60, y: 0, width: 480, height: 480)), .moveBack),
            (assess(box: FaceBox(x: 0, y: 10, width: 150, height: 150)), .centerFace),
            (assess(pose: HeadPose(yaw: 35, pitch: 0, roll: 0)), .faceForward),
        ]
        for (q, hint) in cases {
            XCTAssertTrue(q.feedback.contains(hint), "\(hint): \(q.feedback)")
            XCTAssertLessThan(q.score, base, hint.rawValue)
        }
        XCTAssertLessThan(cases[0].0.score, 48, "a dark face is below the default quality threshold")
    }

    func testGuidedPosesHintTheWay() {
        XCTAssertEqual(assess(target: .left).feedback, [.turnLeft])
        XCTAssertEqual(assess(target: .right).feedback, [.turnRight])
        XCTAssertEqual(assess(target: .up).feedback, [.lookUp])
        XCTAssertEqual(assess(target: .down).feedback, [.lookDown])
        XCTAssertEqual(assess(pose: HeadPose(yaw: 25, pitch: 0, roll: 0), target: .left).feedback, [])
        XCTAssertTrue(FaceQuality.PoseTarget.up.accepts(HeadPose(yaw: 0, pitch: 20, roll: 0)))
        XCTAssertFalse(FaceQuality.PoseTarget.front.accepts(HeadPose(yaw: 30, pitch: 0, roll: 0)))
    }
}

final class TemplateTests: XCTestCase {
    private func random(_ seed: UInt64) -> FaceTemplate {
        var state = seed
        let v = (0..<128).map { _ -> Float in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int64(bitPattern: state >> 11) % 2000) / 1000 - 1
        }
        return FaceTemplate(embedding: v, quality: 70)
    }

    func testRoundTripAndValidation() throws {
        let t = random(1)
        XCTAssertEqual(t.data.count, 520)
        XCTAssertEqual(try FaceTemplate(data: t.data), t)
        XCTAssertThrowsError(try FaceTemplate(data: Data("hello".utf8))) { XCTAssertEqual($0 as? FaceTemplate.DecodeError, .notATemplate) }
        var wrongVersion = t.data
        wrongVersion[4] = 9
        XCTAssertThrowsError(try FaceTemplate(data: wrongVersion)) { XCTAssertEqual($0 as? FaceTemplate.DecodeError, .unsupportedVersion(9)) }
        XCTAssertThrowsError(try FaceTemplate(data: t.data.prefix(300)))
        var scaled = t.data
        scaled[8 + 3] ^= 0x40  // change an exponent: no longer unit length
        XCTAssertThrowsError(try FaceTemplate(data: scaled))
    }

    func testFusionIsQualityWeightedAndUnitLength() {
        let a = FaceTemplate(embedding: [1] + [Float](repeating: 0, count: 127), quality: 90)
        let b = FaceTemplate(embedding: [0, 1] + [Float](repeating: 0, count: 126), quality: 10)
        let f = FaceTemplate.fused([a, b])!
        XCTAssertEqual(f.embedding.reduce(0) { $0 + $1 * $1 }, 1, accuracy: 1e-5)
        XCTAssertGreaterThan(f.embedding[0], f.embedding[1] * 8)
    }

    func testGalleryMatchesBruteForce() throws {
        let items = (0..<300).map { (user: "u\($0 % 40)", template: random(UInt64($0) + 10)) }
        let gallery = FaceGallery(items.indices.map { (key: Int64($0), template: items[$0].template) })
        let source = InMemoryFaceTemplates(items)
        for seed in 90..<100 {
            let probe = random(UInt64(seed))
            let ranked = try gallery.rank(probe, exact: source)
            XCTAssertEqual(ranked, FaceGallery.exhaustiveRank(probe, items))
            XCTAssertEqual(ranked.count, 5)
            XCTAssertEqual(Set(ranked.map(\.user)).count, 5, "one entry per user")
        }
        XCTAssertEqual(try gallery.rank(random(7), limit: 50, exact: source).count, 40, "never more users than there are")
    }

    func testCalibrationIsMonotoneAndHitsTheSpecPoints() {
        let c = FaceCalibration.lfw
        var last = 101.0
        for d in stride(from: 0.0, through: 1.5, by: 0.01) {
            let s = c.score(d)
            XCTAssertLessThanOrEqual(s, last + 1e-9, "score falls as distance grows")
            last = s
        }
        for score in [24.0, 36, 48, 60] {
            XCTAssertEqual(c.score(c.value(forScore: score)), score, accuracy: 0.2)
        }
        XCTAssertEqual(c.score(0), 100)
        XCTAssertEqual(c.score(1.5), 0)
    }
}
