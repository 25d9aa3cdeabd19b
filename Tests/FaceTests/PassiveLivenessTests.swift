import BiometricCore
@testable import BiometricFace
import BiometricProtocol
import XCTest

/// Passive liveness: the decision type (`PassiveLiveness` → `PassiveVerdict`) on synthetic
/// evidence, and what verify does with it in each liveness mode, without a camera or a model.
final class PassiveLivenessTests: XCTestCase {
    typealias T = FaceSessionTests

    static func reading(_ p: Double) -> AntispoofReading { AntispoofReading(real: p, v2: p, v1se: p) }

    /// Feeds `n` frames of probability `p` and frame difference `d`; returns the verdict after each.
    static func feed(_ passive: inout PassiveLiveness, _ n: Int, p: Double?, d: Double?) -> [PassiveVerdict] {
        (0..<n).map { _ in
            passive.observe(reading: p.map(reading), frameDifference: d)
            return passive.verdict
        }
    }

    // MARK: The decision type

    func testALiveFaceIsDecidedOnceTheFirstFramesAreIn() {
        // A doubtful (but real) face waits for the whole window.
        var passive = PassiveLiveness()
        let verdicts = Self.feed(&passive, PassiveLiveness.frames, p: 0.3, d: 2)
        XCTAssertTrue(verdicts.dropLast().allSatisfy { $0 == .pending }, "not before the frames are in")
        XCTAssertEqual(verdicts.last, .live(realProbability: 0.3, score: PassiveLiveness.score(realProbability: 0.3)))
        XCTAssertFalse(passive.passedEarly)
    }

    /// A clear face passes on its first `earlyFrames` readings; one just under `earlyReal`, or
    /// whose frames are the same picture, does not.
    func testAClearlyLiveFacePassesEarly() {
        var clear = PassiveLiveness()
        let verdicts = Self.feed(&clear, PassiveLiveness.earlyFrames, p: 0.9, d: 2)
        XCTAssertTrue(verdicts.dropLast().allSatisfy { $0 == .pending })
        XCTAssertEqual(verdicts.last, .live(realProbability: 0.9, score: PassiveLiveness.score(realProbability: 0.9)))
        XCTAssertTrue(clear.passedEarly)
        var doubtful = PassiveLiveness()
        XCTAssertEqual(Self.feed(&doubtful, PassiveLiveness.earlyFrames, p: PassiveLiveness.earlyReal - 0.01, d: 2).last, .pending)
        var still = PassiveLiveness()
        XCTAssertEqual(Self.feed(&still, PassiveLiveness.earlyFrames, p: 0.98, d: 0).last, .pending, "identical frames never pass early")
        // A stricter liveness_threshold raises the bar of the early pass too (score 80: p ≥ 0.68).
        var strict = PassiveLiveness(livenessThreshold: 80)
        XCTAssertEqual(Self.feed(&strict, PassiveLiveness.earlyFrames, p: 0.6, d: 2).last, .pending)
    }

    func testAPrintOrScreenIsRefusedByTheDetector() {
        var passive = PassiveLiveness()
        let verdicts = Self.feed(&passive, PassiveLiveness.frames, p: 0.02, d: 2)
        guard case .spoof(.detector(let p), let score) = verdicts.last else { return XCTFail("\(String(describing: verdicts.last))") }
        XCTAssertEqual(p, 0.02)
        XCTAssertLessThan(score, 50)
    }

    func testTheMedianDecidesSoOneOddFrameDoesNot() {
        var live = PassiveLiveness()
        _ = Self.feed(&live, PassiveLiveness.noisePairs, p: nil, d: 2)
        _ = Self.feed(&live, 1, p: 0.0, d: nil)  // one frame the detector got wrong
        _ = Self.feed(&live, PassiveLiveness.frames - 1, p: 0.8, d: nil)
        guard case .live = live.verdict else { return XCTFail("one odd frame refused a live face: \(live.verdict)") }

        var replay = PassiveLiveness()
        _ = Self.feed(&replay, PassiveLiveness.noisePairs, p: nil, d: 2)
        _ = Self.feed(&replay, 1, p: 0.99, d: nil)
        _ = Self.feed(&replay, PassiveLiveness.frames - 1, p: 0.01, d: nil)
        guard case .spoof(.detector, _) = replay.verdict else { return XCTFail("one odd frame passed a replay: \(replay.verdict)") }
    }

    func testIdenticalFramesAreAStillPictureWhateverTheDetectorSays() {
        // An LFW still scores as a real face (a real camera took it): the noise refuses it.
        var passive = PassiveLiveness()
        let verdicts = Self.feed(&passive, PassiveLiveness.frames, p: 0.98, d: 0)
        XCTAssertEqual(verdicts[PassiveLiveness.noisePairs - 2], .pending)
        XCTAssertEqual(verdicts[PassiveLiveness.noisePairs - 1], .spoof(.stillFrames(medianDifference: 0), score: 0),
                       "refused as soon as the frame pairs are measured")
        XCTAssertFalse(passive.noiseCleared)
    }

    func testANoisyButStillFaceIsNotAStillPicture() {
        var passive = PassiveLiveness()
        _ = Self.feed(&passive, PassiveLiveness.frames, p: 0.9, d: PassiveLiveness.identicalDifference * 2)
        XCTAssertTrue(passive.noiseCleared)
        guard case .live = passive.verdict else { return XCTFail("\(passive.verdict)") }
    }

    func testTheScoreMapsTheThresholdTo50AndLivenessThresholdGatesOnIt() {
        XCTAssertEqual(PassiveLiveness.score(realProbability: 0), 0)
        XCTAssertEqual(PassiveLiveness.score(realProbability: PassiveLiveness.threshold), 50)
        XCTAssertEqual(PassiveLiveness.score(realProbability: 1), 100)
        XCTAssertEqual(PassiveLiveness.probability(score: 50), PassiveLiveness.threshold, accuracy: 1e-12)
        // A probability scoring 75 passes at liveness_threshold 70 and is refused at 80.
        let p = PassiveLiveness.probability(score: 75)
        var lenient = PassiveLiveness(livenessThreshold: 70), strict = PassiveLiveness(livenessThreshold: 80)
        _ = Self.feed(&lenient, PassiveLiveness.frames, p: p, d: 2)
        _ = Self.feed(&strict, PassiveLiveness.frames, p: p, d: 2)
        guard case .live(_, let score) = lenient.verdict else { return XCTFail("\(lenient.verdict)") }
        XCTAssertEqual(score, 75)
        guard case .spoof(.detector, 75) = strict.verdict else { return XCTFail("\(strict.verdict)") }
    }

    func testFrameNoiseSamplesTheFacePixels() throws {
        let pool = PixelBufferPool(limit: 0)
        let (w, h) = (64, 48)
        let a = pool.buffer(count: w * h), b = PixelBufferPool(limit: 0).buffer(count: w * h)
        for k in 0..<(w * h) { a.pointer[k] = UInt8(k % 200); b.pointer[k] = UInt8(k % 200) &+ UInt8(k % 2) }
        let fa = Frame(width: w, height: h, grey: a, bgr: nil, timestampNs: 0, sequence: 0, isInfrared: true)
        let fb = Frame(width: w, height: h, grey: b, bgr: nil, timestampNs: 1, sequence: 1, isInfrared: true)
        // A box partly outside the frame is clamped, not read out of bounds.
        let box = FaceBox(x: -10, y: 5, width: 60, height: 60)
        let pa = FrameNoise.patch(fa, box: box)
        XCTAssertEqual(pa.count, FrameNoise.grid * FrameNoise.grid)
        XCTAssertEqual(FrameNoise.difference(pa, FrameNoise.patch(fa, box: box)), 0)
        let d = FrameNoise.difference(pa, FrameNoise.patch(fb, box: box))
        XCTAssertGreaterThan(d, 0.2)
        XCTAssertLessThanOrEqual(d, 1)
    }

    // MARK: In a verify session

    static func settings(_ mode: LivenessMode, livenessThreshold: Int = 50, blinkTimeoutMs: Int = 5000) -> FaceAuthenticationSettings {
        FaceAuthenticationSettings(liveness: true, matchingThreshold: 48, qualityThreshold: 48, livenessThreshold: livenessThreshold,
                                   blinkTimeoutMs: blinkTimeoutMs, timeoutMs: 10_000, livenessMode: mode)
    }

    /// A still face (no blink unless `blinkAt`) with the passive detector's reading and sensor noise.
    static func frame(_ i: Int, p: Double = 0.9, d: Double = 2, colour: Bool = true, blinkAt: Int? = nil,
                      borderMask: Int? = 0) -> FaceObservation {
        var o = T.frame(eyeOpen: blinkAt.map { (($0)..<($0 + 6)).contains(i) ? 0.15 : 1 } ?? 1, borderMask: borderMask)
        o.antispoof = colour ? reading(p) : nil
        o.frameDifference = i == 0 ? nil : d
        o.colour = colour
        return o
    }

    func verify(_ mode: LivenessMode, frames: Int = 300, livenessThreshold: Int = 50, blinkTimeoutMs: Int = 5000,
                _ observation: (Int) -> FaceObservation) -> T.Ended<FaceAuthenticationOutcome> {
        let me = T.template(1)
        var session = FaceVerification(Self.settings(mode, livenessThreshold: livenessThreshold, blinkTimeoutMs: blinkTimeoutMs),
                                       references: [me], calibration: FaceCalibration.lfw, startedAt: T.at(0))
        return T.run(&session, frames: frames, observation, judge: { _ in me })
    }

    func testPassiveDecidesALiveFaceWithoutABlinkOnceTheBorderCueHasJudged() {
        guard case .decided(let outcome, let at) = verify(.passive, { Self.frame($0) }) else {
            return XCTFail("a live face, nothing asked of it")
        }
        XCTAssertEqual(outcome.liveness, .live)
        XCTAssertTrue(outcome.matched)
        XCTAssertEqual(outcome.livenessScore, PassiveLiveness.score(realProbability: 0.9))
        XCTAssertEqual(at, PassiveLiveness.earlyFrames - 1, "a clear face at its 4th frame (133 ms at 30 fps)")
        // A doubtful face, or one whose first frames sat inside borders, waits for the border cue's
        // frames (0.5 s at 30 fps).
        guard case .decided(_, let doubtful) = verify(.passive, { Self.frame($0, p: 0.3) }) else { return XCTFail("a doubtful live face") }
        XCTAssertEqual(doubtful, ReplayCue().minimumFrames - 1)
        guard case .decided(_, let framed) = verify(.passive, { Self.frame($0, borderMask: $0 == 1 ? 0b0101 : 0) }) else {
            return XCTFail("one framed frame of 15 is under the cue's 20 %")
        }
        XCTAssertEqual(framed, ReplayCue().minimumFrames - 1, "no early pass with a framed frame among the first")
    }

    func testPassiveRefusesWhatTheDetectorCallsAnAttack() {
        guard case .failed(.spoof(.detector(let p), let score), let at) = verify(.passive, { Self.frame($0, p: 0.01) }) else {
            return XCTFail("a screen replay")
        }
        XCTAssertEqual(p, 0.01)
        XCTAssertLessThan(score, 20)
        XCTAssertEqual(at, PassiveLiveness.frames - 1)
    }

    func testPassiveRefusesAStillPictureOnAReplayCamera() {
        guard case .failed(.spoof(.stillFrames(let d), _), _) = verify(.passive, { Self.frame($0, p: 0.98, d: 0) }) else {
            return XCTFail("identical frames")
        }
        XCTAssertEqual(d, 0)
    }

    func testPassiveStillRefusesAFaceInsideBorders() {
        guard case .failed(.spoof(.border, _), _) = verify(.passive, { Self.frame($0, borderMask: 0b0101) }) else {
            return XCTFail("framed on two sides")
        }
    }

    func testPassiveAndBlinkNeedsBoth() {
        // No blink: the detector's yes is not enough.
        guard case .failed(.noBlink, _) = verify(.passiveBlink, blinkTimeoutMs: 1000, { Self.frame($0) }) else {
            return XCTFail("passive+blink without a blink")
        }
        // A blink but the detector says attack: refused at once.
        guard case .failed(.spoof(.detector, _), _) = verify(.passiveBlink, { Self.frame($0, p: 0.01, blinkAt: 40) }) else {
            return XCTFail("a blinking replay")
        }
        guard case .decided(let outcome, let at) = verify(.passiveBlink, { Self.frame($0, blinkAt: 40) }) else {
            return XCTFail("a live face that blinks")
        }
        XCTAssertEqual(outcome.liveness, .live)
        XCTAssertGreaterThan(at, 45, "after the blink")
    }

    func testPassiveOnAGreyCameraAsksForTheBlink() {
        // The detector was trained on colour; on grey frames passive mode falls back to the blink
        // (and still refuses identical frames).
        guard case .failed(.noBlink, _) = verify(.passive, blinkTimeoutMs: 1000, { Self.frame($0, colour: false) }) else {
            return XCTFail("a grey camera without a blink")
        }
        guard case .decided(let outcome, _) = verify(.passive, { Self.frame($0, colour: false, blinkAt: 40) }) else {
            return XCTFail("a grey camera with a blink")
        }
        XCTAssertEqual(outcome.liveness, .live)
        guard case .failed(.spoof(.stillFrames, _), _) = verify(.passive, { Self.frame($0, d: 0, colour: false, blinkAt: 40) }) else {
            return XCTFail("a grey still picture")
        }
    }

    func testBlinkModeIgnoresTheDetector() {
        // Blink mode is as before: a face the detector doubts still passes by blinking.
        guard case .decided(let outcome, _) = verify(.blink, { Self.frame($0, p: 0.01, blinkAt: 40) }) else {
            return XCTFail("blink mode")
        }
        XCTAssertEqual(outcome.livenessScore, 100)
    }

    func testAnotherFaceStartsPassiveLivenessAgain() {
        // Replay frames, then a live face takes over: the replay's refusal does not stick to it,
        // and the live face is judged on its own frames.
        var check = FaceLivenessCheck(livenessThreshold: 50, mode: .passive)
        let live = FaceLivenessCheck.PassiveEvidence(reading: Self.reading(0.9), frameDifference: 2, colour: true, usable: true)
        for i in 0..<3 {
            XCTAssertEqual(check.observe(landmarks: T.frame().landmarks, pose: .frontal, at: T.at(i),
                                         passive: .init(reading: Self.reading(0.01), frameDifference: 2, colour: true, usable: true)), .pending)
        }
        check.reset()
        var verdicts: [FaceLivenessCheck.Verdict] = []
        for i in 3..<(3 + PassiveLiveness.frames) {
            verdicts.append(check.observe(landmarks: T.frame().landmarks, pose: .frontal, at: T.at(i), passive: live))
        }
        XCTAssertEqual(verdicts.last, .live)
        XCTAssertNil(check.action, "passive mode asks for nothing")
    }
}
