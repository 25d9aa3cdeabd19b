import BiometricAuth
import BiometricProtocol
import Foundation

/// What a method sees of its caller.
public struct CallContext: Sendable {
    public let peer: Peer
    /// nil for a notification (no reply expected; such a call cannot be canceled).
    public let request: RequestID?
    let connection: ClientConnection
    /// What the running method declared (set by `MethodTable` when it dispatches; an internal
    /// caller sets its own). Calls made inside it (auth.authenticate's face.verify) run under it.
    var security: MethodSecurity
    /// What this call's runs showed so far (camera trust, the floors' judgement).
    let run: CallRun
    /// Where evidence becomes effects; nil in a table without authentication (a refused store).
    var ledger: TrustLedger?
    /// The call was started by another user for this account (auth.authenticate's root-only
    /// `other_user`): its attempts never touch the user's lockout.
    var startedByOtherUser = false

    init(peer: Peer, request: RequestID?, connection: ClientConnection, security: MethodSecurity = .unchecked, ledger: TrustLedger? = nil) {
        self.peer = peer
        self.request = request
        self.connection = connection
        self.security = security
        self.run = CallRun()
        self.ledger = ledger
    }

    /// Settles one attempt of this call: the facts the handler knows (user, factor, verdict,
    /// whose templates), with what the camera lease and the floors recorded; `TrustPolicy`
    /// decides what it is worth under this method's declared grants (`TrustLedger`).
    @discardableResult
    func settle(user: String, factor: BiometricAuth.Factor, verdict: AttemptVerdict, references: References = .enrolled) -> Settlement {
        let evidence = Evidence(user: user, factor: factor, verdict: verdict, camera: factor.isBiometric ? run.camera : nil,
                                capture: factor.isBiometric ? run.capture ?? .weakened([]) : .atFloor, references: references,
                                startedByOtherUser: startedByOtherUser)
        guard let ledger else { return Settlement(proven: false, effects: Effects(reverify: false, lockout: .none)) }
        return ledger.settle(evidence, declared: security.grants, connection: connection)
    }

    /// Sends an `event` notification tied to this call (dropped for a client that does not read).
    public func emit(_ event: some EventPayload) {
        guard let request else { return }
        connection.sendEvent(Event(request: request, event))
    }

    /// The root helper proved `user`'s account password for this connection (auth.password.proven
    /// calls it on the connection that asked): changes to that user's factors are allowed on it for
    /// `Reverification.windowSeconds`. Factors go through `settle`.

    /// This call (an identification) answered step_up_required: auth.authenticate may complete it.
    func awaitStepUp(candidates: [String], modality: Factor) {
        guard let request else { return }
        connection.stepUps.record(request, candidates: candidates, modality: modality)
    }

    /// The identification `request` of this connection waiting for a step-up naming `user` (consumed).
    func takeStepUp(_ request: RequestID, user: String) -> StepUps.Pending? { connection.stepUps.take(request, user: user) }
}

/// The params of a method whose capture knobs have floors (`Requirements.floors`): what they ask,
/// in the floors' terms. Conformances are in `Trust/CaptureKnobs.swift`.
protocol CaptureKnobs {
    var captureAsk: CaptureAsk { get }
}

/// Method name → security declaration and handler. Handlers get decoded, validated params, and
/// run only when the rule declared with them allows the caller (`AccessPolicy.decide`) and the
/// call's knobs are at their floors (`CallerLimits.judge`); what their success grants is what
/// they declared, as far as `TrustPolicy` finds it proven.
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

    /// Every method's declaration, by name (AccessMatrixTests checks the whole table).
    public private(set) var declarations: [String: MethodSecurity] = [:]
    /// Every method's access rule, by name.
    public var rules: [String: AccessRule] { declarations.mapValues(\.access) }
    /// For methods whose rule names a user: which user decoded params act on (AccessMatrixTests
    /// checks each one reads the call's own `user`).
    private(set) var userOf: [String: @Sendable (JSONValue?) throws -> String?] = [:]
    let policy: AccessPolicy
    /// The floors of every capture knob.
    let callers: CallerLimits
    let ledger: TrustLedger?

    init(policy: AccessPolicy, callers: CallerLimits = CallerLimits(), ledger: TrustLedger? = nil) {
        self.policy = policy
        self.callers = callers
        self.ledger = ledger
    }

    /// Registers `name`: who may call it (`access`), what it requires beyond that (`requires`:
    /// knobs at their floors, the camera's trust) and what its success may grant (`grants`).
    mutating func register<P: RPCParams, R: Encodable & Sendable>(
        _ name: String, _ access: Access<P>, requires: Requirements = .nothing, grants: Grants = .none,
        _ body: @escaping @Sendable (CallContext, P) async throws -> R
    ) {
        precondition(requires.floors == nil || P.self is CaptureKnobs.Type, "\(name) declares floors but \(P.self) has no capture knobs")
        let security = MethodSecurity(access: access.rule, requires: requires, grants: grants)
        declarations[name] = security
        if let user = access.user { userOf[name] = { try user(P.decode(from: $0)) } }
        let policy = self.policy, callers = self.callers, ledger = self.ledger
        handlers[name] = { context, params in
            let decoded = try P.decode(from: params)
            try Self.check(access, decoded, context, policy)
            var context = context
            context.security = security
            context.ledger = ledger
            if let modality = requires.floors, let knobs = decoded as? CaptureKnobs {
                let decision = callers.judge(knobs.captureAsk, isAdmin: context.peer.isAdmin)
                if case .refused(let loosening) = decision { throw FloorRefusal(loosening: loosening, modality: modality) }
                context.run.judged(decision)
            }
            return try await body(context, decoded)
        }
    }

    /// Registers a method that never blocks or waits (no I/O, no locks held for long): it runs
    /// on the connection's event loop.
    mutating func registerImmediate<P: RPCParams, R: Encodable & Sendable>(
        _ name: String, _ access: Access<P>, _ body: @escaping @Sendable (CallContext, P) throws -> R
    ) {
        declarations[name] = MethodSecurity(access: access.rule)
        if let user = access.user { userOf[name] = { try user(P.decode(from: $0)) } }
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
        if let field = access.rootOnlyParam?(params), context.peer.uid != 0 {
            throw RPCError.app(.permissionDenied, "'\(field)' is accepted from root only", hint: "it is set by a root-owned component (the PAM module)",
                               details: ["field": .string(field)])
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
