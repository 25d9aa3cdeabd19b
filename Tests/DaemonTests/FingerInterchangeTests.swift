import BiometricClient
import BiometricFinger
import BiometricProtocol
import Foundation
import XCTest
import TestRequirements

/// Template interchange and WSQ through the socket (issue 26 items 3–4): finger.add and
/// finger.export in both formats, refusals that change nothing, finger.verify against templates
/// the caller supplies (a badge) with the lockout of a normal verify, WSQ uploads and captures.
final class FingerInterchangeTests: XCTestCase {
    var folders: [String] = []

    override func setUpWithError() throws {
        guard FileManager.default.fileExists(atPath: fvcImages + "/101_1.tif") else {
            throw missing("FVC2002 data missing at \(fvcImages)")
        }
    }

    override func tearDown() {
        folders.forEach { try? FileManager.default.removeItem(atPath: $0) }
    }

    func image(_ name: String) throws -> String {
        try Data(contentsOf: URL(fileURLWithPath: "\(fvcImages)/\(name).tif")).base64EncodedString()
    }

    func extract(_ client: BiometricClient, _ name: String, _ format: TemplateFormat = .biometricd) throws -> String {
        let r: FingerExtractResult = try client.call(Method.fingerExtract, FingerExtractParams(image: try image(name), dpi: 569, format: format))
        return r.template
    }

    func list(_ client: BiometricClient, _ user: String) throws -> [FingerTemplateInfo] {
        let r: FingerListResult = try client.call(Method.fingerList, FingerListParams(user: user))
        return r.templates
    }

    func testAddExportAndRefusalsThatChangeNothing() throws {
        let daemon = try DaemonProcess(cameras: [])
        let client = try daemon.client()
        let native = try extract(client, "103_1")
        let iso = try extract(client, "104_1", .iso19794_2)
        let a: TemplateIDs = try client.call(Method.fingerAdd, FingerAddParams(user: "bo", template: native, position: "right_index"))
        let b: TemplateIDs = try client.call(Method.fingerAdd, FingerAddParams(user: "bo", template: iso, format: .iso19794_2,
                                                                                position: "right_middle", templateID: "badge-1"))
        XCTAssertEqual(a.templates.count, 1)
        XCTAssertEqual(b.templates, ["badge-1"])
        XCTAssertEqual(Set(try list(client, "bo").map(\.position)), ["right_index", "right_middle"])

        let exported: FingerExportResult = try client.call(Method.fingerExport, FingerExportParams(user: "bo"))
        XCTAssertEqual(exported.format, .biometricd)
        XCTAssertEqual(exported.templates.count, 2)
        let isoExport: FingerExportResult = try client.call(Method.fingerExport, FingerExportParams(user: "bo", format: .iso19794_2))
        for item in isoExport.templates { XCTAssertEqual(Data(base64Encoded: item.template)?.prefix(8), Data("FMR\0 20\0".utf8)) }
        // An exported template matches its source print, and goes back in for another user.
        let index = try XCTUnwrap(exported.templates.first { $0.position == "right_index" })
        let same: MatchResult = try client.call(Method.fingerMatch, FingerMatchParams(probe: index.template, reference: try image("103_2"), dpi: 569))
        XCTAssertTrue(same.match, "\(same.score)")
        let isoIndex = try XCTUnwrap(isoExport.templates.first { $0.position == "right_index" })
        let _: TemplateIDs = try client.call(Method.fingerAdd, FingerAddParams(user: "cy", template: isoIndex.template))
        XCTAssertEqual(try list(client, "cy").map(\.position), ["right_index"], "the ISO view carries the position")

        // Refusals: each is invalid_params with a stable problem, and nothing stored changes.
        var version = [UInt8](Data(base64Encoded: native)!)
        version[4] = 9
        var resolution = [UInt8](Data(base64Encoded: iso)!)
        resolution[16] = 0; resolution[17] = 50; resolution[18] = 0; resolution[19] = 50 // 50 px/cm = 127 ppi
        let cases: [(FingerAddParams, String, String)] = [
            (FingerAddParams(user: "bo", template: Data("hello, not a template".utf8).base64EncodedString()), "template", "template_format"),
            (FingerAddParams(user: "bo", template: iso, format: .biometricd), "template", "template_format"),
            (FingerAddParams(user: "bo", template: Data(version).base64EncodedString()), "template", "template_version"),
            (FingerAddParams(user: "bo", template: Data(resolution).base64EncodedString()), "template", "template_resolution"),
            (FingerAddParams(user: "bo", template: String(native.dropLast(12))), "template", "template_corrupt"),
            (FingerAddParams(user: "bo", template: "***"), "template", "not_base64"),
        ]
        for (params, field, problem) in cases {
            let e = rpcError { let _: TemplateIDs = try client.call(Method.fingerAdd, params) }
            XCTAssertEqual(e?.code, RPCError.invalidParamsCode, "\(problem): \(String(describing: e))")
            XCTAssertEqual(e?.field, field, problem)
            XCTAssertEqual(e?.data?["problem"]?.stringValue, problem, e?.message ?? "")
        }
        let position = rpcError { let _: TemplateIDs = try client.call(Method.fingerAdd, FingerAddParams(user: "bo", template: native, position: "left_toe")) }
        XCTAssertEqual(position?.field, "position")
        let duplicate = rpcError { let _: TemplateIDs = try client.call(Method.fingerAdd, FingerAddParams(user: "bo", template: native, templateID: "badge-1")) }
        XCTAssertNotNil(duplicate, "an id already in use is refused")
        let after: FingerExportResult = try client.call(Method.fingerExport, FingerExportParams(user: "bo"))
        XCTAssertEqual(after.templates, exported.templates, "refused calls changed nothing")
        XCTAssertEqual(rpcError { let _: FingerExportResult = try client.call(Method.fingerExport, FingerExportParams(user: "nobody")) }?.errorReason,
                       .notFound)
    }

    func testVerifyAgainstCallerReferencesCountsLikeAVerify() throws {
        let scene = "/tmp/bmd-scene-\(UUID().uuidString.prefix(8))"
        let rendered = try runProgram(productsDirectory + "/finger-scene",
                                      ["--out", scene, "--frames", "32", "--prints", "101_3,102_3,103_3,104_3", "--prints-dir", fvcImages, "--format", "bmp"])
        XCTAssertEqual(rendered.status, 0, rendered.stderr)
        folders.append(scene)
        let daemon = try fingerDaemon(cameras: ["replay:\(scene)?fps=15&loop=true"])
        let client = try daemon.client()
        // The user exists with an unrelated enrolled finger; the badge holds the shown ones.
        let _: TemplateIDs = try client.call(Method.fingerAdd, FingerAddParams(user: "dee", template: try extract(client, "108_1")))
        func verify(_ references: [String]?, user: String = "dee") throws -> FingerVerifyResult {
            try client.call(Method.fingerVerify, FingerAuthParams(user: user, camera: "replay0",
                                                                  capture: FingerCaptureSettings(liveness: LivenessLevel.none, timeoutS: 6),
                                                                  references: references))
        }
        func failures() throws -> Int {
            let s: AuthStatusResult = try client.call(Method.authStatus, UserParams(user: "dee"))
            return s.biometricFailures
        }
        let badge = [try extract(client, "101_1"), try extract(client, "102_1", .iso19794_2)]
        let hit = try verify(badge)
        XCTAssertTrue(hit.match, "the live fingers match the badge (score \(hit.score))")
        XCTAssertEqual(try failures(), 0)

        let miss = try verify([try extract(client, "106_1"), try extract(client, "107_1")])
        XCTAssertFalse(miss.match, "\(miss.score)")
        XCTAssertEqual(try failures(), 1, "a failed badge verify counts toward the user's lockout")

        // Refused before any capture: nothing counted.
        let bad = rpcError { _ = try verify([Data("nope".utf8).base64EncodedString()]) }
        XCTAssertEqual(bad?.field, "references[0]")
        XCTAssertEqual(bad?.data?["problem"]?.stringValue, "template_format")
        XCTAssertEqual(rpcError { _ = try verify(badge, user: "nobody") }?.errorReason, .notFound)
        XCTAssertEqual(rpcError { _ = try verify([]) }?.field, "references")
        XCTAssertEqual(try failures(), 1)

        // finger.capture image_format wsq: each print as a WSQ file (our encoder, 0.75 bpp).
        let capture: FingerCaptureResult = try client.call(Method.fingerCapture, FingerCaptureRequest(
            camera: "replay0", capture: FingerCaptureSettings(liveness: LivenessLevel.none, timeoutS: 6), imageFormat: .wsq))
        XCTAssertEqual(capture.imageFormat, .wsq)
        XCTAssertFalse(capture.fingers.isEmpty)
        for finger in capture.fingers {
            let bytes = [UInt8](try XCTUnwrap(finger.image.flatMap { Data(base64Encoded: $0) }))
            XCTAssertEqual(Array(bytes.prefix(2)), [0xFF, 0xA0], finger.position)
            let decoded = try WSQ.decode(bytes)
            XCTAssertEqual(decoded.ppi, 500, "camera prints are normalised to 500 ppi")
            XCTAssertLessThan(Double(bytes.count * 8) / Double(decoded.width * decoded.height), 1.5)
        }

        // Enrolled fingers with the orientation field give no hint; a user whose only finger
        // came in as ISO 19794-2 (no field: minutiae alone) is told to re-enrol, whatever the outcome.
        let enrolled = try verify(nil)
        XCTAssertNil(enrolled.reenrollHint, "dee's finger was extracted here (version 2)")
        XCTAssertNil(hit.reenrollHint, "never for caller-supplied references")
        let _: TemplateIDs = try client.call(Method.fingerAdd, FingerAddParams(user: "eve", template: try extract(client, "101_1", .iso19794_2),
                                                                             format: .iso19794_2))
        let isoOnly = try verify(nil, user: "eve")
        let hint = try XCTUnwrap(isoOnly.reenrollHint, "only an ISO template: matched on minutiae alone")
        XCTAssertTrue(hint.contains("authctl finger enroll eve"), hint)
        let json = try JSONEncoder().encode(isoOnly)
        XCTAssertEqual((try JSONSerialization.jsonObject(with: json) as? [String: Any])?["reenroll_hint"] as? String, hint)
    }

    func testWSQUploadsAndCaptures() throws {
        let daemon = try DaemonProcess(cameras: [])
        let client = try daemon.client()
        // An NBIS-independent round trip through our encoder: the print as WSQ matches the TIFF.
        let tiff = try image("105_1")
        let probe = try extract(client, "105_2")
        let wsqFile = try wsq(tiff)
        let r: MatchResult = try client.call(Method.fingerMatch, FingerMatchParams(probe: probe, reference: wsqFile, dpi: 569))
        XCTAssertTrue(r.match, "WSQ upload: \(r.score)")
        let truncated = Data(Data(base64Encoded: wsqFile)!.prefix(700)).base64EncodedString()
        let e = rpcError { let _: FingerExtractResult = try client.call(Method.fingerExtract, FingerExtractParams(image: truncated, dpi: 569)) }
        XCTAssertEqual(e?.field, "image")
        XCTAssertTrue(e?.message.contains("WSQ") ?? false, e?.message ?? "")
    }

    /// base64 WSQ (our encoder, 0.75 bpp) of a base64 TIFF print.
    func wsq(_ base64TIFF: String) throws -> String {
        let print = try FingerprintExtractor.decodeImage([UInt8](Data(base64Encoded: base64TIFF)!), ppi: 569)
        return Data(try print.wsqEncoded()).base64EncodedString()
    }
}
