import BiometricCamera
import BiometricProtocol
import Foundation
import NIOCore
import Synchronization

/// One client: its peer credentials, its running calls (so they can be canceled one by one or
/// all at once when it goes away), and its camera watches.
final class ClientConnection: Sendable {
    let peer: Peer
    private let channel: any Channel
    private let methods: MethodTable
    private let onClose: @Sendable () -> Void

    private struct State {
        var running: [RequestID: Task<Data?, Never>] = [:]
        var watches: [RequestID: WatchToken] = [:]
        /// Recently finished ids, so a late session.cancel answers {canceled: false}, not not_found.
        var finished: [RequestID] = []
        var closed = false
    }
    private let state = Mutex(State())

    init(peer: Peer, channel: any Channel, methods: MethodTable, onClose: @escaping @Sendable () -> Void) {
        self.peer = peer
        self.channel = channel
        self.methods = methods
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

    /// Starts a call as its own task, registered under its id so that it can be canceled. With
    /// `sendingReply` the task sends its own reply (one task, one hop back to the event loop).
    @discardableResult
    private func start(_ request: RPCRequest, sendingReply: Bool) -> Task<Data?, Never>? {
        let context = CallContext(peer: peer, request: request.id, connection: self)
        guard let id = request.id, id != .null else {
            return Task {
                let reply = await self.methods.dispatch(request, context)
                if sendingReply, let reply { self.send(reply) }
                return sendingReply ? nil : reply
            }
        }
        let task: Task<Data?, Never>? = state.withLock { s in
            guard s.running[id] == nil, !s.closed else { return nil }
            // Created and registered under the lock: it cannot finish (and unregister) first.
            let task = Task {
                let reply = await self.methods.dispatch(request, context)
                self.finish(id)
                if sendingReply, let reply { self.send(reply) }
                return sendingReply ? nil : reply
            }
            s.running[id] = task
            return task
        }
        if let task { return task }
        let refused = RPCCodec.response(id: id, error: .invalidRequest("id \(id) is already used by a running call"))
        if sendingReply {
            send(refused)
            return nil
        }
        return Task { refused }
    }

    /// An immediate method: same id rules as a task (a running call's id is refused; the id is
    /// remembered as finished for a late session.cancel), answered in place.
    private func runImmediately(_ request: RPCRequest) -> Data? {
        let context = CallContext(peer: peer, request: request.id, connection: self)
        guard let id = request.id, id != .null else { return methods.dispatchImmediately(request, context) }
        let free = state.withLock { s in s.running[id] == nil && !s.closed }
        guard free else {
            return RPCCodec.response(id: id, error: .invalidRequest("id \(id) is already used by a running call"))
        }
        let reply = methods.dispatchImmediately(request, context)
        finish(id)
        return reply
    }

    private func finish(_ id: RequestID) {
        state.withLock { s in
            s.running[id] = nil
            s.finished.append(id)
            if s.finished.count > 256 { s.finished.removeFirst(s.finished.count - 256) }
        }
    }

    // MARK: Cancellation

    /// session.cancel: true when a running call or watch was canceled, false when it had already
    /// ended, nil when this connection never had such a request.
    func cancel(_ id: RequestID) -> Bool? {
        let (task, watch, known) = state.withLock { s -> (Task<Data?, Never>?, WatchToken?, Bool) in
            let watch = s.watches.removeValue(forKey: id)
            return (s.running[id], watch, s.finished.contains(id))
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

    /// The client went away: cancel everything it started.
    func closed() {
        let (tasks, watches) = state.withLock { s -> ([Task<Data?, Never>], [WatchToken]) in
            s.closed = true
            defer { s.watches.removeAll() }
            return (Array(s.running.values), Array(s.watches.values))
        }
        tasks.forEach { $0.cancel() }
        watches.forEach { $0.cancel() }
        onClose()
    }

    // MARK: Output

    func send(_ line: Data) {
        channel.writeAndFlush(ByteBuffer(bytes: line), promise: nil)
    }

    /// Events are droppable: a client that does not read its socket does not make us buffer
    /// without bound (replies are always sent).
    func sendEvent(_ event: Event) {
        guard channel.isWritable else { return }
        guard let line = try? RPCCodec.event(event) else { return }
        send(line)
    }

    /// Sends a protocol error and closes (oversized line).
    func fail(_ error: RPCError) {
        channel.writeAndFlush(ByteBuffer(bytes: RPCCodec.response(id: .null, error: error))).whenComplete { [channel] _ in
            channel.close(promise: nil)
        }
    }
}
