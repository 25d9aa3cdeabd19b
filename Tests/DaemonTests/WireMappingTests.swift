import BiometricCore
@testable import BiometricDaemon
@testable import BiometricFace
@testable import BiometricFinger
import BiometricProtocol
import Foundation
import XCTest

/// Daemon/Wire: the face.frame and finger.frame events and previews the daemon builds from the
/// sessions' domain values, byte for byte (the bytes these mappings wrote before they moved out
/// of Face and Finger, issue 38): whole-pixel boxes (a face box truncated, a fingertip box
/// rounded), angles and head pose to a tenth, the distance to a thousandth, every SPEC field
/// present, null included.
final class WireMappingTests: XCTestCase {
    private func bytes(_ event: some EventPayload) -> String {
        String(decoding: (try? JSONValueEncoder.encode(event)).map { JSONWriter.write($0) } ?? [], as: UTF8.self)
    }

    private func face(count: Int = 2) -> FaceObservation {
        FaceObservation(
            frameWidth: 640, frameHeight: 480, timestampNs: 0, faceCount: count,
            box: FaceBox(x: 200.7, y: 150.2, width: 100.9, height: 101.5),
            landmarks: Landmarks(points: [SIMD2(210.4, 170.6), SIMD2(290.2, 171)] + Array(repeating: SIMD2(250, 200), count: 66)),
            pose: HeadPose(yaw: 4.46, pitch: -2.04, roll: 0.15),
            measures: FaceQuality.Measures(brightness: 101.4, contrast: 30, sharpness: 55.6),
            quality: FaceQuality(score: 62, feedback: [.moveCloser, .tooDark]), detected: true, borderMask: nil, recapture: nil,
            trackRestarted: false)
    }

    private var fingers: FingerFrameAnalysis {
        FingerFrameAnalysis(
            fingers: [
                FingerObservation(position: FingerPosition(.right, .index),
                                  box: FingerBox(x: 100.4, y: 50.5, width: 40.2, height: 80.6, angle: 12.345), quality: 70, level: .high),
                FingerObservation(position: FingerPosition(.right, .middle),
                                  box: FingerBox(x: 150, y: 40, width: 41, height: 82, angle: -3.26), quality: 20, level: .unavailable),
            ],
            distance: 0.45678, distanceRange: DistanceRange(min: 0.244, optimalMin: 0.306, optimalMax: 0.45, max: 0.9),
            feedback: .holdStill)
    }

    private func frame(width: Int, height: Int) -> Frame {
        let grey = PixelBufferPool(limit: 0).buffer(count: width * height)
        for i in 0..<(width * height) { grey.pointer[i] = UInt8(i % 251) }
        return Frame(width: width, height: height, grey: grey, bgr: nil, timestampNs: 0, sequence: 0, isInfrared: true)
    }

    func testFaceFrameEventsFromASessionsProgress() {
        var progress = FaceProgress(observation: face(), livenessAction: LivenessAction(ChallengeLiveness.Action.nod), livenessScore: 40,
                                    countdown: 3, extraction: .success, captured: 2, needed: 4, throttleKey: "k")
        var event = progress.event
        event.frame = FrameSize(width: 640, height: 480)
        XCTAssertEqual(bytes(event), #"{"box":{"height":101,"width":100,"x":200,"y":150},"brightness":101,"countdown_s":3,"#
            + #""extraction":"success","faces":2,"feedback":["multiple_faces","move_closer","too_dark"],"frame_height":480,"#
            + #""frame_width":640,"frames_captured":2,"frames_needed":4,"liveness_action":"nod","liveness_score":40,"pitch":-2,"#
            + #""quality":62,"roll":0.2,"sharpness":56,"yaw":4.5}"#)

        progress.observation = FaceObservation(frameWidth: 640, frameHeight: 480, timestampNs: 0, faceCount: 0, box: nil, landmarks: nil,
                                               pose: nil, measures: nil, quality: nil, detected: true, borderMask: nil, recapture: nil,
                                               trackRestarted: false)
        XCTAssertEqual(bytes(progress.observation.event), #"{"box":null,"brightness":null,"countdown_s":null,"extraction":null,"#
            + #""feedback":["no_face"],"frames_captured":0,"frames_needed":0,"liveness_action":null,"liveness_score":0,"pitch":null,"#
            + #""quality":0,"roll":null,"sharpness":null,"yaw":null}"#)
        XCTAssertNil(face(count: 1).event.faces, "faces is present only when more than one is in view")
    }

    func testFingerFrameEventsAndCaptureBoxes() {
        XCTAssertEqual(bytes(fingers.event(captured: 1, needed: 3)), #"{"distance":0.457,"#
            + #""distance_range":{"max":0.9,"min":0.244,"optimal_max":0.45,"optimal_min":0.306},"feedback":"hold_still","fingers":["#
            + #"{"angle":12.3,"box":{"height":81,"width":40,"x":100,"y":51},"position":"right_index","quality":"high"},"#
            + #"{"angle":-3.3,"box":{"height":82,"width":41,"x":150,"y":40},"position":"right_middle","quality":"unavailable"}],"#
            + #""frames_captured":1,"frames_needed":3}"#)
        let none = FingerFrameAnalysis(fingers: [], distance: nil, distanceRange: DistanceRange(min: 0, optimalMin: 0.4, optimalMax: 0.6, max: 1),
                                       feedback: .noFingers)
        XCTAssertEqual(bytes(none.event(captured: 0, needed: 3)), #"{"distance":null,"#
            + #""distance_range":{"max":1,"min":0,"optimal_max":0.6,"optimal_min":0.4},"feedback":"no_fingers","fingers":[],"#
            + #""frames_captured":0,"frames_needed":3}"#)
        XCTAssertEqual(fingers.fingers.map { $0.box.wire }, [FingerBoxWire(x: 100, y: 51, width: 40, height: 81, angle: 12.3),
                                                             FingerBoxWire(x: 150, y: 40, width: 41, height: 82, angle: -3.3)])
    }

    /// The previews' overlays are in the preview's pixels: a 640x480 frame at width 320 halves them.
    func testPreviewsCarryTheOverlaysInTheirOwnCoordinates() throws {
        let f = frame(width: 640, height: 480)
        let face = try face().preview(of: f, width: 320)
        XCTAssertEqual([face.width, face.height], [320, 240])
        XCTAssertEqual(face.box, PixelRect(x: 100, y: 75, width: 50, height: 51))
        XCTAssertEqual(face.landmarks.count, 68)
        XCTAssertEqual(face.landmarks.prefix(3), [PixelPoint(x: 105, y: 85), PixelPoint(x: 145, y: 86), PixelPoint(x: 125, y: 100)])
        XCTAssertEqual(Array(face.jpeg.prefix(2)), [0xFF, 0xD8], "a JPEG")

        let finger = try fingers.preview(of: f, width: 320)
        XCTAssertEqual(finger.fingers, [PixelRect(x: 50, y: 25, width: 20, height: 40), PixelRect(x: 75, y: 20, width: 21, height: 41)])
        XCTAssertNil(finger.box)
    }
}
