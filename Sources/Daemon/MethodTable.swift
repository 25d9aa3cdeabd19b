import BiometricAuth
import BiometricProtocol
import Foundation

/// What a method sees of its caller.
public struct CallContext: Sendable {
    public let peer: Peer
    /// nil for a notification (no reply expected; such a call cannot be canceled).
    public let request: RequestID?
    let connection: ClientConnection

    /// Sends an `event` notification tied to this call (dropped for a client that does not read).
    public func emit(_ event: some EventPayload) {
        guard let request else { return }
        connection.sendEvent(Event(request: request, event))
    }

    /// The caller passed a factor of `user` (or proved the account password): its changes to
    /// that user's factors are allowed on this connection for `Reverification.windowSeconds`.
    func authenticated(as user: String) { connection.reverification.record(user) }

    /// This call (an identification) answered step_up_required: auth.authenticate may complete it.
    func awaitStepUp(candidates: [String], modality: Factor) {
        guard let request else { return }
        connection.stepUps.record(request, candidates: candidates, modality: modality)
    }

    /// The identification `request` of this connection waiting for a step-up naming `user` (consumed).
    func takeStepUp(_ request: RequestID, user: String) -> StepUps.Pending? { connection.stepUps.take(request, user: user) }
}

/// Method name → access rule and handler. Handlers get decoded, validated params, and run only
/// when the rule declared with them allows the caller (`AccessPolicy.decide`).
public struct MethodTable: Sendable {
    public typealias Handler = @Sendable (CallContext, JSONValue?) async throws -> any Encodable & Sendable
    public typealias ImmediateHandler = @Sendable (CallContext, JSONValue?) throws -> any Encodable & Sendable
    private(set) var handlers: [String: Handler] = [:]
    /// Methods that only read in-memory state: answered on the event loop as the line arrives,
    /// with no task and no thread hop (the per-call floor of daemon.status).
    private(set) var immediate: [String: ImmediateHandler] = [:]
    /// Answers every method not registered (the store-refused daemon: not_initialized, not
    /// "method not found", for methods that exist but cannot run now). nil: -32601.
    var fallback: (@Sendable (String) -> RPCError)?

    /// Every method's access rule, by name (a test checks the whole table against the SPEC).
    public private(set) var rules: [String: AccessRule] = [:]
    let policy: AccessPolicy

    public init(policy: AccessPolicy) { self.policy = policy }

    public mutating func register<P: RPCParams, R: Encodable & Sendable>(
        _ name: String, _ access: Access<P>, _ body: @escaping @Sendable (CallContext, P) async throws -> R
    ) {
        rules[name] = access.rule
        let policy = self.policy
        handlers[name] = { context, params in
            let decoded = try P.decode(from: params)
            try Self.check(access, decoded, context, policy)
            return try await body(context, decoded)
        }
    }

    /// Registers a method that never blocks or waits (no I/O, no locks held for long): it runs
    /// on the connection's event loop.
    public mutating func registerImmediate<P: RPCParams, R: Encodable & Sendable>(
        _ name: String, _ access: Access<P>, _ body: @escaping @Sendable (CallContext, P) throws -> R
    ) {
        rules[name] = access.rule
        let policy = self.policy
        let run: ImmediateHandler = { context, params in
            let decoded = try P.decode(from: params)
            try Self.check(access, decoded, context, policy)
            return try body(context, decoded)
        }
        immediate[name] = run
        handlers[name] = { context, params in try run(context, params) }
    }

    /// The one place a call's access is decided, before its handler runs (a refusal changes nothing).
    static func check<P>(_ access: Access<P>, _ params: P, _ context: CallContext, _ policy: AccessPolicy) throws {
        let user = access.user?(params)
        let fresh = (user.map { context.connection.reverification.isFresh($0) } ?? false) || access.factorInCall?(params) == true
        let decision = policy.decide(access.rule, peer: context.peer, user: user, fresh: fresh)
        if let error = policy.refusal(decision, rule: access.rule, action: access.action, peer: context.peer, user: user) {
            throw error
        }
    }

    public var methods: [String] { handlers.keys.sorted() }

    func isImmediate(_ method: String) -> Bool { immediate[method] != nil }

    /// Runs an immediate method in place; its reply line (nil for a notification).
    func dispatchImmediately(_ request: RPCRequest, _ context: CallContext) -> Data? {
        guard let handler = immediate[request.method] else { return nil }
        let outcome: Result<any Encodable & Sendable, RPCError>
        do {
            outcome = .success(try handler(context, request.params))
        } catch {
            outcome = .failure(.from(error))
        }
        guard let id = request.id else { return nil }
        return Self.reply(id, outcome)
    }

    /// Runs one request; returns its reply line (nil for notifications).
    func dispatch(_ request: RPCRequest, _ context: CallContext) async -> Data? {
        let outcome: Result<any Encodable & Sendable, RPCError>
        if let handler = handlers[request.method] {
            do {
                outcome = .success(try await handler(context, request.params))
            } catch {
                outcome = .failure(.from(error))
            }
        } else {
            outcome = .failure(fallback?(request.method) ?? .methodNotFound(request.method))
        }
        guard let id = request.id else { return nil }
        return Self.reply(id, outcome)
    }

    private static func reply(_ id: RequestID, _ outcome: Result<any Encodable & Sendable, RPCError>) -> Data {
        switch outcome {
        case .success(let value):
            do {
                return try RPCCodec.response(id: id, result: value)
            } catch {
                return RPCCodec.response(id: id, error: .internal("result does not encode: \(error)"))
            }
        case .failure(let error):
            return RPCCodec.response(id: id, error: error)
        }
    }
}

/// A set of methods (face, finger, camera, user, auth, daemon) that registers itself with only
/// the dependencies it uses.
protocol MethodGroup: Sendable {
    func register(in table: inout MethodTable)
}
