import BiometricCore
import Synchronization

/// Who goes next when several uids wait for the same expensive work (Argon2id, image decoding):
/// the waiting uid served least recently, so a uid that floods the queue is always behind one
/// that has just arrived. Another uid's call then waits for at most the job in flight, never
/// for the flood. A value type; `FairQueue` runs it behind a lock.
struct FairOrder: Sendable, Equatable {
    let width: Int
    let maxQueuedPerOwner: Int
    /// Slots one owner may hold at once: with two slots and one per owner, a flood holds one
    /// and another uid's job starts at once in the other.
    let maxRunningPerOwner: Int
    private(set) var running = 0
    private(set) var runningBy: [UInt32: Int] = [:]
    /// Tickets waiting, per owner, in arrival order.
    private(set) var waiting: [UInt32: [Int]] = [:]
    /// When each owner was last served (a counter, not a clock); owners never served count as 0.
    private var lastServed: [UInt32: Int] = [:]
    private var served = 0

    init(width: Int, maxQueuedPerOwner: Int, maxRunningPerOwner: Int? = nil) {
        self.width = max(1, width)
        self.maxQueuedPerOwner = max(1, maxQueuedPerOwner)
        self.maxRunningPerOwner = min(self.width, max(1, maxRunningPerOwner ?? self.width))
    }

    enum Arrival: Equatable {
        /// Run now (a slot was free and nobody who could use it waits).
        case run
        /// Wait for `finished` to hand out the ticket.
        case wait
        /// The owner already has `maxQueuedPerOwner` tickets waiting.
        case refused
    }

    private func mayRun(_ owner: UInt32) -> Bool { runningBy[owner, default: 0] < maxRunningPerOwner }

    mutating func arrive(owner: UInt32, ticket: Int) -> Arrival {
        if running < width && mayRun(owner) && !waiting.keys.contains(where: mayRun) {
            take(owner)
            return .run
        }
        guard waiting[owner, default: []].count < maxQueuedPerOwner else { return .refused }
        waiting[owner, default: []].append(ticket)
        return .wait
    }

    /// A waiting ticket gave up (its call was canceled). False when it was not waiting (already handed out).
    mutating func leave(owner: UInt32, ticket: Int) -> Bool {
        guard var tickets = waiting[owner], let i = tickets.firstIndex(of: ticket) else { return false }
        tickets.remove(at: i)
        waiting[owner] = tickets.isEmpty ? nil : tickets
        return true
    }

    /// `owner`'s job ended: the ticket to run next, if any (its slot is taken for it): the
    /// waiting owner served least recently among those under their running cap.
    mutating func finished(owner: UInt32) -> (owner: UInt32, ticket: Int)? {
        running -= 1
        runningBy[owner, default: 1] -= 1
        if runningBy[owner] == 0 { runningBy[owner] = nil }
        guard let next = waiting.keys.filter(mayRun).min(by: { (lastServed[$0] ?? 0, $0) < (lastServed[$1] ?? 0, $1) }),
              var tickets = waiting[next]
        else { return nil }
        let ticket = tickets.removeFirst()
        waiting[next] = tickets.isEmpty ? nil : tickets
        take(next)
        return (next, ticket)
    }

    private mutating func take(_ owner: UInt32) {
        running += 1
        runningBy[owner, default: 0] += 1
        served += 1
        lastServed[owner] = served
        // Owners long gone are forgotten; an owner forgotten counts as never served, which only
        // ever helps a uid that has not used the queue for a while.
        if lastServed.count > 4096 {
            let cutoff = served - 2048
            lastServed = lastServed.filter { $0.value > cutoff || waiting[$0.key] != nil || runningBy[$0.key] != nil }
        }
    }
}

/// A fair queue in front of a bounded pool: `run(owner:)` waits its turn by `FairOrder`, then
/// runs the job on the pool. A call canceled while waiting leaves at once and takes no slot.
final class FairQueue: Sendable {
    private let pool: AnalysisPool
    private let order: Mutex<FairOrder>
    private let tickets = Atomic<Int>(0)
    private let waiters = Mutex<[Int: CheckedContinuation<Void, any Error>]>([:])
    private let refused: @Sendable (UInt32) -> Void

    /// `refused` is told of each refusal (the server's once-a-minute log).
    init(label: String, width: Int, maxQueuedPerOwner: Int, maxRunningPerOwner: Int? = nil,
         refused: @escaping @Sendable (UInt32) -> Void = { _ in }) {
        pool = AnalysisPool(label: "biometricd.\(label)", threads: width)
        order = Mutex(FairOrder(width: width, maxQueuedPerOwner: maxQueuedPerOwner, maxRunningPerOwner: maxRunningPerOwner))
        self.refused = refused
    }

    /// Jobs waiting for their turn, and jobs holding a slot.
    var queued: Int { order.withLock { $0.waiting.values.reduce(0) { $0 + $1.count } } }
    var running: Int { order.withLock { $0.running } }

    func run<T: Sendable>(owner: UInt32, _ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await acquire(owner)
        defer { release(owner) }
        return try await pool.run(work)
    }

    private func acquire(_ owner: UInt32) async throws {
        try Task.checkCancellation()
        let ticket = tickets.add(1, ordering: .relaxed).newValue
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                // The waiter is registered before the order can hand the ticket out.
                waiters.withLock { $0[ticket] = continuation }
                let arrival = order.withLock { $0.arrive(owner: owner, ticket: ticket) }
                switch arrival {
                case .run:
                    waiters.withLock { $0.removeValue(forKey: ticket) }?.resume()
                case .wait:
                    if Task.isCancelled { leave(owner, ticket) }
                case .refused:
                    refused(owner)
                    let max = order.withLock { $0.maxQueuedPerOwner }
                    waiters.withLock { $0.removeValue(forKey: ticket) }?.resume(
                        throwing: Admission.refused(.queuePerUser, max: max).error!)
                }
            }
        } onCancel: {
            leave(owner, ticket)
        }
    }

    private func leave(_ owner: UInt32, _ ticket: Int) {
        guard order.withLock({ $0.leave(owner: owner, ticket: ticket) }) else { return }
        waiters.withLock { $0.removeValue(forKey: ticket) }?.resume(throwing: CancellationError())
    }

    private func release(_ owner: UInt32) {
        guard let next = order.withLock({ $0.finished(owner: owner) }) else { return }
        waiters.withLock { $0.removeValue(forKey: next.ticket) }?.resume()
    }
}
