import BiometricAuth
import BiometricCamera
import BiometricCore
import BiometricProtocol
import BiometricStore
import Foundation
import Logging
import Synchronization

/// pin.*, auth.* and key.*: PIN, policy, lockout status, auth.authenticate and biometric-bound
/// keys (SPEC §4). The biometric factors run through the face and finger methods.
struct AuthMethods: MethodGroup {
    let auth: AuthService
    let limits: DaemonLimits
    let store: Store
    let policy: AccessPolicy
    let quotas: StorageQuotas
    let logger: Logger
    let face: FaceMethods
    let finger: FingerMethods
    /// Account-password proofs under way (auth.password.begin → root helper → auth.password.proven).
    let proofs: PasswordProofs
    /// Whether the lid is closed (logind): a face attempt on a camera in the lid is skipped.
    var lid: LidSensor = .logind

    func register(in table: inout MethodTable) {
        // A change to the user's factors: fresh authentication, or the old PIN passed in this
        // call (checked below before anything changes).
        table.register(Method.pinSet, .selfReverifiedOrAdmin("set the PIN of", user: { $0.user }, factorInCall: { $0.oldPIN != nil }), pinSet)
        table.register(Method.pinVerify, .selfOrAdmin("verify the PIN of") { $0.user }, grants: .reverification, pinVerify)
        table.register(Method.authPasswordBegin, .selfOrAdmin("prove the password of") { $0.user }, authPasswordBegin)
        // Only root's report counts: the helper that ran PAM (biometricd-password) runs as root.
        table.register(Method.authPasswordProven, .root("auth.password.proven"), authPasswordProven)
        table.register(Method.pinReset, .admin("pin.reset"), pinReset)

        table.register(Method.authPolicyGet, .selfOrAdmin("read the policy of") { $0.user }, authPolicyGet)
        table.register(Method.authPolicySet, .selfReverifiedOrAdmin("set the policy of") { $0.user }, authPolicySet)
        table.register(Method.authLockoutClear, .admin("auth.lockout.clear"), authLockoutClear)
        table.register(Method.authStatus, .selfOrAdmin("read the authentication status of") { $0.user }, authStatus)
        table.register(Method.authAuthenticate,
                       Access.selfOrAdminOrStepUp("authenticate", user: { $0.user }, loginStepUp: { $0.stepUp != nil })
                           .rootOnly { $0.otherUser == true ? "other_user" : nil },
                       requires: .loginCapture, grants: .authentication, authAuthenticate)

        table.register(Method.keyRegister, .selfReverifiedOrAdmin("register a key for") { $0.user }, keyRegister)
        table.register(Method.keyList, .selfOrAdmin("list the keys of") { $0.user }, keyList)
        table.register(Method.keyDeregister, .selfReverifiedOrAdmin("deregister the keys of") { $0.user }, keyDeregister)
        table.register(Method.keySign, .selfOrAdmin("sign with a key of") { $0.user }, requires: .loginCapture, grants: .lockoutReset, keySign)
    }

    // MARK: Handlers, one per method, named after it

    /// pin.set
    func pinSet(_ context: CallContext, _ p: PINSetParams) async throws -> PINResult {
        try auth.checkFormat(p.pin)
        if !context.peer.isAdmin {
            // A locked PIN stays locked until an administrator resets it (SPEC §4), whatever
            // else the user proved since: a face match does not unlock it.
            if let state = try store.pins.get(user: p.user), state.isLocked(maxRetries: auth.pinMaxRetries) {
                throw PINRefusal.locked(failures: state.failures)
            }
            // Admitted on the strength of old_pin alone (not freshly authenticated): the old
            // PIN must be right.
            if !context.connection.reverification.isFresh(p.user) {
                guard try store.pins.get(user: p.user) != nil, let old = p.oldPIN else {
                    // No PIN to check old_pin against: the same refusal as without it.
                    throw policy.refusal(.reverificationNeeded, rule: .selfReverifiedOrAdmin, action: "set the PIN of",
                                         peer: context.peer, user: p.user) ?? RPCError.internal("no refusal")
                }
                let check = try await auth.verifyPIN(user: p.user, pin: old, caller: context.peer.uid)
                guard check.ok else {
                    await auth.holdReply()
                    return PINResult(ok: false, retriesLeft: check.retriesLeft)
                }
            }
        }
        try await auth.setPIN(user: p.user, pin: p.pin, caller: context.peer.uid)
        return PINResult(ok: true, retriesLeft: try store.pins.get(user: p.user)?.retriesLeft(maxRetries: auth.pinMaxRetries))
    }

    /// pin.verify
    func pinVerify(_ context: CallContext, _ p: PINVerifyParams) async throws -> PINResult {
        let outcome = try await auth.verifyPIN(user: p.user, pin: p.pin, caller: context.peer.uid)
        context.settle(user: p.user, factor: .pin, verdict: outcome.ok ? .matched : .noMatch)
        await auth.holdReply()
        return PINResult(ok: outcome.ok, retriesLeft: outcome.retriesLeft)
    }

    /// auth.password.begin
    func authPasswordBegin(_ context: CallContext, _ p: PasswordBeginParams) async throws -> PasswordBeginResult {
        guard let nonce = proofs.begin(user: p.user, connection: context.connection) else {
            throw Admission.refused(.queuePerUser, max: PasswordProofs.maxPendingPerUser).error!
        }
        return PasswordBeginResult(nonce: nonce, expiresS: PasswordProofs.lifetimeSeconds)
    }

    /// auth.password.proven
    func authPasswordProven(_ context: CallContext, _ p: PasswordProvenParams) async throws -> OKResult {
        guard proofs.proven(user: p.user, nonce: p.nonce) else {
            throw RPCError.app(.notFound, "no password proof of '\(p.user)' waits for that nonce (expired, used, or its connection closed)")
        }
        logger.notice("account password of '\(LogText(p.user))' proven (reported by uid \(context.peer.uid))")
        return OKResult(ok: true)
    }

    /// pin.reset
    func pinReset(_ context: CallContext, _ p: PINResetParams) async throws -> PINResult {
        do {
            try store.pins.reset(user: p.user, removePIN: p.removePIN ?? false)
        } catch {
            // (A pattern on the typed error here crashes Swift 6.3.1's SIL ownership check.)
            guard case .notFound = error else { throw error }
            throw RPCError.userNotEnrolled(p.user)
        }
        logger.notice("PIN of '\(LogText(p.user))' reset by uid \(context.peer.uid)\(p.removePIN == true ? " (removed)" : "")")
        let pin = try store.pins.get(user: p.user)
        return PINResult(ok: true, retriesLeft: pin?.retriesLeft(maxRetries: auth.pinMaxRetries))
    }

    /// auth.policy.get
    func authPolicyGet(_ context: CallContext, _ p: UserParams) async throws -> PolicyResult {
        guard let current = try store.policies.get(user: p.user) else {
            throw RPCError.userNotEnrolled(p.user)
        }
        return Self.wire(current, user: p.user)
    }

    /// auth.policy.set
    func authPolicySet(_ context: CallContext, _ p: PolicySetParams) async throws -> PolicyResult {
        var next = try store.policies.get(user: p.user) ?? AuthPolicy()
        if let mode = p.mode { next.factors = mode.factors }
        if let factors = p.factors { next.factors = FactorName.factors(factors) }
        if let live = p.requireLiveness {
            if !live && next.requireLiveness && !context.peer.isAdmin {
                throw RPCError.app(.permissionDenied, "only an administrator may turn off liveness checks",
                                   hint: "liveness is what refuses a photo of you")
            }
            next.requireLiveness = live
        }
        try store.policies.set(user: p.user, next)
        logger.notice("policy of '\(LogText(p.user))' set by uid \(context.peer.uid): \(next.factors.map(\.rawValue)) liveness \(next.requireLiveness)")
        return Self.wire(next, user: p.user)
    }

    /// auth.lockout.clear
    func authLockoutClear(_ context: CallContext, _ p: LockoutClearParams) async throws -> OKResult {
        if let user = p.user {
            guard try store.lockouts.clear(user: user) else { throw RPCError.userNotEnrolled(user) }
            logger.notice("biometric lockout of '\(LogText(user))' cleared by uid \(context.peer.uid)")
        } else if let camera = p.camera {
            try store.lockouts.clear(camera: camera)
            logger.notice("identification lockout of camera '\(LogText(camera))' cleared by uid \(context.peer.uid)")
        }
        return OKResult(ok: true)
    }

    /// auth.status
    func authStatus(_ context: CallContext, _ p: UserParams) async throws -> AuthStatusResult {
        return try auth.status(user: p.user)
    }

    /// auth.authenticate
    func authAuthenticate(_ context: CallContext, _ p: AuthenticateParams) async throws -> AuthenticateResult {
        var factors = p.factors.map(FactorName.factors)
        if let stepUp = p.stepUp {
            // Completing an identification of this connection: bound to that call, its
            // candidates, and a factor other than the one that could not tell them apart.
            guard let pending = context.takeStepUp(stepUp, user: p.user) else {
                throw RPCError.app(.notFound, "no identification \(stepUp) of this connection waits for a step-up naming '\(p.user)'",
                                   hint: "step_up takes the id of a face.identify or finger.identify call on this connection that answered step_up_required, within \(StepUps.lifetimeSeconds) s")
            }
            factors = (factors ?? [.pin]).filter { $0 != pending.modality }
            guard !(factors ?? []).isEmpty else {
                throw RPCError.invalidParams(field: "factors", "a step-up needs a factor other than \(pending.modality.rawValue)")
            }
        }
        var context = context
        context.startedByOtherUser = p.otherUser == true
        let run = try await authenticate(user: p.user, override: factors, pin: p.pin,
                                         camera: p.camera, timeoutMs: AuthenticateParams.timeoutMs(p.timeoutMs), context: context,
                                         requireArrival: p.requireArrival == true)
        await auth.holdReply()
        return run.wire
    }

    /// key.register
    func keyRegister(_ context: CallContext, _ p: KeyRegisterParams) async throws -> KeyInfo {
        let key = BoundKey.generate()
        let record = try store.keys.add(user: p.user, appID: p.appID, aaid: p.aaid, handle: key.handle,
                                      publicKeyPEM: key.publicKeyPEM, privateKey: key.privateKey,
                                      quota: quotas.quota(.keys, isAdmin: context.peer.isAdmin))
        logger.notice("key registered for '\(LogText(p.user))' (\(p.aaid), app \(p.appID.prefix(60)))")
        return Self.wire(record)
    }

    /// key.list
    func keyList(_ context: CallContext, _ p: UserParams) async throws -> KeyListResult {
        return KeyListResult(keys: try store.keys.list(user: p.user).map(Self.wire),
                             fidoCredentials: try store.fido.credentials(user: p.user).compactMap(FIDOListing.wire))
    }

    /// key.deregister
    func keyDeregister(_ context: CallContext, _ p: KeyDeregisterParams) async throws -> RemovedResult {
        do {
            let n = try store.keys.remove(user: p.user, handle: p.keyHandle)
            logger.notice("\(n) key(s) of '\(LogText(p.user))' deregistered")
            return RemovedResult(removed: n)
        } catch {
            // (A pattern on the typed error here crashes Swift 6.3.1's SIL ownership check.)
            guard case .notFound = error else { throw error }
            throw RPCError.app(.notFound, "no key '\(p.keyHandle ?? "")' for user '\(p.user)'")
        }
    }

    /// key.sign
    func keySign(_ context: CallContext, _ p: KeySignParams) async throws -> KeySignResult {
        // Another user's key answers like an unknown one.
        guard let key = try store.keys.get(handle: p.keyHandle), key.user == p.user else {
            throw RPCError.app(.notFound, "no key '\(p.keyHandle)' for user '\(p.user)'", hint: "list keys with authctl key list")
        }
        let userPolicy = try store.policies.get(user: p.user) ?? AuthPolicy()
        var outcome: AuthenticateResult?
        if !userPolicy.factors.isEmpty {
            let result = try await authenticate(user: p.user, override: nil, pin: p.pin, camera: p.camera,
                                                timeoutMs: KeySignParams.timeoutMs(p.timeoutMs), context: context).wire
            guard result.ok else {
                await auth.holdReply()
                return KeySignResult(ok: false, keyHandle: key.handle, signature: nil, authenticatorData: nil, counter: nil,
                                     userVerified: false, factor: nil, tried: result.tried, skipped: result.skipped)
            }
            outcome = result
        }
        let (counter, privateKey) = try store.keys.nextSignature(handle: key.handle)
        let signature = try BoundKey.sign(privateKey: privateKey, appID: key.appID, challenge: p.challengeBytes ?? Data(),
                                          userVerified: outcome != nil, counter: counter)
        logger.notice("key.sign for '\(LogText(p.user))' (\(key.aaid)) counter \(counter) after \(outcome?.factor ?? "no factor (policy none)")")
        return KeySignResult(ok: true, keyHandle: key.handle, signature: signature.der.base64EncodedString(),
                             authenticatorData: signature.authenticatorData.base64EncodedString(), counter: Int(counter),
                             userVerified: outcome != nil, factor: outcome?.factor, tried: outcome?.tried ?? [],
                             skipped: outcome?.skipped ?? [])
    }

    static func wire(_ policy: AuthPolicy, user: String) -> PolicyResult {
        PolicyResult(user: user, factors: policy.factors.map(\.rawValue), mode: policy.mode?.rawValue ?? "custom",
                     requireLiveness: policy.requireLiveness)
    }

    static func wire(_ key: KeyRecord) -> KeyInfo {
        KeyInfo(keyHandle: key.handle, user: key.user, appID: key.appID, aaid: key.aaid, publicKey: key.publicKeyPEM,
                counter: Int(key.counter), created: key.created)
    }

    // MARK: The factor runner

    /// auth.authenticate and key.sign: the user's factors in order (`FactorRunner`, in Auth),
    /// each run here by the face, finger and PIN methods and reported back as a typed result.
    /// Each factor runs under the calling method's declaration (a trusted camera; what it grants)
    /// with its knobs built here at the floors; a biometric factor passes only when its match
    /// proved the user (`TrustPolicy`). Errors are kept for what no factor could even start on
    /// (unknown user, nothing enrolled, everything locked).
    /// `forceLiveness`: liveness on whatever the user's policy says (the FIDO authenticator's UV).
    func authenticate(user: String, override: [Factor]?, pin: String?, camera: String?, timeoutMs: Int,
                      context: CallContext, forceLiveness: Bool = false, requireArrival: Bool = false) async throws
        -> AuthenticationRun
    {
        let started = monotonicNanoseconds()
        guard let record = try store.users.named(user), let userPolicy = try store.policies.get(user: user) else {
            throw RPCError.userNotEnrolled(user)
        }
        var enrolled = Set<Factor>()
        if record.faceTemplates > 0 { enrolled.insert(.face) }
        if record.fingerTemplates > 0 { enrolled.insert(.finger) }
        if record.pinSet { enrolled.insert(.pin) }
        let live = userPolicy.requireLiveness || forceLiveness
        let deadline = started + UInt64(timeoutMs) * 1_000_000
        let runner = FactorRunner(policy: userPolicy, override: override)
        // The first lockout refusal, rethrown (typed) when nothing could be tried.
        let lockRefusal = Mutex<LockoutRefusal?>(nil)
        let floors = limits.callers
        let run = try await runner.run(
            FactorRunner.User(enrolled: enrolled, pinGiven: pin != nil),
            remainingMs: { Int((Int64(deadline) - Int64(monotonicNanoseconds())) / 1_000_000) },
            starting: { factor, index, count in
                context.emit(AuthFactorEvent(factor: factor.rawValue, name: factor.friendlyName, index: index, of: count))
            },
            attempt: { factor, remainingMs in
                context.run.startRun()
                do {
                    switch factor {
                    case .face:
                        // A closed lid hides the built-in camera: skipped at once, not after the
                        // time-out (issue 36). A camera on a removable USB port (docked) still runs.
                        if lid.read() == true, face.leases.cameras.inLid(camera, for: .face) == true {
                            logger.info("auth.authenticate \(LogText(user)): the lid is closed: the face camera in it is skipped")
                            return .error(.other, code: ErrorReason.noCamera.code, reason: ErrorReason.noCamera.rawValue,
                                          message: "the lid is closed: the camera in it cannot see you")
                        }
                        let params = FaceVerifyParams(user: user, camera: camera, mode: live ? .liveness : .image,
                                                      timeoutMs: min(300_000, remainingMs))
                        context.run.judged(floors.judge(params.captureAsk, isAdmin: false, livenessRequired: live))
                        let (r, proven) = try await face.verify(params, context, requireArrival: requireArrival)
                        guard r.match else {
                            return .failed(message: "the face did not match (score \(r.score))", score: r.score, retriesLeft: nil)
                        }
                        return proven ? .passed(score: r.score) : .failed(message: "the face matched but proves nothing here", score: r.score, retriesLeft: nil)
                    case .finger:
                        var capture = FingerCaptureSettings()
                        capture.liveness = live ? .low : LivenessLevel.none
                        capture.timeoutS = max(1, min(120, remainingMs / 1000))
                        let params = FingerAuthParams(user: user, camera: camera, capture: capture)
                        context.run.judged(floors.judge(params.captureAsk, isAdmin: false, livenessRequired: live))
                        let (r, proven) = try await finger.verify(params, user: user, context)
                        guard r.match else {
                            return .failed(message: "no finger matched (score \(r.score))", score: r.score, retriesLeft: nil)
                        }
                        return proven ? .passed(score: r.score) : .failed(message: "the finger matched but proves nothing here", score: r.score, retriesLeft: nil)
                    case .pin:
                        let r = try await auth.verifyPIN(user: user, pin: pin ?? "", caller: context.peer.uid)
                        context.settle(user: user, factor: .pin, verdict: r.ok ? .matched : .noMatch)
                        return r.ok ? .passed(score: nil) : .failed(message: "wrong PIN", score: nil, retriesLeft: r.retriesLeft)
                    }
                } catch let refusal as LockoutRefusal {
                    lockRefusal.withLock { if $0 == nil { $0 = refusal } }
                    return .lockedOut(retryAfterS: refusal.retryAfterSeconds)
                } catch PINRefusal.locked {
                    return .pinLocked
                } catch is CancellationError {
                    throw CancellationError()
                } catch {
                    // The SPEC §6 words for the caller's `tried` list; the kind for decisions.
                    let words = RPCError.from(error)
                    return .error(FactorRunner.FailureKind(error: error), code: words.code, reason: words.reason ?? "error", message: words.message)
                }
            })
        let durationMs = Int((monotonicNanoseconds() - started) / 1_000_000)
        if run.pinFallback { logger.notice("auth.authenticate '\(LogText(user))': biometrics locked, the PIN stood in (KOBIL's temporary switch)") }
        switch run.outcome {
        case .passed, .failed:
            return AuthenticationRun(user: user, run: run, durationMs: durationMs)
        case .lockedOut(let retryAfter):
            var refusal = lockRefusal.withLock { $0 }
                ?? LockoutRefusal(subject: .user(user), status: retryAfter.map { .lockedFor(seconds: $0) } ?? .lockedUntilPIN, failures: 0)
            refusal.pinFallback = enrolled.contains(.pin) && pin == nil
            throw refusal
        case .noFactorInPolicy:
            throw RPCError.app(.notFound, "the policy of '\(user)' has no factor to authenticate with",
                               hint: "set factors: authctl auth policy set \(user) face,finger,pin")
        case .nothingEnrolled:
            throw RPCError.app(.notFound, "user '\(user)' has no enrolled factor among \(runner.plan.map(\.rawValue).joined(separator: ", "))",
                               hint: "enrol a face or fingers, or set a PIN", details: ["user": .string(user)])
        }
    }
}

/// One auth.authenticate run, typed: the FIDO authenticator reads it as it is
/// (`FIDOVerdict`), the socket gets `wire`.
struct AuthenticationRun: Sendable, Equatable {
    var user: String
    var run: FactorRunner.Run
    var durationMs: Int

    /// The factor that passed, nil when none did.
    var passed: Factor? {
        if case .passed(let factor, _) = run.outcome { return factor }
        return nil
    }

    var wire: AuthenticateResult {
        let tried = run.tried.map {
            FactorAttempt(factor: $0.factor.rawValue, name: $0.factor.friendlyName, code: $0.code, reason: $0.reason, message: $0.message,
                          score: $0.score, retriesLeft: $0.retriesLeft)
        }
        let skipped = run.skipped.map { FactorSkip(factor: $0.factor.rawValue, reason: $0.reason.rawValue, retryAfterS: $0.retryAfterS) }
        if case .passed(let factor, let score) = run.outcome {
            return AuthenticateResult(ok: true, factor: factor.rawValue, user: user, score: score, tried: tried, skipped: skipped,
                                      durationMs: durationMs)
        }
        return AuthenticateResult(ok: false, factor: nil, user: user, score: nil, tried: tried, skipped: skipped, durationMs: durationMs)
    }
}
