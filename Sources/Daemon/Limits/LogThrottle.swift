import BiometricCore
import Synchronization

/// At most one log line a minute per kind of event, with the number left unlogged since: a flood
/// (refusals, failing accepts) must not become a flood of the journal.
final class LogThrottle<Kind: Hashable & Sendable>: Sendable {
    static var intervalNs: UInt64 { 60_000_000_000 }
    private let last = Mutex<[Kind: (at: UInt64, suppressed: Int)]>([:])

    /// nil: do not log now (counted); otherwise log, and this many were left unlogged before it.
    func admit(_ kind: Kind, now: UInt64 = monotonicNanoseconds()) -> Int? {
        last.withLock { log in
            if let previous = log[kind], now &- previous.at < Self.intervalNs {
                log[kind] = (previous.at, previous.suppressed + 1)
                return nil
            }
            defer { log[kind] = (now, 0) }
            return log[kind]?.suppressed ?? 0
        }
    }
}
