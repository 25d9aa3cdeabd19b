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
    let store: TemplateStore
    let lockoutRules: LockoutRules
    let pinRules: PINRules
    let pinMaxRetries: Int
    let hasher: PINHasher
    private let holdRepliesMs: Int
    private let pins: FairQueue
    /// PIN checks of one user run one at a time (the queue runs two of different callers at once).
    private let userLocks = UserLocks()
    private let logger: Logger

    init(store: TemplateStore, configuration: DaemonConfiguration, pins: FairQueue, logger: Logger, hasher: PINHasher = PINHasher()) {
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

    /// Throws locked_out (5001) when `user`'s biometrics are locked.
    func checkBiometric(_ user: String) throws {
        let state = try store.lockout(user: user)
        switch state.status(now: Self.now, rules: lockoutRules) {
        case .open: return
        case .lockedFor(let seconds):
            throw RPCError.app(.lockedOut, "too many failed attempts: biometrics are locked for \(seconds) s",
                               hint: "wait, or use your PIN", details: ["retry_after_s": .int(Int64(seconds)), "user": .string(user),
                                                                       "biometric_failures": .int(Int64(state.failures))])
        case .lockedUntilPIN:
            throw RPCError.app(.lockedOut, "too many failed attempts: biometrics are locked until a correct PIN",
                               hint: "enter your PIN (authctl pin verify), or ask an administrator (pin.reset)",
                               details: ["retry_after_s": .null, "requires_pin": true, "user": .string(user),
                                         "biometric_failures": .int(Int64(state.failures))])
        }
    }

    /// Counts a biometric attempt of a known user by its verdict: a match starts the count
    /// again, a no-match or a presentation attack is one more failure, nothing judged leaves it.
    func record(_ user: String, _ verdict: AttemptVerdict, modality: String) {
        let effect = verdict.lockoutEffect
        guard effect != .none else { return }
        do {
            let rules = lockoutRules
            let state = try store.updateLockout(user: user) { $0.apply(effect, now: Self.now, rules: rules) }
            if effect == .countFailure {
                logger.notice("\(modality) failure for '\(user)' (\(verdict)): \(state.summary(now: Self.now, rules: rules, untilWhat: "a PIN"))")
            }
        } catch StoreError.notFound {
            // No such user: nothing to count (verify refused them before any capture).
        } catch {
            logger.error("cannot record a \(modality) attempt of '\(user)': \(error)")
        }
    }

    // MARK: 1:N lockout per camera

    /// Throws locked_out (5001) with `data.camera` when identification on `camera` is locked:
    /// after `failuresToLock` attempts in a row that saw a face and matched nobody, for
    /// `lockSeconds`; after `failuresToRequirePIN`, until an administrator clears it
    /// (auth.lockout.clear). A door or a greeter is then no oracle for trying faces.
    func checkCamera(_ camera: String) throws {
        let state = try store.cameraLockout(camera: camera)
        switch state.status(now: Self.now, rules: lockoutRules) {
        case .open: return
        case .lockedFor(let seconds):
            throw RPCError.app(.lockedOut, "too many unrecognised faces or fingers on camera '\(camera)': identification is locked for \(seconds) s",
                               hint: "wait, or sign in another way", details: ["retry_after_s": .int(Int64(seconds)), "camera": .string(camera),
                                                                               "failures": .int(Int64(state.failures))])
        case .lockedUntilPIN:
            throw RPCError.app(.lockedOut, "too many unrecognised faces or fingers on camera '\(camera)': identification is locked until an administrator clears it",
                               hint: "an administrator: authctl auth unlock --camera \(camera)",
                               details: ["retry_after_s": .null, "requires_admin": true, "camera": .string(camera),
                                         "failures": .int(Int64(state.failures))])
        }
    }

    /// Counts an identification on `camera` by its verdict.
    func recordCamera(_ camera: String, _ verdict: AttemptVerdict) {
        let effect = verdict.lockoutEffect
        guard effect != .none else { return }
        do {
            let rules = lockoutRules
            let state = try store.updateCameraLockout(camera: camera) { $0.apply(effect, now: Self.now, rules: rules) }
            if effect == .countFailure {
                logger.notice("identify on '\(camera)' (\(verdict)): \(state.summary(now: Self.now, rules: rules, untilWhat: "an admin clears it"))")
            }
        } catch {
            logger.error("cannot record an identification on '\(camera)': \(error)")
        }
    }

    // MARK: PIN

    func checkFormat(_ pin: String, field: String = "pin") throws {
        guard let violation = pinRules.check(pin) else { return }
        let (message, details): (String, [String: JSONValue]) = switch violation {
        case .notDigits: ("the PIN must be digits only", [:])
        case .tooShort(let min): ("the PIN must have at least \(min) digits", ["min_length": .int(Int64(min))])
        case .tooLong(let max): ("the PIN must have at most \(max) digits", ["max_length": .int(Int64(max))])
        }
        var all = details
        all["field"] = .string(field)
        throw RPCError.app(.pinFormat, message, details: all)
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
            guard let state = try store.pin(user: user) else {
                throw RPCError.app(.pinNotSet, "user '\(user)' has no PIN", hint: "set one with authctl pin set",
                                   details: ["user": .string(user)])
            }
            guard !state.isLocked(maxRetries: max) else {
                throw RPCError.app(.pinLocked, "the PIN is locked after \(state.failures) wrong attempts",
                                   hint: "an administrator must reset it (authctl pin reset)", details: ["retries_left": 0])
            }
            let ok = try PINHasher.verify(pin, against: state.hash)
            var rehash: String?
            if ok, let old = try? PINHasher.parameters(of: state.hash), old.isWeaker(than: hasher.parameters) {
                rehash = try? hasher.hash(pin)
            }
            let after = try store.recordPINAttempt(user: user, success: ok, rehash: rehash)
            return PINOutcome(ok: ok, retriesLeft: after.retriesLeft(maxRetries: max))
          }
        }
        logger.notice("pin.verify '\(user)': \(outcome.ok ? "correct" : "wrong")\(outcome.retriesLeft.map { ", \($0) retries left" } ?? "")")
        return outcome
    }

    func setPIN(user: String, pin: String, caller: UInt32) async throws {
        try checkFormat(pin)
        let store = self.store, hasher = self.hasher
        let locks = userLocks
        // With it, the CTAP form (FIDO clientPIN sends LEFT(SHA-256(PIN), 16), never the PIN).
        try await pins.run(owner: caller) {
            try locks.withLock(user) {
                try store.setPIN(user: user, hash: try hasher.hash(pin), ctapHash: try hasher.hash(CTAPPINHash.text(ofPIN: pin)))
            }
        }
        logger.notice("PIN set for '\(user)'")
    }

    /// FIDO clientPIN: checks LEFT(SHA-256(PIN), 16) against the CTAP form of `user`'s PIN and
    /// counts the attempt on the daemon PIN's own counter (a right one clears it and the
    /// biometric lockout, as pin.verify does). In the same fair queue and per-user lock as pin.verify.
    func verifyCTAPPIN(user: String, pinHash: [UInt8], caller: UInt32) async throws -> PINCheck {
        // (A hash of another length simply does not match, and counts like any wrong PIN.)
        let store = self.store, max = pinMaxRetries, locks = userLocks
        let outcome = try await pins.run(owner: caller) { () throws -> PINCheck in
            try locks.withLock(user) { () throws -> PINCheck in
                guard let state = try store.pin(user: user), let ctap = try store.ctapPINHash(user: user) else { return .notSet }
                guard !state.isLocked(maxRetries: max) else { return .blocked }
                let ok = try PINHasher.verify(CTAPPINHash.text(ofHash: pinHash), against: ctap)
                let after = try store.recordPINAttempt(user: user, success: ok)
                if ok { return .correct }
                return .wrong(retriesLeft: after.retriesLeft(maxRetries: max) ?? CTAPPINHash.unlimitedRetries)
            }
        }
        logger.notice("FIDO clientPIN '\(user)': \(outcome)")
        return outcome
    }

    func status(user: String) throws -> AuthStatusResult {
        guard try store.user(named: user) != nil else {
            throw RPCError.userNotEnrolled(user)
        }
        let lock = try store.lockout(user: user)
        let pin = try store.pin(user: user)
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
