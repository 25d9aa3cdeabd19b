import BiometricProtocol
import XCTest

/// The closed vocabularies and the declared defaults: what a client sees when it sends a name that
/// is not on the list, or leaves a field out.
final class VocabularyTests: XCTestCase {
    private func refusal<P: RPCParams>(_ type: P.Type, _ params: JSONValue) -> RPCError? {
        do {
            _ = try P.decode(from: params)
            return nil
        } catch {
            return error
        }
    }

    func testUnknownNamesAreRefusedWithTheFieldAndTheAcceptedNames() throws {
        let mode = try XCTUnwrap(refusal(FaceVerifyParams.self, ["user": "ana", "mode": "video"]))
        XCTAssertEqual(mode.code, -32602)
        XCTAssertEqual(mode.field, "mode")
        XCTAssertEqual(mode.message, "parameter 'mode' must be one of image, liveness, got 'video'")

        let enrol = try XCTUnwrap(refusal(FaceEnrollParams.self, ["user": "ana", "mode": "liveness"]))
        XCTAssertEqual(enrol.message, "parameter 'mode' must be one of simple, full, got 'liveness'")

        let hand = try XCTUnwrap(refusal(FingerCaptureRequest.self, ["hand": "middle"]))
        XCTAssertEqual(hand.field, "hand")
        XCTAssertEqual(hand.message, "parameter 'hand' must be one of left, right, got 'middle'")

        let digit = try XCTUnwrap(refusal(FingerEnrollParams.self, ["user": "ana", "amputated": ["index", "pinky"]]))
        XCTAssertEqual(digit.field, "amputated[1]")

        let thumb = try XCTUnwrap(refusal(FingerEnrollParams.self, ["user": "ana", "amputated": ["thumb"]]))
        XCTAssertEqual(thumb.field, "amputated[0]")
        XCTAssertEqual(thumb.message, "parameter 'amputated[0]' must be one of index, middle, ring, little, got 'thumb'")

        XCTAssertEqual(refusal(FingerCaptureRequest.self, ["image_format": "gif"])?.field, "image_format")
        XCTAssertEqual(refusal(FingerCaptureRequest.self, ["liveness": "high"])?.field, "liveness")
        XCTAssertEqual(refusal(FingerExtractParams.self, ["image": "", "format": "ansi"])?.field, "format")
        XCTAssertEqual(refusal(PolicySetParams.self, ["user": "ana", "mode": "strict"])?.field, "mode")
        XCTAssertEqual(refusal(FaceIdentifyParams.self, ["liveness_mode": "wink"])?.field, "liveness_mode")

        let typed = try XCTUnwrap(refusal(FaceVerifyParams.self, ["user": "ana", "mode": 5]))
        XCTAssertEqual(typed.field, "mode")
        XCTAssertEqual(typed.message, "parameter 'mode' must be a string")
    }

    /// `Factor` (the domain's) is the source of the wire's factor names: every factor has its
    /// name, every name is a factor, in the same order, and a policy's names come back as the
    /// factors they name.
    func testEveryFactorMapsToItsWireNameAndBack() throws {
        XCTAssertEqual(FactorName.all, ["face", "finger", "pin"], "the SPEC's names, in its order")
        XCTAssertEqual(FactorName.all.count, Factor.allCases.count)
        for factor in Factor.allCases {
            XCTAssertTrue(FactorName.all.contains(factor.rawValue), "\(factor) has a wire name")
            XCTAssertEqual(FactorName.factors([factor.rawValue]), [factor], "\(factor)'s name decodes to it")
            XCTAssertNoThrow(try FactorName.check([factor.rawValue], field: "factors"))
        }
        for name in FactorName.all {
            XCTAssertEqual(Factor(rawValue: name)?.rawValue, name, "'\(name)' is a factor")
        }
        XCTAssertEqual(FactorName.factors(FactorName.all), Factor.allCases)
        let params = try PolicySetParams.decode(from: ["user": "ana", "factors": ["pin", "face"]])
        XCTAssertEqual(params.factors.map(FactorName.factors), [.pin, .face])

        let unknown = try XCTUnwrap(refusal(PolicySetParams.self, ["user": "ana", "factors": ["face", "iris"]]))
        XCTAssertEqual(unknown.field, "factors[1]")
        XCTAssertEqual(unknown.message, "unknown factor 'iris'; factors are face, finger, pin")
        XCTAssertEqual(refusal(AuthenticateParams.self, ["user": "ana", "factors": ["pin", "pin"]])?.message, "each factor may appear once")
    }

    func testKnownNamesDecodeToTheirCases() throws {
        let capture = try FingerCaptureRequest.decode(from: [
            "mode": "thumb", "hand": "left", "amputated": ["ring"], "liveness": "very_low", "image_format": "jpeg",
        ])
        XCTAssertEqual(capture.capture.mode, .thumb)
        XCTAssertEqual(capture.capture.hand, .left)
        XCTAssertEqual(capture.capture.amputated, [.ring])
        XCTAssertEqual(capture.capture.liveness, .veryLow)
        XCTAssertEqual(capture.imageFormat, .jpeg)
        let verify = try FaceVerifyParams.decode(from: ["user": "ana", "mode": "image", "liveness_mode": "challenge"])
        XCTAssertEqual(verify.capture.mode, .image)
        XCTAssertEqual(verify.capture.livenessMode, .challenge)
        // And back: the client sends the wire names.
        let sent = try JSONValue(encoding: capture)
        XCTAssertEqual(sent["hand"], "left")
        XCTAssertEqual(sent["liveness"], "very_low")
        XCTAssertEqual(sent["amputated"], ["ring"])
        // The shared face capture options travel flat beside the method's own fields.
        XCTAssertEqual(try JSONValue(encoding: FaceVerifyParams(user: "ana", mode: .image, timeoutMs: 5000)),
                       ["user": "ana", "mode": "image", "timeout_ms": 5000])
        let identify = try FaceIdentifyParams.decode(from: ["camera": "c0", "margin": 3, "blink_timeout_ms": 900])
        XCTAssertEqual(identify.capture, FaceCaptureOptions(blinkTimeoutMs: 900))
        XCTAssertEqual(identify.margin, 3)
        XCTAssertEqual(refusal(FaceIdentifyParams.self, ["user": "ana"])?.field, "user", "identify takes no user")
    }

    func testWSQIsAnImageFormat() throws {
        XCTAssertNil(refusal(FingerCaptureRequest.self, ["image_format": "wsq"]))
        XCTAssertEqual(try FingerCaptureRequest.decode(from: ["image_format": "wsq"]).imageFormat, .wsq)
        XCTAssertEqual(refusal(FingerCaptureRequest.self, ["image_format": "jp2"])?.field, "image_format")
    }

    /// The defaults are those of SPEC §4, and a value given is used as given.
    func testDefaultsAreTheSpecs() {
        XCTAssertEqual(FaceCaptureOptions.matchingThreshold(nil), 48)
        XCTAssertEqual(FaceCaptureOptions.qualityThreshold(nil), 48)
        XCTAssertEqual(FaceCaptureOptions.livenessThreshold(nil), 50)
        XCTAssertEqual(FaceCaptureOptions.blinkTimeoutMs(nil), 5000)
        XCTAssertEqual(FaceCaptureOptions.timeoutMs(nil), 30000)
        XCTAssertEqual(FaceEnrollParams.frames(nil), 4)
        XCTAssertEqual(FaceEnrollParams.countdownS(nil), 5)
        XCTAssertEqual(FaceIdentifyParams.margin(nil), 5)
        XCTAssertEqual(FingerCaptureSettings.timeoutS(nil), 10)
        XCTAssertEqual(FingerEnrollParams.captures(nil), 3)
        XCTAssertEqual(FingerMatchParams.threshold(nil), 48)
        XCTAssertEqual(FingerExtractParams.dpi(nil), 500)
        XCTAssertEqual(SnapshotParams.warmupFrames(nil), 3)
        XCTAssertEqual(FaceCaptureMode.default, .liveness)
        XCTAssertEqual(FaceEnrolMode.default, .simple)
        XCTAssertEqual(CaptureMode.default, .fingers)
        XCTAssertEqual(LivenessLevel.default, .low)
        XCTAssertEqual(ImageFormat.default, ImageFormat.none)
        XCTAssertEqual(FaceCaptureOptions.matchingThreshold(60), 60)
        XCTAssertEqual(FingerEnrollParams.captures(1), 1)
    }

    func testOutOfRangeValuesNameTheirField() throws {
        let cases: [(JSONValue, String)] = [
            (["user": "ana", "matching_threshold": 73], "matching_threshold"),
            (["user": "ana", "blink_timeout_ms": -1], "blink_timeout_ms"),
            (["user": "ana", "challenge_steps": 5], "challenge_steps"),
            (["user": "ana", "timeout_ms": 999], "timeout_ms"),
        ]
        for (params, field) in cases {
            let error = try XCTUnwrap(refusal(FaceVerifyParams.self, params), field)
            XCTAssertEqual(error.field, field)
            XCTAssertTrue(error.message.hasPrefix("parameter '\(field)' must be between"), error.message)
        }
        XCTAssertEqual(refusal(FaceIdentifyParams.self, ["margin": 51])?.field, "margin")
        XCTAssertEqual(refusal(FingerEnrollParams.self, ["user": "ana", "captures": 11])?.field, "captures")
        XCTAssertEqual(refusal(FingerAuthParams.self, ["timeout_s": 0])?.field, "timeout_s")
        XCTAssertEqual(refusal(SnapshotParams.self, ["warmup_frames": 61])?.field, "warmup_frames")
        XCTAssertNil(refusal(FaceVerifyParams.self, ["user": "ana", "matching_threshold": 72, "timeout_ms": 1000]))
    }

    /// A number its field's type cannot hold (1.5, 2^63, 1e308 for an integer) is refused with
    /// that field named, like every other bad parameter.
    func testNumbersOutOfTheirTypeNameTheirField() throws {
        for value: JSONValue in [1.5, .double(9.3e18), 1e308, -1e308] {
            let error = try XCTUnwrap(refusal(FaceVerifyParams.self, ["user": "ana", "timeout_ms": value]))
            XCTAssertEqual(error.code, -32602)
            XCTAssertEqual(error.field, "timeout_ms", "\(value): \(error.message)")
        }
        let finger = try XCTUnwrap(refusal(FingerEnrollParams.self, ["user": "ana", "captures": 2.5]))
        XCTAssertEqual(finger.field, "captures")
        // A PIN far too long is the PIN's own error (pin_format), not a params error.
        let pin = try XCTUnwrap(refusal(PINVerifyParams.self, ["user": "ana", "pin": .string(String(repeating: "1", count: 300))]))
        XCTAssertEqual(pin.code, 5003)
        XCTAssertEqual(pin.field, "pin")
    }
}
