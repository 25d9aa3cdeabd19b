import BiometricCamera
import BiometricCore
@testable import BiometricFace
import Foundation
import XCTest
import TestRequirements

/// The native pipeline on real photos (needs the models from scripts/setup.sh).
final class PipelineTests: XCTestCase {
    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    static let lfw = repo + "/../shared/data/faces/lfw/images"

    func models() throws -> FaceModels { try Self.loadModels() }

    static func loadModels() throws -> FaceModels {
        let dir = repo + "/models"
        guard FileManager.default.fileExists(atPath: dir + "/dlib_face_recognition_resnet_model_v1.dat") else {
            throw missing("models not installed: run scripts/setup.sh")
        }
        return try FaceModels(landmarks: dir + "/landmarks_68_pfld.onnx", shape5: dir + "/shape_predictor_5_face_landmarks.dat",
                              resnet: dir + "/dlib_face_recognition_resnet_model_v1.dat",
                              yunet: dir + "/face_detection_yunet_2023mar.onnx")
    }

    func frame(_ path: String) throws -> Frame { try Frame(contentsOfFile: path) }

    func testAStillFaceIsTrackedWithIdenticalLandmarks() throws {
        let models = try models()
        let f = try frame(Self.lfw + "/Tony_Blair/Tony_Blair_0018.jpg")
        let tracker = FaceTracker()
        var fits: [Landmarks] = []
        for _ in 0..<20 {
            let o = try models.withEngine { try FacePipeline.analyze(f, tracker: tracker, engine: $0) }
            XCTAssertEqual(o.faceCount, 1, "the face is found in every frame")
            if let l = o.landmarks { fits.append(l) }
        }
        XCTAssertEqual(fits.count, 20)
        XCTAssertEqual(Set(fits.map { $0.flat.map { Int($0 * 100) } }).count, 1, "a still image gives the very same fit every frame")
    }

    func testPoseSignsOnAMirroredFace() throws {
        let models = try models()
        let f = try frame(Self.lfw + "/Tony_Blair/Tony_Blair_0018.jpg")
        let o = try models.withEngine { try FacePipeline.analyze(f, tracker: FaceTracker(), engine: $0) }
        let pose = try XCTUnwrap(o.pose)
        // Mirror the photo: yaw and roll change sign, pitch stays.
        let w = f.width, h = f.height
        let mirrored = PixelBufferPool(limit: 0)
        let bgr = mirrored.buffer(count: w * h * 3), grey = mirrored.buffer(count: w * h)
        for y in 0..<h { for x in 0..<w {
            grey.pointer[y * w + x] = f.grey.pointer[y * w + (w - 1 - x)]
            for c in 0..<3 { bgr.pointer[(y * w + x) * 3 + c] = f.bgr!.pointer[(y * w + (w - 1 - x)) * 3 + c] }
        } }
        let m = Frame(width: w, height: h, grey: grey, bgr: bgr, timestampNs: 0, sequence: 0, isInfrared: false)
        let mp = try XCTUnwrap(try models.withEngine { try FacePipeline.analyze(m, tracker: FaceTracker(), engine: $0) }.pose)
        XCTAssertEqual(mp.yaw, -pose.yaw, accuracy: 4)
        XCTAssertEqual(mp.pitch, pose.pitch, accuracy: 4)
        XCTAssertLessThan(abs(pose.yaw), 20, "LFW photos are roughly frontal")
    }

    /// Enrolment-style (jittered) templates against live-style (mirrored) probes: deterministic,
    /// close to the mirrored embedding of the same photo, and on the calibrated score scale a
    /// match for another photo of the person and not for someone else.
    func testJitteredTemplatesAreDeterministicAndMatchMirroredProbes() throws {
        let models = try models()
        func embedding(_ name: String, _ views: EmbeddingViews) throws -> FaceTemplate {
            let f = try frame(Self.lfw + "/" + name)
            let o = try models.withEngine { try FacePipeline.analyze(f, tracker: FaceTracker(), engine: $0) }
            let landmarks = try XCTUnwrap(o.landmarks, "face found in \(name)")
            let image = ImageRef(pixels: UnsafePointer(f.bgr!.pointer), width: f.width, height: f.height, channels: 3)
            return FaceTemplate(embedding: try models.withEngine { try $0.embed(image, landmarks: landmarks, views: views) }, quality: 80)
        }
        let enrolled = try embedding("Tony_Blair/Tony_Blair_0048.jpg", .jittered)
        XCTAssertEqual(enrolled.embedding, try embedding("Tony_Blair/Tony_Blair_0048.jpg", .jittered).embedding, "fixed jitters, same output")
        XCTAssertLessThan(enrolled.distance(to: try embedding("Tony_Blair/Tony_Blair_0048.jpg", .mirrored)), 0.15)
        let calibration = FaceCalibration.lfw
        let genuine = calibration.score(enrolled.distance(to: try embedding("Tony_Blair/Tony_Blair_0053.jpg", .mirrored)))
        let impostor = calibration.score(enrolled.distance(to: try embedding("Aaron_Eckhart/Aaron_Eckhart_0001.jpg", .mirrored)))
        XCTAssertGreaterThanOrEqual(genuine, 48, "another photo of the same person matches at the default threshold")
        XCTAssertLessThan(impostor, 24, "someone else stays far below it")
    }

    /// A new face after another (here: someone else, nearer) starts a new track, flagged once, so
    /// liveness sessions start their steps again; the same face followed frame after frame is not.
    func testANewFaceRestartsTheTrackOnce() throws {
        let models = try models()
        let tony = try frame(Self.lfw + "/Tony_Blair/Tony_Blair_0064.jpg")
        let colin = try frame(Self.lfw + "/Colin_Powell/Colin_Powell_0040.jpg")
        // Colin 1.5x nearer: the same frame size, the face enlarged about the centre.
        let w = colin.width, h = colin.height
        let pool = PixelBufferPool(limit: 0)
        let bgr = pool.buffer(count: w * h * 3), grey = pool.buffer(count: w * h)
        for y in 0..<h { for x in 0..<w {
            let sx = min(w - 1, Int(Double(w) / 2 + (Double(x) - Double(w) / 2) / 1.5))
            let sy = min(h - 1, Int(Double(h) / 2 + (Double(y) - Double(h) / 2) / 1.5))
            grey.pointer[y * w + x] = colin.grey.pointer[sy * w + sx]
            for c in 0..<3 { bgr.pointer[(y * w + x) * 3 + c] = colin.bgr!.pointer[(sy * w + sx) * 3 + c] }
        } }
        let nearer = Frame(width: w, height: h, grey: grey, bgr: bgr, timestampNs: 0, sequence: 0, isInfrared: false)
        let tracker = FaceTracker()
        var restarts: [Int] = []
        for i in 0..<24 {
            let o = try models.withEngine { try FacePipeline.analyze(i < 12 ? tony : nearer, tracker: tracker, engine: $0) }
            if o.trackRestarted { restarts.append(i) }
        }
        XCTAssertEqual(restarts.count, 1, "one restart, at the switch: \(restarts)")
        XCTAssertTrue((12...14).contains(restarts.first ?? -1), "right after the switch at frame 12: \(restarts)")
    }

    /// Two equal faces side by side: a live camera's frame is unusable (no face dominates), a still
    /// image's subject is the face nearest the centre; the second face stays in the feedback.
    func testAStillImageTakesItsSubjectWhereALiveFrameIsAmbiguous() throws {
        let models = try models()
        let tony = try frame(Self.lfw + "/Tony_Blair/Tony_Blair_0064.jpg")
        // 600 px wide: the same photo at x 0…250 and at x 300…550 (nearer the centre, 300).
        let w = 600, h = 250
        let pool = PixelBufferPool(limit: 0)
        let bgr = pool.buffer(count: w * h * 3), grey = pool.buffer(count: w * h)
        for i in 0..<(w * h) { grey.pointer[i] = 0 }
        for i in 0..<(w * h * 3) { bgr.pointer[i] = 0 }
        for (source, x0) in [(tony, 0), (tony, 300)] {
            for y in 0..<250 {
                (grey.pointer + y * w + x0).update(from: source.grey.pointer + y * 250, count: 250)
                (bgr.pointer + (y * w + x0) * 3).update(from: source.bgr!.pointer + y * 250 * 3, count: 250 * 3)
            }
        }
        let both = Frame(width: w, height: h, grey: grey, bgr: bgr, timestampNs: 0, sequence: 0, isInfrared: false)
        let live = try models.withEngine { try FacePipeline.analyze(both, tracker: FaceTracker(), engine: $0) }
        XCTAssertEqual(live.faceCount, 2)
        XCTAssertFalse(live.isUsable, "a live session does not guess between two equal faces")
        XCTAssertTrue(live.feedback.contains(.multipleFaces))
        let tracker = FaceTracker()
        tracker.subjectRule = .stillImage
        let still = try models.withEngine { try FacePipeline.analyze(both, tracker: tracker, engine: $0) }
        XCTAssertTrue(still.isUsable)
        XCTAssertEqual(still.subject, .nearestCentre)
        XCTAssertGreaterThan(try XCTUnwrap(still.box).centerX, 300, "the right one, whose face is nearer the centre")
        XCTAssertTrue(still.feedback.contains(.multipleFaces), "the other face is still reported")
    }
}
