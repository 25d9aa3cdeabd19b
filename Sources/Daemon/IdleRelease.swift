import BiometricCore
import Dispatch
import Synchronization

/// Runs an action once some kind of work has been idle for a while: each `workEnded` pushes the
/// moment back, and one timer at a time is pending, however many calls end. The finger service
/// frees its learned extractor's networks with it (memory a daemon that read a print once
/// should not keep for good), without a thread or a timer per call.
final class IdleRelease: Sendable {
    private let delayNs: UInt64
    private let queue = DispatchQueue(label: "biometricd.idle-release")
    /// When the last work ended (monotonic ns), and whether a timer is pending.
    private let state = Mutex<(lastEnd: UInt64, pending: Bool)>((0, false))

    init(after seconds: Double) {
        delayNs = UInt64(max(0, seconds) * 1e9)
    }

    /// Work just ended: an action runs once no work has ended for the delay (the action given by
    /// the call that armed the timer: callers pass the same one).
    func workEnded(then action: @escaping @Sendable () -> Void) {
        let now = monotonicNanoseconds()
        let schedule = state.withLock { s -> Bool in
            s.lastEnd = now
            if s.pending { return false }
            s.pending = true
            return true
        }
        if schedule { arm(in: delayNs, action) }
    }

    private func arm(in ns: UInt64, _ action: @escaping @Sendable () -> Void) {
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(min(ns, UInt64(Int.max))))) { [self] in
            let now = monotonicNanoseconds()
            let remaining = state.withLock { s -> UInt64 in
                let quiet = now &- s.lastEnd
                if quiet >= delayNs {
                    s.pending = false
                    return 0
                }
                return delayNs - quiet
            }
            if remaining == 0 { action() } else { arm(in: remaining, action) }
        }
    }
}
