import CFaceVision
import CImaging
import COpenBLAS
import Dispatch
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
    private let idle = Mutex<[UInt]>([])  // idle engines, as addresses
    /// One instance of each of these networks for all engines, used under its lock (`SharedNet`):
    /// the passive detector runs on a session's first frames, the second network on an attempt's
    /// three; a copy per analysis thread cost their weights and buffers twice.
    private let spoof: SharedNet?
    private let recognizer: SharedNet?
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

    /// The face models' files. `landmarks` is the PFLD network (`landmarks_68_pfld.onnx`, what the
    /// daemon runs) or, for comparison in the benches, dlib's `shape_predictor_68_face_landmarks.dat`
    /// (told apart by the `.dat` suffix). `shape5` (dlib's 5-point model) aligns the ResNet's chips.
    public struct Files: Sendable {
        public var landmarks: String
        public var shape5: String
        public var resnet: String
        public var yunet: String?
        public var antispoof: AntispoofFiles?
        public var recognizer: String?

        public init(landmarks: String, shape5: String, resnet: String, yunet: String?, antispoof: AntispoofFiles? = nil,
                    recognizer: String? = nil) {
            self.landmarks = landmarks
            self.shape5 = shape5
            self.resnet = resnet
            self.yunet = yunet
            self.antispoof = antispoof
            self.recognizer = recognizer
        }

        /// The shipped files in `folder` (`antispoof`, `recognizer`: those files there too).
        public init(folder: String, antispoof: Bool = false, recognizer: Bool = false, yunet: Bool = true) {
            self.init(landmarks: folder + "/" + FaceModels.landmarkName, shape5: folder + "/" + FaceModels.shape5Name,
                      resnet: folder + "/" + FaceModels.resnetName, yunet: yunet ? folder + "/" + FaceModels.yunetName : nil,
                      antispoof: antispoof ? AntispoofFiles(folder: folder) : nil,
                      recognizer: recognizer ? folder + "/" + FaceModels.recognizerName : nil)
        }
    }

    public static let landmarkName = "landmarks_68_pfld.onnx"
    public static let shape5Name = "shape_predictor_5_face_landmarks.dat"
    public static let resnetName = "dlib_face_recognition_resnet_model_v1.dat"
    public static let yunetName = "face_detection_yunet_2023mar.onnx"
    /// dlib's 68-point predictor: no longer loaded by the daemon (the benches compare with it).
    public static let dlib68Name = "shape_predictor_68_face_landmarks.dat"

    /// A model file's bytes (read or mapped by the caller, who may have checked their sha256).
    public struct Bytes: Sendable {
        public var name: String
        public var data: Data
        public init(name: String, data: Data) {
            self.name = name
            self.data = data
        }

        /// The file at `path`, mapped.
        public init(path: String) throws(FaceError) {
            guard let data = try? Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped), !data.isEmpty else {
                throw .modelMissing("\(path) cannot be read")
            }
            self.init(name: (path as NSString).lastPathComponent, data: data)
        }
    }

    /// Where a model file's bytes come from: called on the loading thread that parses them, and
    /// released right after, so the files are not all held at once (the load's peak RSS).
    public typealias Source = @Sendable () throws(FaceError) -> Bytes

    /// Loads from files (benches, tests); see `Files`.
    public convenience init(_ files: Files) throws(FaceError) {
        func source(_ path: String) -> Source { { () throws(FaceError) in try Bytes(path: path) } }
        try self.init(yunet: files.yunet.map(source), landmarks: source(files.landmarks), shape5: source(files.shape5),
                      resnet: source(files.resnet), antispoof: files.antispoof.map { (source($0.v2), source($0.v1se)) },
                      recognizer: files.recognizer.map(source))
    }

    /// Loads from files: `Files(landmarks:shape5:resnet:yunet:antispoof:recognizer:)`.
    public convenience init(landmarks: String, shape5: String, resnet: String, yunet: String?, antispoof: AntispoofFiles? = nil,
                            recognizer: String? = nil) throws(FaceError) {
        try self.init(Files(landmarks: landmarks, shape5: shape5, resnet: resnet, yunet: yunet, antispoof: antispoof, recognizer: recognizer))
    }

    /// Loads the models, each file's bytes asked for (`Source`) on the thread that parses them;
    /// `yunet` nil selects the HOG detector; `antispoof` nil leaves passive liveness out (blink and
    /// challenge do not need it); `recognizer` nil leaves the second network out (templates are
    /// then dlib-only, v1). Three threads: dlib's ResNet and 5-point model (the largest files);
    /// YuNet and the landmark network; the anti-spoofing and second networks.
    public init(yunet: Source?, landmarks: Source, shape5: Source, resnet: Source, antispoof: (v2: Source, v1se: Source)? = nil,
                recognizer: Source? = nil) throws(FaceError) {
        let loaded = Mutex<(face: UInt, recognition: UInt, spoof: UInt, second: UInt, errors: [String])>((0, 0, 0, 0, []))
        DispatchQueue.concurrentPerform(iterations: 3) { part in
            var status = CVIS_OK
            do throws(FaceError) {
                switch part {
                case 0:
                    let b = [try shape5(), try resnet()]
                    guard let r = Self.withModelBytes(b, { cvis_face_recognition_load($0[0], $0[1], &status) }) else {
                        throw .modelMissing("face recognition models do not load: \(String(cString: cvis_last_error()))")
                    }
                    loaded.withLock { $0.recognition = UInt(bitPattern: r) }
                case 1:
                    let landmarkBytes = try landmarks()
                    let format = landmarkBytes.name.hasSuffix(".dat") ? Int32(CVIS_LANDMARKS_DLIB68) : Int32(CVIS_LANDMARKS_PFLD)
                    let b = [try yunet?(), landmarkBytes]
                    guard let m = Self.withModelBytes(b, { cvis_face_models_load($0[0], $0[1], format, &status) }) else {
                        throw .modelMissing("face models do not load: \(String(cString: cvis_last_error()))")
                    }
                    loaded.withLock { $0.face = UInt(bitPattern: m) }
                default:
                    if let antispoof {
                        let b = [try antispoof.v2(), try antispoof.v1se()]
                        guard let m = Self.withModelBytes(b, { cvis_antispoof_models_load($0[0], $0[1], &status) }) else {
                            throw .modelMissing("anti-spoofing models do not load: \(String(cString: cvis_last_error()))")
                        }
                        loaded.withLock { $0.spoof = UInt(bitPattern: m) }
                    }
                    if let recognizer {
                        let b = [try recognizer()]
                        guard let m = Self.withModelBytes(b, { cvis_recognizer_models_load($0[0], &status) }) else {
                            throw .modelMissing("the recognizer model does not load: \(String(cString: cvis_last_error()))")
                        }
                        loaded.withLock { $0.second = UInt(bitPattern: m) }
                    }
                }
            } catch {
                loaded.withLock { $0.errors.append(error.description) }
            }
        }
        let result = loaded.withLock { $0 }
        guard result.errors.isEmpty, let m = OpaquePointer(bitPattern: result.face) else {
            if let p = OpaquePointer(bitPattern: result.face) { cvis_face_models_free(p) }
            if let p = OpaquePointer(bitPattern: result.recognition) { cvis_face_recognition_free(p) }
            if let p = OpaquePointer(bitPattern: result.spoof) { cvis_antispoof_models_free(p) }
            if let p = OpaquePointer(bitPattern: result.second) { cvis_recognizer_models_free(p) }
            throw .modelMissing(result.errors.joined(separator: "; "))
        }
        cvis_face_models_attach_recognition(m, OpaquePointer(bitPattern: result.recognition))
        models = m
        spoofModels = OpaquePointer(bitPattern: result.spoof)
        recognizerModels = OpaquePointer(bitPattern: result.second)
        usesYuNet = cvis_face_models_has_yunet(m) != 0
        var status = CVIS_OK
        let s = spoofModels.flatMap { cvis_antispoof_create($0, &status) }
        let r = recognizerModels.flatMap { cvis_recognizer_create($0, &status) }
        self.spoof = s.map { SharedNet($0, free: cvis_antispoof_free) }
        self.recognizer = r.map { SharedNet($0, free: cvis_recognizer_free) }
        if (spoofModels != nil && s == nil) || (recognizerModels != nil && r == nil) {
            throw .native(String(cString: cvis_last_error()))
        }
    }

    /// Runs `body` with a `cvis_model_bytes` for each of `items` (nil items: NULL), valid inside.
    static func withModelBytes<T>(_ items: [Bytes?], _ body: ([UnsafePointer<cvis_model_bytes>?]) -> T) -> T {
        func nest(_ k: Int, _ done: [UnsafePointer<cvis_model_bytes>?]) -> T {
            guard k < items.count else { return body(done) }
            guard let item = items[k] else { return nest(k + 1, done + [nil]) }
            return item.data.withUnsafeBytes { raw in
                item.name.withCString { name in
                    var b = cvis_model_bytes(data: raw.bindMemory(to: UInt8.self).baseAddress, length: raw.count, name: name)
                    return withUnsafePointer(to: &b) { nest(k + 1, done + [$0]) }
                }
            }
        }
        return nest(0, [])
    }

    deinit {
        idle.withLock { list in
            for item in list { cvis_face_engine_free(OpaquePointer(bitPattern: item)) }
        }
        spoof?.release()
        recognizer?.release()
        cvis_face_models_free(models)
        if let spoofModels { cvis_antispoof_models_free(spoofModels) }
        if let recognizerModels { cvis_recognizer_models_free(recognizerModels) }
    }

    /// One thread per native call (OpenCV's and OpenBLAS's own worker pools off): the analysis pool
    /// already runs one job per core, and pipelines a session's embedding beside its next frame;
    /// the libraries' workers on top only oversubscribe the cores. Measured on the live clips under
    /// load: 26 % less CPU per verify, the slowest of 16 at 1.1 s instead of 3.6 s.
    public static func useOneNativeThreadPerCall() {
        cvis_set_threads(1)
        openblas_set_num_threads(1)
    }

    /// Builds one engine and runs each network once on a plain grey picture, so that the first
    /// frame of the first session does not pay for building the networks and their first passes
    /// (OpenCV's dnn allocates its buffers on the first forward pass, dlib's ResNet its layers').
    public func warmUp() {
        let w = 320, h = 240
        let pixels = [UInt8](repeating: 128, count: w * h * 3)
        _ = try? withEngine { engine in
            pixels.withUnsafeBufferPointer { p in
                let image = ImageRef(pixels: p.baseAddress!, width: w, height: h, channels: 3)
                _ = try? engine.detect(image)
                let box = FaceBox(x: 100, y: 60, width: 120, height: 130)
                guard let landmarks = try? engine.landmarks(image, box: box) else { return }
                _ = engine.realProbability(image, box: box)
                _ = try? engine.embed(image, landmarks: landmarks, views: .mirrored)
                _ = try? engine.secondEmbedding(image, landmarks: landmarks, box: box, mirrored: false)
            }
        }
    }

    /// Runs `body` with an engine no other thread is using.
    public func withEngine<T>(_ body: (FaceEngine) throws -> T) throws -> T {
        let pointer: OpaquePointer
        if let reused = idle.withLock({ $0.popLast() }) {
            pointer = OpaquePointer(bitPattern: reused)!
        } else {
            var status = CVIS_OK
            guard let p = cvis_face_engine_create(models, &status) else {
                throw FaceError.native(String(cString: cvis_last_error()))
            }
            pointer = p
        }
        defer { idle.withLock { $0.append(UInt(bitPattern: pointer)) } }
        return try body(FaceEngine(pointer: pointer, spoof: spoof, recognizer: recognizer))
    }
}

/// A native network instance shared by the engines, one caller at a time (the networks keep
/// per-call buffers).
final class SharedNet: @unchecked Sendable {
    // Used only under `lock`; freed once, by the models' deinit.
    private let pointer: OpaquePointer
    private let free: (OpaquePointer) -> Void
    private let lock = NSLock()

    init(_ pointer: OpaquePointer, free: @escaping (OpaquePointer) -> Void) {
        self.pointer = pointer
        self.free = free
    }

    func with<T>(_ body: (OpaquePointer) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(pointer)
    }

    func release() { free(pointer) }
}

/// One engine (not thread-safe): the calls of the native pipeline.
public struct FaceEngine {
    let pointer: OpaquePointer
    /// The anti-spoofing networks, when the models are loaded (shared, locked per call).
    let spoof: SharedNet?
    /// The second face network, when its model is loaded (shared, locked per call).
    let recognizer: SharedNet?

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
            spoof.with { cvis_antispoof_score($0, image.view, b, raw.baseAddress!.assumingMemoryBound(to: Float.self)) }
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
        guard recognizer.with({ cvis_recognizer_embed($0, image.view, points, mirrored ? 1 : 0, &out, nil) }) == CVIS_OK
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
              recognizer.with({ cvis_recognizer_embed($0, image.view, points, 0, &out, &chip) }) == CVIS_OK
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
        guard recognizer.with({ cvis_recognizer_raw($0, image.view, points, &out) }) == CVIS_OK
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
