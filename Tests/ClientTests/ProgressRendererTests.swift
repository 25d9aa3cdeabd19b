import BiometricClient
import BiometricProtocol
import XCTest

/// The guidance a person reads on the terminal for the events of a session.
final class ProgressRendererTests: XCTestCase {
    private func event(_ payload: some EventPayload) -> JSONValue {
        // The params of the event's line, as the client receives them.
        (try? Event(request: .int(1), payload).params()) ?? .null
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
        XCTAssertEqual(ProgressRenderer.describe(event(CameraChangeEvent(.added, camera: camera))), "Camera added: video2 USB Camera")
        XCTAssertEqual(ProgressRenderer.describe(event(CameraChangeEvent(.removed, camera: camera))), "Camera removed: video2 USB Camera")
    }

    /// A newer daemon's code this client does not know still reads as words, next to the known ones.
    func testUnknownCodesFromANewerDaemonStillRead() {
        let frame: JSONValue = ["type": "face.frame", "request": 1, "feedback": ["wear_glasses", "blurry"],
                                "liveness_action": "smile", "frames_captured": 0, "frames_needed": 0]
        XCTAssertEqual(ProgressRenderer.describe(frame), "smile · wear glasses · Hold still (blurry)")
        XCTAssertEqual(ProgressRenderer.describe(["type": "auth.done"]), "auth done")
    }

    func testEveryCodeHasWordsOfItsOwn() {
        for feedback in Feedback.allCases {
            XCTAssertNotEqual(ProgressRenderer.guidance(feedback), feedback.rawValue.replacingOccurrences(of: "_", with: " "))
        }
        for action in LivenessAction.allCases {
            XCTAssertEqual(ProgressRenderer.guidance(code: action.rawValue), ProgressRenderer.guidance(action))
        }
    }

    /// A sample of each kind the daemon sends, in its plainest form (nothing asked of the person):
    /// the switch is exhaustive, so a new kind cannot be added without one.
    private func plainSample(_ kind: EventKind) -> any EventPayload {
        let camera = CameraInfo(id: "video0", path: "/dev/video0", name: "IR Camera", driver: "uvcvideo", bus: "usb-1",
                                formats: [], ir: true, busy: false)
        switch kind {
        case .faceFrame:
            return FaceFrameEvent(box: PixelRect(x: 10, y: 10, width: 90, height: 90), yaw: 0, pitch: 0, roll: 0, quality: 62,
                                  brightness: 120, sharpness: 70, feedback: [])
        case .fingerFrame:
            return FingerFrameEvent(fingers: [], distance: nil, distanceRange: DistanceRange(min: 0.1, optimalMin: 0.4, optimalMax: 0.6, max: 0.9),
                                    feedback: .noFingers, framesCaptured: 0, framesNeeded: 0)
        case .authFactor: return AuthFactorEvent(factor: "face", name: "Face", index: 0, of: 2)
        case .cameraAdded: return CameraChangeEvent(.added, camera: camera)
        case .cameraRemoved: return CameraChangeEvent(.removed, camera: camera)
        }
    }

    /// `authctl face verify --no-liveness` printed a raw `face.frame` line: every kind, even with
    /// nothing to ask, reads as a sentence, never as its wire name.
    func testEveryEventKindRendersAsWords() {
        for kind in EventKind.allCases {
            let payload = plainSample(kind)
            XCTAssertEqual(payload.eventType, kind.rawValue)
            let line = ProgressRenderer.describe(event(payload))
            XCTAssertFalse(line.isEmpty, "\(kind)")
            XCTAssertFalse(line.contains(kind.rawValue), "\(kind) renders as its wire name: \(line)")
            XCTAssertTrue(line.first?.isUppercase == true, "\(kind) does not read as a sentence: \(line)")
        }
    }

    func testAFaceFrameWithNothingAskedSaysWhatTheCameraSees() {
        let found = FaceFrameEvent(box: PixelRect(x: 0, y: 0, width: 90, height: 90), yaw: 0, pitch: 0, roll: 0, quality: 62,
                                   brightness: 120, sharpness: 70, feedback: [])
        XCTAssertEqual(ProgressRenderer.describe(event(found)), "Face found (quality 62)")
        let none = FaceFrameEvent(box: nil, yaw: nil, pitch: nil, roll: nil, quality: 0, brightness: nil, sharpness: nil, feedback: [])
        XCTAssertEqual(ProgressRenderer.describe(event(none)), "Looking for a face…")
        var reading = found
        reading.extraction = .extracting
        XCTAssertEqual(ProgressRenderer.describe(event(reading)), "Reading the face…")
        let factor = AuthFactorEvent(factor: "pin", name: "PIN", index: 0, of: 1)
        XCTAssertEqual(ProgressRenderer.describe(event(factor)), "PIN")
        XCTAssertEqual(ProgressRenderer.describe(event(AuthFactorEvent(factor: "face", name: "Face", index: 1, of: 2))), "Step 2 of 2: Face")
    }
}
