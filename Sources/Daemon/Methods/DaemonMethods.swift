import BiometricProtocol

/// daemon.status and session.cancel: answered on the event loop (no task, no thread hop).
struct DaemonMethods: MethodGroup {
    /// The daemon's state now (read from in-memory counters only).
    let status: @Sendable () -> DaemonStatus

    func register(in table: inout MethodTable) {
        // Anyone may ask whether the daemon is up and what it has (Ezio isSupported/isInitialized).
        table.registerImmediate(Method.daemonStatus, .anyone, daemonStatus)
        // A caller cancels its own running calls (and camera watches) by request id.
        table.registerImmediate(Method.sessionCancel, .anyone, sessionCancel)
    }

    // MARK: Handlers, one per method, named after it

    /// daemon.status
    func daemonStatus(_ context: CallContext, _ params: NoParams) throws -> DaemonStatus {
        status()
    }

    /// session.cancel
    func sessionCancel(_ context: CallContext, _ params: CancelParams) throws -> CancelResult {
        guard let canceled = context.connection.cancel(params.request) else {
            throw RPCError.app(.notFound, "no request \(params.request) on this connection",
                               hint: "session.cancel takes the id of a call made on the same connection")
        }
        return CancelResult(canceled: canceled)
    }
}

#if canImport(Glibc)
import Glibc
#endif
