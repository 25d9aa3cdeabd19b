import BiometricCamera
import BiometricCore
import BiometricFace
import BiometricProtocol
import BiometricStore
import Foundation
import Logging
import Synchronization

/// Owns the face pipeline: loads the models once (in the background at start, so the first
/// verify does not pay 1–2 s) and maps face errors to SPEC §6. The gallery is the template
/// repository's.
final class FaceService: Sendable {
    private let catalog: ModelCatalog
    private let threads: Int
    private let pool: AnalysisPool
    private let logger: Logger
    private let loading = Mutex<Task<FacePipeline, any Error>?>(nil)
    let calibration = FaceCalibration.lfw

    /// False when biometricd.conf's `modalities` leaves face out: nothing is loaded.
    let enabled: Bool

    /// `face_second_network`: where the second network comes from (or off).
    private let secondNetwork: SecondNetworkChoice

    init(catalog: ModelCatalog, pool: AnalysisPool, threads: Int, enabled: Bool = true, secondNetwork: SecondNetworkChoice = .auto,
         logger: Logger) {
        self.secondNetwork = secondNetwork
        self.pool = pool
        self.catalog = catalog
        self.enabled = enabled
        self.threads = threads
        self.logger = logger
    }

    /// Starts loading if the required models are present (no-op otherwise).
    func preload() {
        guard enabled, catalog.status.missing.isEmpty else { return }
        _ = loadTask()
    }

    private func loadTask() -> Task<FacePipeline, any Error> {
        loading.withLock { task in
            if let task { return task }
            let new = Task.detached { [catalog, pool, logger, secondNetwork] () throws -> FacePipeline in
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
                // Optional: without them passive liveness answers not_initialized (FaceMethods).
                let antispoof = catalog.path(of: FaceModels.AntispoofFiles.v2Name).flatMap { v2 in
                    catalog.path(of: FaceModels.AntispoofFiles.v1seName).map { FaceModels.AntispoofFiles(v2: v2, v1se: $0) }
                }
                let recognizer = Self.recognizerPath(secondNetwork, catalog: catalog, logger: logger)
                do {
                    let models: FaceModels
                    do {
                        models = try FaceModels(shape68: shape, resnet: resnet, yunet: yunet, antispoof: antispoof, recognizer: recognizer)
                    } catch where recognizer != nil {
                        // The second network is optional: without it face runs on dlib alone (v1).
                        logger.warning("face: the second network \(recognizer!) does not load (\(error)); running on dlib alone")
                        models = try FaceModels(shape68: shape, resnet: resnet, yunet: yunet, antispoof: antispoof)
                    }
                    logger.info("face models loaded in \(String(format: "%.0f", Double(monotonicNanoseconds() - started) / 1e6)) ms (detector: \(models.usesYuNet ? "YuNet" : "dlib HOG"); passive liveness: \(models.hasAntispoof ? "MiniFASNet" : "not installed"); second network: \(models.hasRecognizer ? "MobileFaceNet-ArcFace, v2 templates" : "none, v1 templates"))")
                    return FacePipeline(models: models, pool: pool)
                } catch {
                    throw RPCError.app(.notInitialized, "\(error)", hint: "reinstall the models with scripts/setup.sh")
                }
            }
            task = new
            return new
        }
    }

    /// The second network's file for `choice`, nil when off, not installed or failing its sha256.
    static func recognizerPath(_ choice: SecondNetworkChoice, catalog: ModelCatalog, logger: Logger) -> String? {
        let name = FaceModels.recognizerName
        switch choice {
        case .off:
            return nil
        case .auto:
            let path = catalog.path(of: name)  // waits for the checksums
            if catalog.status.corrupt.contains(name) { logger.warning("face: \(name) fails its checksum; running on dlib alone") }
            return path
        case .path(let path):
            guard let sum = ModelCatalog.sha256(of: path) else {
                logger.warning("face_second_network: \(path) cannot be read; running on dlib alone")
                return nil
            }
            guard sum == ModelFile.pinnedSHA256(name) else {
                logger.warning("face_second_network: \(path) fails its checksum (not \(name)); running on dlib alone")
                return nil
            }
            return path
        }
    }

    /// The pipeline, or not_initialized naming the missing model.
    func pipeline() async throws -> FacePipeline {
        try requireEnabled()
        let task = loadTask()
        do {
            return try await task.value
        } catch {
            // Let a later call retry (the models may have been installed since).
            loading.withLock { if $0 == task { $0 = nil } }
            throw error
        }
    }

    func requireEnabled() throws {
        guard enabled else {
            throw RPCError.app(.notInitialized, "face is not enabled on this machine",
                               hint: "add face to 'modalities' in biometricd.conf", details: ["modality": "face"])
        }
    }

    /// Threads one 1:N scan may use (analysis_threads).
    var searchThreads: Int { max(1, threads) }
}
