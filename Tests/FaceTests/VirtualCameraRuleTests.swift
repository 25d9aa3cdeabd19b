import BiometricFace
import XCTest

/// `face_liveness_refuse_virtual`: every branch of the one decision.
final class VirtualCameraRuleTests: XCTestCase {
    let loopback = VirtualCameraRule.Camera(isVirtual: true, isReplay: false, driver: "v4l2 loopback")
    let replay = VirtualCameraRule.Camera(isVirtual: true, isReplay: true, driver: "replay")
    let sensor = VirtualCameraRule.Camera(isVirtual: false, isReplay: false, driver: "uvcvideo")

    func testDefaultRefusesVirtualCamerasOnTheLoginPathOnly() {
        let rule = VirtualCameraRule(testInstance: false)
        XCTAssertEqual(rule.policy, .pam)
        XCTAssertEqual(rule.decide(loopback, liveness: true, login: true), .refused(driver: "v4l2 loopback"))
        XCTAssertEqual(rule.decide(replay, liveness: true, login: true), .refused(driver: "replay"))
        XCTAssertEqual(rule.decide(loopback, liveness: true, login: false), .allowed)
        XCTAssertEqual(rule.decide(sensor, liveness: true, login: true), .allowed)
    }

    func testImageModeIsNeverRefused() {
        for policy in VirtualCameraPolicy.allCases {
            let rule = VirtualCameraRule(policy: policy, testInstance: false)
            XCTAssertEqual(rule.decide(loopback, liveness: false, login: true), .allowed, "\(policy)")
        }
    }

    func testYesRefusesEveryLivenessSessionAndNoNone() {
        let yes = VirtualCameraRule(policy: .yes, testInstance: false)
        XCTAssertEqual(yes.decide(loopback, liveness: true, login: false), .refused(driver: "v4l2 loopback"))
        XCTAssertEqual(yes.decide(sensor, liveness: true, login: false), .allowed)
        let no = VirtualCameraRule(policy: .no, testInstance: false)
        XCTAssertEqual(no.decide(loopback, liveness: true, login: true), .allowed)
    }

    func testATestDaemonKeepsItsReplayCamerasButNotKernelVirtualDrivers() {
        let rule = VirtualCameraRule(policy: .yes, testInstance: true)
        XCTAssertEqual(rule.decide(replay, liveness: true, login: true), .allowed)
        XCTAssertEqual(rule.decide(loopback, liveness: true, login: true), .refused(driver: "v4l2 loopback"))
    }

    func testConfigNames() {
        XCTAssertEqual(VirtualCameraPolicy.wireNames, ["pam", "yes", "no"])
        XCTAssertNil(VirtualCameraPolicy(rawValue: "true"))
    }
}
