import BiometricCore
@testable import BiometricFace
import XCTest
import TestRequirements

/// The iris network's eyelid opening (IrisEyeModel), the measure issue 23 compares with the eye
/// aspect ratio for eyes in the dark (Docs/face.md "Eye state in the dark"). On the shared blink
/// clip: open frames read wider than the blink's closed frames; bad corners are refused, not run.
/// Skips without the clip, the face models or ../shared/models/eyes/iris_landmark.onnx.
final class IrisEyeStateTests: XCTestCase {
    static func iris() throws -> IrisEyeModel {
        let path = PipelineTests.repo + "/../shared/models/eyes/" + IrisEyeModel.fileName
        guard FileManager.default.fileExists(atPath: path) else { throw missing("\(path) not found") }
        return try IrisEyeModel(path: path)
    }

    func testTheBlinkReadsNarrowerThanTheOpenEyes() throws {
        let iris = try Self.iris()
        let models = try PassiveClipTests.models()
        let frames = try PassiveClipTests.clip("grid_face_blink_a", seconds: 1)
        let tracker = FaceTracker()
        var openness: [Int: Double] = [:]
        for (i, frame) in frames.enumerated() {
            let o = try models.withEngine { try FacePipeline.analyze(frame, tracker: tracker, engine: $0) }
            guard let lm = o.landmarks, let bgr = frame.bgr else { continue }
            let image = ImageRef(pixels: UnsafePointer(bgr.pointer), width: frame.width, height: frame.height, channels: 3)
            openness[i] = try iris.openness(image, landmarks: lm)
        }
        // The blink is frames 14–17 (Docs/face.md "Blink measurements"); 0–10 are open.
        let open = (0...10).compactMap { openness[$0] }, closed = (15...16).compactMap { openness[$0] }
        XCTAssertEqual(open.count, 11, "face found in the open frames")
        XCTAssertEqual(closed.count, 2, "face found in the blink")
        XCTAssertLessThan(closed.max()!, 0.8 * open.min()!, "open \(open), closed \(closed)")
        XCTAssertTrue(open.allSatisfy { (0.15...0.6).contains($0) }, "open eyes read as eyelid height/width: \(open)")
    }

    func testCornersThatAreNotAnEyeAreRefused() throws {
        let iris = try Self.iris()
        let pixels = [UInt8](repeating: 128, count: 64 * 48)
        try pixels.withUnsafeBufferPointer { p in
            let image = ImageRef(pixels: p.baseAddress!, width: 64, height: 48, channels: 1)
            XCTAssertThrowsError(try iris.eyelid(image, corners: SIMD2(10, 10), SIMD2(10.5, 10), mirror: false), "corners 0.5 px apart")
            XCTAssertThrowsError(try iris.eyelid(image, corners: SIMD2(.nan, 10), SIMD2(30, 10), mirror: false), "NaN corner")
            // A real eye-sized pair on a flat grey image runs (the net answers something finite).
            let r = try iris.eyelid(image, corners: SIMD2(20, 24), SIMD2(44, 24), mirror: true)
            XCTAssertTrue(r.openness.isFinite)
            XCTAssertEqual(r.contour.count, 16)
        }
    }
}
