@testable import BiometricFace
import XCTest

/// `liveness_score` in passive modes: each cue mapped so that where it refuses is 50, the score
/// the lowest judged cue, `liveness_threshold` the gate every judged cue must reach.
final class PassiveScoreTests: XCTestCase {
    static func reading(_ p: Double) -> AntispoofReading { AntispoofReading(real: p, v2: p, v1se: p) }

    static func decided(_ threshold: Int = 50, p: Double = 0.9, d: Double = 2, framed: Double? = nil, share: Double? = nil)
        -> PassiveLiveness
    {
        var passive = PassiveLiveness(livenessThreshold: threshold)
        for _ in 0..<max(PassiveLiveness.frames, PassiveLiveness.noisePairs) {
            passive.observe(reading: reading(p), frameDifference: d)
        }
        passive.observe(framedFraction: framed, highFrequencyShare: share)
        return passive
    }

    func testEachCueIs50WhereItRefusesAndRunsFrom0To100() {
        XCTAssertEqual(PassiveScore.detector(0), 0)
        XCTAssertEqual(PassiveScore.detector(PassiveLiveness.threshold), 50, accuracy: 1e-9)
        XCTAssertEqual(PassiveScore.detector(1), 100, accuracy: 1e-9)
        XCTAssertEqual(PassiveScore.noise(0), 0)
        XCTAssertEqual(PassiveScore.noise(PassiveLiveness.identicalDifference), 50, accuracy: 1e-9)
        XCTAssertEqual(PassiveScore.noise(0.5), 100, accuracy: 1e-9)
        XCTAssertEqual(PassiveScore.noise(3), 100)
        XCTAssertEqual(PassiveScore.border(0), 100, accuracy: 1e-9)
        XCTAssertEqual(PassiveScore.border(ReplayCue.defaultSpoofFraction), 50, accuracy: 1e-9)
        XCTAssertEqual(PassiveScore.border(1), 0, accuracy: 1e-9)
        XCTAssertEqual(PassiveScore.recapture(0), 0)
        XCTAssertEqual(PassiveScore.recapture(RecaptureCue.threshold), 50, accuracy: 1e-9)
        XCTAssertEqual(PassiveScore.recapture(1), 100)
        XCTAssertEqual(PassiveScore.detector(.nan), 0, "a measurement that is not a number scores 0")
    }

    func testTheScoreIsTheLowestJudgedCue() {
        let s = PassiveScore(realProbability: 0.9, frameDifference: 2, framedFraction: 0.1)
        XCTAssertEqual(s.value, 75, "border 0.1 → 75 is below the detector's 94 and the noise's 100")
        XCTAssertEqual(s.lowest?.cue, .border)
        XCTAssertNil(s.recapture, "not judged: not counted")
        XCTAssertEqual(PassiveScore().value, 0, "nothing judged yet")
    }

    func testTheVerdictReportsTheCombinedScore() {
        guard case .live(let p, let score) = Self.decided(framed: 0.1).verdict else { return XCTFail() }
        XCTAssertEqual(p, 0.9)
        XCTAssertEqual(score, 75)
    }

    func testLivenessThresholdMovesEveryCue() {
        // A border cue at 75 (framed 10 %): live at 70, refused at 80 — with the detector certain.
        guard case .live = Self.decided(70, p: 1, framed: 0.1).verdict else { return XCTFail("70") }
        guard case .spoof(.border(let f), let score) = Self.decided(80, p: 1, framed: 0.1).verdict else { return XCTFail("80") }
        XCTAssertEqual(f, 0.1)
        XCTAssertEqual(score, 75)
        // Re-capture: a share at 0.0003 scores 37.5, refused at 50, passes at 30.
        guard case .spoof(.recapture, _) = Self.decided(share: 0.0003).verdict else { return XCTFail("recapture 50") }
        guard case .live = Self.decided(30, share: 0.0003).verdict else { return XCTFail("recapture 30") }
        // Frame noise: 0.2 grey levels scores 62.5: live at 60, refused as still frames at 70.
        guard case .live = Self.decided(60, d: 0.2).verdict else { return XCTFail("noise 60") }
        guard case .spoof(.stillFrames, _) = Self.decided(70, d: 0.2).verdict else { return XCTFail("noise 70") }
    }

    func testAtThreshold50EachCueDecidesWhereItWasMeasured() {
        guard case .live = Self.decided(framed: ReplayCue.defaultSpoofFraction - 0.01).verdict else { return XCTFail() }
        guard case .spoof(.border, _) = Self.decided(framed: ReplayCue.defaultSpoofFraction + 0.01).verdict else { return XCTFail() }
        guard case .live = Self.decided(share: RecaptureCue.threshold * 1.01).verdict else { return XCTFail() }
        guard case .spoof(.recapture, _) = Self.decided(share: RecaptureCue.threshold * 0.99).verdict else { return XCTFail() }
    }

    func testThresholdZeroStillRefusesIdenticalFrames() {
        guard case .spoof(.stillFrames(let d), 0) = Self.decided(0, d: 0).verdict else { return XCTFail() }
        XCTAssertEqual(d, 0)
        guard case .live = Self.decided(0, p: 0.01).verdict else { return XCTFail("0 relaxes the detector") }
    }

    func testALaterCueCanStillRefuseALiveVerdict() {
        var passive = Self.decided()
        guard case .live = passive.verdict else { return XCTFail() }
        passive.observe(framedFraction: 0.8, highFrequencyShare: nil)
        guard case .spoof(.border, _) = passive.verdict else { return XCTFail("\(passive.verdict)") }
    }
}
