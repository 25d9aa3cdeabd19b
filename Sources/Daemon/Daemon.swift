import BiometricCamera
import BiometricProtocol
import BiometricStore
import CSystemd
import Dispatch
import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

public let biometricdVersion = "0.1.0"

/// Why the daemon could not start. Each names what to fix; `biometricd` prints it and exits.
public struct StartupError: Error, CustomStringConvertible {
    public let description: String
}

/// The daemon: its services (cameras, store, models, access policy) and its lifecycle
/// (start, READY, watchdog, SIGTERM → cancel sessions, close cameras, flush the store).
public final class Daemon: Sendable {
    public let configuration: DaemonConfiguration
    let logger: Logger
    let cameras: CameraRegistry
    let store: TemplateStore
    let models: ModelCatalog
    let face: FaceService
    let finger: FingerService
    let policy: AccessPolicy
    let auth: AuthService
    let templates: TemplateRepository
    let startedNs = monotonicNanoseconds()
    let activeSessions = Atomic<Int>(0)
    private let server = Mutex<RPCServer?>(nil)
    private let socketActivated = Atomic<Bool>(false)

    public init(configuration: DaemonConfiguration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        policy = AccessPolicy(adminGroup: configuration.adminGroup, loginGroup: configuration.loginGroup)
        do {
            cameras = try CameraRegistry(specs: configuration.cameras, logger: logger)
        } catch {
            throw StartupError(description: "camera: \(error.description)")
        }
        do {
            let key = try TemplateKey.load(stateDirectory: configuration.stateDirectory,
                                           credentialsDirectory: ProcessInfo.processInfo.environment["CREDENTIALS_DIRECTORY"])
            store = try TemplateStore(directory: configuration.stateDirectory, key: key)
        } catch {
            throw StartupError(description: "state folder \(configuration.stateDirectory): \(error)")
        }
        auth = AuthService(store: store, configuration: configuration, logger: logger)
        if !configuration.testHooks.isEmpty && !configuration.isProductionInstance {
            logger.warning("test hooks on (never in production): \(configuration.testHooks.joined(separator: ", "))")
        }
        models = ModelCatalog(folders: configuration.modelDirectories)
        face = FaceService(catalog: models, threads: configuration.analysisThreads, enabled: configuration.faceEnabled, logger: logger)
        finger = FingerService(threads: configuration.analysisThreads, optics: configuration.fingerOptics,
                               enabled: configuration.fingerEnabled)
        templates = TemplateRepository(store: store, fingerMatcher: finger.matcher, logger: logger)
        let status = models.status
        if !status.missing.isEmpty {
            logger.warning("models missing: \(status.missing.joined(separator: ", ")) (searched \(status.folders.joined(separator: ", "))); face methods answer not_initialized until they are installed (scripts/setup.sh)")
        }
    }

    /// The method table of this build.
    var methodTable: MethodTable {
        var table = MethodTable()
        registerDaemonMethods(&table)
        registerCameraMethods(&table)
        registerUserMethods(&table)
        registerFaceMethods(&table)
        registerFingerMethods(&table)
        registerAuthMethods(&table)
        return table
    }

    /// Serves until SIGTERM or SIGINT.
    public func run() async throws {
        let rpc = RPCServer(methods: methodTable, policy: policy, logger: logger)
        let activated = Systemd.activatedSocket()
        socketActivated.store(activated != nil, ordering: .relaxed)
        do {
            try await rpc.start(path: configuration.socketPath, activatedFD: activated)
        } catch {
            throw StartupError(description: "socket \(configuration.socketPath): \(error)")
        }
        server.withLock { $0 = rpc }
        cameras.startHotplug()
        models.verifyInBackground()
        face.preload()
        if face.enabled { templates.loadFaceGallery() }

        let readyMs = Double(monotonicNanoseconds() - startedNs) / 1e6
        logger.info("ready in \(String(format: "%.1f", readyMs)) ms on \(activated != nil ? "socket from systemd" : configuration.socketPath); \(cameras.devices.count) camera(s)")
        Systemd.notify("READY=1\nSTATUS=serving on \(configuration.socketPath), \(cameras.devices.count) camera(s)")

        let queue = DispatchQueue(label: "biometricd.lifecycle")
        let watchdog = Systemd.startWatchdog(queue: queue) { true }
        let signal = await Self.waitForTermination(queue: queue)
        logger.info("received \(signal == SIGTERM ? "SIGTERM" : "SIGINT"): shutting down")
        Systemd.notify("STOPPING=1")
        watchdog?.cancel()
        cameras.stopHotplug()
        await rpc.stop()
        // Sessions end when their calls are canceled; give them a moment to close the cameras.
        for _ in 0..<50 where activeSessions.load(ordering: .relaxed) > 0 {
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        store.flush()
        if activated == nil { unlink(configuration.socketPath) }
        logger.info("stopped")
    }

    private static func waitForTermination(queue: DispatchQueue) async -> Int32 {
        await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
            let once = Mutex(false)
            var sources: [any DispatchSourceSignal] = []
            for sig in [SIGTERM, SIGINT] {
                signal(sig, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
                source.setEventHandler {
                    if once.withLock({ done in defer { done = true }; return !done }) { continuation.resume(returning: sig) }
                }
                source.resume()
                sources.append(source)
            }
            // Keep the sources alive for the life of the process.
            Self.signalSources.withLock { $0 = sources.map { UncheckedSendable($0) } }
        }
    }

    private static let signalSources = Mutex<[UncheckedSendable<any DispatchSourceSignal>]>([])

    // MARK: Shared facts for methods

    var uptimeSeconds: Double { Double(monotonicNanoseconds() - startedNs) / 1e9 }
    var clientCount: Int { server.withLock { $0?.clientCount ?? 0 } }
    var isSocketActivated: Bool { socketActivated.load(ordering: .relaxed) }

    /// Runs `body` as a camera session: holds the lease, counts the session, always stops capture.
    func withCameraSession<T: Sendable>(
        _ camera: String?, request: CaptureRequest = CaptureRequest(), _ body: (CaptureSession, CameraLease) async throws -> T
    ) async throws -> T {
        let lease = try cameras.acquire(camera)
        defer { lease.release() }
        activeSessions.add(1, ordering: .relaxed)
        defer {
            // The last session out hands the frames' and the analysis's freed memory back to
            // the system (glibc keeps it otherwise): RSS between sessions stays at the idle level.
            if activeSessions.subtract(1, ordering: .relaxed).newValue == 0 { _ = csd_release_free_memory() }
        }
        let capture = try lease.start(request)
        do {
            let result = try await body(capture, lease)
            await capture.stop()
            return result
        } catch {
            await capture.stop()
            throw error
        }
    }
}

struct UncheckedSendable<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// Runs `operation`, failing with `timeout` (1007) after `milliseconds`. With `camera`, a device
/// that fails meanwhile ends the call at once with its camera error: a lost camera is reported
/// as lost even while an analysis is still running or the deadline is near.
func withDeadline<T: Sendable>(milliseconds: Int, _ what: String, watching camera: CaptureSession? = nil,
                               _ operation: @escaping @Sendable () async throws -> T) async throws -> T
{
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(nanoseconds: UInt64(milliseconds) * 1_000_000)
            if let failure = camera?.endedWith { throw failure }
            throw RPCError.app(.timeout, "\(what) took longer than \(milliseconds) ms", details: ["timeout_ms": .int(Int64(milliseconds))])
        }
        if let camera {
            group.addTask {
                if let failure = await camera.failure() { throw failure }
                // Stopped normally: nothing to report; wait to be canceled with the others.
                while !Task.isCancelled { try await Task.sleep(nanoseconds: 1_000_000_000) }
                throw CancellationError()
            }
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}
