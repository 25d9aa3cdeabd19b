import BiometricAuth
import XCTest

/// The trust policy's decisions (issue 33), each branch as a value: what a run proves and grants
/// (`TrustPolicy`), how a caller's knobs compare with the floors (`CallerLimits.judge`), what a
/// virtual camera may do (`VirtualCameraRule`), and what 1:N names (`TrustPolicy.disclosed`).
final class TrustPolicyTests: XCTestCase {
    private func face(_ verdict: AttemptVerdict, camera: CameraTrust? = .sensor, capture: CaptureDecision = .atFloor,
                      references: References = .enrolled, other: Bool = false) -> Evidence {
        Evidence(user: "alice", factor: .face, verdict: verdict, camera: camera, capture: capture, references: references,
                 startedByOtherUser: other)
    }

    func testAProvenMatchGrantsWhatTheMethodDeclares() {
        let e = face(.matched)
        XCTAssertTrue(TrustPolicy.proves(e))
        XCTAssertEqual(TrustPolicy.effects(of: e, declared: .authentication, policyFactors: [.face]), Effects(reverify: true, lockout: .reset))
        XCTAssertEqual(TrustPolicy.effects(of: e, declared: .lockoutReset, policyFactors: [.face]), Effects(reverify: false, lockout: .reset),
                       "identify and key.sign reset the count but re-verify nobody")
        XCTAssertEqual(TrustPolicy.effects(of: e, declared: .none, policyFactors: [.face]), Effects(reverify: false, lockout: .none))
        XCTAssertEqual(TrustPolicy.effects(of: e, declared: .authentication, policyFactors: nil), Effects(reverify: true, lockout: .reset),
                       "no policy record: the default factors, face among them")
    }

    /// Issue 33 item 1: a virtual-camera or weakened-liveness match grants nothing.
    func testAMatchThatProvesNothingGrantsNothing() {
        let unproven: [(Evidence, String)] = [
            (face(.matched, camera: .untrusted(driver: "v4l2 loopback")), "a virtual camera"),
            (face(.matched, camera: nil), "no camera recorded"),
            (face(.matched, capture: .weakened([.livenessThreshold])), "liveness_threshold 0 (an admin's)"),
            (face(.matched, capture: .weakened([])), "never judged"),
            (face(.matched, references: .callerSupplied), "the caller's own templates"),
        ]
        for (e, why) in unproven {
            XCTAssertFalse(TrustPolicy.proves(e), why)
            XCTAssertEqual(TrustPolicy.effects(of: e, declared: .authentication, policyFactors: [.face]), Effects(reverify: false, lockout: .none),
                           "\(why): no re-verification, and the failure count is left as it is")
        }
        XCTAssertTrue(TrustPolicy.proves(face(.matched, camera: .allowedVirtual(driver: "replay"))), "a virtual camera the admin allows")
    }

    /// Issue 33 item 4: a face match re-verified alice while her policy was ["pin"].
    func testOnlyAFactorOfTheUsersPolicyReverifies() {
        let e = face(.matched)
        XCTAssertEqual(TrustPolicy.effects(of: e, declared: .authentication, policyFactors: [.pin]), Effects(reverify: false, lockout: .reset))
        XCTAssertEqual(TrustPolicy.effects(of: e, declared: .authentication, policyFactors: []), Effects(reverify: false, lockout: .reset))
        let pin = Evidence(user: "alice", factor: .pin, verdict: .matched, camera: nil)
        XCTAssertTrue(TrustPolicy.proves(pin), "the PIN needs no camera")
        XCTAssertEqual(TrustPolicy.effects(of: pin, declared: .authentication, policyFactors: [.pin]), Effects(reverify: true, lockout: .none),
                       "the PIN's own record clears the biometric lockout")
        XCTAssertEqual(TrustPolicy.effects(of: pin, declared: .authentication, policyFactors: [.face]).reverify, false)
        let wrongPIN = Evidence(user: "alice", factor: .pin, verdict: .noMatch, camera: nil)
        XCTAssertEqual(TrustPolicy.effects(of: wrongPIN, declared: .authentication, policyFactors: [.pin]).lockout, .none,
                       "a wrong PIN counts on the PIN's counter, not the biometric one")
    }

    func testFailuresCountWhateverTheCameraAndNobodyElsesAttemptCounts() {
        for e in [face(.noMatch), face(.presentationAttack), face(.noMatch, camera: .untrusted(driver: "vivid")),
                  face(.noMatch, capture: .weakened([.matchingThreshold]))] {
            XCTAssertEqual(TrustPolicy.effects(of: e, declared: .authentication, policyFactors: [.face]).lockout, .countFailure)
        }
        XCTAssertEqual(TrustPolicy.effects(of: face(.notJudged(.refusedCamera)), declared: .authentication, policyFactors: [.face]).lockout,
                       .none, "a refused camera judged nothing: no lockout by feeding a virtual camera")
        XCTAssertEqual(TrustPolicy.effects(of: face(.notJudged(.lockedOut)), declared: .authentication, policyFactors: [.face]).lockout, .none)
        // SPEC §4: an attempt started for another user's account never counts toward their lockout.
        XCTAssertEqual(TrustPolicy.effects(of: face(.noMatch, other: true), declared: .authentication, policyFactors: [.face]).lockout, .none)
        XCTAssertEqual(TrustPolicy.effects(of: face(.matched, other: true), declared: .authentication, policyFactors: [.face]),
                       Effects(reverify: true, lockout: .none))
    }

    /// Issue 33 item 5: 1:N answers nothing about users it did not match.
    func testIdentificationNamesOnlyWhomItMatched() {
        let ranked = [("bob", 44.0), ("carol", 30.0)]
        XCTAssertTrue(TrustPolicy.disclosed(ranked, score: \.1, threshold: 48).isEmpty, "a stranger: no names, no near misses")
        let matched = [("bob", 60.0), ("carol", 49.0), ("dave", 20.0)]
        XCTAssertEqual(TrustPolicy.disclosed(matched, score: \.1, threshold: 48).map(\.0), ["bob", "carol"])
        let close = [("bob", 52.0), ("carol", 47.5), ("dave", 20.0)]
        XCTAssertEqual(TrustPolicy.disclosed(close, score: \.1, threshold: 48, stepUpMargin: 5).map(\.0), ["bob", "carol"],
                       "a step-up names whom it could not tell from the best")
        XCTAssertEqual(TrustPolicy.disclosed(close, score: \.1, threshold: 48).map(\.0), ["bob"])
    }
}

/// Issue 33 item 2: every knob has a floor, for face and finger alike.
final class CaptureFloorTests: XCTestCase {
    let floors = CallerLimits(faceThreshold: 48, fingerThreshold: 48, faceLiveness: .passive)

    func testStricterIsAlwaysAllowed() {
        let strict = CaptureAsk(modality: .face, matchingThreshold: 60, qualityThreshold: 70, faceLiveness: [.passive, .blink],
                                livenessThreshold: 80)
        XCTAssertEqual(floors.judge(strict, isAdmin: false), .atFloor)
        let finger = CaptureAsk(modality: .finger, matchingThreshold: 50, qualityThreshold: 60, fingerLiveness: .medium)
        XCTAssertEqual(floors.judge(finger, isAdmin: false), .atFloor)
        XCTAssertEqual(floors.judge(CaptureAsk(modality: .finger), isAdmin: false), .atFloor, "nothing asked: the floors")
    }

    func testEveryLooserKnobIsRefusedToANonAdmin() {
        let cases: [(CaptureAsk, Knob)] = [
            (CaptureAsk(modality: .face, matchingThreshold: 0), .matchingThreshold),
            (CaptureAsk(modality: .face, qualityThreshold: 20), .qualityThreshold),
            (CaptureAsk(modality: .face, livenessThreshold: 0), .livenessThreshold),
            (CaptureAsk(modality: .face, faceLiveness: .blink), .livenessMode),
            (CaptureAsk(modality: .face, faceLiveness: [.blink, .moves]), .livenessMode),
            (CaptureAsk(modality: .face, faceLiveness: []), .liveness),
            (CaptureAsk(modality: .finger, matchingThreshold: 40), .matchingThreshold),
            (CaptureAsk(modality: .finger, qualityThreshold: 10), .qualityThreshold),
            (CaptureAsk(modality: .finger, fingerLiveness: .veryLow), .livenessLevel),
            (CaptureAsk(modality: .finger, fingerLiveness: LivenessNone.level), .liveness),
        ]
        for (ask, knob) in cases {
            guard case .refused(let l) = floors.judge(ask, isAdmin: false) else { return XCTFail("\(ask) not refused") }
            XCTAssertEqual(l.knob, knob, "\(ask)")
            XCTAssertEqual(floors.judge(ask, isAdmin: true), .weakened([knob]), "an admin may, and grants nothing by it")
        }
    }

    func testTheConfiguredModeIsTheFloorOfTheMode() {
        let blinkFloor = CallerLimits(faceLiveness: .blink)
        XCTAssertEqual(blinkFloor.judge(CaptureAsk(modality: .face, faceLiveness: [.blink, .moves]), isAdmin: false), .atFloor, "challenge ⊇ blink")
        XCTAssertEqual(blinkFloor.judge(CaptureAsk(modality: .face, faceLiveness: [.passive, .blink]), isAdmin: false), .atFloor)
        if case .refused = blinkFloor.judge(CaptureAsk(modality: .face, faceLiveness: .passive), isAdmin: false) {} else {
            XCTFail("passive drops the blink the admin configured")
        }
        XCTAssertEqual(floors.judge(CaptureAsk(modality: .face, faceLiveness: [.passive, .blink]), isAdmin: false), .atFloor)
        // The liveness threshold means nothing without liveness, so image mode reports only that.
        XCTAssertEqual(floors.judge(CaptureAsk(modality: .face, faceLiveness: [], livenessThreshold: 0), isAdmin: true), .weakened([.liveness]))
    }
}

private enum LivenessNone { static let level = LivenessLevel.none }

/// `refuse_virtual_cameras` with each method's camera requirement (issue 33, item 3).
final class VirtualCameraRuleTests: XCTestCase {
    let loopback = VirtualCameraRule.Camera(isVirtual: true, isReplay: false, driver: "v4l2 loopback")
    let replay = VirtualCameraRule.Camera(isVirtual: true, isReplay: true, driver: "replay")
    let sensor = VirtualCameraRule.Camera(isVirtual: false, isReplay: false, driver: "uvcvideo")

    func testASensorIsAlwaysTrusted() {
        for policy in VirtualCameraPolicy.allCases {
            for requirement in CameraRequirement.allCases {
                XCTAssertEqual(VirtualCameraRule(policy: policy, testInstance: false).decide(sensor, requirement: requirement), .sensor)
            }
        }
    }

    func testByDefaultLoginPathsRefuseAndVerificationsProveNothing() {
        let rule = VirtualCameraRule(testInstance: false)
        XCTAssertEqual(rule.policy, .pam)
        XCTAssertEqual(rule.decide(loopback, requirement: .trusted), .refused(driver: "v4l2 loopback"))
        XCTAssertEqual(rule.decide(replay, requirement: .trusted), .refused(driver: "replay"), "a production daemon's replay is virtual")
        XCTAssertEqual(rule.decide(loopback, requirement: .trustedToGrant), .untrusted(driver: "v4l2 loopback"))
        XCTAssertFalse(rule.decide(loopback, requirement: .trustedToGrant).isTrusted)
        XCTAssertEqual(rule.decide(loopback, requirement: .any), .untrusted(driver: "v4l2 loopback"))
    }

    func testYesRefusesEveryVerificationAndNoTrustsEverything() {
        let yes = VirtualCameraRule(policy: .yes, testInstance: false)
        XCTAssertEqual(yes.decide(loopback, requirement: .trustedToGrant), .refused(driver: "v4l2 loopback"))
        XCTAssertEqual(yes.decide(loopback, requirement: .any), .untrusted(driver: "v4l2 loopback"), "enrolment and capture still run")
        let no = VirtualCameraRule(policy: .no, testInstance: false)
        XCTAssertEqual(no.decide(loopback, requirement: .trusted), .allowedVirtual(driver: "v4l2 loopback"))
        XCTAssertTrue(no.decide(loopback, requirement: .trusted).isTrusted)
    }

    func testATestDaemonTrustsOnlyItsOwnReplayCameras() {
        let rule = VirtualCameraRule(policy: .yes, testInstance: true)
        XCTAssertEqual(rule.decide(replay, requirement: .trusted), .allowedVirtual(driver: "replay"))
        XCTAssertEqual(rule.decide(loopback, requirement: .trusted), .refused(driver: "v4l2 loopback"), "kernel virtual drivers are not")
    }

    func testWireNames() {
        XCTAssertEqual(VirtualCameraPolicy.wireNames, ["pam", "yes", "no"])
        XCTAssertNil(VirtualCameraPolicy(rawValue: "true"))
    }
}
