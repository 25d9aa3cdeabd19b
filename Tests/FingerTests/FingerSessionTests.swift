import BiometricCore
@testable import BiometricFinger
import BiometricProtocol
import XCTest

/// The finger sessions on synthetic sightings: every branch of capture, enrol and authenticate
/// without a camera.
final class FingerSessionTests: XCTestCase {
    static let ms: UInt64 = 1_000_000
    static let start: UInt64 = 1_000 * ms
    static func at(_ frame: Int) -> UInt64 { start + UInt64(frame) * 33 * ms }

    static func spec(liveness: LivenessLevel = .none, timeoutMs: Int = 1000) -> FingerCaptureSpec {
        FingerCaptureSpec(options: FingerCaptureOptions(mode: .fingers, hand: .right, liveness: liveness), qualityThreshold: 40,
                          timeoutMs: timeoutMs)
    }

    static let image = try! FingerprintImage(width: 64, height: 64, pixels: [UInt8](repeating: 128, count: 64 * 64), ppi: 500)
    static let box = FingerBox(x: 0, y: 0, width: 10, height: 20, angle: 0)

    /// A frame in which the analyser holds prints of the given fingers at the given qualities
    /// (index, middle, ring, little); `seen` fingers were in the frame itself.
    static func sighting(_ qualities: [Int], liveness: LivenessVerdict = .noDecision, feedback: Feedback = .optimal)
        -> FingerSighting
    {
        let prints = zip(right4, qualities).map { CapturedPrint(position: $0, image: image, quality: $1, box: box) }
        let seen = zip(right4, qualities).map { FingerObservation(position: $0, box: box, quality: $1, level: QualityLevel(quality: $1)) }
        return FingerSighting(
            analysis: FingerFrameAnalysis(fingers: seen, distance: 0.2, distanceRange: DistanceRange(min: 0.1, optimalMin: 0.15,
                                                                                                    optimalMax: 0.25, max: 0.3),
                                          feedback: feedback),
            prints: prints, liveness: liveness)
    }

    static let all4 = [80, 80, 80, 80]
    static let right4 = [Digit.index, .middle, .ring, .little].map { FingerPosition(.right, $0) }

    // MARK: Capture

    func testCaptureDecidesWhenEveryFingerIsUsable() {
        var s = FingerCaptureSession(Self.spec(), startedAt: Self.start)
        guard case .progress = s.observe(Self.sighting([80, 80, 20, 80]), at: Self.at(0)) else { return XCTFail("ring is below 40") }
        guard case .decided(let o) = s.observe(Self.sighting(Self.all4), at: Self.at(1)) else { return XCTFail("all four usable") }
        XCTAssertEqual(o.prints.count, 4)
    }

    func testCaptureWithLivenessWaitsForAVerdictUntilTheDeadline() {
        var s = FingerCaptureSession(Self.spec(liveness: .low), startedAt: Self.start)
        guard case .progress = s.observe(Self.sighting(Self.all4), at: Self.at(1)) else { return XCTFail("no verdict yet") }
        guard case .decided(let o) = s.observe(Self.sighting(Self.all4, liveness: .live), at: Self.at(2)) else { return XCTFail("live") }
        XCTAssertEqual(o.liveness, .live)
        var late = FingerCaptureSession(Self.spec(liveness: .low), startedAt: Self.start)
        guard case .decided(let l) = late.observe(Self.sighting(Self.all4), at: Self.start + 1000 * Self.ms) else {
            return XCTFail("at the deadline the prints are returned without a verdict")
        }
        XCTAssertEqual(l.liveness, .noDecision)
    }

    func testCaptureEndsWithPartialPrintsOrSaysWhyNot() {
        let end = Self.start + 1000 * Self.ms
        var partial = FingerCaptureSession(Self.spec(), startedAt: Self.start)
        guard case .decided(let o) = partial.observe(Self.sighting([80, 30, 30, 80]), at: end) else { return XCTFail("two usable") }
        XCTAssertEqual(o.prints.map(\.position.digit), [.index, .little])

        var dim = FingerCaptureSession(Self.spec(), startedAt: Self.start)
        _ = dim.observe(Self.sighting([30, 35, 20, 10], feedback: .tooFar), at: Self.at(0))
        guard case .failed(let failure) = dim.observe(Self.sighting([], feedback: .noFingers), at: end) else { return XCTFail() }
        XCTAssertEqual(failure, .lowQuality(bestQuality: 35, threshold: 40, feedback: .noFingers))

        var empty = FingerCaptureSession(Self.spec(), startedAt: Self.start)
        guard case .failed(.noFingers(1000)) = empty.observe(Self.sighting([]), at: end) else { return XCTFail("nothing seen") }
    }

    // MARK: Enrolment

    static func template(_ shift: Double, seed: Int) -> FingerTemplate {
        var rng = SplitMix64(seed: UInt64(seed))
        let minutiae = (0..<40).map { _ in
            Minutia(x: Double.random(in: 40...260, using: &rng) + shift, y: Double.random(in: 40...360, using: &rng),
                    angle: Double.random(in: 0..<(2 * .pi), using: &rng), kind: .ending, quality: 80)
        }
        return FingerTemplate(sourcePPI: 500, width: 320, height: 420, quality: 70, position: nil, minutiae: minutiae)
    }

    func testEnrolmentRunsItsRoundsAndKeepsTheCaptureThatAgreesBest() {
        var s = FingerEnrolment(Self.spec(), rounds: 3, matcher: FingerMatcher(), startedAt: Self.start)
        let positions = Self.spec().expected
        // Rounds 1 and 3 see the same finger (2 px apart); round 2 another one.
        let roundTemplates = [Self.template(0, seed: 1), Self.template(0, seed: 2), Self.template(2, seed: 1)]
        var frame = 0
        for (round, t) in roundTemplates.enumerated() {
            XCTAssertEqual(s.round, round)
            XCTAssertEqual(s.progress.captured, round)
            guard case .needPrints(let prints) = s.observe(Self.sighting(Self.all4), at: Self.at(frame)) else { return XCTFail() }
            frame += 1
            XCTAssertEqual(prints.count, 4)
            // A round where one finger gives no template is not done.
            guard case .progress = s.judged(Dictionary(uniqueKeysWithValues: positions.dropLast().map { ($0, t) })) else { return XCTFail() }
            guard case .needPrints = s.observe(Self.sighting(Self.all4), at: Self.at(frame)) else { return XCTFail() }
            frame += 1
            let step = s.judged(Dictionary(uniqueKeysWithValues: positions.map { ($0, t) }))
            if round < 2 {
                guard case .progress = step else { return XCTFail("round \(round + 1) of 3") }
            } else {
                guard case .decided(let o) = step else { return XCTFail("three rounds done") }
                XCTAssertEqual(o.chosen.map(\.position), positions)
                XCTAssertEqual(o.chosen.map(\.captures), [3, 3, 3, 3])
                XCTAssertTrue(o.chosen.allSatisfy { $0.template != roundTemplates[1] }, "the odd capture out is not kept")
            }
        }
    }

    func testEnrolmentRefusesAFakeAndFailsWithoutAVerdictAtTheDeadline() {
        var s = FingerEnrolment(Self.spec(liveness: .low), rounds: 1, matcher: FingerMatcher(), startedAt: Self.start)
        guard case .failed(.spoof) = s.observe(Self.sighting(Self.all4, liveness: .fake), at: Self.at(0)) else { return XCTFail() }
        var slow = FingerEnrolment(Self.spec(liveness: .low), rounds: 1, matcher: FingerMatcher(), startedAt: Self.start)
        guard case .progress = slow.observe(Self.sighting(Self.all4), at: Self.at(0)) else { return XCTFail("waits for a verdict") }
        guard case .failed(.lowQuality) = slow.observe(Self.sighting(Self.all4), at: Self.start + 1000 * Self.ms) else {
            return XCTFail("no verdict by the deadline")
        }
    }

    // MARK: Authentication

    static func match(_ user: String, _ score: Double) -> FingerMatch {
        FingerMatch(user: user, templateID: "t-\(user)", position: "right_index", score: score)
    }

    func testAuthenticationRematchesOnlyImprovedPrintsAndDecidesOnAMatch() {
        var s = FingerAuthentication(Self.spec(), threshold: 48, startedAt: Self.start)
        guard case .needPrints(let first) = s.observe(Self.sighting([60, 60, 60, 60]), at: Self.at(0)) else { return XCTFail() }
        XCTAssertEqual(first.count, 4)
        let index = FingerPosition(.right, .index)
        guard case .progress = s.judged([index: [Self.match("alice", 30), Self.match("bob", 20)]]) else { return XCTFail("30 < 48") }
        // Only the index improved by 5 or more: only it is matched again.
        guard case .needPrints(let again) = s.observe(Self.sighting([65, 63, 60, 60]), at: Self.at(1)) else { return XCTFail() }
        XCTAssertEqual(again.map(\.position), [index])
        guard case .decided(let o) = s.judged([index: [Self.match("alice", 70), Self.match("carol", 40)]]) else { return XCTFail() }
        XCTAssertTrue(o.matched)
        XCTAssertEqual(o.score, 70)
        XCTAssertEqual(o.best?.user, "alice")
        XCTAssertEqual(o.position, index)
        XCTAssertEqual(o.captures, 2)
        XCTAssertEqual(o.candidates, [Candidate(user: "alice", score: 70), Candidate(user: "carol", score: 40), Candidate(user: "bob", score: 20)])
    }

    func testAuthenticationWithLivenessNeedsALiveVerdictAndEndsNegativeAtTheDeadline() {
        var s = FingerAuthentication(Self.spec(liveness: .low), threshold: 48, startedAt: Self.start)
        let index = FingerPosition(.right, .index)
        guard case .needPrints = s.observe(Self.sighting(Self.all4), at: Self.at(0)) else { return XCTFail() }
        guard case .progress = s.judged([index: [Self.match("alice", 70)]]) else { return XCTFail("matched, but not yet live") }
        guard case .decided(let live) = s.observe(Self.sighting(Self.all4, liveness: .live), at: Self.at(1)) else { return XCTFail() }
        XCTAssertEqual(live.liveness, .live)

        var fake = FingerAuthentication(Self.spec(liveness: .low), threshold: 48, startedAt: Self.start)
        guard case .failed(.spoof) = fake.observe(Self.sighting(Self.all4, liveness: .fake), at: Self.at(0)) else { return XCTFail() }

        var weak = FingerAuthentication(Self.spec(), threshold: 48, startedAt: Self.start)
        guard case .needPrints = weak.observe(Self.sighting(Self.all4), at: Self.at(0)) else { return XCTFail() }
        _ = weak.judged([index: [Self.match("mallory", 20)]])
        guard case .decided(let negative) = weak.observe(Self.sighting(Self.all4), at: Self.start + 1000 * Self.ms) else {
            return XCTFail("prints were matched: a negative result, not an error")
        }
        XCTAssertFalse(negative.matched)
        XCTAssertEqual(negative.liveness, .noDecision)
        XCTAssertEqual(negative.captures, 1)

        var none = FingerAuthentication(Self.spec(), threshold: 48, startedAt: Self.start)
        guard case .failed(.noFingers) = none.observe(Self.sighting([]), at: Self.start + 1000 * Self.ms) else { return XCTFail() }
    }

    /// Prints of quality 80 that give no template end in "no template", not in "no usable
    /// fingers (best quality 80, needed 40)": the user is told what went wrong. One template
    /// extracted makes it an ordinary result again.
    func testPrintsThatGiveNoTemplateSaySo() {
        let end = Self.start + 1000 * Self.ms
        var s = FingerAuthentication(Self.spec(), threshold: 48, startedAt: Self.start)
        guard case .needPrints = s.observe(Self.sighting(Self.all4), at: Self.at(0)) else { return XCTFail() }
        guard case .progress = s.judged([:]) else { return XCTFail("no template yet: keep capturing") }
        guard case .failed(let failure) = s.observe(Self.sighting(Self.all4), at: end) else { return XCTFail("nothing matched") }
        XCTAssertEqual(failure, .noTemplate(fingers: Self.right4, feedback: .optimal))

        var partly = FingerAuthentication(Self.spec(), threshold: 48, startedAt: Self.start)
        _ = partly.observe(Self.sighting(Self.all4), at: Self.at(0))
        _ = partly.judged([FingerPosition(.right, .ring): [Self.match("alice", 20)]])
        guard case .decided(let negative) = partly.observe(Self.sighting(Self.all4), at: end) else { return XCTFail("one was matched") }
        XCTAssertFalse(negative.matched)

        var enrol = FingerEnrolment(Self.spec(), rounds: 1, matcher: FingerMatcher(), startedAt: Self.start)
        guard case .needPrints = enrol.observe(Self.sighting(Self.all4), at: end) else { return XCTFail("the last chance") }
        guard case .failed(let enrolFailure) = enrol.judged([:]) else { return XCTFail("no template at the last chance") }
        XCTAssertEqual(enrolFailure, .noTemplate(fingers: Self.right4, feedback: .optimal))
        // Enrolment needs every finger: three templates and no ring-finger one names the ring
        // finger, though templates were made (it used to say "best quality 80, needed 40").
        var partial = FingerEnrolment(Self.spec(), rounds: 1, matcher: FingerMatcher(), startedAt: Self.start)
        guard case .needPrints = partial.observe(Self.sighting(Self.all4), at: end) else { return XCTFail("the last chance") }
        let three = Dictionary(uniqueKeysWithValues: [Digit.index, .middle, .little].map { (FingerPosition(.right, $0), Self.template(0, seed: 1)) })
        guard case .failed(let partialFailure) = partial.judged(three) else { return XCTFail("no ring template at the last chance") }
        XCTAssertEqual(partialFailure, .noTemplate(fingers: [FingerPosition(.right, .ring)], feedback: .optimal))
        // A finger that gives a template on a later try is no longer named.
        var later = FingerEnrolment(Self.spec(), rounds: 1, matcher: FingerMatcher(), startedAt: Self.start)
        _ = later.observe(Self.sighting(Self.all4), at: Self.at(0))
        guard case .progress = later.judged([:]) else { return XCTFail("no template yet: keep capturing") }
        _ = later.observe(Self.sighting(Self.all4), at: end)
        guard case .failed(let laterFailure) = later.judged(three) else { return XCTFail("no ring template at the last chance") }
        XCTAssertEqual(laterFailure, .noTemplate(fingers: [FingerPosition(.right, .ring)], feedback: .optimal))
        var dim = FingerEnrolment(Self.spec(), rounds: 1, matcher: FingerMatcher(), startedAt: Self.start)
        guard case .failed(.lowQuality) = dim.observe(Self.sighting([30, 30, 30, 30], feedback: .focus), at: end) else {
            return XCTFail("prints below the threshold are still low quality")
        }
    }
}
