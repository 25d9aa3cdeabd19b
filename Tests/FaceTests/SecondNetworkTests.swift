import BiometricCamera
import BiometricCore
@testable import BiometricFace
import Foundation
import XCTest

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
            throw XCTSkip("models not installed: run scripts/setup.sh")
        }
        guard let recognizer = modelPath() else { throw XCTSkip("\(FaceModels.recognizerName) not found") }
        return try FaceModels(shape68: dir + "/shape_predictor_68_face_landmarks.dat",
                              resnet: dir + "/dlib_face_recognition_resnet_model_v1.dat",
                              yunet: dir + "/face_detection_yunet_2023mar.onnx", recognizer: recognizer)
    }

    /// The embedding of the face of an LFW photo (chip alone, or chip and mirror).
    static func embed(_ models: FaceModels, _ name: String, mirrored: Bool = false) throws -> [Float] {
        let f = try Frame(contentsOfFile: PipelineTests.lfw + "/" + name)
        let o = try models.withEngine { try FacePipeline.analyze(f, tracker: FaceTracker(), engine: $0) }
        let landmarks = try XCTUnwrap(o.landmarks, "no face in \(name)")
        let image = ImageRef(pixels: UnsafePointer(f.bgr!.pointer), width: f.width, height: f.height, channels: 3)
        return try XCTUnwrap(try models.withEngine { try $0.secondEmbedding(image, landmarks: landmarks, mirrored: mirrored) })
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
            throw XCTSkip("models not installed: run scripts/setup.sh")
        }
        let bogus = FileManager.default.temporaryDirectory.appendingPathComponent("not-a-model-\(getpid()).onnx").path
        try Data("not an onnx file".utf8).write(to: URL(fileURLWithPath: bogus))
        defer { try? FileManager.default.removeItem(atPath: bogus) }
        XCTAssertThrowsError(try FaceModels(shape68: dir + "/shape_predictor_68_face_landmarks.dat",
                                            resnet: dir + "/dlib_face_recognition_resnet_model_v1.dat", yunet: nil,
                                            recognizer: bogus)) { error in
            guard case FaceError.modelMissing = error else { return XCTFail("\(error)") }
        }
    }
}
