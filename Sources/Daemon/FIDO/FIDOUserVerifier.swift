import BiometricAuth
import BiometricFIDO
import BiometricProtocol
import Foundation

/// How an auth.authenticate run answers CTAP's user verification, decided in one place, from
/// the typed run (never from the wire result or an encoded error).
enum FIDOVerdict {
    /// A finished run: passed by face or finger is verified (which is also presence: one prompt,
    /// not two); every factor tried timed out is a time-out; anything else is denied.
    static func outcome(_ run: FactorRunner.Run) -> UserCheckOutcome {
        switch run.outcome {
        case .passed(.face, _): return .verified(.face)
        case .passed(.finger, _): return .verified(.finger)
        case .passed(.pin, _): return .denied  // the UV run never offers the PIN (clientPIN carries that)
        default:
            if !run.tried.isEmpty, run.tried.allSatisfy({ $0.kind == .timeout }) { return .timedOut }
            return .denied
        }
    }

    /// A run that could not start or was stopped.
    static func outcome(_ error: any Error) -> UserCheckOutcome {
        switch error {
        case is CancellationError: return .cancelled
        case is Deadline: return .timedOut
        case is LockoutRefusal, PINRefusal.locked: return .blocked
        default: return .denied
        }
    }

    /// The outcome in the daemon's log.
    static func describe(_ outcome: UserCheckOutcome) -> String {
        switch outcome {
        case .verified(let method): "verified by \(DaemonCredentialStore.methodName(method))"
        case .present: "present"
        case .denied: "denied"
        case .cancelled: "cancelled"
        case .timedOut: "timed out"
        case .blocked: "blocked"
        }
    }

    /// Built-in UV attempts left (clientPIN getUVRetries): 0 while biometrics are locked, else
    /// failures until the next lock of either kind (timed, or until a PIN), at most 25.
    static func uvRetries(_ state: LockoutState, rules: LockoutRules, now: Double) -> Int {
        guard state.status(now: now, rules: rules) == .open else { return 0 }
        var left = 25
        if rules.failuresToLock > 0 { left = min(left, rules.failuresToLock - state.failures % rules.failuresToLock) }
        if rules.failuresToRequirePIN > 0 { left = min(left, max(0, rules.failuresToRequirePIN - state.failures)) }
        return left
    }
}

/// The daemon's `UserVerifier`: a live match of the FIDO user (`FIDOUserSource`) by the face and
/// finger factors of their policy, liveness on whatever the policy says, through the same
/// auth.authenticate path PAM uses — lockout checked and failures counted there. Task
/// cancellation (CTAPHID_CANCEL) ends the capture and answers `.cancelled`.
struct DaemonUserVerifier: UserVerifier {
    let users: FIDOUserSource
    /// Runs one verification of `user` (a seam: the daemon runs auth.authenticate; tests fake it).
    let attempt: @Sendable (FIDOUser, _ rpID: String?) async -> UserCheckOutcome
    /// The user's lockout state, for uvRetries.
    let lockout: @Sendable (String) -> LockoutState?
    let rules: LockoutRules
    /// Whether the user can be verified by a face or finger at all (enrolled, and in the policy).
    var configured: @Sendable (String) -> Bool = { _ in true }

    func verifyUser(rpID: String?) async -> UserCheckOutcome {
        guard let user = users.current() else { return .denied }
        let outcome = await attempt(user, rpID)
        return Task.isCancelled && outcome != .cancelled ? .cancelled : outcome
    }

    /// Presence is the same live match: one prompt, and its answer says by what.
    func confirmPresence(rpID: String?) async -> UserCheckOutcome { await verifyUser(rpID: rpID) }

    func isConfigured() async -> Bool {
        guard let user = users.current() else { return false }
        return configured(user.name)
    }

    func uvRetries() async -> Int {
        guard let user = users.current(), let state = lockout(user.name) else { return 0 }
        return FIDOVerdict.uvRetries(state, rules: rules, now: Date().timeIntervalSince1970)
    }
}
