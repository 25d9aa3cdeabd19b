import BiometricCamera
import BiometricFace
import BiometricProtocol
import BiometricStore
import Foundation
import Logging
import Synchronization

/// Owns the face pipeline: loads the models once (in the background at start, so the first
/// verify does not pay 1–2 s), keeps the 1:N gallery, and maps face errors to SPEC §6.
final class FaceService: Sendable {
    private let catalog: ModelCatalog
    private let threads: Int
    private let logger: Logger
    private let loading = Mutex<Task<FacePipeline, any Error>?>(nil)
    private let galleryCache = Mutex<FaceGallery?>(nil)
    let calibration = FaceCalibration.lfw

    init(catalog: ModelCatalog, threads: Int, logger: Logger) {
        self.catalog = catalog
        self.threads = threads
        self.logger = logger
    }

    /// Starts loading if the required models are present (no-op otherwise).
    func preload() {
        guard catalog.status.missing.isEmpty else { return }
        _ = loadTask()
    }

    private func loadTask() -> Task<FacePipeline, any Error> {
        loading.withLock { task in
            if let task { return task }
            let new = Task.detached { [catalog, threads, logger] () throws -> FacePipeline in
                let started = monotonicNanoseconds()
                func require(_ name: String) throws -> String {
                    guard let path = catalog.path(of: name) else {
                        let state = catalog.status.corrupt.contains(name) ? "fails its checksum" : "is missing"
                        throw RPCError.app(.notInitialized, "model \(name) \(state)",
                                           hint: "install the models with scripts/setup.sh (searched \(catalog.folders.joined(separator: ", ")))",
                                           details: ["model": .string(name)])
                    }
                    return path
                }
                let shape = try require("shape_predictor_68_face_landmarks.dat")
                let resnet = try require("dlib_face_recognition_resnet_model_v1.dat")
                let yunet = catalog.path(of: "face_detection_yunet_2023mar.onnx")
                do {
                    let models = try FaceModels(shape68: shape, resnet: resnet, yunet: yunet)
                    logger.info("face models loaded in \(String(format: "%.0f", Double(monotonicNanoseconds() - started) / 1e6)) ms (detector: \(models.usesYuNet ? "YuNet" : "dlib HOG"))")
                    return FacePipeline(models: models, threads: threads)
                } catch {
                    throw RPCError.app(.notInitialized, "\(error)", hint: "reinstall the models with scripts/setup.sh")
                }
            }
            task = new
            return new
        }
    }

    /// The pipeline, or not_initialized naming the missing model.
    func pipeline() async throws -> FacePipeline {
        let task = loadTask()
        do {
            return try await task.value
        } catch {
            // Let a later call retry (the models may have been installed since).
            loading.withLock { if $0 == task { $0 = nil } }
            throw error
        }
    }

    // MARK: Templates

    func templates(_ store: TemplateStore, user: String) throws -> [FaceTemplate] {
        try store.payloads(user: user, modality: .face).compactMap { try? FaceTemplate(data: $0.1) }
    }

    func gallery(_ store: TemplateStore) throws -> FaceGallery {
        if let cached = galleryCache.withLock({ $0 }) { return cached }
        let items = try store.payloads(user: nil, modality: .face).compactMap { info, data -> (FaceGallery.Entry, FaceTemplate)? in
            guard let t = try? FaceTemplate(data: data) else { return nil }
            return (FaceGallery.Entry(user: info.user, templateID: info.id), t)
        }
        let gallery = FaceGallery(items)
        galleryCache.withLock { $0 = gallery }
        return gallery
    }

    /// Call after any change to face templates.
    func invalidateGallery() { galleryCache.withLock { $0 = nil } }

    /// Best score of `probe` against `references`.
    func score(_ probe: FaceTemplate, against references: [FaceTemplate]) -> Double {
        let best = references.map { probe.distance(to: $0) }.min() ?? 2
        return calibration.score(distance: best)
    }
}

/// Rate-limits face.frame events to ~15 per second; changes of phase always go out.
struct EventThrottle {
    private var lastNs: UInt64 = 0
    private var lastKey = ""
    let intervalNs: UInt64 = 66_000_000

    mutating func allow(now: UInt64, key: String) -> Bool {
        if key != lastKey || now - lastNs >= intervalNs {
            lastNs = now
            lastKey = key
            return true
        }
        return false
    }
}

extension FaceObservation {
    /// The SPEC §5 face.frame fields.
    func eventFields(livenessAction: String? = nil, livenessScore: Int = 0, countdown: Int? = nil, extraction: String? = nil,
                     captured: Int = 0, needed: Int = 0, extraFeedback: [String] = []) -> [String: JSONValue]
    {
        var fields: [String: JSONValue] = [
            "box": box.map { .object(["x": .int(Int64($0.x)), "y": .int(Int64($0.y)), "width": .int(Int64($0.width)), "height": .int(Int64($0.height))]) } ?? .null,
            "yaw": pose.map { .double(($0.yaw * 10).rounded() / 10) } ?? .null,
            "pitch": pose.map { .double(($0.pitch * 10).rounded() / 10) } ?? .null,
            "roll": pose.map { .double(($0.roll * 10).rounded() / 10) } ?? .null,
            "quality": .int(Int64(qualityScore)),
            "brightness": measures.map { .double($0.brightness.rounded()) } ?? .null,
            "sharpness": measures.map { .double($0.sharpness.rounded()) } ?? .null,
            "feedback": .array((feedback + extraFeedback).map { .string($0) }),
            "liveness_action": livenessAction.map { .string($0) } ?? .null,
            "liveness_score": .int(Int64(livenessScore)),
            "countdown_s": countdown.map { .int(Int64($0)) } ?? .null,
            "extraction": extraction.map { .string($0) } ?? .null,
            "frames_captured": .int(Int64(captured)),
            "frames_needed": .int(Int64(needed)),
        ]
        if faceCount > 1 { fields["faces"] = .int(Int64(faceCount)) }
        return fields
    }
}
