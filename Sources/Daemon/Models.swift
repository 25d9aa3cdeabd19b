import BiometricProtocol
import Crypto
import Dispatch
import Foundation
import Synchronization

/// The model files the pipelines load, with their checksums (scripts/models.sha256 holds the same).
public struct ModelFile: Sendable {
    public var name: String
    public var sha256: String
    public var required: Bool
    public var purpose: String

    public static let all: [ModelFile] = [
        ModelFile(name: "dlib_face_recognition_resnet_model_v1.dat",
                  sha256: "55533b28a95800a551ba546ba62fe69625c7e95a7061c338adffead08719da30", required: true,
                  purpose: "face embedding"),
        ModelFile(name: "landmarks_68_pfld.onnx",
                  sha256: "2cb48550d2535bea4b1bba187fc37c407308806f870a022ef5cf8605de7c07e1", required: true,
                  purpose: "face landmarks, pose, blink (PFLD, 68 points)"),
        ModelFile(name: "shape_predictor_5_face_landmarks.dat",
                  sha256: "c4b1e9804792707d3a405c2c16a80a20269e6675021f64a41d30fffafbc41888", required: true,
                  purpose: "face alignment for the embedding"),
        ModelFile(name: "mmod_human_face_detector.dat",
                  sha256: "4cb19393e2fbaf2b1609a9319ad5386618c886a6234ec1b971f3e87c85d87fe6", required: false,
                  purpose: "CNN face detector"),
        ModelFile(name: "face_detection_yunet_2023mar.onnx",
                  sha256: "8f2383e4dd3cfbb4553ea8718107fc0423210dc964f9f4280604804ed2552fa4", required: false,
                  purpose: "fast face detection (YuNet)"),
        ModelFile(name: "MiniFASNetV2.onnx",
                  sha256: "4eed38f0bde33c9b805942a5f25e42ce1161e2bda545254be622be957727794e", required: false,
                  purpose: "passive face liveness (Silent-Face MiniFASNetV2)"),
        ModelFile(name: "MiniFASNetV1SE.onnx",
                  sha256: "d819a69bac6b9ade2a0f4d9b60b618e1260f7bf3ba1fddff6c5d82131cb1083f", required: false,
                  purpose: "passive face liveness (Silent-Face MiniFASNetV1SE)"),
        ModelFile(name: "mobilefacenet_arcface_cv46.onnx",
                  sha256: "99cf7e6f232a3596008c4a27f9acbdea9387be7904210e623f3b872fe474cfb7", required: false,
                  purpose: "second face network, fused with dlib (MobileFaceNet-ArcFace; v2 templates)"),
        ModelFile(name: "leader_cv46.onnx",
                  sha256: "482c78c5af85838edb80f947032d928c7f1bd2f56b1e20c0c1b3fee31ad35749", required: false,
                  purpose: "learned fingerprint minutiae (LEADER, rewritten for OpenCV 4.6; version-3 finger templates)"),
        ModelFile(name: "palm_detection_lite.onnx",
                  sha256: "9d5a29b79cfd0cdffd62014078dcf22eeb4b6db8918c45ce95a26ea97b486170", required: false,
                  purpose: "finger: palm detection (MediaPipe; needed for four-finger capture)"),
        ModelFile(name: "hand_landmark_lite_cv46.onnx",
                  sha256: "2e0d94475bed523621305f4be5d2d01a32188460a66ff73130bc3e2a2d906f3a", required: false,
                  purpose: "finger: 21 hand landmarks (MediaPipe; needed for four-finger capture)"),
    ]

    /// The pinned sha256 of a model file.
    public static func pinnedSHA256(_ name: String) -> String? { all.first { $0.name == name }?.sha256 }
}

/// Finds model files in the configured folders (first match wins) and verifies their checksums.
/// Presence is checked at start. The files the face pipeline loads are checked by the loader on
/// the very bytes it parses (`verifiedData`: mapped once, hashed, handed over), in parallel; the
/// rest are hashed in the background for `daemon.status`. A file that fails its checksum is refused.
public final class ModelCatalog: Sendable {
    private struct State {
        var found: [String: String] = [:]  // name -> path
        var verified: Set<String> = []
        var corrupt: Set<String> = []
        /// Being checked by a loader (`verifiedData`): the background pass leaves them alone.
        var claimed: Set<String> = []
    }
    private let state = Mutex(State())
    public let folders: [String]
    private let verification = DispatchGroup()

    public init(folders: [String]) {
        self.folders = folders
        var found: [String: String] = [:]
        for model in ModelFile.all {
            for folder in folders {
                let path = folder + "/" + model.name
                if FileManager.default.isReadableFile(atPath: path) {
                    found[model.name] = path
                    break
                }
            }
        }
        state.withLock { $0.found = found }
    }

    /// Hashes every found file no loader has claimed, on a background queue.
    public func verifyInBackground() {
        let (found, claimed) = state.withLock { ($0.found, $0.claimed) }
        for model in ModelFile.all where !claimed.contains(model.name) {
            guard let path = found[model.name] else { continue }
            DispatchQueue.global(qos: .utility).async(group: verification) {
                let ok = Self.sha256(of: path) == model.sha256
                self.state.withLock { s in
                    if ok { s.verified.insert(model.name) } else { s.corrupt.insert(model.name) }
                }
            }
        }
    }

    /// Marks `names` as checked by a loader (call before `verifyInBackground`, so no file is
    /// hashed twice at start).
    public func claim(_ names: [String]) {
        state.withLock { $0.claimed.formUnion(names) }
    }

    /// A model's bytes (the file mapped) once their sha256 is the pinned one: the loader parses the
    /// very bytes that were checked. Nil when the file is missing, unreadable or wrong (then
    /// recorded as corrupt, and `status` says so).
    public func verifiedData(of name: String) -> Data? {
        guard let path = state.withLock({ $0.found[name] }), let pinned = ModelFile.pinnedSHA256(name) else { return nil }
        let data = try? Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped)
        let ok = data.map { Self.hex(SHA256.hash(data: $0)) == pinned } ?? false
        state.withLock { s in
            if ok { s.verified.insert(name) } else { s.corrupt.insert(name) }
        }
        return ok ? data : nil
    }

    /// The path a model was found at (verified or not).
    public func foundPath(of name: String) -> String? { state.withLock { $0.found[name] } }

    static func hex(_ digest: SHA256.Digest) -> String { digest.map { String(format: "%02x", $0) }.joined() }

    public func waitForVerification() { verification.wait() }

    /// The path of a verified model, or nil.
    public func path(of name: String) -> String? {
        verification.wait()
        return state.withLock { $0.verified.contains(name) ? $0.found[name] : nil }
    }

    public var status: ModelStatus {
        state.withLock { s in
            ModelStatus(
                loaded: ModelFile.all.map(\.name).filter { s.found[$0] != nil && !s.corrupt.contains($0) },
                missing: ModelFile.all.filter { $0.required && s.found[$0.name] == nil }.map(\.name),
                corrupt: ModelFile.all.map(\.name).filter { s.corrupt.contains($0) },
                folders: folders)
        }
    }

    static func sha256(of path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        var hasher = SHA256()
        while let chunk = try? handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            hasher.update(data: chunk)
        }
        return hex(hasher.finalize())
    }
}
