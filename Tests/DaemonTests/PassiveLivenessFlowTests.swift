import BiometricClient
import BiometricProtocol
import Foundation
import XCTest
import TestRequirements

/// Passive liveness through the socket, on replay cameras of the shared clips and LFW photos: the
/// default mode (no liveness_mode named) passes the live clip without asking for anything,
/// refuses a still picture played by a replay camera, refuses an unknown mode name with -32602,
/// and answers not_initialized naming the model when the anti-spoofing models are missing.
final class PassiveLivenessFlowTests: XCTestCase {
    static let models = repositoryRoot + "/models"
    var folders: [String] = []

    override func setUpWithError() throws {
        guard FileManager.default.fileExists(atPath: Self.models + "/dlib_face_recognition_resnet_model_v1.dat") else {
            throw missing("models not installed: run scripts/setup.sh")
        }
    }

    override func tearDown() {
        folders.forEach { try? FileManager.default.removeItem(atPath: $0) }
    }

    func folder() throws -> String {
        let dir = "/tmp/bmd-passive-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        folders.append(dir)
        return dir
    }

    func requireAntispoof() throws {
        guard FileManager.default.fileExists(atPath: Self.models + "/MiniFASNetV2.onnx"),
              FileManager.default.fileExists(atPath: Self.models + "/MiniFASNetV1SE.onnx") else {
            throw missing("anti-spoofing models not installed: run scripts/setup.sh")
        }
    }

    func testTheDefaultIsPassiveItPassesTheLiveClipAndRefusesAStillPicture() throws {
        try requireAntispoof()
        let photo = try folder()
        try FileManager.default.createSymbolicLink(atPath: photo + "/Tony_Blair_0018.jpg",
                                                   withDestinationPath: lfw + "/Tony_Blair/Tony_Blair_0018.jpg")
        let live = sharedData + "/video/tran_live/video.mp4"
        let daemon = try DaemonProcess(cameras: ["replay:\(live)?fps=30&loop=true", "replay:\(photo)?fps=15&loop=true"],
                                       extraArguments: ["--models", Self.models])
        let client = try daemon.client()
        let _: FaceEnrollResult = try client.call(Method.faceEnroll, FaceEnrollParams(
            user: "tran", camera: "replay0", frames: 2, countdownS: 0, qualityThreshold: 20))
        var actions: Set<String> = []
        let passed: FaceVerifyResult = try client.call(Method.faceVerify, FaceVerifyParams(
            user: "tran", camera: "replay0", qualityThreshold: 20, timeoutMs: 20000), onEvent: { e in
                if let a = e["liveness_action"]?.stringValue { actions.insert(a) }
            })
        XCTAssertTrue(passed.match)
        XCTAssertEqual(passed.liveness, .live)
        XCTAssertGreaterThanOrEqual(passed.livenessScore, 50, "the detector's calibrated score, gated at liveness_threshold 50")
        XCTAssertEqual(actions, [], "nothing was asked of the user")

        // An LFW photo looks real to the detector; played frame after frame it is a still picture.
        let _: FaceEnrollResult = try client.call(Method.faceEnroll, FaceEnrollParams(
            user: "tony", camera: "replay1", frames: 2, countdownS: 0, qualityThreshold: 20))
        let refused = rpcError {
            let _: FaceVerifyResult = try client.call(Method.faceVerify, FaceVerifyParams(
                user: "tony", camera: "replay1", qualityThreshold: 20, timeoutMs: 10000))
        }
        XCTAssertEqual(refused?.code, 3004, String(describing: refused))
        XCTAssertEqual(refused?.data?["cue"], "still_frames", String(describing: refused))
        XCTAssertEqual(refused?.data?["spoof_attempt"], true)
    }

    func testAnUnknownLivenessModeIsInvalidParams() throws {
        let daemon = try DaemonProcess(cameras: [], extraArguments: ["--models", Self.models])
        let client = try daemon.client()
        let error = rpcError {
            _ = try client.callRaw(Method.faceVerify, params: ["user": "tony", "liveness_mode": "passive_blink"])
        }
        XCTAssertEqual(error?.code, -32602, String(describing: error))
        XCTAssertEqual(error?.data?["field"], "liveness_mode", String(describing: error))
    }

    func testPassiveWithoutTheAntispoofingModelsIsNotInitializedAndTheDefaultFallsBackToBlink() throws {
        // A models folder with everything but the anti-spoofing networks.
        let models = try folder()
        for name in ["dlib_face_recognition_resnet_model_v1.dat", "landmarks_68_pfld.onnx",
                     "shape_predictor_5_face_landmarks.dat", "face_detection_yunet_2023mar.onnx"]
        where FileManager.default.fileExists(atPath: Self.models + "/" + name) {
            try FileManager.default.createSymbolicLink(atPath: models + "/" + name, withDestinationPath: Self.models + "/" + name)
        }
        let live = sharedData + "/video/tran_live/video.mp4"
        let daemon = try DaemonProcess(cameras: ["replay:\(live)?fps=30&loop=true"], extraArguments: ["--models", models])
        let client = try daemon.client()
        let _: FaceEnrollResult = try client.call(Method.faceEnroll, FaceEnrollParams(
            user: "tran", camera: "replay0", frames: 2, countdownS: 0, qualityThreshold: 20))
        let error = rpcError {
            let _: FaceVerifyResult = try client.call(Method.faceVerify, FaceVerifyParams(
                user: "tran", camera: "replay0", qualityThreshold: 20, timeoutMs: 5000, livenessMode: .passive))
        }
        XCTAssertEqual(error?.code, 1008, String(describing: error))
        XCTAssertEqual(error?.data?["model"], "MiniFASNetV2.onnx", String(describing: error))
        // The default (passive) falls back to blink: the user is asked to keep still.
        var actions: Set<String> = []
        _ = rpcError {
            let _: FaceVerifyResult = try client.call(Method.faceVerify, FaceVerifyParams(
                user: "tran", camera: "replay0", qualityThreshold: 20, blinkTimeoutMs: 1000, timeoutMs: 3000), onEvent: { e in
                    if let a = e["liveness_action"]?.stringValue { actions.insert(a) }
                })
        }
        XCTAssertTrue(actions.contains("keep_still"), "blink mode: \(actions)")
    }
}
