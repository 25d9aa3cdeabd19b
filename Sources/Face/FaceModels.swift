import CFaceVision
import Foundation
import Synchronization

/// Why the face pipeline cannot run.
public enum FaceError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A model file is missing or does not load: not_initialized (1008).
    case modelMissing(String)
    /// The native pipeline failed on an image.
    case native(String)

    public var description: String {
        switch self {
        case .modelMissing(let m): m
        case .native(let m): "face pipeline: \(m)"
        }
    }
}

/// Loaded face models (shared, read-only) and a pool of per-thread engines over them.
public final class FaceModels: @unchecked Sendable {
    // The native models are read-only after loading; engines are handed out one per job.
    private let models: OpaquePointer
    /// The passive presentation-attack detector's networks (optional models).
    private let spoofModels: OpaquePointer?
    /// The second face network (MobileFaceNet, ArcFace loss; optional model).
    private let recognizerModels: OpaquePointer?
    private let idle = Mutex<[(engine: UInt, spoof: UInt, recognizer: UInt)]>([])  // idle engines, as addresses (0: none)
    public let usesYuNet: Bool
    /// Whether the passive liveness detector (MiniFASNetV2 + MiniFASNetV1SE) is loaded.
    public var hasAntispoof: Bool { spoofModels != nil }
    /// Whether the second face network is loaded (fused recognition, v2 templates).
    public var hasRecognizer: Bool { recognizerModels != nil }
    /// The second network's file name (Docs/face.md "Two networks, one score").
    public static let recognizerName = "mobilefacenet_arcface_cv46.onnx"

    /// The two anti-spoofing model files (Docs/face.md "Passive liveness").
    public struct AntispoofFiles: Sendable, Equatable {
        public var v2: String
        public var v1se: String
        public static let v2Name = "MiniFASNetV2.onnx"
        public static let v1seName = "MiniFASNetV1SE.onnx"

        public init(v2: String, v1se: String) {
            self.v2 = v2
            self.v1se = v1se
        }

        /// Both files in `folder`.
        public init(folder: String) { self.init(v2: folder + "/" + Self.v2Name, v1se: folder + "/" + Self.v1seName) }
    }

    /// Loads from explicit paths; `yunet` nil selects the HOG detector; `antispoof` nil leaves
    /// passive liveness out (blink and challenge do not need it).
    /// `recognizer` nil leaves the second network out (templates are then dlib-only, v1).
    public init(shape68: String, resnet: String, yunet: String?, antispoof: AntispoofFiles? = nil,
                recognizer: String? = nil) throws(FaceError) {
        var status = CVIS_OK
        var second: OpaquePointer?
        if let recognizer {
            guard let r = cvis_recognizer_models_load(recognizer, &status) else {
                throw .modelMissing("the recognizer model does not load: \(String(cString: cvis_last_error()))")
            }
            second = r
        }
        var spoof: OpaquePointer?
        if let antispoof {
            guard let s = cvis_antispoof_models_load(antispoof.v2, antispoof.v1se, &status) else {
                if let second { cvis_recognizer_models_free(second) }
                throw .modelMissing("anti-spoofing models do not load: \(String(cString: cvis_last_error()))")
            }
            spoof = s
        }
        guard let m = cvis_face_models_load(yunet, shape68, resnet, &status) else {
            if let spoof { cvis_antispoof_models_free(spoof) }
            if let second { cvis_recognizer_models_free(second) }
            throw .modelMissing("face models do not load: \(String(cString: cvis_last_error()))")
        }
        models = m
        spoofModels = spoof
        recognizerModels = second
        usesYuNet = cvis_face_models_has_yunet(m) != 0
    }

    deinit {
        idle.withLock { list in
            for item in list {
                cvis_face_engine_free(OpaquePointer(bitPattern: item.engine))
                if item.spoof != 0 { cvis_antispoof_free(OpaquePointer(bitPattern: item.spoof)) }
                if item.recognizer != 0 { cvis_recognizer_free(OpaquePointer(bitPattern: item.recognizer)) }
            }
        }
        cvis_face_models_free(models)
        if let spoofModels { cvis_antispoof_models_free(spoofModels) }
        if let recognizerModels { cvis_recognizer_models_free(recognizerModels) }
    }

    /// Runs `body` with an engine no other thread is using.
    public func withEngine<T>(_ body: (FaceEngine) throws -> T) throws -> T {
        let reused = idle.withLock { $0.popLast() }
        let pointer: OpaquePointer
        var spoof: OpaquePointer?
        var second: OpaquePointer?
        if let reused {
            pointer = OpaquePointer(bitPattern: reused.engine)!
            spoof = OpaquePointer(bitPattern: reused.spoof)
            second = OpaquePointer(bitPattern: reused.recognizer)
        } else {
            var status = CVIS_OK
            guard let p = cvis_face_engine_create(models, &status) else {
                throw FaceError.native(String(cString: cvis_last_error()))
            }
            pointer = p
            if let spoofModels {
                guard let s = cvis_antispoof_create(spoofModels, &status) else {
                    cvis_face_engine_free(p)
                    throw FaceError.native(String(cString: cvis_last_error()))
                }
                spoof = s
            }
            if let recognizerModels {
                guard let r = cvis_recognizer_create(recognizerModels, &status) else {
                    cvis_face_engine_free(p)
                    if let spoof { cvis_antispoof_free(spoof) }
                    throw FaceError.native(String(cString: cvis_last_error()))
                }
                second = r
            }
        }
        defer {
            idle.withLock {
                $0.append((UInt(bitPattern: pointer), spoof.map { UInt(bitPattern: $0) } ?? 0, second.map { UInt(bitPattern: $0) } ?? 0))
            }
        }
        return try body(FaceEngine(pointer: pointer, spoof: spoof, recognizer: second))
    }
}

/// One engine (not thread-safe): the calls of the native pipeline.
public struct FaceEngine {
    let pointer: OpaquePointer
    /// This thread's anti-spoofing networks, when the models are loaded.
    let spoof: OpaquePointer?
    /// This thread's second face network, when its model is loaded.
    let recognizer: OpaquePointer?

    public struct Detection: Sendable, Equatable {
        public var box: FaceBox
        public var score: Double
        /// The detector's five keypoints (YuNet; nil for HOG), x, y of the image-left eye, the
        /// image-right eye, the nose tip, the image-left and image-right mouth corner: the order
        /// the second network aligns on (`cvis_face_detect_points`).
        public var points: [Float]? = nil
    }

    static func view(_ pixels: UnsafePointer<UInt8>, _ width: Int, _ height: Int, _ channels: Int) -> cvis_image_view {
        cvis_image_view(pixels: pixels, width: Int32(width), height: Int32(height), channels: Int32(channels))
    }

    public func detect(_ image: ImageRef, minSize: Int = 0, maxFaces: Int = 4) throws(FaceError) -> [Detection] {
        var boxes = [cvis_face_box](repeating: cvis_face_box(), count: maxFaces)
        var points = [Float](repeating: .nan, count: 10 * maxFaces)
        var status = CVIS_OK
        let n = cvis_face_detect_points(pointer, image.view, Int32(minSize), &boxes, &points, Int32(maxFaces), &status)
        guard n >= 0 else { throw .native(String(cString: cvis_last_error())) }
        return boxes.prefix(Int(n)).enumerated().map { i, b in
            let p = Array(points[(10 * i)..<(10 * i + 10)])
            return Detection(box: FaceBox(x: Double(b.x), y: Double(b.y), width: Double(b.width), height: Double(b.height)),
                             score: Double(b.score), points: p.allSatisfy(\.isFinite) ? p : nil)
        }
    }

    /// The passive detector's probability that `box` shows a real face (the two networks'
    /// softmax averaged, as upstream), or nil without the models or for a box it cannot crop.
    public func realProbability(_ image: ImageRef, box: FaceBox) -> AntispoofReading? {
        guard let spoof else { return nil }
        var out = (Float(0), Float(0), Float(0))
        let b = cvis_face_box(x: Float(box.x), y: Float(box.y), width: Float(box.width), height: Float(box.height), score: 1)
        let status = withUnsafeMutableBytes(of: &out) { raw in
            cvis_antispoof_score(spoof, image.view, b, raw.baseAddress!.assumingMemoryBound(to: Float.self))
        }
        guard status == CVIS_OK else { return nil }
        return AntispoofReading(real: Double(out.0), v2: Double(out.1), v1se: Double(out.2))
    }

    /// The five points the second network is aligned on: YuNet's own keypoints of the face in
    /// `box` (`keypoints(_:box:)`) when there is a box and the detector gives them, else the ones
    /// derived from the 68 landmarks (HOG detector, no face found there). YuNet's points lift the
    /// second network alone on LFW from 98.57 to 98.95 % and the fused score past the issue's
    /// 99.45 % (Docs/face.md "Two networks"); `detector` says which were used.
    public func secondPoints(_ image: ImageRef, landmarks: Landmarks, box: FaceBox?) throws(FaceError) -> (points: [Float], detector: Bool) {
        if let box, let five = try keypoints(image, box: box) { return (five, true) }
        var points = [Float](repeating: 0, count: 10)
        guard cvis_recognizer_points(landmarks.flat, &points) == CVIS_OK else { throw .native(String(cString: cvis_last_error())) }
        return (points, false)
    }

    /// The second network's unit embedding (MobileFaceNet, ArcFace loss, 128-d) of the face with
    /// these 68 landmarks in `box`, aligned on the ArcFace five points (`secondPoints`: the
    /// detector's keypoints of the face in `box`, else the 68-point ones); `mirrored` also embeds
    /// the mirror (twice the cost: stored templates only). Nil without the model.
    public func secondEmbedding(_ image: ImageRef, landmarks: Landmarks, box: FaceBox? = nil, mirrored: Bool) throws(FaceError) -> [Float]? {
        guard let recognizer else { return nil }
        let points = try secondPoints(image, landmarks: landmarks, box: box).points
        var out = [Float](repeating: 0, count: 128)
        guard cvis_recognizer_embed(recognizer, image.view, points, mirrored ? 1 : 0, &out, nil) == CVIS_OK
        else { throw .native(String(cString: cvis_last_error())) }
        return out
    }

    /// The detector's five keypoints of the face in `box` (`cvis_face_keypoints`: YuNet on a crop
    /// around the box, ~3 ms), in `Detection.points` order; nil with the HOG detector or when the
    /// detector finds no face there.
    public func keypoints(_ image: ImageRef, box: FaceBox) throws(FaceError) -> [Float]? {
        var out = [Float](repeating: 0, count: 10)
        var status = CVIS_OK
        let b = cvis_face_box(x: Float(box.x), y: Float(box.y), width: Float(box.width), height: Float(box.height), score: 1)
        let found = cvis_face_keypoints(pointer, image.view, b, &out, &status)
        guard found >= 0 else { throw .native(String(cString: cvis_last_error())) }
        return found == 1 ? out : nil
    }

    /// For evaluation: the second network's aligned 112×112 BGR chip of the face (what it sees).
    public func secondChip(_ image: ImageRef, landmarks: Landmarks) throws(FaceError) -> [UInt8]? {
        guard let recognizer else { return nil }
        var points = [Float](repeating: 0, count: 10)
        var out = [Float](repeating: 0, count: 128)
        var chip = [UInt8](repeating: 0, count: 112 * 112 * 3)
        guard cvis_recognizer_points(landmarks.flat, &points) == CVIS_OK,
              cvis_recognizer_embed(recognizer, image.view, points, 0, &out, &chip) == CVIS_OK
        else { throw .native(String(cString: cvis_last_error())) }
        return chip
    }

    /// For evaluation: the second network's raw outputs of the chip and of its mirror (256 floats).
    public func secondDescriptors(_ image: ImageRef, landmarks: Landmarks) throws(FaceError) -> [Float]? {
        var points = [Float](repeating: 0, count: 10)
        guard cvis_recognizer_points(landmarks.flat, &points) == CVIS_OK else { throw .native(String(cString: cvis_last_error())) }
        return try secondDescriptors(image, points: points)
    }

    /// For evaluation: the same, aligned on five given points (as `Detection.points` orders them).
    public func secondDescriptors(_ image: ImageRef, points: [Float]) throws(FaceError) -> [Float]? {
        guard let recognizer else { return nil }
        guard points.count == 10 else { throw .native("five points are 10 numbers") }
        var out = [Float](repeating: 0, count: 256)
        guard cvis_recognizer_raw(recognizer, image.view, points, &out) == CVIS_OK
        else { throw .native(String(cString: cvis_last_error())) }
        return out
    }

    public func landmarks(_ image: ImageRef, box: FaceBox) throws(FaceError) -> Landmarks {
        var out = [Float](repeating: 0, count: 136)
        let b = cvis_face_box(x: Float(box.x), y: Float(box.y), width: Float(box.width), height: Float(box.height), score: 1)
        guard cvis_face_landmarks(pointer, image.view, b, &out) == CVIS_OK else {
            throw .native(String(cString: cvis_last_error()))
        }
        return Landmarks(flat: out)
    }

    public static func pose(_ landmarks: Landmarks, width: Int, height: Int) -> HeadPose {
        var out = [Float](repeating: 0, count: 3)
        guard cvis_face_pose(landmarks.flat, Int32(width), Int32(height), &out) == CVIS_OK else { return .frontal }
        return HeadPose(yaw: Double(out[0]), pitch: Double(out[1]), roll: Double(out[2]))
    }

    public static func measure(_ image: ImageRef, box: FaceBox) -> FaceQuality.Measures {
        var m = cvis_face_measures()
        let b = cvis_face_box(x: Float(box.x), y: Float(box.y), width: Float(box.width), height: Float(box.height), score: 1)
        _ = cvis_face_measure(image.view, b, &m)
        return .init(brightness: Double(m.brightness), contrast: Double(m.contrast), sharpness: Double(m.sharpness))
    }

    public func embed(_ image: ImageRef, landmarks: Landmarks, views: EmbeddingViews = .mirrored) throws(FaceError) -> [Float] {
        var out = [Float](repeating: 0, count: 128)
        guard cvis_face_embed(pointer, image.view, landmarks.flat, views.rawValue, &out) == CVIS_OK else {
            throw .native(String(cString: cvis_last_error()))
        }
        return out
    }

    /// For evaluation: the raw descriptor of each of the first `views` chips of the view table (see
    /// `cvis_face_embed_views`), 128 floats per chip, not normalised.
    public func descriptors(_ image: ImageRef, landmarks: Landmarks, alignment: Int32 = 0, views: Int) throws(FaceError) -> [Float] {
        var out = [Float](repeating: 0, count: 128 * views)
        guard cvis_face_embed_views(pointer, image.view, landmarks.flat, alignment, Int32(views), &out) == CVIS_OK else {
            throw .native(String(cString: cvis_last_error()))
        }
        return out
    }
}

/// Which aligned chips an embedding averages: more views, steadier descriptors, more cost.
public enum EmbeddingViews: Int32, Sendable, CaseIterable {
    /// The chip alone (one network pass).
    case single = 0
    /// The chip and its mirror (two passes).
    case mirrored = 1
    /// The chip, its mirror and six fixed jitters (eight passes): what enrolment and uploaded
    /// images use; +1 to 2 points of TAR at FAR 1e-4…1e-5 on LFW (Docs/face.md).
    case jittered = 2
}

/// Borrowed pixels: BGR (3 channels) or grey (1), packed rows. Valid while its owner lives.
public struct ImageRef {
    public let pixels: UnsafePointer<UInt8>
    public let width: Int
    public let height: Int
    public let channels: Int

    public init(pixels: UnsafePointer<UInt8>, width: Int, height: Int, channels: Int) {
        self.pixels = pixels
        self.width = width
        self.height = height
        self.channels = channels
    }

    var view: cvis_image_view { FaceEngine.view(pixels, width, height, channels) }
}
