/// How one biometric attempt ended, as far as the lockout is concerned (issue 20: "a session's
/// outcome carries a typed verdict ... lockout counts from that verdict"). Each session outcome
/// and failure maps to one verdict in one place (the daemon's `AttemptVerdicts.swift`); the
/// lockout reads nothing else, in particular no field of an encoded error.
public enum AttemptVerdict: Sendable, Equatable {
    /// The user's face or finger matched (with liveness when asked for).
    case matched
    /// Judged and not matched: a face or finger was there for the attempt and was not the user's
    /// (a timeout with a face in view counts here).
    case noMatch
    /// A presentation attack was seen (a screen, a print, no blink from a face held still).
    case presentationAttack
    /// Nothing was judged: canceled, the camera was lost, nobody in view, only poor frames,
    /// refused before capture (locked, a virtual camera the method may not use).
    case notJudged(NotJudged)

    public enum NotJudged: String, Sendable, Equatable {
        case canceled, cameraError = "camera_error", nobodyInView = "nobody_in_view", poorQuality = "poor_quality", error
        /// Refused before capture because biometrics (or the camera's 1:N) are locked.
        case lockedOut = "locked_out"
        /// Refused before capture: a virtual camera (`TrustRefusal`). Not counted: nothing was
        /// judged, and a process feeding a virtual camera must not be able to lock the user out.
        case refusedCamera = "refused_camera"
    }

    /// What the attempt does to the user's failure count.
    public enum LockoutEffect: Sendable, Equatable {
        /// A success starts the count again.
        case reset
        /// One more failure in a row.
        case countFailure
        /// Leaves the count as it is.
        case none
    }

    public var lockoutEffect: LockoutEffect {
        switch self {
        case .matched: .reset
        case .noMatch, .presentationAttack: .countFailure
        case .notJudged: .none
        }
    }
}

extension LockoutState {
    /// Applies an attempt's effect: the one rule for a user's lockout and a camera's.
    public mutating func apply(_ effect: AttemptVerdict.LockoutEffect, now: Double, rules: LockoutRules) {
        switch effect {
        case .reset: recordSuccess()
        case .countFailure: recordFailure(now: now, rules: rules)
        case .none: break
        }
    }

    /// For the log: "3 in a row", with the lock that follows (`untilWhat`: what ends the long lock).
    public func summary(now: Double, rules: LockoutRules, untilWhat: String) -> String {
        "\(failures) in a row" + (requiresPIN ? ", locked until \(untilWhat)" : lockedUntil > now ? ", locked for \(rules.lockSeconds) s" : "")
    }
}
