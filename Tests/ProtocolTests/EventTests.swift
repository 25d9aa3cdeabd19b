import BiometricProtocol
import Foundation
import XCTest

/// Events as types: the daemon writes them from `fields`, clients decode them with Codable; the
/// wire carries every SPEC §5 field, null included.
final class EventTests: XCTestCase {
    private func line(_ payload: some EventPayload, request: RequestID = .int(7)) throws -> String {
        String(decoding: try RPCCodec.event(Event(request: request, payload)), as: UTF8.self)
    }

    private func params(_ line: String) throws -> JSONValue {
        try XCTUnwrap(try JSONDecoder().decode(JSONValue.self, from: Data(line.utf8))["params"])
    }

    func testAFaceFrameWithNoFaceSendsEveryFieldWithNulls() throws {
        let event = FaceFrameEvent(box: nil, yaw: nil, pitch: nil, roll: nil, quality: 0, brightness: nil, sharpness: nil,
                                   feedback: [.noFace], livenessAction: .keepStill, framesNeeded: 4)
        XCTAssertEqual(try line(event),
                       #"{"jsonrpc":"2.0","method":"event","params":{"box":null,"brightness":null,"countdown_s":null,"#
                           + #""extraction":null,"feedback":["no_face"],"frames_captured":0,"frames_needed":4,"liveness_action":"keep_still","#
                           + #""liveness_score":0,"pitch":null,"quality":0,"request":7,"roll":null,"sharpness":null,"type":"face.frame","yaw":null}}"#
                           + "\n")
        XCTAssertEqual(try params(try line(event)).decode(FaceFrameEvent.self), event)
    }

    func testAFaceFrameRoundTripsAndNamesASecondFaceOnlyWhenThereIsOne() throws {
        let event = FaceFrameEvent(box: PixelRect(x: 10, y: 20, width: 120, height: 130), yaw: 4.5, pitch: -2, roll: 0.1,
                                   quality: 71, brightness: 120, sharpness: 88, feedback: [.multipleFaces, .turnLeft],
                                   livenessAction: .nod, livenessScore: 60, countdownS: 2, extraction: .success,
                                   framesCaptured: 1, framesNeeded: 4, faces: 2)
        let sent = try params(try line(event, request: .string("a")))
        XCTAssertEqual(sent["faces"], 2)
        XCTAssertEqual(sent["box"], ["x": 10, "y": 20, "width": 120, "height": 130])
        XCTAssertEqual(sent["feedback"], ["multiple_faces", "turn_left"])
        XCTAssertEqual(try sent.decode(FaceFrameEvent.self), event)

        var one = event
        one.faces = nil
        XCTAssertNil(try params(try line(one))["faces"], "faces is only sent when more than one is in view")
    }

    func testAFingerFrameRoundTrips() throws {
        let event = FingerFrameEvent(
            fingers: [.init(position: "right_index", box: PixelRect(x: 1, y: 2, width: 30, height: 40), angle: -12.5, quality: .high)],
            distance: nil, distanceRange: DistanceRange(min: 0.1, optimalMin: 0.4, optimalMax: 0.6, max: 0.9),
            feedback: .tooFar, framesCaptured: 0, framesNeeded: 3)
        let sent = try params(try line(event))
        XCTAssertEqual(sent["type"], "finger.frame")
        XCTAssertEqual(sent["distance"], .null)
        XCTAssertEqual(sent["feedback"], "too_far")
        XCTAssertEqual(sent["fingers"]?.arrayValue?.first?["quality"], "high")
        XCTAssertEqual(sent["distance_range"]?["optimal_min"], 0.4)
        XCTAssertEqual(try sent.decode(FingerFrameEvent.self), event)
    }

    func testCameraAndFactorEventsRoundTrip() throws {
        let camera = CameraInfo(id: "video0", path: "/dev/video0", name: "Integrated IR", driver: "uvcvideo", bus: "usb-1",
                                formats: [], ir: true, busy: false)
        let removed = CameraChangeEvent(.removed, camera: camera)
        let sent = try params(try line(removed))
        XCTAssertEqual(sent["type"], "camera.removed")
        XCTAssertEqual(sent["camera"]?["ir"], true)
        XCTAssertEqual(try sent.decode(CameraChangeEvent.self), removed)

        let factor = AuthFactorEvent(factor: "pin", name: "PIN", index: 1, of: 2)
        XCTAssertEqual(try params(try line(factor)).decode(AuthFactorEvent.self), factor)
    }

    /// A daemon newer than the client may send a feedback code this build does not know: decoding
    /// the typed event fails (and the client falls back to the raw fields), nothing crashes.
    func testAnUnknownFeedbackCodeIsADecodingErrorNotACrash() throws {
        var sent = try params(try line(FaceFrameEvent(box: nil, yaw: nil, pitch: nil, roll: nil, quality: 0, brightness: nil,
                                                       sharpness: nil, feedback: [.noFace])))
        if case .object(var members) = sent {
            members["feedback"] = ["wear_glasses"]
            sent = .object(members)
        }
        XCTAssertThrowsError(try sent.decode(FaceFrameEvent.self))
    }
}
