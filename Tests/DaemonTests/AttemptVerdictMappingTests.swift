@testable import BiometricDaemon
@testable import BiometricAuth
import BiometricCamera
import BiometricFace
import BiometricFinger
import BiometricProtocol
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

    /// A finger capture that ended with prints but no template says which fingers gave none: an
    /// enrolment short of one finger is told which one to present again.
    func testAPrintWithoutTemplateIsNamedInTheError() {
        let one = RPCError(FingerFailure.noTemplate(fingers: [FingerPosition(.right, .ring)], feedback: .focus))
        XCTAssertEqual(one.errorReason, .badCapture)
        XCTAssertEqual(one.message, "prints were made, but the print of right ring gave no fingerprint template (too few clear minutiae)")
        XCTAssertEqual(one.data?["fingers"], .array(["right_ring"]))
        XCTAssertEqual(one.data?["feedback"], "focus")
        let two = RPCError(FingerFailure.noTemplate(fingers: [FingerPosition(.left, .thumb), FingerPosition(.left, .index)], feedback: .optimal))
        XCTAssertTrue(two.message.contains("the prints of left thumb, left index gave no"), two.message)
    }

    func testFingerFailuresAndOtherErrors() {
        XCTAssertEqual(AttemptVerdict(FingerFailure.spoof), .presentationAttack)
        XCTAssertEqual(AttemptVerdict(FingerFailure.noFingers(timeoutMs: 10000)), .notJudged(.nobodyInView))
        XCTAssertEqual(AttemptVerdict(FingerFailure.noTemplate(fingers: [FingerPosition(.right, .ring)], feedback: .optimal)),
                       .notJudged(.poorQuality))
        XCTAssertEqual(AttemptVerdict(error: SessionFailure.face(.spoof(.recapture(highFrequencyShare: 0.01), livenessScore: 5))),
                       .presentationAttack)
        XCTAssertEqual(AttemptVerdict(error: CancellationError()), .notJudged(.canceled))
        XCTAssertEqual(AttemptVerdict(error: CameraError.lost("replay0", reason: "unplugged")), .notJudged(.cameraError))
        XCTAssertEqual(AttemptVerdict(matched: true), .matched)
        XCTAssertEqual(AttemptVerdict(matched: false), .noMatch)
    }

    /// Issue 33 item 10: refusals before capture are typed and read by type, never from an
    /// encoded error. A lock or a virtual camera judged nothing; an RPCError that merely says
    /// locked_out is not read at all.
    func testRefusalsBeforeCaptureAreNotJudged() {
        let lock = LockoutRefusal(subject: .camera("replay0"), status: .lockedFor(seconds: 20), failures: 5)
        XCTAssertEqual(AttemptVerdict(error: lock), .notJudged(.lockedOut))
        XCTAssertEqual(AttemptVerdict(error: TrustRefusal.virtualCamera(driver: "v4l2 loopback")), .notJudged(.refusedCamera))
        XCTAssertEqual(AttemptVerdict(error: RPCError.app(.lockedOut, "x")), .notJudged(.error))
        XCTAssertEqual(AttemptVerdict(error: Deadline(what: "face capture", milliseconds: 33000)), .notJudged(.error))
    }

    /// How a factor failed, for auth.authenticate's `tried` kinds and FIDO's answer.
    func testFactorFailureKinds() {
        XCTAssertEqual(FactorRunner.FailureKind(error: SessionFailure.face(.timeout(timeoutMs: 1, sawFace: true))), .timeout)
        XCTAssertEqual(FactorRunner.FailureKind(error: SessionFailure.finger(.noFingers(timeoutMs: 1))), .timeout)
        XCTAssertEqual(FactorRunner.FailureKind(error: Deadline(what: "x", milliseconds: 1)), .timeout)
        XCTAssertEqual(FactorRunner.FailureKind(error: SessionFailure.face(.noBlink(timeoutMs: 1, livenessScore: 1, cameraFPS: nil))),
                       .presentationAttack)
        XCTAssertEqual(FactorRunner.FailureKind(error: SessionFailure.finger(.spoof)), .presentationAttack)
        XCTAssertEqual(FactorRunner.FailureKind(error: TrustRefusal.virtualCamera(driver: "vivid")), .other)
        XCTAssertEqual(FactorRunner.FailureKind(error: RPCError.app(.timeout, "an encoded time-out is not read")), .other)
    }

    /// The edge: each typed refusal becomes its SPEC §6 error once, with the data clients read.
    func testTypedRefusalsAtTheEdge() {
        let user = RPCError.from(LockoutRefusal(subject: .user("ann"), status: .lockedFor(seconds: 27), failures: 5, pinFallback: true))
        XCTAssertEqual(user.code, 5001)
        XCTAssertEqual(user.data?["retry_after_s"], 27)
        XCTAssertEqual(user.data?["pin_fallback"], true)
        let untilPIN = RPCError.from(LockoutRefusal(subject: .user("ann"), status: .lockedUntilPIN, failures: 20))
        XCTAssertEqual(untilPIN.data?["retry_after_s"], .null)
        XCTAssertEqual(untilPIN.data?["requires_pin"], true)
        let camera = RPCError.from(LockoutRefusal(subject: .camera("cam0"), status: .lockedUntilPIN, failures: 20))
        XCTAssertEqual(camera.data?["camera"], "cam0")
        XCTAssertEqual(camera.data?["requires_admin"], true)
        XCTAssertEqual(RPCError.from(PINRefusal.locked(failures: 3)).code, 5002)
        XCTAssertEqual(RPCError.from(PINRefusal.notSet(user: "ann")).code, 5004)
        XCTAssertEqual(RPCError.from(PINRefusal.format(.tooShort(min: 4), field: "old_pin")).data?["field"], "old_pin")
        let virtual = RPCError.from(TrustRefusal.virtualCamera(driver: "v4l2 loopback"))
        XCTAssertEqual(virtual.code, 3004)
        XCTAssertEqual(virtual.data?["cue"], "virtual_camera")
        let floor = RPCError.from(FloorRefusal(loosening: .init(knob: .matchingThreshold, asked: "10", floor: "48"), modality: .finger))
        XCTAssertEqual(floor.code, 1003)
        XCTAssertEqual(floor.data?["field"], "threshold", "the finger methods' name for it")
        XCTAssertEqual(floor.data?["floor"], 48.0)
        XCTAssertEqual(RPCError.from(Deadline(what: "face capture", milliseconds: 33000)).code, 1007)
    }
}
