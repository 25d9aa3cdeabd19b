import BiometricClient
import BiometricProtocol
import CImaging
import Foundation
import XCTest
import TestRequirements

/// The live preview of issue 25 through the socket, on a replay camera of a real face.
final class PreviewFlowTests: XCTestCase {
    override func setUpWithError() throws {
        guard FileManager.default.fileExists(atPath: FaceFlowTests.models + "/dlib_face_recognition_resnet_model_v1.dat") else {
            throw missing("models not installed: run scripts/setup.sh")
        }
    }

    private func startDaemon() throws -> DaemonProcess {
        try DaemonProcess(cameras: ["replay:\(lfw)/Aaron_Eckhart?fps=15&loop=true"], extraArguments: ["--models", FaceFlowTests.models])
    }

    /// Width, height and channels of JPEG bytes, read back by OpenCV.
    private func decodeJPEG(_ data: Data) -> (width: Int, height: Int)? {
        XCTAssertEqual(Array(data.prefix(3)), [0xFF, 0xD8, 0xFF], "a JPEG file starts with SOI")
        var status = CVIS_OK
        let image = data.withUnsafeBytes { cvis_image_decode($0.bindMemory(to: UInt8.self).baseAddress, data.count, 0, &status) }
        guard let image else { return nil }
        defer { cvis_image_free(image) }
        return (Int(cvis_image_width(image)), Int(cvis_image_height(image)))
    }

    /// Enrolment's countdown sends events for two seconds: with a preview asked for, they carry
    /// JPEGs of the asked width at no more than the asked rate, each with the face's marks in
    /// its own coordinates; every event carries the frame size.
    func testAPreviewArrivesAsJPEGOfTheAskedWidthAtNoMoreThanTheAskedRate() throws {
        let daemon = try startDaemon()
        let client = try daemon.client()
        var events: [(at: Double, event: JSONValue)] = []
        let started = Date()
        let _: FaceEnrollResult = try client.call(
            Method.faceEnroll, FaceEnrollParams(user: "aaron", frames: 1, countdownS: 2, qualityThreshold: 30,
                                                preview: PreviewRequest(fps: 4, width: 125)),
            onEvent: { events.append((Date().timeIntervalSince(started), $0)) })
        let frames = events.filter { $0.event["type"] == "face.frame" }
        XCTAssertFalse(frames.isEmpty)
        for (_, event) in frames {
            XCTAssertEqual(event["frame_width"], 250, "every face.frame carries the frame size (LFW: 250x250)")
            XCTAssertEqual(event["frame_height"], 250)
        }
        let previews = try frames.compactMap { at, event -> (Double, FramePreview)? in
            guard event["preview"] != nil else { return nil }
            return (at, try XCTUnwrap(try event.decode(FaceFrameEvent.self).preview))
        }
        XCTAssertGreaterThanOrEqual(previews.count, 3)
        // Frame time paces them (at most one per 250 ms of frame timestamps: PreviewScheduleTests,
        // on synthetic timestamps; no wall-clock assertion here).
        XCTAssertLessThan(previews.count, frames.count, "not every event carries a preview at 15 frames/s and 4 previews/s")
        for (_, preview) in previews {
            XCTAssertEqual(preview.width, 125)
            XCTAssertEqual(preview.height, 125)
            let size = try XCTUnwrap(decodeJPEG(preview.jpeg), "the preview decodes as JPEG")
            XCTAssertEqual(size.width, 125)
            XCTAssertEqual(size.height, 125)
        }
        let marked = try XCTUnwrap(previews.map(\.1).first { $0.box != nil }, "a face was found in a previewed frame")
        let box = try XCTUnwrap(marked.box)
        XCTAssertTrue(box.x >= 0 && box.x + box.width <= 126 && box.width > 20, "the box is in the preview's coordinates: \(box)")
        XCTAssertEqual(marked.landmarks.count, 68)
        XCTAssertTrue(marked.landmarks.allSatisfy { (0...125).contains($0.x) && (0...125).contains($0.y) })
    }

    /// Left out, no event carries a preview (and the frame size still comes); a bad value is
    /// refused with -32602 naming the member.
    func testNoPreviewUnlessAskedAndBadValuesAreRefused() throws {
        let daemon = try startDaemon()
        let client = try daemon.client()
        var events: [JSONValue] = []
        let _: FaceEnrollResult = try client.call(
            Method.faceEnroll, FaceEnrollParams(user: "aaron", frames: 1, countdownS: 0, qualityThreshold: 30),
            onEvent: { events.append($0) })
        let frames = events.filter { $0["type"] == "face.frame" }
        XCTAssertFalse(frames.isEmpty)
        XCTAssertTrue(frames.allSatisfy { $0["preview"] == nil && $0["frame_width"] != nil && $0["frame_height"] != nil })
        for (preview, field) in [(PreviewRequest(fps: 0), "preview.fps"), (PreviewRequest(fps: 16), "preview.fps"),
                                 (PreviewRequest(width: 63), "preview.width"), (PreviewRequest(width: 4000), "preview.width")] {
            let error = rpcError {
                let _: FaceVerifyResult = try client.call(Method.faceVerify, FaceVerifyParams(
                    user: "aaron", capture: FaceCaptureOptions(mode: .image, preview: preview)))
            }
            XCTAssertEqual(error?.code, -32602)
            XCTAssertEqual(error?.data?["field"], .string(field))
        }
    }
}
