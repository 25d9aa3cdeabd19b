import BiometricProtocol
import Foundation
import XCTest

/// `preview: {fps, width}` of face and finger sessions, and what the events carry (issue 25).
final class PreviewTests: XCTestCase {
    private func error(_ params: JSONValue) -> RPCError? {
        do {
            _ = try FaceVerifyParams.decode(from: params)
            return nil
        } catch {
            return error
        }
    }

    func testPreviewParamsDecodeWithTheirDefaults() throws {
        let p = try FaceVerifyParams.decode(from: ["user": "ann", "preview": ["fps": 10]])
        XCTAssertEqual(p.capture.preview, PreviewRequest(fps: 10))
        XCTAssertEqual(PreviewRequest.width(p.capture.preview?.width), 320)
        XCTAssertEqual(PreviewRequest.fps(PreviewRequest().fps), 5)
        XCTAssertEqual(p.capture.preview?.intervalNs, 100_000_000)
        XCTAssertNil(try FaceVerifyParams.decode(from: ["user": "ann"]).capture.preview)
        XCTAssertEqual(try FaceEnrollParams.decode(from: ["user": "ann", "preview": [:]]).preview, PreviewRequest())
        XCTAssertEqual(try FingerAuthParams.decode(from: ["preview": ["width": 640]]).capture.preview, PreviewRequest(width: 640))
        XCTAssertEqual(try FingerCaptureRequest.decode(from: ["preview": ["fps": 1]]).capture.preview, PreviewRequest(fps: 1))
        XCTAssertEqual(try FingerEnrollParams.decode(from: ["user": "ann", "preview": ["fps": 15]]).capture.preview,
                       PreviewRequest(fps: 15))
        XCTAssertEqual(try FaceIdentifyParams.decode(from: ["preview": ["fps": 2]]).capture.preview, PreviewRequest(fps: 2))
    }

    /// Every bad value gets -32602 with the member named (`data.field`), the stable code of params.
    func testBadPreviewValuesAreRefusedNamingTheMember() {
        let cases: [(JSONValue, String)] = [
            (["fps": 0], "preview.fps"), (["fps": 16], "preview.fps"), (["fps": -1], "preview.fps"),
            (["width": 63], "preview.width"), (["width": 1281], "preview.width"),
            (["fps": "5"], "preview.fps"), (["fps": 2.5], "preview"), (["height": 200], "preview"),
        ]
        for (preview, field) in cases {
            let e = error(["user": "ann", "preview": preview])
            XCTAssertEqual(e?.code, -32602, "\(preview)")
            XCTAssertEqual(e?.data?["field"], .string(field), "\(preview): \(String(describing: e))")
        }
        XCTAssertEqual(error(["user": "ann", "preview": 5])?.data?["field"], "preview")
        XCTAssertThrowsError(try FingerAuthParams.decode(from: ["preview": ["fps": 99]]))
    }

    func testThePreviewKeepsTheFramesAspectAndNeverUpscales() {
        XCTAssertEqual(previewSize(of: FrameSize(width: 1280, height: 720), width: 320), FrameSize(width: 320, height: 180))
        XCTAssertEqual(previewSize(of: FrameSize(width: 640, height: 480), width: 320), FrameSize(width: 320, height: 240))
        XCTAssertEqual(previewSize(of: FrameSize(width: 250, height: 250), width: 320), FrameSize(width: 250, height: 250))
        XCTAssertEqual(previewSize(of: FrameSize(width: 4000, height: 1), width: 64), FrameSize(width: 64, height: 1))
        let scale = PreviewScale(frame: FrameSize(width: 1280, height: 720), width: 320)
        XCTAssertEqual(scale.rect(x: 640, y: 360, width: 200, height: 100), PixelRect(x: 160, y: 90, width: 50, height: 25))
        XCTAssertEqual(scale.point(x: 1279, y: 719), PixelPoint(x: 320, y: 180))
    }

    /// The frame size is on the wire whenever set; the preview's JPEG travels as base64 and
    /// decodes back to the same bytes; left out, no `preview` member at all.
    func testFrameEventsCarryTheFrameSizeAndThePreview() throws {
        var face = FaceFrameEvent(box: nil, yaw: nil, pitch: nil, roll: nil, quality: 0, brightness: nil, sharpness: nil, feedback: [.noFace])
        face.frame = FrameSize(width: 640, height: 480)
        XCTAssertEqual(try JSONValueEncoder.encode(face)["frame_width"], 640)
        XCTAssertEqual(try JSONValueEncoder.encode(face)["frame_height"], 480)
        XCTAssertNil(try JSONValueEncoder.encode(face)["preview"])
        let jpeg = Data([0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3])
        face.preview = FramePreview(jpeg: jpeg, width: 320, height: 240, box: PixelRect(x: 1, y: 2, width: 3, height: 4),
                                    landmarks: [PixelPoint(x: 5, y: 6)])
        XCTAssertEqual(try JSONValueEncoder.encode(face)["preview"]?["jpeg"], .string(jpeg.base64EncodedString()))
        XCTAssertEqual(try Event(request: .int(1), face).params().decode(FaceFrameEvent.self), face)

        var finger = FingerFrameEvent(fingers: [], distance: nil, distanceRange: DistanceRange(min: 0, optimalMin: 0.4, optimalMax: 0.6, max: 1),
                                      feedback: .noFingers, framesCaptured: 0, framesNeeded: 0)
        finger.frame = FrameSize(width: 1280, height: 720)
        finger.preview = FramePreview(jpeg: jpeg, width: 320, height: 180, fingers: [PixelRect(x: 1, y: 1, width: 9, height: 20)])
        XCTAssertEqual(try JSONValueEncoder.encode(finger).decode(FingerFrameEvent.self), finger)
        XCTAssertThrowsError(try JSONValue.object(["jpeg": "not base64!", "width": 1, "height": 1]).decode(FramePreview.self))
    }
}
