import BiometricClient
import BiometricProtocol
import Foundation
import XCTest
import TestRequirements

/// Version-3 finger templates through the socket (issue 35): a daemon with the learned minutiae
/// model extracts version 3; version-1/2 templates (from a daemon without it) keep verifying
/// under their own rules — the probe is extracted classically for them, with the same score a
/// classical daemon gives — and get the re-enrol hint; a version-3 template is never compared
/// with a version-2 one; a refused call stores nothing. Skips without models/leader_cv46.onnx.
final class FingerLearnedTemplateTests: XCTestCase {
    static let models = repositoryRoot + "/models"
    var folders: [String] = []

    override func setUpWithError() throws {
        guard FileManager.default.fileExists(atPath: fvcImages + "/101_1.tif") else {
            throw missing("FVC2002 data missing at \(fvcImages)")
        }
        guard FileManager.default.fileExists(atPath: Self.models + "/leader_cv46.onnx") else {
            throw missing("\(Self.models)/leader_cv46.onnx not installed: run scripts/setup.sh")
        }
    }

    override func tearDown() {
        folders.forEach { try? FileManager.default.removeItem(atPath: $0) }
    }

    func image(_ name: String) throws -> String {
        try Data(contentsOf: URL(fileURLWithPath: "\(fvcImages)/\(name).tif")).base64EncodedString()
    }

    func extract(_ client: BiometricClient, _ name: String) throws -> String {
        let r: FingerExtractResult = try client.call(Method.fingerExtract, FingerExtractParams(image: try image(name), dpi: 569))
        return r.template
    }

    func version(_ base64: String) -> UInt8? { Data(base64Encoded: base64)?[4] }

    func match(_ client: BiometricClient, _ probe: String, _ reference: String) throws -> MatchResult {
        try client.call(Method.fingerMatch, FingerMatchParams(probe: probe, reference: reference, dpi: 569))
    }

    func testVersion3AndOlderTemplatesEachKeepTheirRules() throws {
        let scene = "/tmp/bmd-scene-\(UUID().uuidString.prefix(8))"
        let rendered = try runProgram(productsDirectory + "/finger-scene",
                                      ["--out", scene, "--frames", "24", "--prints", "101_3,102_3,103_3,104_3", "--prints-dir", fvcImages, "--format", "bmp"])
        XCTAssertEqual(rendered.status, 0, rendered.stderr)
        folders.append(scene)
        let classicalDaemon = try DaemonProcess(cameras: [])
        let classical = try classicalDaemon.client()
        let learnedDaemon = try DaemonProcess(cameras: ["replay:\(scene)?fps=15&loop=true"], extraArguments: ["--models", Self.models])
        let client = try learnedDaemon.client()

        // finger.extract: version 3 with the model, version 2 without.
        let v3 = try extract(client, "101_1"), v2 = try extract(classical, "101_1")
        XCTAssertEqual(version(v3), 3)
        XCTAssertEqual(version(v2), 2)

        // finger.match: a version-3 template against an image of the same finger matches, of
        // another finger does not.
        XCTAssertTrue(try match(client, v3, try image("101_5")).match)
        XCTAssertFalse(try match(client, v3, try image("105_5")).match)
        // A version-2 template against an image: the image is extracted classically and scored on
        // the classical calibration — exactly what a daemon without the model answers.
        let old = try match(client, try image("101_5"), v2)
        XCTAssertEqual(old.score, try match(classical, try image("101_5"), v2).score, accuracy: 1e-9)
        XCTAssertTrue(old.match, "\(old.score)")
        // Version 3 against version 2: refused, not compared under either rule.
        let mixed = rpcError { _ = try self.match(client, v3, v2) }
        XCTAssertEqual(mixed?.field, "reference")
        XCTAssertEqual(mixed?.data?["problem"]?.stringValue, "template_version")

        // Stored templates: "new" enrols version 3 (finger.add of the extracted template), "old"
        // has only the version-2 one; a refused add changes nothing.
        let _: TemplateIDs = try client.call(Method.fingerAdd, FingerAddParams(user: "new", template: v3, position: "right_index"))
        let _: TemplateIDs = try client.call(Method.fingerAdd, FingerAddParams(user: "old", template: v2, position: "right_index"))
        func exported(_ user: String) throws -> [String] {
            let r: FingerExportResult = try client.call(Method.fingerExport, FingerExportParams(user: user))
            return r.templates.map(\.template)
        }
        let before = try exported("old")
        XCTAssertEqual(before.compactMap(version), [2], "stored as it came")
        var wrong = [UInt8](Data(base64Encoded: v3)!)
        wrong[4] = 9
        let refused = rpcError {
            let _: TemplateIDs = try client.call(Method.fingerAdd, FingerAddParams(user: "old", template: Data(wrong).base64EncodedString()))
        }
        XCTAssertEqual(refused?.data?["problem"]?.stringValue, "template_version")
        XCTAssertEqual(try exported("old"), before, "a refused call stores nothing")

        // finger.verify: both users' right index is shown (101_3). The version-3 user matches
        // without a hint; the version-2 user still matches (classical minutiae, old rules) and is
        // told to re-enrol.
        func verify(_ user: String) throws -> FingerVerifyResult {
            try client.call(Method.fingerVerify, FingerAuthParams(user: user, camera: "replay0",
                                                                  capture: FingerCaptureSettings(liveness: LivenessLevel.none, timeoutS: 10)))
        }
        let fresh = try verify("new")
        XCTAssertTrue(fresh.match, "version 3 verifies (score \(fresh.score))")
        XCTAssertNil(fresh.reenrollHint)
        let stale = try verify("old")
        XCTAssertTrue(stale.match, "version 2 still verifies (score \(stale.score))")
        let hint = try XCTUnwrap(stale.reenrollHint)
        XCTAssertTrue(hint.contains("authctl finger enroll old") && hint.contains("version 3"), hint)
        XCTAssertEqual(try exported("old"), before, "verifying changes nothing stored")

        // finger.identify over the mixed gallery finds one of the two users of that finger.
        let found: FingerIdentifyResult = try client.call(Method.fingerIdentify, FingerAuthParams(
            camera: "replay0", capture: FingerCaptureSettings(liveness: LivenessLevel.none, timeoutS: 10)))
        XCTAssertTrue(["new", "old"].contains(found.user ?? "nobody"), "\(String(describing: found.user)) \(found.score)")
    }
}
