import BiometricProtocol

extension Daemon {
    func registerDaemonMethods(_ table: inout MethodTable) {
        // Anyone may ask whether the daemon is up and what it has (Ezio isSupported/isInitialized).
        table.registerImmediate(Method.daemonStatus) { [self] (_, _: NoParams) in
            DaemonStatus(
                version: biometricdVersion, uptimeS: (uptimeSeconds * 1000).rounded() / 1000, pid: getpid(),
                cameras: cameras.devices.map(\.id), models: models.status, users: (try? store.userCount()) ?? 0,
                activeSessions: activeSessions.load(ordering: .relaxed), clients: clientCount,
                socketActivated: isSocketActivated, privileged: configuration.privileged,
                faceGallery: templates.faceGalleryStatus)
        }

        // A caller cancels its own running calls (and camera watches) by request id.
        table.registerImmediate(Method.sessionCancel) { (context, params: CancelParams) in
            guard let canceled = context.connection.cancel(params.request) else {
                throw RPCError.app(.notFound, "no request \(params.request) on this connection",
                                   hint: "session.cancel takes the id of a call made on the same connection")
            }
            return CancelResult(canceled: canceled)
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
