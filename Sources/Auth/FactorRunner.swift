import BiometricVocabulary

/// The multi-factor runner (Acceptto's manager, KOBIL's modes): tries a user's factors in order
/// until one passes. A factor the user has not enrolled is skipped, a failed one falls through to
/// the next; a negative outcome is a result. A value with no daemon in it: the factors themselves
/// are run by the caller (`FactorAttempts`), so every branch is unit tested.
///
/// KOBIL's temporary switch: when the biometric factors are locked and the user has a PIN, the
/// PIN is tried even if the policy does not list it (a locked-out user is not left with nothing
/// but an administrator).
public struct FactorRunner: Sendable {
    /// What the caller knows of the user.
    public struct User: Sendable, Equatable {
        public var enrolled: Set<Factor>
        public var pinGiven: Bool
        public init(enrolled: Set<Factor>, pinGiven: Bool) {
            self.enrolled = enrolled
            self.pinGiven = pinGiven
        }
    }

    /// How one factor's attempt ended.
    public enum Result: Sendable, Equatable {
        case passed(score: Double?)
        /// Tried and not passed: no match, wrong PIN.
        case failed(message: String, score: Double?, retriesLeft: Int?)
        /// The user's biometrics are locked (nothing was tried).
        case lockedOut(retryAfterS: Int?)
        /// The PIN is locked after too many wrong ones.
        case pinLocked
        /// The factor did not pass for another reason (a time-out, a presentation attack, the
        /// camera lost): what kind, for decisions, and its SPEC §6 words, for the caller.
        case error(FailureKind, code: Int, reason: String, message: String)
    }

    /// How a tried factor failed, as far as a decision needs to know (the FIDO authenticator's
    /// answer: a time-out is USER_ACTION_TIMEOUT, anything else a denial).
    public enum FailureKind: String, Sendable, Equatable {
        /// Judged and not matched (a wrong PIN too).
        case noMatch = "no_match"
        /// Nothing decided within the time (no face, no blink, no fingers).
        case timeout
        /// A presentation attack was seen.
        case presentationAttack = "presentation_attack"
        /// Anything else: the camera lost or busy, a refused camera, poor quality, a store error.
        case other
    }

    public struct Attempt: Sendable, Equatable {
        public var factor: Factor
        public var kind: FailureKind
        public var code: Int
        public var reason: String
        public var message: String
        public var score: Double?
        public var retriesLeft: Int?

        public init(factor: Factor, kind: FailureKind, code: Int, reason: String, message: String, score: Double? = nil,
                    retriesLeft: Int? = nil) {
            self.factor = factor
            self.kind = kind
            self.code = code
            self.reason = reason
            self.message = message
            self.score = score
            self.retriesLeft = retriesLeft
        }
    }

    public struct Skip: Sendable, Equatable {
        public enum Reason: String, Sendable {
            case notInPolicy = "not_in_policy", notEnrolled = "not_enrolled", noPINGiven = "no_pin_given"
            case noTimeLeft = "no_time_left", lockedOut = "locked_out", pinLocked = "pin_locked"
        }
        public var factor: Factor
        public var reason: Reason
        public var retryAfterS: Int?
        public init(factor: Factor, reason: Reason, retryAfterS: Int? = nil) {
            self.factor = factor
            self.reason = reason
            self.retryAfterS = retryAfterS
        }
    }

    /// How the whole run ended.
    public enum Outcome: Sendable, Equatable {
        case passed(Factor, score: Double?)
        /// Factors were tried and none passed.
        case failed
        /// Nothing could be tried because biometrics are locked (and no PIN could stand in).
        case lockedOut(retryAfterS: Int?)
        /// The policy names no factor.
        case noFactorInPolicy
        /// The user has none of the policy's factors.
        case nothingEnrolled
    }

    public struct Run: Sendable, Equatable {
        public var outcome: Outcome
        public var tried: [Attempt] = []
        public var skipped: [Skip] = []
        /// The PIN was tried outside the policy because biometrics were locked.
        public var pinFallback = false

        public init(outcome: Outcome, tried: [Attempt] = [], skipped: [Skip] = [], pinFallback: Bool = false) {
            self.outcome = outcome
            self.tried = tried
            self.skipped = skipped
            self.pinFallback = pinFallback
        }
    }

    /// Below this much time left, a biometric factor is not started.
    public static let minimumBiometricMs = 1000

    public let plan: [Factor]
    public let notInPolicy: [Factor]

    public init(policy: AuthPolicy, override: [Factor]?) {
        (plan, notInPolicy) = policy.plan(override: override)
    }

    /// Runs the plan. `attempt` runs one factor with the time left; `remainingMs` reads the time
    /// left; `starting` is told before each factor (progress events). Only cancellation throws.
    public func run(
        _ user: User, remainingMs: () -> Int, starting: (Factor, _ index: Int, _ of: Int) -> Void,
        attempt: (Factor, _ remainingMs: Int) async throws -> Result
    ) async throws -> Run {
        var run = Run(outcome: .failed, skipped: notInPolicy.map { Skip(factor: $0, reason: .notInPolicy) })
        var lockedRetry: Int??
        var biometricLocked = false

        func tryFactor(_ factor: Factor, index: Int, of count: Int) async throws -> Bool {
            guard user.enrolled.contains(factor) else {
                run.skipped.append(Skip(factor: factor, reason: .notEnrolled))
                return false
            }
            if factor == .pin && !user.pinGiven {
                run.skipped.append(Skip(factor: factor, reason: .noPINGiven))
                return false
            }
            let left = remainingMs()
            if factor.isBiometric && left < Self.minimumBiometricMs {
                run.skipped.append(Skip(factor: factor, reason: .noTimeLeft))
                return false
            }
            starting(factor, index, count)
            switch try await attempt(factor, left) {
            case .passed(let score):
                run.outcome = .passed(factor, score: score)
                return true
            case .failed(let message, let score, let retriesLeft):
                run.tried.append(Attempt(factor: factor, kind: .noMatch, code: 0, reason: "no_match", message: message, score: score,
                                         retriesLeft: retriesLeft))
            case .lockedOut(let retryAfter):
                if factor.isBiometric { biometricLocked = true }
                if lockedRetry == nil { lockedRetry = .some(retryAfter) }
                run.skipped.append(Skip(factor: factor, reason: .lockedOut, retryAfterS: retryAfter))
            case .pinLocked:
                run.skipped.append(Skip(factor: factor, reason: .pinLocked))
            case .error(let kind, let code, let reason, let message):
                run.tried.append(Attempt(factor: factor, kind: kind, code: code, reason: reason, message: message))
            }
            return false
        }

        for (index, factor) in plan.enumerated() {
            if try await tryFactor(factor, index: index, of: plan.count) { return run }
        }
        // Biometrics locked, a PIN set and given, the policy without it: the PIN stands in.
        if biometricLocked && !plan.contains(.pin) && user.enrolled.contains(.pin) && user.pinGiven {
            run.pinFallback = true
            run.skipped.removeAll { $0.factor == .pin && $0.reason == .notInPolicy }
            if try await tryFactor(.pin, index: plan.count, of: plan.count + 1) { return run }
        }
        if run.tried.isEmpty {
            if let lockedRetry { run.outcome = .lockedOut(retryAfterS: lockedRetry) }
            else if plan.isEmpty { run.outcome = .noFactorInPolicy }
            else if run.skipped.allSatisfy({ $0.reason == .notEnrolled || $0.reason == .notInPolicy }) { run.outcome = .nothingEnrolled }
        }
        return run
    }
}
