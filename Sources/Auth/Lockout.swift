/// When biometrics lock (SPEC §4, Android and Windows Hello): every `failuresToLock` failures in
/// a row lock them for `lockSeconds`; `failuresToRequirePIN` in a row lock them until a
/// successful PIN. A success (biometric or PIN) starts the count again.
public struct LockoutRules: Sendable, Equatable {
    public var failuresToLock: Int
    public var lockSeconds: Int
    public var failuresToRequirePIN: Int

    public init(failuresToLock: Int = 5, lockSeconds: Int = 30, failuresToRequirePIN: Int = 20) {
        self.failuresToLock = failuresToLock
        self.lockSeconds = lockSeconds
        self.failuresToRequirePIN = failuresToRequirePIN
    }
}

/// One user's biometric lockout, as stored. Times are wall-clock seconds (they must survive a
/// restart, which a monotonic clock does not).
public struct LockoutState: Sendable, Equatable {
    public var failures: Int
    public var lockedUntil: Double
    public var requiresPIN: Bool

    public init(failures: Int = 0, lockedUntil: Double = 0, requiresPIN: Bool = false) {
        self.failures = failures
        self.lockedUntil = lockedUntil
        self.requiresPIN = requiresPIN
    }

    public enum Status: Sendable, Equatable {
        case open
        /// Locked for this many more seconds (rounded up, at least 1).
        case lockedFor(seconds: Int)
        case lockedUntilPIN
    }

    /// Whether biometrics may be tried now. A clock set back cannot stretch a lock beyond
    /// `lockSeconds`.
    public func status(now: Double, rules: LockoutRules) -> Status {
        if requiresPIN { return .lockedUntilPIN }
        guard lockedUntil > now else { return .open }
        let left = min(lockedUntil - now, Double(rules.lockSeconds))
        return .lockedFor(seconds: max(1, Int(left.rounded(.up))))
    }

    /// After a failed attempt (a non-match, or a failed liveness check).
    public mutating func recordFailure(now: Double, rules: LockoutRules) {
        failures += 1
        if rules.failuresToRequirePIN > 0 && failures >= rules.failuresToRequirePIN {
            requiresPIN = true
        } else if rules.failuresToLock > 0 && failures % rules.failuresToLock == 0 {
            lockedUntil = now + Double(rules.lockSeconds)
        }
    }

    /// After a successful biometric match or PIN.
    public mutating func recordSuccess() {
        self = LockoutState()
    }
}

/// One user's PIN, as stored: the Argon2id hash and the wrong PINs in a row.
public struct PINState: Sendable, Equatable {
    public var hash: String
    public var failures: Int

    public init(hash: String, failures: Int = 0) {
        self.hash = hash
        self.failures = failures
    }

    /// `maxRetries` ≤ 0 means unlimited.
    public func isLocked(maxRetries: Int) -> Bool { maxRetries > 0 && failures >= maxRetries }

    /// Wrong PINs still allowed; nil when unlimited.
    public func retriesLeft(maxRetries: Int) -> Int? { maxRetries > 0 ? max(0, maxRetries - failures) : nil }
}
