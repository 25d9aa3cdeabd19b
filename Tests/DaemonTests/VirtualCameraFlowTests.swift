import BiometricClient
import BiometricProtocol
import Foundation
import XCTest
import TestRequirements

/// `refuse_virtual_cameras` through the socket (issue 33, item 3). A daemon started with
/// INVOCATION_ID (as systemd starts it) is a production instance, so its replay cameras count as
/// the virtual devices they are. The default (`pam`) refuses them on every login path (here
/// auth.authenticate and face.identify) and lets face.verify run on them without granting
/// anything; `yes` refuses them in face.verify too, in image mode as well.
final class VirtualCameraFlowTests: XCTestCase {
    static let models = repositoryRoot + "/models"

    func testVirtualCamerasAreRefusedOnLoginPathsAndProveNothingElsewhere() throws {
        guard FileManager.default.fileExists(atPath: Self.models + "/dlib_face_recognition_resnet_model_v1.dat") else {
            throw missing("models not installed: run scripts/setup.sh")
        }
        let live = sharedData + "/video/tran_live/video.mp4"
        guard FileManager.default.fileExists(atPath: live) else { throw missing("\(live) not found") }
        let production = ["INVOCATION_ID": "0123456789abcdef0123456789abcdef"]
        let camera = ["replay:\(live)?fps=30&loop=true"]
        let first = try DaemonProcess(cameras: camera, extraArguments: ["--models", Self.models, "--set", "refuse_virtual_cameras=pam"],
                                      environment: production)
        first.removeFiles = false
        var client = try first.client()
        // Enrolment proves nothing about a person: a virtual camera may enrol (its own access rule
        // asks for a fresh authentication first).
        let _: FaceEnrollResult = try client.call(Method.faceEnroll, FaceEnrollParams(
            user: "tran", camera: "replay0", frames: 2, countdownS: 0, qualityThreshold: 20))

        let login: AuthenticateResult = try client.call(Method.authAuthenticate, AuthenticateParams(
            user: "tran", factors: ["face"], camera: "replay0", timeoutMs: 20000))
        XCTAssertFalse(login.ok, "\(login)")
        XCTAssertEqual(login.tried.first?.reason, "spoof_detected", "\(login)")
        XCTAssertEqual(login.tried.first?.code, 3004, "\(login)")
        XCTAssertTrue(login.tried.first?.message.contains("virtual capture device") ?? false, "\(login)")
        let identify = rpcError {
            let _: FaceIdentifyResult = try client.call(Method.faceIdentify, FaceIdentifyParams(camera: "replay0", mode: .image, qualityThreshold: 20))
        }
        XCTAssertEqual(identify?.code, 3004, "1:N is a login path: refused before capture")
        XCTAssertEqual(identify?.data?["cue"], "virtual_camera")
        let status: AuthStatusResult = try client.call(Method.authStatus, UserParams(user: "tran"))
        XCTAssertEqual(status.biometricFailures, 0, "a refused camera judged nothing and counts nothing")

        // face.verify may run on it (image mode, an admin's: no anti-spoofing model or blink
        // needed here), but its match proves nothing: no fresh authentication.
        let verified: FaceVerifyResult = try client.call(Method.faceVerify, FaceVerifyParams(
            user: "tran", camera: "replay0", mode: .image, qualityThreshold: 20, timeoutMs: 20000))
        XCTAssertTrue(verified.match)
        XCTAssertEqual(verified.authenticated, false)
        XCTAssertTrue(first.log.contains("face match of tran proves nothing: virtual camera (driver replay)"), first.log.suffix(2000).description)
        first.stop()

        // `yes`: face.verify is refused before capture, with the cue, whatever the mode.
        let second = try DaemonProcess(cameras: camera, extraArguments: ["--models", Self.models, "--set", "refuse_virtual_cameras=yes"],
                                       root: first.root, environment: production)
        client = try second.client()
        for mode in [FaceCaptureMode.liveness, .image] {
            let refused = rpcError {
                let _: FaceVerifyResult = try client.call(Method.faceVerify, FaceVerifyParams(
                    user: "tran", camera: "replay0", mode: mode, qualityThreshold: 20, timeoutMs: 20000))
            }
            XCTAssertEqual(refused?.code, 3004, String(describing: refused))
            XCTAssertEqual(refused?.data?["cue"], "virtual_camera", String(describing: refused))
            XCTAssertEqual(refused?.data?["driver"], "replay", String(describing: refused))
            XCTAssertEqual(refused?.data?["spoof_attempt"], true)
        }
    }

    func testAnUnknownValueIsAConfigErrorUnderEitherName() throws {
        for key in ["refuse_virtual_cameras", "face_liveness_refuse_virtual"] {
            do {
                _ = try DaemonProcess(cameras: [], extraArguments: ["--set", "\(key)=maybe"])
                XCTFail("the daemon started with \(key)=maybe")
            } catch let failed as DaemonProcess.DaemonFailed {
                XCTAssertTrue(failed.log.contains(key), failed.log)
                XCTAssertTrue(failed.log.contains("pam, yes, no"), failed.log)
            }
        }
    }
}
