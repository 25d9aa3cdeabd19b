import BiometricAuth
import BiometricCamera
import BiometricCore
import BiometricProtocol
import BiometricStore
import Foundation
import Logging

/// pin.*, auth.* and key.*: PIN, policy, lockout status, auth.authenticate and biometric-bound
/// keys (SPEC §4). The biometric factors run through the face and finger methods.
struct AuthMethods: MethodGroup {
    let auth: AuthService
    let store: TemplateStore
    let policy: AccessPolicy
    let quotas: StorageQuotas
    let logger: Logger
    let face: FaceMethods
    let finger: FingerMethods
    /// Account-password proofs under way (auth.password.begin → root helper → auth.password.proven).
    let proofs: PasswordProofs

    func register(in table: inout MethodTable) {
        // A change to the user's factors: fresh authentication, or the old PIN passed in this
        // call (checked below before anything changes).
        table.register(Method.pinSet, .selfReverifiedOrAdmin("set the PIN of", user: { $0.user }, factorInCall: { $0.oldPIN != nil })) {
            [self] (context, p: PINSetParams) in
            try auth.checkFormat(p.pin)
            // Admitted on the strength of old_pin alone (not freshly authenticated, not an admin):
            // the old PIN must be right. An administrator's set also unlocks a locked PIN.
            if !context.peer.isAdmin && !context.connection.reverification.isFresh(p.user) {
                guard try store.pin(user: p.user) != nil, let old = p.oldPIN else {
                    throw RPCError.app(.permissionDenied, "setting a PIN needs a fresh authentication or the old PIN ('old_pin')",
                                       hint: "authenticate first (face, finger, or your account password if you have no factor yet)",
                                       details: ["reverification_required": true, "user": .string(p.user)])
                }
                let check = try await auth.verifyPIN(user: p.user, pin: old, caller: context.peer.uid)
                guard check.ok else {
                    await auth.holdReply()
                    return PINResult(ok: false, retriesLeft: check.retriesLeft)
                }
            }
            try await auth.setPIN(user: p.user, pin: p.pin, caller: context.peer.uid)
            return PINResult(ok: true, retriesLeft: try store.pin(user: p.user)?.retriesLeft(maxRetries: auth.pinMaxRetries))
        }
        table.register(Method.pinVerify, .selfOrAdmin("verify the PIN of") { $0.user }) { [self] (context, p: PINVerifyParams) in
            let outcome = try await auth.verifyPIN(user: p.user, pin: p.pin, caller: context.peer.uid)
            if outcome.ok { context.authenticated(as: p.user) }
            await auth.holdReply()
            return PINResult(ok: outcome.ok, retriesLeft: outcome.retriesLeft)
        }
        table.register(Method.authPasswordBegin, .selfOrAdmin("prove the password of") { $0.user }) { [self] (context, p: PasswordBeginParams) in
            guard let nonce = proofs.begin(user: p.user, connection: context.connection) else {
                throw Admission.refused(.queuePerUser, max: PasswordProofs.maxPendingPerUser).error!
            }
            return PasswordBeginResult(nonce: nonce, expiresS: PasswordProofs.lifetimeSeconds)
        }
        // Only root's report counts: the helper that ran PAM (biometricd-password) runs as root.
        table.register(Method.authPasswordProven, .root("auth.password.proven")) { [self] (context, p: PasswordProvenParams) in
            guard proofs.proven(user: p.user, nonce: p.nonce) else {
                throw RPCError.app(.notFound, "no password proof of '\(p.user)' waits for that nonce (expired, used, or its connection closed)")
            }
            logger.notice("account password of '\(p.user)' proven (reported by uid \(context.peer.uid))")
            return OKResult(ok: true)
        }
        table.register(Method.pinReset, .admin("pin.reset")) { [self] (context, p: PINResetParams) in
            do {
                try store.resetPIN(user: p.user, removePIN: p.removePIN ?? false)
            } catch StoreError.notFound {
                throw RPCError.userNotEnrolled(p.user)
            }
            logger.notice("PIN of '\(p.user)' reset by uid \(context.peer.uid)\(p.removePIN == true ? " (removed)" : "")")
            let pin = try store.pin(user: p.user)
            return PINResult(ok: true, retriesLeft: pin?.retriesLeft(maxRetries: auth.pinMaxRetries))
        }

        table.register(Method.authPolicyGet, .selfOrAdmin("read the policy of") { $0.user }) { [self] (context, p: UserParams) in
            guard let current = try store.policy(user: p.user) else {
                throw RPCError.userNotEnrolled(p.user)
            }
            return Self.wire(current, user: p.user)
        }
        table.register(Method.authPolicySet, .selfReverifiedOrAdmin("set the policy of") { $0.user }) { [self] (context, p: PolicySetParams) in
            var next = try store.policy(user: p.user) ?? AuthPolicy()
            if let mode = p.mode.flatMap({ AuthPolicy.Mode(rawValue: $0.rawValue) }) { next.factors = mode.factors }
            if let factors = p.factors { next.factors = factors.compactMap(Factor.init(rawValue:)) }
            if let live = p.requireLiveness {
                if !live && next.requireLiveness && !context.peer.isAdmin {
                    throw RPCError.app(.permissionDenied, "only an administrator may turn off liveness checks",
                                       hint: "liveness is what refuses a photo of you")
                }
                next.requireLiveness = live
            }
            try store.setPolicy(user: p.user, next)
            logger.notice("policy of '\(p.user)' set by uid \(context.peer.uid): \(next.factors.map(\.rawValue)) liveness \(next.requireLiveness)")
            return Self.wire(next, user: p.user)
        }
        table.register(Method.authStatus, .selfOrAdmin("read the authentication status of") { $0.user }) { [self] (context, p: UserParams) in
            return try auth.status(user: p.user)
        }
        table.register(Method.authAuthenticate, .selfOrAdmin("authenticate") { $0.user }) { [self] (context, p: AuthenticateParams) in
            let result = try await authenticate(user: p.user, override: p.factors?.compactMap(Factor.init(rawValue:)), pin: p.pin,
                                                camera: p.camera, timeoutMs: AuthenticateParams.timeoutMs(p.timeoutMs), context: context)
            if result.ok { context.authenticated(as: p.user) }
            await auth.holdReply()
            return result
        }

        table.register(Method.keyRegister, .selfReverifiedOrAdmin("register a key for") { $0.user }) { [self] (context, p: KeyRegisterParams) in
            let key = BoundKey.generate()
            let record = try store.addKey(user: p.user, appID: p.appID, aaid: p.aaid, handle: key.handle,
                                          publicKeyPEM: key.publicKeyPEM, privateKey: key.privateKey,
                                          quota: quotas.quota(.keys, isAdmin: context.peer.isAdmin))
            logger.notice("key registered for '\(p.user)' (\(p.aaid), app \(p.appID.prefix(60)))")
            return Self.wire(record)
        }
        table.register(Method.keyList, .selfOrAdmin("list the keys of") { $0.user }) { [self] (context, p: UserParams) in
            return KeyListResult(keys: try store.keys(user: p.user).map(Self.wire))
        }
        table.register(Method.keyDeregister, .selfOrAdmin("deregister the keys of") { $0.user }) { [self] (context, p: KeyDeregisterParams) in
            do {
                let n = try store.removeKeys(user: p.user, handle: p.keyHandle)
                logger.notice("\(n) key(s) of '\(p.user)' deregistered")
                return RemovedResult(removed: n)
            } catch StoreError.notFound {
                throw RPCError.app(.notFound, "no key '\(p.keyHandle ?? "")' for user '\(p.user)'")
            }
        }
        table.register(Method.keySign, .selfOrAdmin("sign with a key of") { $0.user }) { [self] (context, p: KeySignParams) in
            // Another user's key answers like an unknown one.
            guard let key = try store.key(handle: p.keyHandle), key.user == p.user else {
                throw RPCError.app(.notFound, "no key '\(p.keyHandle)' for user '\(p.user)'", hint: "list keys with authctl key list")
            }
            let userPolicy = try store.policy(user: p.user) ?? AuthPolicy()
            var outcome: AuthenticateResult?
            if !userPolicy.factors.isEmpty {
                let result = try await authenticate(user: p.user, override: nil, pin: p.pin, camera: p.camera,
                                                    timeoutMs: KeySignParams.timeoutMs(p.timeoutMs), context: context)
                guard result.ok else {
                    await auth.holdReply()
                    return KeySignResult(ok: false, keyHandle: key.handle, signature: nil, authenticatorData: nil, counter: nil,
                                         userVerified: false, factor: nil, tried: result.tried, skipped: result.skipped)
                }
                outcome = result
            }
            let (counter, privateKey) = try store.nextSignature(handle: key.handle)
            let signature = try BoundKey.sign(privateKey: privateKey, appID: key.appID, challenge: p.challengeBytes ?? Data(),
                                              userVerified: outcome != nil, counter: counter)
            logger.notice("key.sign for '\(p.user)' (\(key.aaid)) counter \(counter) after \(outcome?.factor ?? "no factor (policy none)")")
            return KeySignResult(ok: true, keyHandle: key.handle, signature: signature.der.base64EncodedString(),
                                 authenticatorData: signature.authenticatorData.base64EncodedString(), counter: Int(counter),
                                 userVerified: outcome != nil, factor: outcome?.factor, tried: outcome?.tried ?? [],
                                 skipped: outcome?.skipped ?? [])
        }
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

    /// Runs the user's factors in order until one passes (Acceptto's manager, KOBIL's modes): a
    /// factor the user has not enrolled is skipped, a failed one falls through to the next. A
    /// negative outcome is a result; errors are kept for what no factor could even start on
    /// (unknown user, nothing enrolled, everything locked).
    func authenticate(user: String, override: [Factor]?, pin: String?, camera: String?, timeoutMs: Int,
                      context: CallContext) async throws -> AuthenticateResult
    {
        let started = monotonicNanoseconds()
        guard let record = try store.user(named: user), let userPolicy = try store.policy(user: user) else {
            throw RPCError.userNotEnrolled(user)
        }
        let (plan, notInPolicy) = userPolicy.plan(override: override)
        var tried: [FactorAttempt] = []
        var skipped = notInPolicy.map { FactorSkip(factor: $0.rawValue, reason: "not_in_policy") }
        var lockError: RPCError?
        let deadline = started + UInt64(timeoutMs) * 1_000_000
        func elapsedMs() -> Int { Int((monotonicNanoseconds() - started) / 1_000_000) }
        func result(_ factor: Factor?, score: Double? = nil) -> AuthenticateResult {
            AuthenticateResult(ok: factor != nil, factor: factor?.rawValue, user: user, score: score, tried: tried,
                               skipped: skipped, durationMs: elapsedMs())
        }

        for (index, factor) in plan.enumerated() {
            let enrolled = switch factor {
            case .face: record.faceTemplates > 0
            case .finger: record.fingerTemplates > 0
            case .pin: record.pinSet
            }
            guard enrolled else {
                skipped.append(FactorSkip(factor: factor.rawValue, reason: "not_enrolled"))
                continue
            }
            if factor == .pin && pin == nil {
                skipped.append(FactorSkip(factor: factor.rawValue, reason: "no_pin_given"))
                continue
            }
            let remainingMs = Int((Int64(deadline) - Int64(monotonicNanoseconds())) / 1_000_000)
            if factor.isBiometric && remainingMs < 1000 {
                skipped.append(FactorSkip(factor: factor.rawValue, reason: "no_time_left"))
                continue
            }
            context.emit(AuthFactorEvent(factor: factor.rawValue, name: factor.friendlyName, index: index, of: plan.count))
            do {
                switch factor {
                case .face:
                    let r = try await face.verify(FaceVerifyParams(user: user, camera: camera,
                                                                  mode: userPolicy.requireLiveness ? .liveness : .image,
                                                                  timeoutMs: min(300_000, remainingMs)), context)
                    if r.match { return result(.face, score: r.score) }
                    tried.append(FactorAttempt(factor: "face", name: factor.friendlyName, code: 0, reason: "no_match",
                                               message: "the face did not match (score \(r.score))", score: r.score))
                case .finger:
                    var capture = FingerCaptureSettings()
                    capture.liveness = userPolicy.requireLiveness ? .low : LivenessLevel.none
                    capture.timeoutS = max(1, min(120, remainingMs / 1000))
                    let r = try await finger.verify(FingerAuthParams(user: user, camera: camera, capture: capture), user: user, context)
                    if r.match { return result(.finger, score: r.score) }
                    tried.append(FactorAttempt(factor: "finger", name: factor.friendlyName, code: 0, reason: "no_match",
                                               message: "no finger matched (score \(r.score))", score: r.score))
                case .pin:
                    let r = try await auth.verifyPIN(user: user, pin: pin ?? "", caller: context.peer.uid)
                    if r.ok { return result(.pin) }
                    tried.append(FactorAttempt(factor: "pin", name: factor.friendlyName, code: 0, reason: "no_match",
                                               message: "wrong PIN", retriesLeft: r.retriesLeft))
                }
            } catch let error as RPCError where error.errorReason == .lockedOut {
                lockError = error
                skipped.append(FactorSkip(factor: factor.rawValue, reason: "locked_out",
                                          retryAfterS: error.data?["retry_after_s"]?.intValue.map { Int($0) }))
            } catch let error as RPCError where error.errorReason == .pinLocked {
                skipped.append(FactorSkip(factor: factor.rawValue, reason: "pin_locked"))
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                let rpc = RPCError.from(error)
                if rpc.errorReason == .canceled { throw rpc }
                tried.append(FactorAttempt(factor: factor.rawValue, name: factor.friendlyName, code: rpc.code,
                                           reason: rpc.reason ?? "error", message: rpc.message))
            }
        }
        if tried.isEmpty {
            if let lockError { throw lockError }
            if plan.isEmpty {
                throw RPCError.app(.notFound, "the policy of '\(user)' has no factor to authenticate with",
                                   hint: "set factors: authctl auth policy set \(user) face,finger,pin")
            }
            if skipped.allSatisfy({ $0.reason == "not_enrolled" || $0.reason == "not_in_policy" }) {
                throw RPCError.app(.notFound, "user '\(user)' has no enrolled factor among \(plan.map(\.rawValue).joined(separator: ", "))",
                                   hint: "enrol a face or fingers, or set a PIN", details: ["user": .string(user)])
            }
        }
        return result(nil)
    }
}
