import BiometricCamera
import BiometricCore
import BiometricFace
import BiometricProtocol
import BiometricStore
import Crypto
import Dispatch
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

    /// Starts loading if the required models are present (no-op otherwise): called at start, before
    /// the first call is read, so that a socket-activated daemon loads while its first client's
    /// request waits in the socket.
    func preload() {
        guard enabled, catalog.status.missing.isEmpty else { return }
        catalog.claim(Self.loadedNames(secondNetwork))
        _ = loadTask()
    }

    /// The model files the pipeline loads (and checks itself, on the bytes it parses).
    static func loadedNames(_ second: SecondNetworkChoice) -> [String] {
        var names = [FaceModels.landmarkName, FaceModels.shape5Name, FaceModels.resnetName, FaceModels.yunetName,
                     FaceModels.AntispoofFiles.v2Name, FaceModels.AntispoofFiles.v1seName]
        if case .auto = second { names.append(FaceModels.recognizerName) }
        return names
    }

    /// When the models were ready (monotonic ns; nil while loading): the start-up split in the log.
    private let readyAt = Shared<UInt64?>(nil)
    var modelsReadyNs: UInt64? { readyAt.value.withLock { $0 } }

    private func loadTask() -> Task<FacePipeline, any Error> {
        loading.withLock { task in
            if let task { return task }
            let new = Task.detached { [catalog, pool, logger, secondNetwork, readyAt] () throws -> FacePipeline in
                let started = monotonicNanoseconds()
                func missing(_ name: String) -> RPCError {
                    let state = catalog.status.corrupt.contains(name) ? "fails its checksum" : "is missing"
                    return RPCError.app(.notInitialized, "model \(name) \(state)",
                                        hint: "install the models with scripts/setup.sh (searched \(catalog.folders.joined(separator: ", ")))",
                                        details: ["model": .string(name)])
                }
                for name in [FaceModels.landmarkName, FaceModels.shape5Name, FaceModels.resnetName] where catalog.foundPath(of: name) == nil {
                    throw missing(name)
                }
                // The required files are mapped and their sha256 checked on the loading thread that
                // parses them (the very bytes checked are parsed), and released right after: the
                // ResNet and 5-point model on one thread, the rest on two others.
                let failed = Shared<String?>(nil)
                func source(_ name: String) -> FaceModels.Source {
                    { () throws(FaceError) in
                        guard let data = catalog.verifiedData(of: name) else {
                            failed.value.withLock { $0 = $0 ?? name }
                            throw .modelMissing("model \(name) fails its checksum or cannot be read")
                        }
                        return FaceModels.Bytes(name: name, data: data)
                    }
                }
                // Optional files (small) are checked first: one that fails is left out, as if absent.
                func optional(_ name: String) -> FaceModels.Source? {
                    guard catalog.foundPath(of: name) != nil else { return nil }
                    guard let data = catalog.verifiedData(of: name) else {
                        logger.warning("face: \(name) fails its checksum; left out")
                        return nil
                    }
                    let bytes = FaceModels.Bytes(name: name, data: data)
                    return { () throws(FaceError) in bytes }
                }
                let yunet = optional(FaceModels.yunetName)
                // Optional: without them passive liveness answers not_initialized (FaceMethods).
                let antispoof = optional(FaceModels.AntispoofFiles.v2Name).flatMap { v2 in
                    optional(FaceModels.AntispoofFiles.v1seName).map { (v2: v2, v1se: $0) }
                }
                var recognizer: FaceModels.Source? = nil
                switch secondNetwork {
                case .off: break
                case .auto: recognizer = optional(FaceModels.recognizerName)
                case .path(let path):
                    if let data = Self.customRecognizer(path, logger: logger) {
                        let bytes = FaceModels.Bytes(name: FaceModels.recognizerName, data: data)
                        recognizer = { () throws(FaceError) in bytes }
                    }
                }
                let checkedNs = monotonicNanoseconds()
                do {
                    let models: FaceModels
                    do {
                        models = try FaceModels(yunet: yunet, landmarks: source(FaceModels.landmarkName), shape5: source(FaceModels.shape5Name),
                                                resnet: source(FaceModels.resnetName), antispoof: antispoof, recognizer: recognizer)
                    } catch where recognizer != nil && failed.value.withLock({ $0 }) == nil {
                        // The second network is optional: without it face runs on dlib alone (v1).
                        logger.warning("face: the models with the second network do not load (\(error)); trying without it")
                        models = try FaceModels(yunet: yunet, landmarks: source(FaceModels.landmarkName), shape5: source(FaceModels.shape5Name),
                                                resnet: source(FaceModels.resnetName), antispoof: antispoof)
                    }
                    let parsedNs = monotonicNanoseconds()
                    // One engine made and run once now, so the first frame of the first session does
                    // not pay for building the networks' buffers and their first passes.
                    models.warmUp()
                    let ready = monotonicNanoseconds()
                    readyAt.value.withLock { $0 = ready }
                    func ms(_ a: UInt64, _ b: UInt64) -> String { String(format: "%.0f", Double(b - a) / 1e6) }
                    logger.info("face models loaded in \(ms(started, ready)) ms (optional files checked \(ms(started, checkedNs)) ms, the rest checked and parsed \(ms(checkedNs, parsedNs)) ms, first engine \(ms(parsedNs, ready)) ms; detector: \(models.usesYuNet ? "YuNet" : "dlib HOG"); landmarks: PFLD; passive liveness: \(models.hasAntispoof ? "MiniFASNet" : "not installed"); second network: \(models.hasRecognizer ? "MobileFaceNet-ArcFace, v2 templates" : "none, v1 templates"))")
                    return FacePipeline(models: models, pool: pool)
                } catch {
                    if let name = failed.value.withLock({ $0 }) { throw missing(name) }
                    throw RPCError.app(.notInitialized, "\(error)", hint: "reinstall the models with scripts/setup.sh")
                }
            }
            task = new
            return new
        }
    }

    /// `face_second_network = PATH`: the file's bytes when its sha256 is the second network's.
    static func customRecognizer(_ path: String, logger: Logger) -> Data? {
        guard let data = try? Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped) else {
            logger.warning("face_second_network: \(path) cannot be read; running on dlib alone")
            return nil
        }
        guard ModelCatalog.hex(SHA256.hash(data: data)) == ModelFile.pinnedSHA256(FaceModels.recognizerName) else {
            logger.warning("face_second_network: \(path) fails its checksum (not \(FaceModels.recognizerName)); running on dlib alone")
            return nil
        }
        return data
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

    /// not_initialized at once when face is off or a required model file is not installed: a call
    /// then does not open the camera for nothing (a file that is present but fails its checksum or
    /// does not load is found by the load itself).
    func requireModelsInstalled() throws {
        try requireEnabled()
        if let name = catalog.status.missing.first {
            throw RPCError.app(.notInitialized, "model \(name) is missing",
                               hint: "install the models with scripts/setup.sh (searched \(catalog.folders.joined(separator: ", ")))",
                               details: ["model": .string(name)])
        }
    }

    /// For the first face session after start: when the daemon started and when its models were
    /// ready, against the call (the first login after boot, split in the log).
    private let firstSessionLogged = Atomic<Bool>(false)
    let startedNs = monotonicNanoseconds()
    func startupNote(call timing: FaceSessionTiming) -> String {
        guard !firstSessionLogged.exchange(true, ordering: .relaxed) else { return "" }
        func ms(_ a: UInt64, _ b: UInt64?) -> String { b.map { String(Int((Double($0) - Double(a)) / 1e6)) } ?? "-" }
        return "; first face session since start: the call came \(ms(startedNs, timing.called)) ms after start, the models were ready \(ms(startedNs, modelsReadyNs)) ms after start"
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

/// A value shared with background tasks and closures (a Mutex cannot be captured by them itself).
final class Shared<Value: Sendable>: Sendable {
    let value: Mutex<Value>
    init(_ initial: Value) { value = Mutex(initial) }
}
