import BiometricCore
import BiometricProtocol
import Dispatch
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// The daemon when its store's key is missing or wrong (issue: "a key that never silently
/// changes"). It opens no camera, loads no model and writes nothing; it answers `daemon.status`
/// with `store.state` saying what is wrong, and every other method with not_initialized (1008),
/// so `authctl status` and the PAM module see why (PAM falls through to the password). It exits
/// on SIGTERM like the real daemon; fixing the key and restarting serves again.
public struct StoreRefusalDaemon: Sendable {
    let configuration: DaemonConfiguration
    let refusal: StoreStatus
    let logger: Logger

    public init(configuration: DaemonConfiguration, refusal: StoreStatus, logger: Logger) {
        self.configuration = configuration
        self.refusal = refusal
        self.logger = logger
    }

    public func run() async throws {
        let started = monotonicNanoseconds()
        let queue = DispatchQueue(label: "biometricd.lifecycle")
        let termination = TerminationSignals(queue: queue)
        let policy = AccessPolicy(adminGroup: configuration.adminGroup, loginGroup: configuration.loginGroup)
        let shares = UserShares(rules: configuration.shares) { [logger] in logger.warning("\($0)") }
        let activated = Systemd.activatedSocket()
        let refusal = self.refusal, configuration = self.configuration
        var table = MethodTable(policy: policy)
        table.registerImmediate(Method.daemonStatus, .anyone) { (_, _: NoParams) in
            DaemonStatus(version: biometricdVersion, uptimeS: Double(monotonicNanoseconds() - started) / 1e9, pid: getpid(),
                         cameras: [], models: ModelStatus(loaded: [], missing: [], corrupt: [], folders: configuration.modelDirectories),
                         users: 0, activeSessions: 0, clients: 0, socketActivated: activated != nil,
                         privileged: configuration.privileged, store: refusal)
        }
        table.fallback = { method in
            RPCError.app(.notInitialized, "\(method) cannot run: \(refusal.message ?? refusal.state)",
                         hint: "an administrator must restore the template key, then restart biometricd",
                         details: ["store": .string(refusal.state)])
        }
        let rpc = RPCServer(methods: table, policy: policy, shares: shares, logger: logger)
        do {
            try await rpc.start(path: configuration.socketPath, activatedFD: activated)
        } catch {
            throw StartupError(description: "socket \(configuration.socketPath): \(error)")
        }
        logger.critical("refusing to serve: \(refusal.message ?? refusal.state); only daemon.status answers")
        Systemd.notify("READY=1\nSTATUS=refusing: template store \(refusal.state) (see daemon.status / the journal)")
        let watchdog = Systemd.startWatchdog(queue: queue) { true }
        _ = await termination.next()
        Systemd.notify("STOPPING=1")
        watchdog?.cancel()
        await rpc.stop()
        if activated == nil { unlink(configuration.socketPath) }
    }

}
