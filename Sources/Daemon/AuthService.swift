import BiometricAuth
import BiometricCamera
import BiometricCore
import BiometricFIDO
import BiometricProtocol
import BiometricStore
import Foundation
import Logging

/// The authentication layer's state keeper: PIN hashing and checks (one at a time, so a PIN's
/// wrong-attempt count is exact and Argon2's memory stays bounded; in a fair queue, so one uid's
/// flood of PIN checks delays another uid's by one check at most), and the biometric lockout
/// that face and finger sessions consult before and report to after an attempt. Everything it
/// counts is in the store before the caller replies.
final class AuthService: Sendable {
    let store: Store
    let lockoutRules: LockoutRules
    let pinRules: PINRules
    let pinMaxRetries: Int
    let hasher: PINHasher
    private let holdRepliesMs: Int
    private let pins: FairQueue
    /// PIN checks of one user run one at a time (the queue runs two of different callers at once).
    private let userLocks = UserLocks()
    private let logger: Logger

    init(store: Store, configuration: DaemonConfiguration, pins: FairQueue, logger: Logger, hasher: PINHasher = PINHasher()) {
        self.pins = pins
        self.store = store
        lockoutRules = configuration.lockout
        pinRules = configuration.pinRules
        pinMaxRetries = configuration.pinMaxRetries
        holdRepliesMs = configuration.isProductionInstance ? 0 : configuration.testHoldRepliesMs
        self.hasher = hasher
        self.logger = logger
    }

    static var now: Double { Date().timeIntervalSince1970 }

    /// Test hook (refused in production): a pause after an outcome is stored, before the reply.
    func holdReply() async {
        guard holdRepliesMs > 0 else { return }
        try? await Task.sleep(nanoseconds: UInt64(holdRepliesMs) * 1_000_000)
    }

    // MARK: Biometric lockout

    /// Throws `LockoutRefusal` (locked_out 5001 at the edge) when `user`'s biometrics are locked.
    func checkBiometric(_ user: String) throws(LockoutRefusal) {
        try check(.user(user)) { try store.lockouts.get(user: user) }
    }

    /// Refuses when `subject`'s lock (read by `read`) is closed; a store that cannot be read
    /// fails closed.
    private func check(_ subject: LockoutRefusal.Subject, _ read: () throws -> LockoutState) throws(LockoutRefusal) {
        guard let state = try? read() else { throw LockoutRefusal(subject: subject, status: .lockedUntilPIN, failures: 0) }
        let status = state.status(now: Self.now, rules: lockoutRules)
        guard status == .open else { throw LockoutRefusal(subject: subject, status: status, failures: state.failures) }
    }

    /// Applies an attempt's lockout effect (decided by `TrustPolicy`, applied by `TrustLedger`):
    /// a proven success starts the count again, a no-match or a presentation attack is one more
    /// failure, anything else leaves it.
    func apply(_ effect: AttemptVerdict.LockoutEffect, to user: String, verdict: AttemptVerdict, modality: String) {
        guard effect != .none else { return }
        do {
            let rules = lockoutRules
            let state = try store.lockouts.update(user: user) { $0.apply(effect, now: Self.now, rules: rules) }
            if effect == .countFailure {
                logger.notice("\(modality) failure for '\(LogText(user))' (\(verdict)): \(state.summary(now: Self.now, rules: rules, untilWhat: "a PIN"))")
            }
        } catch StoreError.notFound {
            // No such user: nothing to count (verify refused them before any capture).
        } catch {
            logger.error("cannot record a \(modality) attempt of '\(LogText(user))': \(error)")
        }
    }

    // MARK: 1:N lockout per camera

    /// Throws `LockoutRefusal` (locked_out 5001 with `data.camera` at the edge) when
    /// identification on `camera` is locked: after `failuresToLock` attempts in a row that saw a
    /// face and matched nobody, for `lockSeconds`; after `failuresToRequirePIN`, until an
    /// administrator clears it (auth.lockout.clear). A door or a greeter is then no oracle for
    /// trying faces.
    func checkCamera(_ camera: String) throws(LockoutRefusal) {
        try check(.camera(camera)) { try store.lockouts.get(camera: camera) }
    }

    /// Counts an identification on `camera` by its verdict.
    func recordCamera(_ camera: String, _ verdict: AttemptVerdict) {
        let effect = verdict.lockoutEffect
        guard effect != .none else { return }
        do {
            let rules = lockoutRules
            let state = try store.lockouts.update(camera: camera) { $0.apply(effect, now: Self.now, rules: rules) }
            if effect == .countFailure {
                logger.notice("identify on '\(LogText(camera))' (\(verdict)): \(state.summary(now: Self.now, rules: rules, untilWhat: "an admin clears it"))")
            }
        } catch {
            logger.error("cannot record an identification on '\(LogText(camera))': \(error)")
        }
    }

    // MARK: PIN

    func checkFormat(_ pin: String, field: String = "pin") throws(PINRefusal) {
        if let violation = pinRules.check(pin) { throw .format(violation, field: field) }
    }

    struct PINOutcome: Sendable {
        var ok: Bool
        var retriesLeft: Int?
    }

    /// Checks `pin` against the user's PIN and counts the attempt. Throws pin_format (nothing
    /// counted), pin_not_set, pin_locked.
    /// `caller` is the uid whose turn in the fair queue this takes.
    func verifyPIN(user: String, pin: String, caller: UInt32) async throws -> PINOutcome {
        try checkFormat(pin)
        let store = self.store, max = pinMaxRetries, hasher = self.hasher, locks = userLocks
        // One check of this user's PIN at a time: the locked test, the hash and the count are one step.
        let outcome = try await pins.run(owner: caller) { () throws -> PINOutcome in
          try locks.withLock(user) { () throws -> PINOutcome in
            guard let state = try store.pins.get(user: user) else { throw PINRefusal.notSet(user: user) }
            guard !state.isLocked(maxRetries: max) else { throw PINRefusal.locked(failures: state.failures) }
            let ok = try PINHasher.verify(pin, against: state.hash)
            var rehash: String?
            if ok, let old = try? PINHasher.parameters(of: state.hash), old.isWeaker(than: hasher.parameters) {
                rehash = try? hasher.hash(pin)
            }
            let after = try store.pins.recordAttempt(user: user, success: ok, rehash: rehash)
            return PINOutcome(ok: ok, retriesLeft: after.retriesLeft(maxRetries: max))
          }
        }
        logger.notice("pin.verify '\(LogText(user))': \(outcome.ok ? "correct" : "wrong")\(outcome.retriesLeft.map { ", \($0) retries left" } ?? "")")
        return outcome
    }

    func setPIN(user: String, pin: String, caller: UInt32) async throws {
        try checkFormat(pin)
        let store = self.store, hasher = self.hasher
        let locks = userLocks
        // With it, the CTAP form (FIDO clientPIN sends LEFT(SHA-256(PIN), 16), never the PIN).
        try await pins.run(owner: caller) {
            try locks.withLock(user) {
                try store.pins.set(user: user, hash: try hasher.hash(pin), ctapHash: try hasher.hash(CTAPPINHash.text(ofPIN: pin)))
            }
        }
        logger.notice("PIN set for '\(LogText(user))'")
    }

    /// FIDO clientPIN: checks LEFT(SHA-256(PIN), 16) against the CTAP form of `user`'s PIN and
    /// counts the attempt on the daemon PIN's own counter (a right one clears it and the
    /// biometric lockout, as pin.verify does). In the same fair queue and per-user lock as pin.verify.
    func verifyCTAPPIN(user: String, pinHash: [UInt8], caller: UInt32) async throws -> PINCheck {
        // (A hash of another length simply does not match, and counts like any wrong PIN.)
        let store = self.store, max = pinMaxRetries, locks = userLocks
        let outcome = try await pins.run(owner: caller) { () throws -> PINCheck in
            try locks.withLock(user) { () throws -> PINCheck in
                guard let state = try store.pins.get(user: user), let ctap = try store.pins.ctapHash(user: user) else { return .notSet }
                guard !state.isLocked(maxRetries: max) else { return .blocked }
                let ok = try PINHasher.verify(CTAPPINHash.text(ofHash: pinHash), against: ctap)
                let after = try store.pins.recordAttempt(user: user, success: ok)
                if ok { return .correct }
                return .wrong(retriesLeft: after.retriesLeft(maxRetries: max) ?? CTAPPINHash.unlimitedRetries)
            }
        }
        logger.notice("FIDO clientPIN '\(LogText(user))': \(outcome)")
        return outcome
    }

    func status(user: String) throws -> AuthStatusResult {
        guard try store.users.named(user) != nil else {
            throw RPCError.userNotEnrolled(user)
        }
        let lock = try store.lockouts.get(user: user)
        let pin = try store.pins.get(user: user)
        var retryAfter: Int?
        var locked = false
        switch lock.status(now: Self.now, rules: lockoutRules) {
        case .open: break
        case .lockedFor(let s): (locked, retryAfter) = (true, s)
        case .lockedUntilPIN: locked = true
        }
        return AuthStatusResult(user: user, lockedOut: locked, retryAfterS: retryAfter, requiresPIN: lock.requiresPIN,
                                biometricFailures: lock.failures, pinSet: pin != nil,
                                pinLocked: pin?.isLocked(maxRetries: pinMaxRetries) ?? false,
                                pinRetriesLeft: pin?.retriesLeft(maxRetries: pinMaxRetries))
    }
}
