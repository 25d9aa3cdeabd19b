import Foundation
import Synchronization

/// One lock per user name, made on first use and dropped when nobody holds or waits for it.
/// For work that must not overlap for the same user (a PIN's check and count) while different
/// users' work runs in parallel. Blocks the calling thread: use it on pool threads only.
final class UserLocks: Sendable {
    private final class Entry: @unchecked Sendable {
        let lock = NSLock()
        var users = 0  // guarded by UserLocks.entries
    }

    private let entries = Mutex<[String: Entry]>([:])

    func withLock<T>(_ user: String, _ body: () throws -> T) rethrows -> T {
        let entry = entries.withLock { all -> Entry in
            let e = all[user] ?? Entry()
            e.users += 1
            all[user] = e
            return e
        }
        entry.lock.lock()
        defer {
            entry.lock.unlock()
            entries.withLock { all in
                entry.users -= 1
                if entry.users == 0 { all[user] = nil }
            }
        }
        return try body()
    }

    var count: Int { entries.withLock { $0.count } }
}
