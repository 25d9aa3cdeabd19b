import BiometricCamera
import BiometricProtocol
import Foundation
import NIOCore
import Synchronization

/// One client: its peer credentials, its running calls (so they can be canceled one by one or
/// all at once when it goes away, notifications without an id included), and its camera watches.
/// Each running call is booked against the uid's share of calls.
final class ClientConnection: Sendable {
    let peer: Peer
    /// Users this connection authenticated as lately (changes to their factors are allowed).
    let reverification = Reverification()
    /// Identifications of this connection waiting for their step-up.
    let stepUps = StepUps()
    /// nil for an internal caller (the FIDO authenticator's verifier): its events go nowhere.
    private let channel: (any Channel)?
    private let methods: MethodTable
    private let shares: UserShares?
    private let onClose: @Sendable () -> Void

    /// A running call: by its id, or (a notification, which has none) by a number of our own, so
    /// that closing the connection cancels it too (SPEC §3).
    private enum CallKey: Hashable {
        case id(RequestID)
        case notification(Int)
    }

    private struct State {
        var running: [CallKey: Task<Data?, Never>] = [:]
        var nextNotification = 0
        var watches: [RequestID: WatchToken] = [:]
        /// Recently finished ids, so a late session.cancel answers {canceled: false}, not not_found.
        var finished: [RequestID] = []
        var closed = false

        mutating func remember(_ id: RequestID) {
            finished.append(id)
            if finished.count > 256 { finished.removeFirst(finished.count - 256) }
        }
    }
    private let state = Mutex(State())

    init(peer: Peer, channel: (any Channel)?, methods: MethodTable, shares: UserShares? = nil,
         onClose: @escaping @Sendable () -> Void) {
        self.peer = peer
        self.channel = channel
        self.methods = methods
        self.shares = shares
        self.onClose = onClose
    }

    // MARK: Input

    /// One parsed line. Called on the channel's event loop, in arrival order.
    func receive(_ line: IncomingLine) {
        switch line {
        case .single(.failure(let failed)):
            send(RPCCodec.response(id: failed.id, error: failed.error))
        case .single(.success(let request)) where methods.isImmediate(request.method):
            if let reply = runImmediately(request) { send(reply) }
        case .single(.success(let request)):
            start(request, sendingReply: true)
        case .batch(let items):
            var replies: [Task<Data?, Never>] = []
            var immediate: [Data] = []
            for item in items {
                switch item {
                case .failure(let failed): immediate.append(RPCCodec.response(id: failed.id, error: failed.error))
                case .success(let request): if let task = start(request, sendingReply: false) { replies.append(task) }
                }
            }
            Task {
                var all = immediate
                for task in replies { if let r = await task.value { all.append(r) } }
                if let line = RPCCodec.batch(all) { self.send(line) }
            }
        }
    }

    /// Starts a call as its own task, registered under its id (or, for a notification, a number
    /// of its own) so that it can be canceled, and booked against the uid's share of calls. With
    /// `sendingReply` the task sends its own reply (one task, one hop back to the event loop).
    @discardableResult
    private func start(_ request: RPCRequest, sendingReply: Bool) -> Task<Data?, Never>? {
        let context = CallContext(peer: peer, request: request.id, connection: self)
        let id = request.id.flatMap { $0 == .null ? nil : $0 }
        enum Start { case started(Task<Data?, Never>), duplicate, refused(RPCError), closed }
        let outcome: Start = state.withLock { s in
            guard !s.closed else { return .closed }
            let key: CallKey
            if let id {
                guard s.running[.id(id)] == nil else { return .duplicate }
                key = .id(id)
            } else {
                s.nextNotification += 1
                key = .notification(s.nextNotification)
            }
            if let shares, let refusal = shares.admitCall(peer, onConnection: s.running.count).error { return .refused(refusal) }
            // Created and registered under the lock: it cannot finish (and unregister) first.
            let task = Task {
                let reply = await self.methods.dispatch(request, context)
                self.finish(key)
                if sendingReply, let reply { self.send(reply) }
                return sendingReply ? nil : reply
            }
            s.running[key] = task
            return .started(task)
        }
        let refusal: RPCError
        switch outcome {
        case .started(let task): return task
        case .closed: return nil
        case .refused(let error): refusal = error
        case .duplicate: refusal = .invalidRequest("id \(id.map { "\($0)" } ?? "") is already used by a running call")
        }
        // A notification gets no reply, refused or not.
        guard let id else { return nil }
        let reply = RPCCodec.response(id: id, error: refusal)
        if sendingReply {
            send(reply)
            return nil
        }
        return Task { reply }
    }

    /// An immediate method: same id rules as a task (a running call's id is refused; the id is
    /// remembered as finished for a late session.cancel), answered in place.
    private func runImmediately(_ request: RPCRequest) -> Data? {
        let context = CallContext(peer: peer, request: request.id, connection: self)
        guard let id = request.id, id != .null else { return methods.dispatchImmediately(request, context) }
        let free = state.withLock { s in s.running[.id(id)] == nil && !s.closed }
        guard free else {
            return RPCCodec.response(id: id, error: .invalidRequest("id \(id) is already used by a running call"))
        }
        let reply = methods.dispatchImmediately(request, context)
        state.withLock { $0.remember(id) }
        return reply
    }

    private func finish(_ key: CallKey) {
        let released = state.withLock { s -> Bool in
            guard s.running.removeValue(forKey: key) != nil else { return false }
            if case .id(let id) = key { s.remember(id) }
            return true
        }
        if released { shares?.releaseCall(peer) }
    }

    // MARK: Cancellation

    /// session.cancel: true when a running call or watch was canceled, false when it had already
    /// ended, nil when this connection never had such a request.
    func cancel(_ id: RequestID) -> Bool? {
        let (task, watch, known) = state.withLock { s -> (Task<Data?, Never>?, WatchToken?, Bool) in
            let watch = s.watches.removeValue(forKey: id)
            return (s.running[.id(id)], watch, s.finished.contains(id))
        }
        if let task {
            task.cancel()
            return true
        }
        if let watch {
            watch.cancel()
            return true
        }
        return known ? false : nil
    }

    /// Keeps a camera watch alive until canceled or disconnect.
    func addWatch(_ id: RequestID, _ token: WatchToken) {
        let rejected = state.withLock { s -> WatchToken? in
            if s.closed { return token }
            s.watches[id]?.cancel()
            s.watches[id] = token
            return nil
        }
        rejected?.cancel()
    }

    /// The client went away: cancel everything it started, with or without an id. Once only.
    func closed() {
        let (first, tasks, watches) = state.withLock { s -> (Bool, [Task<Data?, Never>], [WatchToken]) in
            let first = !s.closed
            s.closed = true
            defer { s.watches.removeAll() }
            return (first, Array(s.running.values), Array(s.watches.values))
        }
        guard first else { return }
        tasks.forEach { $0.cancel() }
        watches.forEach { $0.cancel() }
        onClose()
    }

    // MARK: Output

    func send(_ line: Data) {
        channel?.writeAndFlush(ByteBuffer(bytes: line), promise: nil)
    }

    /// Events are droppable: a client that does not read its socket does not make us buffer
    /// without bound (replies are always sent).
    func sendEvent(_ event: Event) {
        guard let channel, channel.isWritable else { return }
        guard let line = try? RPCCodec.event(event) else { return }
        send(line)
    }

    /// Sends a protocol error and closes (oversized line).
    func fail(_ error: RPCError) {
        guard let channel else { return }
        channel.writeAndFlush(ByteBuffer(bytes: RPCCodec.response(id: .null, error: error))).whenComplete { [channel] _ in
            channel.close(promise: nil)
        }
    }
}
