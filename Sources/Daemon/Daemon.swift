import BiometricAuth
import BiometricCamera
import BiometricCore
import BiometricFace
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
    /// Set when the store's key is missing or wrong: `biometricd` then serves only daemon.status
    /// (which says so) instead of exiting, so clients and `authctl status` see why.
    public var storeRefusal: StoreStatus?

    public init(description: String, storeRefusal: StoreStatus? = nil) {
        self.description = description
        self.storeRefusal = storeRefusal
    }
}

/// The daemon: its services (cameras, store, models, access policy) and its lifecycle
/// (start, READY, watchdog, SIGTERM → cancel sessions, close cameras, flush the store).
public final class Daemon: Sendable {
    /// Blocks of this size or more are mapped on their own (glibc's M_MMAP_THRESHOLD, fixed): a
    /// frame (640×480 RGB, 0.9 MB) stays on the heap; the learned finger extractor's activation
    /// buffers (6–26 MB) are unmapped when freed. A finger-only daemon after 8 prints: 72–75 MiB in
    /// 9 of 9 runs with it, 75–131 MiB without (Docs/benchmarks.md, issue 37).
    static let mmapThreshold: Int32 = 4 << 20

    public let configuration: DaemonConfiguration
    let logger: Logger
    let cameras: CameraRegistry
    let store: Store
    let models: ModelCatalog
    let face: FaceService
    let finger: FingerService
    let policy: AccessPolicy
    let auth: AuthService
    let leases: CameraLeases
    let templates: TemplateRepository
    let limits: DaemonLimits
    let keySource: TemplateKey.Source
    let keyProtection: TemplateKey.Protection
    let proofs = PasswordProofs()
    let startedNs = monotonicNanoseconds()
    private let server = Mutex<RPCServer?>(nil)
    private let socketActivated = Atomic<Bool>(false)

    public init(configuration: DaemonConfiguration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        policy = AccessPolicy(adminGroup: configuration.adminGroup, loginGroup: configuration.loginGroup)
        do {
            cameras = try CameraRegistry(specs: configuration.cameras, logger: logger, choices: configuration.cameraChoices,
                                         pairs: configuration.cameraPairs)
        } catch {
            throw StartupError(description: "camera: \(error.description)")
        }
        leases = CameraLeases(cameras: cameras, virtualCameras: VirtualCameraRule(
            policy: configuration.refuseVirtualCameras, testInstance: !configuration.isProductionInstance))
        do {
            let loaded = try TemplateKey.loadWithSource(
                stateDirectory: configuration.stateDirectory,
                credentialsDirectory: ProcessInfo.processInfo.environment["CREDENTIALS_DIRECTORY"])
            store = try Store(directory: configuration.stateDirectory, key: loaded.key)
            keySource = loaded.source
            keyProtection = loaded.protection
        } catch .keyMissing(let path, let rows) {
            throw StartupError(description: StoreError.keyMissing(path, sealedRows: rows).description,
                               storeRefusal: StoreStatus(state: "key_missing", message: StoreError.keyMissing(path, sealedRows: rows).description))
        } catch .keyUnsealable(let why) {
            throw StartupError(description: StoreError.keyUnsealable(why).description,
                               storeRefusal: StoreStatus(state: "key_unsealable", message: StoreError.keyUnsealable(why).description))
        } catch .keyMismatch(let rows) {
            throw StartupError(description: StoreError.keyMismatch(sealedRows: rows).description,
                               storeRefusal: StoreStatus(state: "key_mismatch", message: StoreError.keyMismatch(sealedRows: rows).description))
        } catch {
            throw StartupError(description: "state folder \(configuration.stateDirectory): \(error)")
        }
        limits = DaemonLimits(configuration: configuration, descriptorLimit: ProcessLimits.raiseDescriptorLimit(logger: logger),
                              logger: logger)
        auth = AuthService(store: store, configuration: configuration, pins: limits.pins, logger: logger)
        // A FIDO test socket in a production instance stops the start here, before anything serves.
        _ = try Self.fidoTransport(configuration)
        if !configuration.testHooks.isEmpty && !configuration.isProductionInstance {
            logger.warning("test hooks on (never in production): \(configuration.testHooks.joined(separator: ", "))")
        }
        models = ModelCatalog(folders: configuration.modelDirectories)
        FaceModels.useOneNativeThreadPerCall()
        // Large transient buffers (network activations) are mapped and unmapped on their own, so
        // they go back to the system when freed (csd_fix_mmap_threshold; Docs/benchmarks.md).
        _ = csd_fix_mmap_threshold(Self.mmapThreshold)
        // One pool for all frame analysis: analysis_threads bounds face and finger together.
        let analysis = AnalysisPool(label: "biometricd.analysis", threads: configuration.analysisThreads)
        face = FaceService(catalog: models, pool: analysis, threads: configuration.analysisThreads, enabled: configuration.faceEnabled,
                           secondNetwork: configuration.faceSecondNetwork, logger: logger)
        finger = FingerService(pool: analysis, threads: configuration.analysisThreads, optics: configuration.fingerOptics,
                               enabled: configuration.fingerEnabled, catalog: models, logger: logger)
        templates = TemplateRepository(store: store, fingerMatcher: finger.matcher, logger: logger)
        let status = models.status
        if !status.missing.isEmpty {
            logger.warning("models missing: \(status.missing.joined(separator: ", ")) (searched \(status.folders.joined(separator: ", "))); face methods answer not_initialized until they are installed (scripts/setup.sh)")
        }
    }

    /// The face, finger and auth method groups (the method table's, and the FIDO verifier's).
    var authGroups: (face: FaceMethods, finger: FingerMethods, auth: AuthMethods) {
        let face = FaceMethods(
            face: self.face, templates: templates, leases: leases, auth: auth, policy: policy, limits: limits, logger: logger,
            fixedChallenge: configuration.isProductionInstance ? nil : configuration.testChallengeSequence)
        let finger = FingerMethods(finger: self.finger, templates: templates, leases: leases, auth: auth, policy: policy,
                                   limits: limits, logger: logger)
        let methods = AuthMethods(auth: auth, limits: limits, store: store, policy: policy, quotas: limits.quotas, logger: logger, face: face,
                                  finger: finger, proofs: proofs)
        return (face, finger, methods)
    }

    /// Where attempts' evidence becomes their effects (`TrustPolicy`).
    var ledger: TrustLedger { TrustLedger(auth: auth, logger: logger) }

    /// The method table of this build: each group gets only what it uses.
    var methodTable: MethodTable {
        let (face, finger, authMethods) = authGroups
        let groups: [any MethodGroup] = [
            DaemonMethods(status: { [self] in status }),
            CameraMethods(leases: leases, face: self.face, policy: policy),
            UserMethods(templates: templates, policy: policy, logger: logger),
            face,
            finger,
            authMethods,
        ]
        var table = MethodTable(policy: policy, callers: configuration.callerLimits, ledger: ledger)
        for group in groups { group.register(in: &table) }
        return table
    }

    /// daemon.status: what the daemon has and does now.
    var status: DaemonStatus {
        DaemonStatus(
            version: biometricdVersion, uptimeS: (uptimeSeconds * 1000).rounded() / 1000, pid: getpid(),
            cameras: cameras.devices.map(\.id), models: models.status, users: (try? store.users.count()) ?? 0,
            activeSessions: leases.activeCount, clients: clientCount, socketActivated: isSocketActivated,
            privileged: configuration.privileged, faceGallery: templates.faceGalleryStatus,
            store: StoreStatus(state: "open", key: keySource.rawValue, protection: keyProtection.rawValue))
    }

    /// Serves until SIGTERM or SIGINT.
    public func run() async throws {
        // Caught from before the socket accepts anything: a SIGTERM right after start is a clean stop.
        let queue = DispatchQueue(label: "biometricd.lifecycle")
        let termination = TerminationSignals(queue: queue)
        // The face models load from here on, in the background: a socket-activated daemon's first
        // client (the first login after boot) waits in the socket meanwhile, and its camera opens
        // while they load (CameraLeases.runFace(loading:)).
        face.preload()
        let rpc = RPCServer(methods: methodTable, policy: policy, shares: limits.shares, logger: logger)
        let activated = Systemd.activatedSocket()
        socketActivated.store(activated != nil, ordering: .relaxed)
        do {
            try await rpc.start(path: configuration.socketPath, activatedFD: activated)
        } catch {
            throw StartupError(description: "socket \(configuration.socketPath): \(error)")
        }
        server.withLock { $0 = rpc }
        cameras.startHotplug()
        // logind's PrepareForSleep: after a resume, every camera is looked up and opened afresh.
        let sleep = SleepWatcher.start(logger: logger, onSleep: { [logger] in
            logger.info("logind: the system is going to sleep")
        }, onResume: { [cameras] in cameras.resumed() })
        let fido = try await startFIDO()
        models.verifyInBackground()
        if face.enabled { templates.loadFaceGallery() }

        let readyMs = Double(monotonicNanoseconds() - startedNs) / 1e6
        logger.info("ready in \(String(format: "%.1f", readyMs)) ms on \(activated != nil ? "socket from systemd" : configuration.socketPath); \(cameras.devices.count) camera(s)")
        Systemd.notify("READY=1\nSTATUS=serving on \(configuration.socketPath), \(cameras.devices.count) camera(s)")

        let watchdog = Systemd.startWatchdog(queue: queue) { true }
        let signal = await termination.next()
        logger.info("received \(signal == SIGTERM ? "SIGTERM" : "SIGINT"): shutting down")
        Systemd.notify("STOPPING=1")
        watchdog?.cancel()
        cameras.stopHotplug()
        sleep?.stop()
        await fido?.stop()
        await rpc.stop()
        // Sessions end when their calls are canceled; give them a moment to close the cameras.
        for _ in 0..<50 where leases.activeCount > 0 {
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        store.flush()
        if activated == nil { unlink(configuration.socketPath) }
        logger.info("stopped")
    }

    // MARK: Lifecycle facts

    var uptimeSeconds: Double { Double(monotonicNanoseconds() - startedNs) / 1e9 }
    var clientCount: Int { server.withLock { $0?.clientCount ?? 0 } }
    var isSocketActivated: Bool { socketActivated.load(ordering: .relaxed) }
}

/// SIGTERM and SIGINT, caught from the moment this is made and waited for later.
final class TerminationSignals: Sendable {
    private let state = Mutex<(received: Int32?, waiter: CheckedContinuation<Int32, Never>?)>((nil, nil))
    private let sources = Mutex<[UncheckedSendable<any DispatchSourceSignal>]>([])

    init(queue: DispatchQueue) {
        for sig in [SIGTERM, SIGINT] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler { [weak self] in self?.received(sig) }
            source.resume()
            sources.withLock { $0.append(UncheckedSendable(source)) }
        }
    }

    deinit { sources.withLock { $0.forEach { $0.value.cancel() } } }

    private func received(_ sig: Int32) {
        state.withLock { s in
            guard s.received == nil else { return }
            s.received = sig
            s.waiter?.resume(returning: sig)
            s.waiter = nil
        }
    }

    /// The first signal received (at once if it came already).
    func next() async -> Int32 {
        await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
            state.withLock { s in
                if let received = s.received { continuation.resume(returning: received) } else { s.waiter = continuation }
            }
        }
    }
}

struct UncheckedSendable<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
