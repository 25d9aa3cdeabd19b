import CFaceVision
import Foundation
import Synchronization

/// Eye openness from MediaPipe's iris landmark network: the predicted eyelid contour's height over
/// its width (≈0.1 closed, ≈0.35 open), on a crop made from the two eye corners.
///
/// A second measure of eye state beside the eye aspect ratio of the 68 face landmarks (EAR), for
/// issue 23's "eyes in the dark": the 68-point model places the lids from the whole face's shape,
/// this network from a 64×64 crop of the eye itself. `biometricd-face-bench eyes` measures both
/// on CEW crops, the blink clips and darkened copies (Docs/face.md "Eye state in the dark"); the
/// liveness decision keeps whichever wins there.
public final class IrisEyeModel: @unchecked Sendable {
    // The network bytes are read-only after loading; per-thread networks are handed out one per call.
    private let model: OpaquePointer
    private let idle = Mutex<[UInt]>([])  // idle per-thread networks, as addresses

    public static let fileName = "iris_landmark.onnx"

    public init(path: String) throws(FaceError) {
        var status = CVIS_OK
        guard let m = cvis_iris_model_load(path, &status) else {
            throw .modelMissing("eye model does not load: \(String(cString: cvis_last_error()))")
        }
        model = m
    }

    deinit {
        idle.withLock { list in for item in list { cvis_iris_free(OpaquePointer(bitPattern: item)) } }
        cvis_iris_model_free(model)
    }

    /// The eyelid opening of one eye.
    public struct Reading: Sendable, Equatable {
        /// Eyelid height / width of the predicted contour.
        public var openness: Double
        /// The 16 eyelid contour points in frame pixels (0 and 8 the corners).
        public var contour: [SIMD2<Double>]
    }

    /// The eye whose corners are `a` and `b` (frame pixels). `mirror`: the subject's right eye
    /// (the left one in the image); the network was trained on left eyes.
    public func eyelid(_ image: ImageRef, corners a: SIMD2<Double>, _ b: SIMD2<Double>, mirror: Bool) throws(FaceError) -> Reading {
        let reused = idle.withLock { $0.popLast() }
        let iris: OpaquePointer
        if let reused {
            iris = OpaquePointer(bitPattern: reused)!
        } else {
            var status = CVIS_OK
            guard let i = cvis_iris_create(model, &status) else { throw .native(String(cString: cvis_last_error())) }
            iris = i
        }
        defer { idle.withLock { $0.append(UInt(bitPattern: iris)) } }
        var out = [Float](repeating: 0, count: Int(CVIS_IRIS_OUTPUTS))
        guard cvis_iris_eyelid(iris, image.view, Float(a.x), Float(a.y), Float(b.x), Float(b.y), mirror ? 1 : 0, &out) == CVIS_OK else {
            throw .native(String(cString: cvis_last_error()))
        }
        let contour = (0..<16).map { SIMD2(Double(out[1 + 2 * $0]), Double(out[2 + 2 * $0])) }
        return Reading(openness: Double(out[0]), contour: contour)
    }

    /// Both eyes from the 68 face landmarks (corners 36/39 and 42/45): their mean openness.
    public func openness(_ image: ImageRef, landmarks: Landmarks) throws(FaceError) -> Double {
        let p = landmarks.points
        guard p.count >= 48 else { throw .native("fewer than 68 landmarks") }
        let right = try eyelid(image, corners: p[36], p[39], mirror: true)
        let left = try eyelid(image, corners: p[42], p[45], mirror: false)
        return (right.openness + left.openness) / 2
    }
}
