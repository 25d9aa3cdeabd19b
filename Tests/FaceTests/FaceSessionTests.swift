import BiometricCore
@testable import BiometricFace
import BiometricProtocol
import XCTest

/// The face sessions on synthetic observations: every branch of verify, identify and enrol
/// without a camera or a model.
final class FaceSessionTests: XCTestCase {
    static let ms: UInt64 = 1_000_000
    /// 30 fps from t = 1 s.
    static func at(_ frame: Int) -> UInt64 { 1_000 * ms + UInt64(frame) * 33 * ms }

    /// A frame with one face: `eyeOpen` shapes the landmarks (blinks), `quality` the gate.
    static func frame(eyeOpen: Double = 1, quality: Int = 80, width: Double = 100, pose: HeadPose = .frontal,
                      borderMask: Int? = nil, recapture: RecaptureFeatures? = nil, restarted: Bool = false,
                      face: Bool = true, feedback: [Feedback] = []) -> FaceObservation
    {
        FaceObservation(
            frameWidth: 640, frameHeight: 480, timestampNs: 0, faceCount: face ? 1 : 0,
            box: face ? FaceBox(x: 200, y: 150, width: width, height: width) : nil,
            landmarks: face ? syntheticLandmarks(x: 200, y: 150, size: width, eyeOpen: eyeOpen) : nil,
            pose: face ? pose : nil, measures: nil, quality: face ? FaceQuality(score: quality, feedback: feedback) : nil,
            detected: true, borderMask: borderMask, recapture: recapture, trackRestarted: restarted)
    }

    static func template(_ seed: Int) -> FaceTemplate {
        var rng = SplitMix64(seed: UInt64(seed))
        let v = (0..<FaceTemplate.dimensions).map { _ in Float.random(in: -1...1, using: &rng) }
        let norm = v.map { $0 * $0 }.reduce(0, +).squareRoot()
        return FaceTemplate(embedding: v.map { $0 / norm }, quality: 80)
    }

    static func settings(liveness: Bool, timeoutMs: Int = 10_000, blinkTimeoutMs: Int = 5000,
                         challenge: [ChallengeLiveness.Action]? = nil) -> FaceAuthenticationSettings
    {
        FaceAuthenticationSettings(liveness: liveness, matchingThreshold: 48, qualityThreshold: 48, livenessThreshold: 50,
                                   blinkTimeoutMs: blinkTimeoutMs, timeoutMs: timeoutMs, challenge: challenge,
                                   challengeStepTimeoutMs: 2000)
    }

    enum Ended<Outcome> {
        case decided(Outcome, frame: Int)
        case failed(FaceFailure, frame: Int)
        case running(templates: Int)
    }

    /// Feeds `frames` observations; a template request is answered by `judge`. The wall clock
    /// is the frame's time.
    static func run<S: FaceSession>(_ session: inout S, frames: Int, _ observation: (Int) -> FaceObservation,
                                    judge: (Int) -> S.Judgement) -> Ended<S.Outcome>
    {
        var templates = 0
        for i in 0..<frames {
            var step = session.observe(observation(i), at: at(i))
            if case .needTemplate = step {
                templates += 1
                step = session.judged(judge(i))
            }
            switch step {
            case .decided(let outcome, _): return .decided(outcome, frame: i)
            case .failed(let failure): return .failed(failure, frame: i)
            case .needTemplate: XCTFail("a template asked for twice in frame \(i)")
            case .progress:
                if let failure = session.expired(now: at(i)) { return .failed(failure, frame: i) }
            }
        }
        return .running(templates: templates)
    }

    /// Still, then a 200 ms blink at frame 40 (after the 800 ms keep-still).
    static func blinking(_ i: Int) -> FaceObservation { frame(eyeOpen: (40..<46).contains(i) ? 0.15 : 1) }

    // MARK: Verification

    func testImageModeMatchesAtTheFirstGoodFrameOfTheRightPerson() {
        let me = Self.template(1)
        var session = FaceVerification(Self.settings(liveness: false), references: [me], calibration: FaceCalibration.lfw,
                                       startedAt: Self.at(0))
        // Two frames below the quality gate are never matched.
        guard case .decided(let outcome, let at) = Self.run(&session, frames: 50, { Self.frame(quality: $0 < 2 ? 20 : 80) },
                                                            judge: { _ in me }) else { return XCTFail("no decision") }
        XCTAssertEqual(at, 2)
        XCTAssertTrue(outcome.matched)
        XCTAssertEqual(outcome.goodFrames, 1)
        XCTAssertEqual(outcome.liveness, .notChecked)
        XCTAssertGreaterThan(outcome.bestScore, 48)
    }

    func testImageModeRefusesAnotherPersonAfterFiveGoodFrames() {
        var session = FaceVerification(Self.settings(liveness: false), references: [Self.template(1)],
                                       calibration: FaceCalibration.lfw, startedAt: Self.at(0))
        guard case .decided(let outcome, let at) = Self.run(&session, frames: 50, { _ in Self.frame() },
                                                            judge: { Self.template(100 + $0) }) else { return XCTFail("no decision") }
        XCTAssertEqual(at, 4)
        XCTAssertFalse(outcome.matched)
        XCTAssertEqual(outcome.goodFrames, 5)
        XCTAssertLessThan(outcome.bestScore, 48)
    }

    func testLivenessWaitsForTheBlinkThenDecidesLive() {
        let me = Self.template(1)
        var session = FaceVerification(Self.settings(liveness: true), references: [me], calibration: FaceCalibration.lfw,
                                       startedAt: Self.at(0))
        guard case .decided(let outcome, let at) = Self.run(&session, frames: 200, Self.blinking, judge: { _ in me }) else {
            return XCTFail("a still face that blinks is live")
        }
        XCTAssertGreaterThan(at, 45, "not before the eyes open again")
        XCTAssertLessThan(at, 60)
        XCTAssertEqual(outcome.liveness, .live)
        XCTAssertEqual(outcome.livenessScore, 100)
        XCTAssertTrue(outcome.matched)
    }

    func testAStillPhotoEndsWithNoBlink() {
        var session = FaceVerification(Self.settings(liveness: true, blinkTimeoutMs: 1000), references: [Self.template(1)],
                                       calibration: FaceCalibration.lfw, startedAt: Self.at(0))
        guard case .failed(.noBlink(let timeoutMs, let score, let fps), let at) =
            Self.run(&session, frames: 200, { _ in Self.frame() }, judge: { _ in Self.template(1) })
        else { return XCTFail("a photo never blinks") }
        XCTAssertEqual(timeoutMs, 1000)
        XCTAssertEqual(score, 50, "it held still")
        XCTAssertEqual(fps ?? 0, 30.3, accuracy: 0.5)
        XCTAssertEqual(at, 55, accuracy: 2, "800 ms still + 1000 ms")
    }

    func testAFaceInsideBordersIsASpoof() {
        var session = FaceVerification(Self.settings(liveness: true), references: [Self.template(1)],
                                       calibration: FaceCalibration.lfw, startedAt: Self.at(0))
        // Left and right borders on every frame: the cue decides once it has seen 15 frames.
        guard case .failed(.spoof(.border(let fraction), let score), let at) =
            Self.run(&session, frames: 100, { _ in Self.frame(borderMask: 0b0101) }, judge: { _ in Self.template(1) })
        else { return XCTFail("framed on two sides") }
        XCTAssertEqual(at, 14)
        XCTAssertEqual(fraction, 1)
        XCTAssertEqual(score, 0)
    }

    func testALargeFaceWithoutFineDetailIsARecapture() {
        let me = Self.template(1)
        let flat = RecaptureFeatures(moire: 0, highFrequencyShare: 0.0001, saturation: 0, glare: 0)
        var session = FaceVerification(Self.settings(liveness: true), references: [me], calibration: FaceCalibration.lfw,
                                       startedAt: Self.at(0))
        guard case .failed(.spoof(.recapture(let share), _), let at) =
            Self.run(&session, frames: 200, { Self.frame(eyeOpen: (40..<46).contains($0) ? 0.15 : 1, width: 200, recapture: flat) },
                     judge: { _ in me })
        else { return XCTFail("a re-captured face") }
        XCTAssertEqual(at, RecaptureCue.minimumFrames - 1, "judged as soon as the window is full, before the blink could pass it")
        XCTAssertEqual(share, 0.0001)

        // The same face with its fine detail passes, but only once the cue has judged it.
        let sharp = RecaptureFeatures(moire: 0, highFrequencyShare: 0.01, saturation: 0, glare: 0)
        var live = FaceVerification(Self.settings(liveness: true), references: [me], calibration: FaceCalibration.lfw,
                                    startedAt: Self.at(0))
        guard case .decided(let outcome, let decidedAt) =
            // The blink is over at frame 36, but the cue needs 45 frames.
            Self.run(&live, frames: 200, { Self.frame(eyeOpen: (30..<36).contains($0) ? 0.15 : 1, width: 200, recapture: sharp) },
                     judge: { _ in me })
        else { return XCTFail("a live large face") }
        XCTAssertEqual(outcome.liveness, .live)
        XCTAssertEqual(decidedAt, RecaptureCue.minimumFrames - 1)
    }

    func testChallengeMovesNotMadeAreASpoof() {
        var session = FaceVerification(Self.settings(liveness: true, challenge: [.turnLeft]), references: [Self.template(1)],
                                       calibration: FaceCalibration.lfw, startedAt: Self.at(0))
        guard case .failed(.spoof(.challenge(let reason, let done), let score), _) =
            Self.run(&session, frames: 300, Self.blinking, judge: { _ in Self.template(1) })
        else { return XCTFail("the head never turned") }
        XCTAssertTrue(reason.contains("2000 ms"), reason)
        XCTAssertEqual(done, 0)
        XCTAssertEqual(score, 60, "40 for keep-still, 20 for the blink, none for the moves")
    }

    func testOnlyLowQualityFramesEndWithBadQualityAndNoFaceWithTimeout() {
        var session = FaceVerification(Self.settings(liveness: false, timeoutMs: 1000), references: [Self.template(1)],
                                       calibration: FaceCalibration.lfw, startedAt: Self.at(0))
        guard case .failed(.lowQuality(let threshold, let feedback, let enrolling), _) =
            Self.run(&session, frames: 100, { _ in Self.frame(quality: 30, feedback: [.tooDark]) }, judge: { _ in Self.template(1) })
        else { return XCTFail("only dark frames") }
        XCTAssertEqual(threshold, 48)
        XCTAssertEqual(feedback, [.tooDark])
        XCTAssertFalse(enrolling)

        var empty = FaceVerification(Self.settings(liveness: false, timeoutMs: 1000), references: [Self.template(1)],
                                     calibration: FaceCalibration.lfw, startedAt: Self.at(0))
        guard case .failed(.timeout(1000, sawFace: false), let at) =
            Self.run(&empty, frames: 100, { _ in Self.frame(face: false) }, judge: { _ in Self.template(1) })
        else { return XCTFail("no face") }
        XCTAssertEqual(at, 31, "the first frame at or after 1000 ms")
        // The runner's wall clock can end it before any frame says so.
        let fresh = FaceVerification(Self.settings(liveness: false, timeoutMs: 1000), references: [Self.template(1)],
                                     calibration: FaceCalibration.lfw, startedAt: Self.at(0))
        XCTAssertNil(fresh.expired(now: Self.at(0) + 999 * Self.ms))
        XCTAssertEqual(fresh.expired(now: Self.at(0) + 1000 * Self.ms), .timeout(timeoutMs: 1000, sawFace: false))
    }

    // MARK: Identification

    func testIdentifyForgetsMatchesOfAFaceThatLeftAndAsksForStepUpWhenClose() {
        var session = FaceIdentification(Self.settings(liveness: true), margin: 5, startedAt: Self.at(0))
        // Frames 0–9: another face, matched as "mallory"; frame 10: a new track, who blinks later.
        let ended = Self.run(&session, frames: 200, { i in
            i < 10 ? Self.frame() : Self.frame(eyeOpen: (50..<56).contains(i) ? 0.15 : 1, restarted: i == 10)
        }, judge: { i in
            i < 10 ? [Candidate(user: "mallory", score: 99)]
                : [Candidate(user: "alice", score: 70), Candidate(user: "bob", score: 67)]
        })
        guard case .decided(let outcome, _) = ended else { return XCTFail("alice blinks") }
        XCTAssertEqual(outcome.candidates.map(\.user), ["alice", "bob"], "mallory's frames belong to another face")
        XCTAssertEqual(outcome.user, "alice")
        XCTAssertTrue(outcome.stepUpRequired, "bob is within 5 points")
        XCTAssertEqual(outcome.capture.liveness, .live)
    }

    func testIdentifyWithNoMatchNamesNobody() {
        var session = FaceIdentification(Self.settings(liveness: false), margin: 5, startedAt: Self.at(0))
        guard case .decided(let outcome, _) = Self.run(&session, frames: 50, { _ in Self.frame() },
                                                       judge: { _ in [Candidate(user: "carol", score: 30)] })
        else { return XCTFail("image mode decides after five frames") }
        XCTAssertNil(outcome.user)
        XCTAssertFalse(outcome.stepUpRequired)
        XCTAssertEqual(outcome.candidates, [Candidate(user: "carol", score: 30)])
    }

    // MARK: Enrolment

    func testEnrolmentCountsDownThenWalksThroughThePoses() {
        let poses: [FaceQuality.PoseTarget] = [.front, .left]
        var session = FaceEnrolment(targets: poses, framesPerPose: 2, qualityThreshold: 48, countdownS: 1, timeoutMs: 10_000,
                                    startedAt: Self.at(0))
        var countdowns = Set<Int>()
        var asked: [FaceQuality.PoseTarget] = []
        var outcome: FaceEnrolment.Outcome?
        for i in 0..<200 {
            // The person turns left from frame 60 on.
            let pose = i < 60 ? HeadPose.frontal : HeadPose(yaw: 30, pitch: 0, roll: 0)
            var step = session.observe(Self.frame(pose: pose), at: Self.at(i))
            if case .needTemplate = step {
                XCTAssertGreaterThanOrEqual(i, 30, "nothing is captured during the countdown")
                asked.append(session.poseTarget)
                step = session.judged(Self.template(i))
            }
            if case .progress(let p) = step, let c = p.countdown { countdowns.insert(c) }
            if case .decided(let o, let p) = step {
                outcome = o
                XCTAssertEqual(p.captured, 4)
                XCTAssertEqual(p.needed, 4)
                break
            }
        }
        XCTAssertEqual(countdowns, [1])
        XCTAssertEqual(asked, [.front, .front, .left, .left])
        XCTAssertEqual(outcome?.templates.map(\.pose), poses)
        XCTAssertEqual(outcome?.templates.map(\.frames), [2, 2])
        XCTAssertEqual(outcome?.framesUsed, 4)
    }

    func testEnrolmentThatNeverGetsAGoodFrameSaysWhy() {
        var dark = FaceEnrolment(targets: [.front], framesPerPose: 2, qualityThreshold: 48, countdownS: 0, timeoutMs: 1000,
                                 startedAt: Self.at(0))
        guard case .failed(.lowQuality(48, let feedback, enrolling: true), _) =
            Self.run(&dark, frames: 100, { _ in Self.frame(quality: 20, feedback: [.tooDark]) }, judge: { Self.template($0) })
        else { return XCTFail("only dark frames") }
        XCTAssertEqual(feedback, [.tooDark])

        var full = FaceEnrolment(targets: [.front, .up], framesPerPose: 1, qualityThreshold: 48, countdownS: 0, timeoutMs: 1000,
                                 startedAt: Self.at(0))
        guard case .failed(.enrolmentIncomplete(1000, let pose, let got, let needed, _), _) =
            Self.run(&full, frames: 100, { _ in Self.frame() }, judge: { Self.template($0) })
        else { return XCTFail("the person never looked up") }
        XCTAssertEqual(pose, .up)
        XCTAssertEqual(got, 0)
        XCTAssertEqual(needed, 1)
    }
}
