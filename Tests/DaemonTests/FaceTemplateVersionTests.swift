import BiometricClient
import BiometricDaemon
import BiometricProtocol
import Foundation
import XCTest
import TestRequirements

/// Version-2 face templates through the socket (Docs/face.md "Two networks, one score"): with the
/// second network installed enrolment writes v2 and verify scores both networks; v1 templates keep
/// verifying with dlib alone and the answer says how to re-enrol; list and export carry the
/// version; an unknown version is refused with a stable error.
final class FaceTemplateVersionTests: XCTestCase {
    static let recognizer = repositoryRoot + "/../shared/models/recognizer/mobilefacenet_arcface_cv46.onnx"
    var folders: [String] = []

    override func setUpWithError() throws {
        guard FileManager.default.fileExists(atPath: FaceFlowTests.models + "/dlib_face_recognition_resnet_model_v1.dat") else {
            throw missing("models not installed: run scripts/setup.sh")
        }
        guard FileManager.default.fileExists(atPath: Self.recognizer) else { throw missing("second network not in ../shared/models") }
    }

    override func tearDown() {
        folders.forEach { try? FileManager.default.removeItem(atPath: $0) }
    }

    /// A model folder: the repository's models (symlinks) plus the second network.
    func modelsWithSecondNetwork() throws -> String {
        let dir = "/tmp/bmd-models-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: FaceFlowTests.models) where !name.hasPrefix(".") {
            try FileManager.default.createSymbolicLink(atPath: dir + "/" + name, withDestinationPath: FaceFlowTests.models + "/" + name)
        }
        // Set-up (fetch-models.sh) installs the second network into ./models too: link it only when absent.
        if !FileManager.default.fileExists(atPath: dir + "/mobilefacenet_arcface_cv46.onnx") {
            try FileManager.default.createSymbolicLink(atPath: dir + "/mobilefacenet_arcface_cv46.onnx", withDestinationPath: Self.recognizer)
        }
        folders.append(dir)
        return dir
    }

    func photos(_ person: String, _ numbers: [Int]) throws -> String {
        let dir = "/tmp/bmd-photos-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        for n in numbers {
            let name = String(format: "%@_%04d.jpg", person, n)
            try FileManager.default.createSymbolicLink(atPath: "\(dir)/\(name)", withDestinationPath: "\(lfw)/\(person)/\(name)")
        }
        folders.append(dir)
        return dir
    }

    func verify(_ client: BiometricClient, _ user: String, camera: String) throws -> FaceVerifyResult {
        try client.call(Method.faceVerify, FaceVerifyParams(user: user, camera: camera, mode: .image, qualityThreshold: 30,
                                                             blinkTimeoutMs: 3000, timeoutMs: 20000))
    }

    func testVersion2EnrolmentVerifyExportAndVersion1Hint() throws {
        let daemon = try DaemonProcess(cameras: [
            "replay:\(try photos("Tony_Blair", [18, 32, 48, 53]))?fps=10&loop=true",
            "replay:\(try photos("Tony_Blair", [64]))?fps=10&loop=true",
            "replay:\(try photos("Silvio_Berlusconi", [6]))?fps=10&loop=true",
        ], extraArguments: ["--models", try modelsWithSecondNetwork()])
        let client = try daemon.client()
        let _: FaceEnrollResult = try client.call(Method.faceEnroll, FaceEnrollParams(user: "tony", camera: "replay0", frames: 3,
                                                                                      countdownS: 0, qualityThreshold: 30))
        let listed: FaceListResult = try client.call(Method.faceList, FaceListParams(user: "tony"))
        XCTAssertEqual(listed.templates.map(\.version), [2], "enrolment with the second network writes v2")
        let same = try verify(client, "tony", camera: "replay1")
        XCTAssertTrue(same.match, "score \(same.score)")
        XCTAssertEqual(same.templateVersion, 2, "both networks scored")
        XCTAssertNil(same.reenrollHint)
        let other = try verify(client, "tony", camera: "replay2")
        XCTAssertFalse(other.match, "score \(other.score)")

        // Export carries the version, in the field and in the blob; it goes back in through face.add.
        let exported: FaceExportResult = try client.call(Method.faceExport, UserParams(user: "tony"))
        let item = try XCTUnwrap(exported.templates.first)
        XCTAssertEqual(item.version, 2)
        let blob = try XCTUnwrap(Data(base64Encoded: item.template))
        XCTAssertEqual(blob.count, 1034)
        XCTAssertEqual(blob[4], 2)
        let _: TemplateIDs = try client.call(Method.faceAdd, FaceAddParams(user: "copy", template: item.template))
        XCTAssertEqual(try verify(client, "copy", camera: "replay1").templateVersion, 2)

        // A v1 template (the dlib part alone, as an older daemon stored it) keeps verifying with
        // dlib, and the answer says how to re-enrol.
        var v1 = Data(blob.prefix(520))
        v1[4] = 1
        let _: TemplateIDs = try client.call(Method.faceAdd, FaceAddParams(user: "old", template: v1.base64EncodedString()))
        let listedOld: FaceListResult = try client.call(Method.faceList, FaceListParams(user: "old"))
        XCTAssertEqual(listedOld.templates.map(\.version), [1])
        let old = try verify(client, "old", camera: "replay1")
        XCTAssertTrue(old.match, "v1 still verifies (score \(old.score))")
        XCTAssertEqual(old.templateVersion, 1)
        XCTAssertTrue(old.reenrollHint?.contains("authctl face enroll old") ?? false, old.reenrollHint ?? "no hint")

        // 1:N over the mixed gallery (tony and copy v2, old v1, all the same face): the fused
        // scores rank, and a stranger is nobody.
        let who: FaceIdentifyResult = try client.call(Method.faceIdentify, FaceIdentifyParams(camera: "replay1", mode: .image, qualityThreshold: 30,
                                                                                             margin: 0))
        XCTAssertEqual(Set(who.candidates.map(\.user)), ["tony", "copy", "old"], "\(who.candidates)")
        XCTAssertEqual(who.candidates.first { $0.user == "tony" }?.score, who.candidates.first { $0.user == "copy" }?.score)
        let stranger: FaceIdentifyResult = try client.call(Method.faceIdentify, FaceIdentifyParams(camera: "replay2", mode: .image,
                                                                                                  qualityThreshold: 30))
        XCTAssertNil(stranger.user, "\(stranger.candidates)")

        // An unknown version: invalid_params, data.problem template_version (as finger templates).
        var v9 = blob
        v9[4] = 9
        let error = rpcError { let _: TemplateIDs = try client.call(Method.faceAdd, FaceAddParams(user: "x", template: v9.base64EncodedString())) }
        XCTAssertEqual(error?.code, -32602)
        XCTAssertEqual(error?.field, "template")
        XCTAssertEqual(error?.data?["problem"]?.stringValue, "template_version")
        XCTAssertEqual(error?.data?["version"]?.intValue, 9)
        var cut = blob.prefix(900)
        cut[4] = 2
        let corrupt = rpcError { let _: TemplateIDs = try client.call(Method.faceAdd, FaceAddParams(user: "x", template: Data(cut).base64EncodedString())) }
        XCTAssertEqual(corrupt?.data?["problem"]?.stringValue, "template_corrupt")
        let set = rpcError { let _: TemplateIDs = try client.call(Method.faceSet, FaceSetParams(user: "tony", faces: [item.template, v9.base64EncodedString()])) }
        XCTAssertEqual(set?.data?["problem"]?.stringValue, "template_version")
        XCTAssertEqual(set?.field, "faces[1]")
        let still: FaceListResult = try client.call(Method.faceList, FaceListParams(user: "tony"))
        XCTAssertEqual(still.templates.count, 1, "a bad face.set changes nothing")
    }

    /// Without the second network a v2 template verifies on its dlib part and no hint is given.
    func testWithoutTheSecondNetworkV2TemplatesVerifyWithDlib() throws {
        // Enrolled from photos that each match the probe clearly (photo 18 scores near the
        // threshold against 64): which frames of a looping folder an enrolment takes depends on
        // the machine's load, and the test must not.
        let withSecond = try DaemonProcess(cameras: ["replay:\(try photos("Tony_Blair", [32, 48, 53]))?fps=10&loop=true"],
                                           extraArguments: ["--models", try modelsWithSecondNetwork()])
        let _: FaceEnrollResult = try withSecond.client().call(Method.faceEnroll, FaceEnrollParams(
            user: "tony", camera: "replay0", frames: 3, countdownS: 0, qualityThreshold: 30))
        let exported: FaceExportResult = try withSecond.client().call(Method.faceExport, UserParams(user: "tony"))
        let template = try XCTUnwrap(exported.templates.first?.template)

        let dlibOnly = try DaemonProcess(cameras: ["replay:\(try photos("Tony_Blair", [64]))?fps=10&loop=true"],
                                         extraArguments: ["--models", FaceFlowTests.models, "--set", "face_second_network=off"])
        let client = try dlibOnly.client()
        let _: TemplateIDs = try client.call(Method.faceAdd, FaceAddParams(user: "tony", template: template))
        let result = try verify(client, "tony", camera: "replay0")
        XCTAssertTrue(result.match, "score \(result.score)")
        XCTAssertEqual(result.templateVersion, 1)
        XCTAssertNil(result.reenrollHint)
    }

    func testTheConfigKeyTakesAutoOffOrAPath() throws {
        var c = DaemonConfiguration()
        XCTAssertEqual(c.faceSecondNetwork, .auto)
        try c.apply(key: "face_second_network", value: "off", appendLists: false)
        XCTAssertEqual(c.faceSecondNetwork, .off)
        try c.apply(key: "face_second_network", value: "/opt/models/mobilefacenet_arcface_cv46.onnx", appendLists: false)
        XCTAssertEqual(c.faceSecondNetwork, .path("/opt/models/mobilefacenet_arcface_cv46.onnx"))
        XCTAssertThrowsError(try c.apply(key: "face_second_network", value: "yes", appendLists: false))
        XCTAssertTrue(DaemonConfiguration.keys.contains("face_second_network"))
    }

    /// `off` (or a file that is not the pinned model) leaves the daemon on dlib alone: v1 enrolment.
    func testOffOrAWrongFileMeansVersion1() throws {
        for setting in ["face_second_network=off", "face_second_network=\(FaceFlowTests.models)/face_detection_yunet_2023mar.onnx"] {
            let daemon = try DaemonProcess(cameras: ["replay:\(try photos("Tony_Blair", [18, 32, 48, 53]))?fps=10&loop=true"],
                                           extraArguments: ["--models", try modelsWithSecondNetwork(), "--set", setting])
            let client = try daemon.client()
            let _: FaceEnrollResult = try client.call(Method.faceEnroll, FaceEnrollParams(user: "tony", camera: "replay0", frames: 3,
                                                                                          countdownS: 0, qualityThreshold: 30))
            let listed: FaceListResult = try client.call(Method.faceList, FaceListParams(user: "tony"))
            XCTAssertEqual(listed.templates.map(\.version), [1], setting)
            let result = try verify(client, "tony", camera: "replay0")
            XCTAssertEqual(result.templateVersion, 1, setting)
            XCTAssertNil(result.reenrollHint, "no hint when the daemon cannot score both (\(setting))")
        }
    }
}
