import BiometricCamera
import BiometricCore
@testable import BiometricFace
import Foundation
import XCTest
import TestRequirements

/// The second face network (MobileFaceNet, ArcFace loss, through cvision_recognizer.h) on real LFW
/// photos: it tells people apart, is deterministic, and bad input is an error, never a crash.
/// Skips without the models.
final class SecondNetworkTests: XCTestCase {
    static func modelPath() -> String? {
        [PipelineTests.repo + "/models/" + FaceModels.recognizerName,
         PipelineTests.repo + "/../shared/models/recognizer/" + FaceModels.recognizerName]
            .first { FileManager.default.fileExists(atPath: $0) }
    }

    static func models() throws -> FaceModels {
        let dir = PipelineTests.repo + "/models"
        guard FileManager.default.fileExists(atPath: dir + "/dlib_face_recognition_resnet_model_v1.dat") else {
            throw missing("models not installed: run scripts/setup.sh")
        }
        guard let recognizer = modelPath() else { throw missing("\(FaceModels.recognizerName) not found") }
        return try FaceModels(landmarks: dir + "/landmarks_68_pfld.onnx", shape5: dir + "/shape_predictor_5_face_landmarks.dat",
                              resnet: dir + "/dlib_face_recognition_resnet_model_v1.dat",
                              yunet: dir + "/face_detection_yunet_2023mar.onnx", recognizer: recognizer)
    }

    /// The embedding of the face of an LFW photo (chip alone, or chip and mirror), aligned as the
    /// pipeline aligns it (the detector's keypoints of the observed face).
    static func embed(_ models: FaceModels, _ name: String, mirrored: Bool = false) throws -> [Float] {
        let f = try Frame(contentsOfFile: PipelineTests.lfw + "/" + name)
        let o = try models.withEngine { try FacePipeline.analyze(f, tracker: FaceTracker(), engine: $0) }
        let landmarks = try XCTUnwrap(o.landmarks, "no face in \(name)")
        let image = ImageRef(pixels: UnsafePointer(f.bgr!.pointer), width: f.width, height: f.height, channels: 3)
        return try XCTUnwrap(try models.withEngine { try $0.secondEmbedding(image, landmarks: landmarks, box: o.box, mirrored: mirrored) })
    }

    /// YuNet's five keypoints come in the ArcFace order (image-left eye first: a swapped pair would
    /// mirror the alignment) and lie on the face, near the points the 68 landmarks give; the crop
    /// search finds the same points as the whole-image detection to a few pixels.
    func testDetectorKeypointsAreInTheArcFaceOrder() throws {
        let models = try Self.models()
        for name in ["Tony_Blair/Tony_Blair_0018.jpg", "Colin_Powell/Colin_Powell_0040.jpg", "AJ_Lamas/AJ_Lamas_0001.jpg"] {
            let f = try Frame(contentsOfFile: PipelineTests.lfw + "/" + name)
            let image = ImageRef(pixels: UnsafePointer(f.bgr!.pointer), width: f.width, height: f.height, channels: 3)
            try models.withEngine { engine in
                let detection = try XCTUnwrap(try engine.detect(image).first, name)
                let whole = try XCTUnwrap(detection.points, "YuNet gives keypoints")
                let crop = try XCTUnwrap(try engine.keypoints(image, box: detection.box), "found again around the box")
                let landmarks = try engine.landmarks(image, box: detection.box)
                let (from68, fromDetector) = try engine.secondPoints(image, landmarks: landmarks, box: nil)
                XCTAssertFalse(fromDetector)
                let (points, detector) = try engine.secondPoints(image, landmarks: landmarks, box: detection.box)
                XCTAssertTrue(detector)
                XCTAssertEqual(points, crop)
                for p in [whole, crop] {
                    XCTAssertLessThan(p[0], p[2], "\(name): image-left eye first")
                    XCTAssertLessThan(p[6], p[8], "\(name): image-left mouth corner first")
                    XCTAssertLessThan(max(p[1], p[3]), p[5], "\(name): eyes above the nose tip")
                    XCTAssertLessThan(p[5], min(p[7], p[9]), "\(name): nose tip above the mouth")
                }
                let eyes = Double(from68[2] - from68[0])
                for k in 0..<5 {
                    let d68 = hypot(Double(crop[2 * k] - from68[2 * k]), Double(crop[2 * k + 1] - from68[2 * k + 1]))
                    let dWhole = hypot(Double(crop[2 * k] - whole[2 * k]), Double(crop[2 * k + 1] - whole[2 * k + 1]))
                    XCTAssertLessThan(d68, 0.3 * eyes, "\(name) point \(k): near the 68-point one")
                    XCTAssertLessThan(dWhole, 0.3 * eyes, "\(name) point \(k): near the whole-image detection's")
                }
                // The embedding the pipeline makes is the one on these points, not the 68-point one.
                let shipped = try XCTUnwrap(try engine.secondEmbedding(image, landmarks: landmarks, box: detection.box, mirrored: false))
                let old = try XCTUnwrap(try engine.secondEmbedding(image, landmarks: landmarks, mirrored: false))
                XCTAssertNotEqual(shipped, old)
                XCTAssertGreaterThan(Self.cosine(shipped, old), 0.7, "the same face either way")
            }
        }
    }

    /// Where there is no face, and with the HOG detector (no keypoints), the second network falls
    /// back to the 68-point five; a bad box is an error.
    func testWithoutDetectorKeypointsTheSixtyEightPointOnesAreUsed() throws {
        let models = try Self.models()
        let f = try Frame(contentsOfFile: PipelineTests.lfw + "/Tony_Blair/Tony_Blair_0018.jpg")
        let image = ImageRef(pixels: UnsafePointer(f.bgr!.pointer), width: f.width, height: f.height, channels: 3)
        try models.withEngine { engine in
            let box = try XCTUnwrap(try engine.detect(image).first).box
            let landmarks = try engine.landmarks(image, box: box)
            XCTAssertNil(try engine.keypoints(image, box: FaceBox(x: 0, y: 0, width: 20, height: 20)), "no face in the corner")
            // A box off the image's left edge: its crop overlaps the image by one pixel column, at the crop's far edge.
            XCTAssertNil(try engine.keypoints(image, box: FaceBox(x: -30, y: 100, width: 20, height: 20)), "nothing to find off the image")
            XCTAssertFalse(try engine.secondPoints(image, landmarks: landmarks, box: FaceBox(x: 0, y: 0, width: 20, height: 20)).detector)
            XCTAssertThrowsError(try engine.keypoints(image, box: FaceBox(x: .nan, y: 0, width: 20, height: 20)))
            XCTAssertThrowsError(try engine.keypoints(image, box: FaceBox(x: 0, y: 0, width: 0, height: 20)))
            XCTAssertEqual(try engine.secondEmbedding(image, landmarks: landmarks, box: nil, mirrored: false),
                           try engine.secondEmbedding(image, landmarks: landmarks, box: FaceBox(x: 0, y: 0, width: 20, height: 20), mirrored: false))
        }
        let dir = PipelineTests.repo + "/models"
        let hog = try FaceModels(landmarks: dir + "/landmarks_68_pfld.onnx", shape5: dir + "/shape_predictor_5_face_landmarks.dat",
                                 resnet: dir + "/dlib_face_recognition_resnet_model_v1.dat", yunet: nil,
                                 recognizer: try XCTUnwrap(Self.modelPath()))
        try hog.withEngine { engine in
            let detection = try XCTUnwrap(try engine.detect(image).first)
            XCTAssertNil(detection.points, "HOG gives no keypoints")
            XCTAssertNil(try engine.keypoints(image, box: detection.box))
            let landmarks = try engine.landmarks(image, box: detection.box)
            XCTAssertFalse(try engine.secondPoints(image, landmarks: landmarks, box: detection.box).detector)
            XCTAssertNotNil(try engine.secondEmbedding(image, landmarks: landmarks, box: detection.box, mirrored: false))
        }
    }

    /// The pipeline's templates (enrolment, verify, identify, face.extract) carry the embedding on
    /// the detector's keypoints of the observed face.
    func testThePipelineAlignsOnTheDetectorKeypoints() async throws {
        let models = try Self.models()
        let f = try Frame(contentsOfFile: PipelineTests.lfw + "/Tony_Blair/Tony_Blair_0018.jpg")
        let pipeline = FacePipeline(models: models, threads: 1)
        let o = try await pipeline.analyze(f, tracker: FaceTracker())
        let template = try await pipeline.template(of: f, o, views: .mirrored, second: .chip)
        let image = ImageRef(pixels: UnsafePointer(f.bgr!.pointer), width: f.width, height: f.height, channels: 3)
        let expected = try models.withEngine { try $0.secondEmbedding(image, landmarks: try XCTUnwrap(o.landmarks), box: o.box, mirrored: false) }
        // FaceTemplate stores it re-normalised: equal to rounding.
        XCTAssertGreaterThan(Self.cosine(try XCTUnwrap(template.second), try XCTUnwrap(expected)), 0.99999)
        let old = try models.withEngine { try $0.secondEmbedding(image, landmarks: try XCTUnwrap(o.landmarks), mirrored: false) }
        XCTAssertLessThan(Self.cosine(try XCTUnwrap(template.second), try XCTUnwrap(old)), 0.999, "not the 68-point alignment")
        XCTAssertTrue(try models.withEngine { try $0.secondPoints(image, landmarks: try XCTUnwrap(o.landmarks), box: o.box).detector })
    }

    static func cosine(_ a: [Float], _ b: [Float]) -> Double { Double(zip(a, b).map { $0 * $1 }.reduce(0, +)) }

    func testItTellsPeopleApart() throws {
        let models = try Self.models()
        let blair = try ["0018", "0032", "0064"].map { try Self.embed(models, "Tony_Blair/Tony_Blair_\($0).jpg") }
        let others = try ["Colin_Powell/Colin_Powell_0040.jpg", "George_W_Bush/George_W_Bush_0007.jpg",
                          "Jacques_Chirac/Jacques_Chirac_0002.jpg"].map { try Self.embed(models, $0) }
        let genuine = [(0, 1), (0, 2), (1, 2)].map { Self.cosine(blair[$0.0], blair[$0.1]) }
        let impostor = blair.flatMap { b in others.map { Self.cosine(b, $0) } }
        // LFW impostor cosines: mean 0.01, sd 0.10 (Docs/face.md); these genuine pairs sit far above.
        XCTAssertGreaterThan(genuine.min()!, 0.4, "genuine \(genuine)")
        XCTAssertLessThan(impostor.max()!, 0.35, "impostor \(impostor)")
        XCTAssertGreaterThan(genuine.min()!, impostor.max()! + 0.1)
    }

    func testTheEmbeddingIsAUnitVectorAndDeterministic() throws {
        let models = try Self.models()
        let a = try Self.embed(models, "Tony_Blair/Tony_Blair_0018.jpg")
        let b = try Self.embed(models, "Tony_Blair/Tony_Blair_0018.jpg")
        XCTAssertEqual(a.count, 128)
        XCTAssertEqual(a, b, "the same face gives the same bytes")
        XCTAssertEqual(Self.cosine(a, a), 1, accuracy: 1e-5)
        let m = try Self.embed(models, "Tony_Blair/Tony_Blair_0018.jpg", mirrored: true)
        XCTAssertNotEqual(a, m, "the mirror is averaged in")
        XCTAssertGreaterThan(Self.cosine(a, m), 0.8, "but it is the same face")
    }

    func testBadPointsAreAnErrorNotACrash() throws {
        let models = try Self.models()
        let f = try Frame(contentsOfFile: PipelineTests.lfw + "/Tony_Blair/Tony_Blair_0018.jpg")
        let image = ImageRef(pixels: UnsafePointer(f.bgr!.pointer), width: f.width, height: f.height, channels: 3)
        let nan = Landmarks(flat: [Float](repeating: .nan, count: 136))
        XCTAssertThrowsError(try models.withEngine { try $0.secondEmbedding(image, landmarks: nan, mirrored: false) })
        let collapsed = Landmarks(flat: [Float](repeating: 10, count: 136))  // every point in one place
        XCTAssertThrowsError(try models.withEngine { try $0.secondEmbedding(image, landmarks: collapsed, mirrored: false) })
        let huge = Landmarks(flat: (0..<136).map { Float($0) * 1e7 })
        XCTAssertThrowsError(try models.withEngine { try $0.secondEmbedding(image, landmarks: huge, mirrored: false) })
    }

    func testWithoutTheModelThereIsNoSecondEmbedding() throws {
        let models = try PipelineTests.loadModels()
        let f = try Frame(contentsOfFile: PipelineTests.lfw + "/Tony_Blair/Tony_Blair_0018.jpg")
        let image = ImageRef(pixels: UnsafePointer(f.bgr!.pointer), width: f.width, height: f.height, channels: 3)
        let o = try models.withEngine { try FacePipeline.analyze(f, tracker: FaceTracker(), engine: $0) }
        XCTAssertFalse(models.hasRecognizer)
        XCTAssertNil(try models.withEngine { try $0.secondEmbedding(image, landmarks: try XCTUnwrap(o.landmarks), mirrored: false) })
    }

    func testAFileThatIsNotTheModelIsRefusedAtLoad() throws {
        let dir = PipelineTests.repo + "/models"
        guard FileManager.default.fileExists(atPath: dir + "/dlib_face_recognition_resnet_model_v1.dat") else {
            throw missing("models not installed: run scripts/setup.sh")
        }
        let bogus = FileManager.default.temporaryDirectory.appendingPathComponent("not-a-model-\(getpid()).onnx").path
        try Data("not an onnx file".utf8).write(to: URL(fileURLWithPath: bogus))
        defer { try? FileManager.default.removeItem(atPath: bogus) }
        XCTAssertThrowsError(try FaceModels(landmarks: dir + "/landmarks_68_pfld.onnx", shape5: dir + "/shape_predictor_5_face_landmarks.dat",
                                            resnet: dir + "/dlib_face_recognition_resnet_model_v1.dat", yunet: nil,
                                            recognizer: bogus)) { error in
            guard case FaceError.modelMissing = error else { return XCTFail("\(error)") }
        }
    }
}
