import BiometricClient
import BiometricProtocol
import Foundation
import XCTest

/// `face_liveness_refuse_virtual` through the socket. A daemon started with INVOCATION_ID (as
/// systemd starts it) is a production instance, so its replay cameras count as the virtual
/// devices they are: the default (`pam`) refuses them on the login path (auth.authenticate) and
/// not in face.verify; `yes` refuses them in face.verify too.
final class VirtualCameraFlowTests: XCTestCase {
    static let models = repositoryRoot + "/models"

    func testTheLoginPathRefusesAVirtualCameraForLivenessByDefault() throws {
        guard FileManager.default.fileExists(atPath: Self.models + "/dlib_face_recognition_resnet_model_v1.dat") else {
            throw XCTSkip("models not installed: run scripts/setup.sh")
        }
        let live = sharedData + "/video/tran_live/video.mp4"
        guard FileManager.default.fileExists(atPath: live) else { throw XCTSkip("\(live) not found") }
        let production = ["INVOCATION_ID": "0123456789abcdef0123456789abcdef"]
        let camera = ["replay:\(live)?fps=30&loop=true"]
        let first = try DaemonProcess(cameras: camera, extraArguments: ["--models", Self.models], environment: production)
        first.removeFiles = false
        var client = try first.client()
        // Enrolment does not check liveness: a virtual camera may enrol.
        let _: FaceEnrollResult = try client.call(Method.faceEnroll, FaceEnrollParams(
            user: "tran", camera: "replay0", frames: 2, countdownS: 0, qualityThreshold: 20))

        let login: AuthenticateResult = try client.call(Method.authAuthenticate, AuthenticateParams(
            user: "tran", factors: ["face"], camera: "replay0", timeoutMs: 20000))
        XCTAssertFalse(login.ok, "\(login)")
        XCTAssertEqual(login.tried.first?.reason, "spoof_detected", "\(login)")
        XCTAssertEqual(login.tried.first?.code, 3004, "\(login)")
        XCTAssertTrue(login.tried.first?.message.contains("virtual capture device") ?? false, "\(login)")
        XCTAssertTrue(first.log.contains("virtual capture device (driver replay)"), "logged")

        // Not the login path: face.verify is not refused for the camera (image mode, so this
        // test needs no anti-spoofing model and no blink).
        let verified: FaceVerifyResult = try client.call(Method.faceVerify, FaceVerifyParams(
            user: "tran", camera: "replay0", mode: .image, qualityThreshold: 20, timeoutMs: 20000))
        XCTAssertTrue(verified.match)
        first.stop()

        // `yes`: face.verify in liveness mode is refused before capture, with the cue.
        let second = try DaemonProcess(cameras: camera, extraArguments: ["--models", Self.models, "--set", "face_liveness_refuse_virtual=yes"],
                                       root: first.root, environment: production)
        client = try second.client()
        let refused = rpcError {
            let _: FaceVerifyResult = try client.call(Method.faceVerify, FaceVerifyParams(
                user: "tran", camera: "replay0", qualityThreshold: 20, timeoutMs: 20000))
        }
        XCTAssertEqual(refused?.code, 3004, String(describing: refused))
        XCTAssertEqual(refused?.data?["cue"], "virtual_camera", String(describing: refused))
        XCTAssertEqual(refused?.data?["driver"], "replay", String(describing: refused))
        XCTAssertEqual(refused?.data?["spoof_attempt"], true)
        // Image mode claims nothing about the presentation: never refused.
        let image: FaceVerifyResult = try client.call(Method.faceVerify, FaceVerifyParams(
            user: "tran", camera: "replay0", mode: .image, qualityThreshold: 20, timeoutMs: 20000))
        XCTAssertTrue(image.match)
    }

    func testAnUnknownValueIsAConfigError() throws {
        do {
            _ = try DaemonProcess(cameras: [], extraArguments: ["--set", "face_liveness_refuse_virtual=maybe"])
            XCTFail("the daemon started with face_liveness_refuse_virtual=maybe")
        } catch let failed as DaemonProcess.DaemonFailed {
            XCTAssertTrue(failed.log.contains("face_liveness_refuse_virtual"), failed.log)
            XCTAssertTrue(failed.log.contains("pam, yes, no"), failed.log)
        }
    }
}
