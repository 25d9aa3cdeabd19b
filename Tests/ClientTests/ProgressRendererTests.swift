import BiometricClient
import BiometricProtocol
import XCTest

/// The guidance a person reads on the terminal for the events of a session.
final class ProgressRendererTests: XCTestCase {
    private func event(_ payload: some EventPayload) -> JSONValue {
        var fields = payload.fields
        fields["type"] = .string(payload.eventType)
        fields["request"] = 1
        return .object(fields)
    }

    func testAFaceFrameReadsAsItsGuidance() {
        let frame = FaceFrameEvent(box: PixelRect(x: 0, y: 0, width: 100, height: 100), yaw: 0, pitch: 0, roll: 0, quality: 30,
                                   brightness: 40, sharpness: 80, feedback: [.tooDark, .moveCloser], livenessAction: .keepStill,
                                   framesCaptured: 1, framesNeeded: 4)
        XCTAssertEqual(ProgressRenderer.describe(event(frame)), "Keep still · Too dark: add light · Move closer · 1/4")
        let countdown = FaceFrameEvent(box: nil, yaw: nil, pitch: nil, roll: nil, quality: 0, brightness: nil, sharpness: nil,
                                       feedback: [.noFace], countdownS: 3)
        XCTAssertEqual(ProgressRenderer.describe(event(countdown)), "Starting in 3… · Look at the camera")
    }

    func testAFingerFrameReadsAsDistanceAndFingers() {
        let frame = FingerFrameEvent(
            fingers: [.init(position: "right_index", box: PixelRect(x: 0, y: 0, width: 10, height: 20), angle: 0, quality: .high),
                      .init(position: "right_middle", box: PixelRect(x: 20, y: 0, width: 10, height: 20), angle: 0, quality: .low)],
            distance: 0.3, distanceRange: DistanceRange(min: 0.1, optimalMin: 0.4, optimalMax: 0.6, max: 0.9), feedback: .tooFar,
            framesCaptured: 0, framesNeeded: 0)
        XCTAssertEqual(ProgressRenderer.describe(event(frame)), "Move closer · 2 fingers (high low)")
    }

    func testCameraChanges() {
        let camera = CameraInfo(id: "video2", path: "/dev/video2", name: "USB Camera", driver: "uvcvideo", bus: "usb-2",
                                formats: [], ir: false, busy: false)
        XCTAssertEqual(ProgressRenderer.describe(event(CameraChangeEvent(.added, camera: camera))), "+ video2 USB Camera")
        XCTAssertEqual(ProgressRenderer.describe(event(CameraChangeEvent(.removed, camera: camera))), "- video2 USB Camera")
    }

    /// A newer daemon's code this client does not know still reads as words, next to the known ones.
    func testUnknownCodesFromANewerDaemonStillRead() {
        let frame: JSONValue = ["type": "face.frame", "request": 1, "feedback": ["wear_glasses", "blurry"],
                                "liveness_action": "smile", "frames_captured": 0, "frames_needed": 0]
        XCTAssertEqual(ProgressRenderer.describe(frame), "smile · wear glasses · Hold still (blurry)")
        XCTAssertEqual(ProgressRenderer.describe(["type": "auth.done"]), "auth.done")
    }

    func testEveryCodeHasWordsOfItsOwn() {
        for feedback in Feedback.allCases {
            XCTAssertNotEqual(ProgressRenderer.guidance(feedback), feedback.rawValue.replacingOccurrences(of: "_", with: " "))
        }
        for action in LivenessAction.allCases {
            XCTAssertEqual(ProgressRenderer.guidance(code: action.rawValue), ProgressRenderer.guidance(action))
        }
    }
}
