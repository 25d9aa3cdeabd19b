import BiometricCore
@testable import BiometricFace
import BiometricProtocol
import XCTest

/// Issue 36: a lock screen's attempt that needs the face to arrive (`requireArrival`), and a
/// camera that cannot see anybody (only dark frames from the start), on synthetic frames.
final class FaceArrivalTests: XCTestCase {
    typealias F = FaceSessionTests

    /// A frame with nobody in it; `brightness` is the whole frame's mean grey level.
    static func empty(brightness: Double = 128) -> FaceObservation {
        var o = F.frame(face: false)
        o.frameBrightness = brightness
        return o
    }

    static func settings(arrival: Bool) -> FaceAuthenticationSettings {
        var s = F.settings(liveness: false)
        s.requireArrival = arrival
        return s
    }

    func verification(arrival: Bool) -> FaceVerification {
        FaceVerification(Self.settings(arrival: arrival), references: [F.template(1)], calibration: FaceCalibration.lfw,
                         startedAt: F.at(0))
    }

    /// The face in view when the attempt began is never judged, however long it stays.
    func testAFaceInViewFromTheStartIsNotJudged() {
        var session = verification(arrival: true)
        guard case .running(let templates) = F.run(&session, frames: 200, { _ in F.frame() }, judge: { _ in F.template(1) }) else {
            return XCTFail("decided on a face that was there when the attempt began")
        }
        XCTAssertEqual(templates, 0)
        // and its time-out says no face arrived (not "only poor frames")
        XCTAssertEqual(session.expired(now: F.at(0) + 11_000 * F.ms), .timeout(timeoutMs: 10_000, sawFace: false))
    }

    /// Nobody for a second (and two frames), then the face: judged, and it matches.
    func testAFaceThatArrivesAfterAnAbsenceIsJudged() {
        var session = verification(arrival: true)
        // frames 0-29 the face, 30-65 nobody (~1.2 s), then the face again
        let ended = F.run(&session, frames: 120, { i in (30..<66).contains(i) ? Self.empty() : F.frame() }, judge: { _ in F.template(1) })
        guard case .decided(let outcome, let at) = ended else { return XCTFail("no decision: \(ended)") }
        XCTAssertTrue(outcome.matched)
        XCTAssertEqual(at, 66 + F.k - 1, "the first frames of the arriving face decide")
    }

    /// A blink of absence (one frame, or under a second) is not an arrival.
    func testABriefAbsenceIsNotAnArrival() {
        var session = verification(arrival: true)
        // one missed detection every 20 frames, and once 20 frames (660 ms) of nobody
        let ended = F.run(&session, frames: 150, { i in (i % 20 == 10 || (100..<120).contains(i)) ? Self.empty() : F.frame() },
                          judge: { _ in F.template(1) })
        guard case .running(let templates) = ended else { return XCTFail("decided after a brief absence: \(ended)") }
        XCTAssertEqual(templates, 0)
    }

    /// Without requireArrival the face in view decides at once, as before.
    func testWithoutArrivalTheFaceInViewDecides() {
        var session = verification(arrival: false)
        guard case .decided(let outcome, let at) = F.run(&session, frames: 50, { _ in F.frame() }, judge: { _ in F.template(1) }) else {
            return XCTFail("no decision")
        }
        XCTAssertTrue(outcome.matched)
        XCTAssertEqual(at, F.k - 1)
    }

    /// Only dark frames, nobody, from the start: the attempt ends after 1.5 s and three frames
    /// (too_dark), not at its 10 s time-out.
    func testADarkCameraEndsTheAttemptAtOnce() {
        var session = verification(arrival: false)
        let ended = F.run(&session, frames: 300, { _ in Self.empty(brightness: 8) }, judge: { _ in F.template(1) })
        guard case .failed(let failure, let at) = ended else { return XCTFail("no early end: \(ended)") }
        XCTAssertEqual(failure, .lowQuality(threshold: 48, feedback: [.tooDark], enrolling: false))
        XCTAssertEqual(F.at(at) - F.at(0) >= FaceArrival.darkMs * F.ms, true)
        XCTAssertLessThan(at, 60, "ended within two seconds of frames")
    }

    /// A dark room with a face in it, a bright empty room, or a face seen first: no early end.
    func testOnlyACameraThatSeesNothingEndsEarly() {
        var session = verification(arrival: false)
        var ended = F.run(&session, frames: 200, { _ in Self.empty(brightness: 90) }, judge: { _ in F.template(1) })
        guard case .running = ended else { return XCTFail("a lit empty room ended early: \(ended)") }
        session = verification(arrival: false)
        // the face was seen once, then the lens was covered: the ordinary time-out applies
        ended = F.run(&session, frames: 200, { i in i == 0 ? F.frame(quality: 10) : Self.empty(brightness: 5) }, judge: { _ in F.template(1) })
        guard case .running = ended else { return XCTFail("ended early after a face was seen: \(ended)") }
        // frames without a measured brightness (no pump measure) never count as dark
        session = verification(arrival: false)
        ended = F.run(&session, frames: 200, { _ in F.frame(face: false) }, judge: { _ in F.template(1) })
        guard case .running = ended else { return XCTFail("unmeasured frames counted as dark: \(ended)") }
    }

    /// A lock screen's attempt with the lens covered: said at once too (the dark check comes first).
    func testADarkCameraEndsAnArrivalAttemptToo() {
        var session = verification(arrival: true)
        let ended = F.run(&session, frames: 100, { _ in Self.empty(brightness: 3) }, judge: { _ in F.template(1) })
        guard case .failed(.lowQuality(_, let feedback, _), _) = ended else { return XCTFail("no early end: \(ended)") }
        XCTAssertEqual(feedback, [.tooDark])
    }
}
