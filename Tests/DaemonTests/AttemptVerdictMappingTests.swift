@testable import BiometricDaemon
import BiometricAuth
import BiometricCamera
import BiometricFace
import BiometricFinger
import XCTest

/// The one mapping from how a session ended to what the lockout counts.
final class AttemptVerdictMappingTests: XCTestCase {
    func testFaceFailures() {
        XCTAssertEqual(AttemptVerdict(.spoof(.border(framedFraction: 0.9), livenessScore: 10)), .presentationAttack)
        XCTAssertEqual(AttemptVerdict(.noBlink(timeoutMs: 5000, livenessScore: 40, cameraFPS: 30)), .presentationAttack)
        XCTAssertEqual(AttemptVerdict(.timeout(timeoutMs: 30000, sawFace: true)), .noMatch, "a face in view all along counts")
        XCTAssertEqual(AttemptVerdict(.timeout(timeoutMs: 30000, sawFace: false)), .notJudged(.nobodyInView))
        XCTAssertEqual(AttemptVerdict(.lowQuality(threshold: 48, feedback: [.tooDark], enrolling: false)), .notJudged(.poorQuality))
    }

    func testFingerFailuresAndOtherErrors() {
        XCTAssertEqual(AttemptVerdict(FingerFailure.spoof), .presentationAttack)
        XCTAssertEqual(AttemptVerdict(FingerFailure.noFingers(timeoutMs: 10000)), .notJudged(.nobodyInView))
        XCTAssertEqual(AttemptVerdict(error: SessionFailure.face(.spoof(.recapture(highFrequencyShare: 0.01), livenessScore: 5))),
                       .presentationAttack)
        XCTAssertEqual(AttemptVerdict(error: CancellationError()), .notJudged(.canceled))
        XCTAssertEqual(AttemptVerdict(error: CameraError.lost("replay0", reason: "unplugged")), .notJudged(.cameraError))
        XCTAssertEqual(AttemptVerdict(matched: true), .matched)
        XCTAssertEqual(AttemptVerdict(matched: false), .noMatch)
    }
}
