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

    /// The frames one attempt decides on.
    static let k = FaceAttemptRule.standard.frames

    func testImageModeMatchesOnceTheAttemptsFramesAreIn() {
        let me = Self.template(1)
        var session = FaceVerification(Self.settings(liveness: false), references: [me], calibration: FaceCalibration.lfw,
                                       startedAt: Self.at(0))
        // Two frames below the quality gate are never judged.
        guard case .decided(let outcome, let at) = Self.run(&session, frames: 50, { Self.frame(quality: $0 < 2 ? 20 : 80) },
                                                            judge: { _ in me }) else { return XCTFail("no decision") }
        XCTAssertEqual(at, 2 + Self.k - 1)
        XCTAssertTrue(outcome.matched)
        XCTAssertEqual(outcome.goodFrames, Self.k)
        XCTAssertEqual(outcome.liveness, .notChecked)
        XCTAssertGreaterThan(outcome.bestScore, 48)
    }

    func testImageModeRefusesAnotherPersonOnceTheAttemptsFramesAreIn() {
        var session = FaceVerification(Self.settings(liveness: false), references: [Self.template(1)],
                                       calibration: FaceCalibration.lfw, startedAt: Self.at(0))
        guard case .decided(let outcome, let at) = Self.run(&session, frames: 50, { _ in Self.frame() },
                                                            judge: { Self.template(100 + $0) }) else { return XCTFail("no decision") }
        XCTAssertEqual(at, Self.k - 1)
        XCTAssertFalse(outcome.matched)
        XCTAssertEqual(outcome.goodFrames, Self.k)
        XCTAssertLessThan(outcome.bestScore, 48)
    }

    // MARK: One attempt, one comparison

    /// A unit vector at `distance` from `reference` (towards the direction of `seed`'s template).
    static func probe(at distance: Double, from reference: FaceTemplate, seed: Int) -> FaceTemplate {
        let r = reference.embedding, other = template(seed).embedding
        let along = zip(other, r).map { $0 * $1 }.reduce(0, +)
        let u = FaceTemplate.normalised(zip(other, r).map { $0 - along * $1 })
        // |r − (cos θ·r + sin θ·u)| = 2·sin(θ/2)
        let theta = 2 * asin(distance / 2)
        return FaceTemplate(embedding: zip(r, u).map { Float(cos(theta)) * $0 + Float(sin(theta)) * $1 }, quality: 80)
    }

    /// A probe whose frame scores `score` against `reference` (per comparison, FaceCalibration.lfw).
    static func probe(scoring score: Double, against reference: FaceTemplate, seed: Int) -> FaceTemplate {
        probe(at: FaceCalibration.lfw.value(forScore: score) - 1e-6, from: reference, seed: seed)
    }

    /// Verify in image mode on probes of the given per-frame scores: the outcome and the templates asked for.
    static func verify(_ scores: [Double], liveness: Bool = false) -> (FaceAuthenticationOutcome?, templates: Int) {
        let me = template(1)
        var session = FaceVerification(settings(liveness: liveness), references: [me], calibration: FaceCalibration.lfw,
                                       startedAt: at(0))
        var asked = 0
        let ended = run(&session, frames: 200, liveness ? blinking : { _ in frame() }, judge: { _ in
            defer { asked += 1 }
            return probe(scoring: scores[min(asked, scores.count - 1)], against: me, seed: 500 + asked)
        })
        if case .decided(let outcome, _) = ended { return (outcome, asked) }
        return (nil, asked)
    }

    func testTheProbesScoreWhatTheyAreMadeFor() {
        let me = Self.template(1)
        for score in [20.0, 47.9, 48, 60] {
            let s = FaceVerification.score(Self.probe(scoring: score, against: me, seed: 9), against: [me], calibration: FaceCalibration.lfw)
            XCTAssertEqual(s, score, accuracy: 0.11)
        }
    }

    func testImpostorFramesEachJustUnderTheThresholdDoNotMatch() {
        let (outcome, templates) = Self.verify(Array(repeating: 47.9, count: 20))
        XCTAssertNotNil(outcome, "decided")
        XCTAssertEqual(outcome?.matched, false)
        XCTAssertLessThanOrEqual(outcome?.bestScore ?? 99, 47.9, "an attempt never scores above its frames' mean")
        XCTAssertEqual(templates, Self.k, "no frame beyond the attempt's is judged")
    }

    func testOneLuckyFrameAmongAnImpostorsFramesDoesNotMatch() {
        // The old rule (any frame over the threshold) matched this attempt.
        var scores = Array(repeating: 30.0, count: Self.k)
        scores[Self.k / 2] = 55
        let (outcome, _) = Self.verify(scores)
        XCTAssertEqual(outcome?.matched, false)
        XCTAssertLessThan(outcome?.bestScore ?? 99, 48)
        // ... and a lucky frame after the attempt's frames is never looked at.
        let (late, templates) = Self.verify(Array(repeating: 30, count: Self.k) + [90])
        XCTAssertEqual(late?.matched, false)
        XCTAssertEqual(templates, Self.k)
    }

    func testAGenuineSequenceMatches() {
        // Frames of the enrolled person, scoring 60–75 per frame (LFW's genuine median is ~70).
        let scores = (0..<Self.k).map { 60 + 15 * Double($0 % 2) }
        let (outcome, templates) = Self.verify(scores)
        XCTAssertEqual(outcome?.matched, true)
        XCTAssertGreaterThanOrEqual(outcome?.bestScore ?? 0, 48)
        XCTAssertEqual(templates, Self.k)
        let (live, _) = Self.verify(scores, liveness: true)
        XCTAssertEqual(live?.matched, true)
        XCTAssertEqual(live?.liveness, .live)
        XCTAssertEqual(live?.goodFrames, Self.k)
    }

    func testAnotherFaceStartsTheAttemptAgain() {
        let me = Self.template(1)
        var session = FaceVerification(Self.settings(liveness: false), references: [me], calibration: FaceCalibration.lfw,
                                       startedAt: Self.at(0))
        // Frames 0…k−2: a stranger; then the track restarts on the enrolled person.
        let switchAt = Self.k - 1
        guard case .decided(let outcome, let at) = Self.run(&session, frames: 50, { Self.frame(restarted: $0 == switchAt) },
                                                            judge: { $0 < switchAt ? Self.template(300 + $0) : me })
        else { return XCTFail("no decision") }
        XCTAssertTrue(outcome.matched, "the stranger's frames are not fused with this face's")
        XCTAssertEqual(at, switchAt + Self.k - 1)
        XCTAssertEqual(outcome.goodFrames, Self.k)
    }

    func testTheRuleFusesTheFirstFramesAndNeverScoresAboveTheirMean() {
        let rule = FaceAttemptRule.standard
        XCTAssertEqual(FaceAttemptRule.fused([40.0, 50, 60]), 0.5, accuracy: 1e-12)
        XCTAssertEqual(FaceAttemptRule.fused([-5.0, 105]), 0.5, accuracy: 1e-12, "scores are 0–100")
        XCTAssertNil(rule.score(frameScores: Array(repeating: 90.0, count: rule.frames - 1)))
        let first = Array(repeating: 30.0, count: rule.frames)
        XCTAssertEqual(rule.score(frameScores: first + [100]), rule.score(frameScores: first), "later frames are not looked at")
        // One photo held for every frame scores at most what it scores as one comparison: the
        // per-attempt calibration is never looser than the per-comparison one.
        var last = 101.0
        for tenths in stride(from: 1000, through: 0, by: -5) {
            let mean = Double(tenths) / 10
            let s = rule.calibration.score(mean / 100)
            XCTAssertLessThanOrEqual(s, mean + 0.05, "mean \(mean)")
            XCTAssertLessThanOrEqual(s, last, "monotone")
            last = s
        }
        XCTAssertEqual(rule.calibration.score(0), 0)
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
        let rule = FaceAttemptRule.standard
        let alice = rule.score(frameScores: Array(repeating: 70.0, count: Self.k))!
        let bob = rule.score(frameScores: Array(repeating: 67.0, count: Self.k))!
        XCTAssertGreaterThan(alice, bob)
        var session = FaceIdentification(Self.settings(liveness: true), margin: alice - bob + 1, startedAt: Self.at(0))
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
        XCTAssertEqual(outcome.candidates.map(\.score), [alice, bob])
        XCTAssertTrue(outcome.stepUpRequired, "bob is within the margin")
        XCTAssertEqual(outcome.capture.liveness, .live)
    }

    func testIdentifyFusesEachUsersFramesAndALuckyFrameDoesNotMatch() {
        XCTAssertGreaterThan(Self.k, 1, "an attempt of one frame has nothing to fuse")
        var session = FaceIdentification(Self.settings(liveness: false), margin: 5, startedAt: Self.at(0))
        // mallory tops one frame at 60 and is not ranked in the others (they count 0 for her);
        // dave is ranked 40 in every frame.
        let ended = Self.run(&session, frames: 50, { _ in Self.frame() }, judge: { i in
            i == 0 ? [Candidate(user: "mallory", score: 60), Candidate(user: "dave", score: 40)] : [Candidate(user: "dave", score: 40)]
        })
        guard case .decided(let outcome, let at) = ended else { return XCTFail("image mode decides") }
        XCTAssertEqual(at, Self.k - 1)
        XCTAssertNil(outcome.user, "no one reaches 48 as an attempt")
        let rule = FaceAttemptRule.standard
        XCTAssertEqual(outcome.candidates.first?.user, "dave")
        XCTAssertEqual(outcome.candidates.first?.score, rule.score(frameScores: Array(repeating: 40.0, count: Self.k)))
        XCTAssertEqual(outcome.candidates.last?.score,
                       rule.score(frameScores: [60.0] + Array(repeating: 0.0, count: Self.k - 1)))
    }

    func testIdentifyWithNoMatchNamesNobody() {
        var session = FaceIdentification(Self.settings(liveness: false), margin: 5, startedAt: Self.at(0))
        guard case .decided(let outcome, _) = Self.run(&session, frames: 50, { _ in Self.frame() },
                                                       judge: { _ in [Candidate(user: "carol", score: 30)] })
        else { return XCTFail("image mode decides once the attempt's frames are in") }
        XCTAssertNil(outcome.user)
        XCTAssertFalse(outcome.stepUpRequired)
        XCTAssertEqual(outcome.candidates, [Candidate(user: "carol", score: FaceAttemptRule.standard.score(frameScores: Array(repeating: 30.0, count: Self.k))!)])
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
