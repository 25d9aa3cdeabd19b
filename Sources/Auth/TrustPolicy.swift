import BiometricVocabulary

/// What a method's success may grant, declared at its registration beside its access rule
/// (issue 33, item 1): a handler reports what its run showed (`Evidence`); `TrustPolicy` alone
/// decides what that is worth.
public struct Grants: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The connection counts as freshly authenticated as the user for changes to their factors
    /// (`Reverification`).
    public static let reverification = Grants(rawValue: 1)
    /// A success starts the user's biometric failure count again.
    public static let lockoutReset = Grants(rawValue: 2)

    public static let none: Grants = []
    public static let authentication: Grants = [.reverification, .lockoutReset]

    public var description: String {
        let names = [(Self.reverification, "reverification"), (.lockoutReset, "lockout_reset")].filter { contains($0.0) }.map(\.1)
        return names.isEmpty ? "nothing" : names.joined(separator: "+")
    }
}

/// Whose templates a biometric run was matched against.
public enum References: Sendable, Equatable {
    /// The user's enrolled templates.
    case enrolled
    /// Templates the caller handed in (finger.verify `references`, a badge): a match says the
    /// finger fits them, not that the user is there.
    case callerSupplied
}

/// What one attempt showed, as facts: the method reports the user, factor, verdict and
/// references; the camera's trust and the capture's strictness are recorded by the parts that
/// judged them (the camera lease, the floors), not by the handler.
public struct Evidence: Sendable, Equatable {
    public var user: String
    public var factor: Factor
    public var verdict: AttemptVerdict
    /// nil for a factor without a camera (the PIN).
    public var camera: CameraTrust?
    public var capture: CaptureDecision
    public var references: References
    /// The attempt was started by another user for this account (`su bob` by alice, with the
    /// administrator's `other_users=allow`): it never counts toward this user's lockout (SPEC §4).
    public var startedByOtherUser: Bool

    public init(user: String, factor: Factor, verdict: AttemptVerdict, camera: CameraTrust?, capture: CaptureDecision = .atFloor,
                references: References = .enrolled, startedByOtherUser: Bool = false) {
        self.user = user
        self.factor = factor
        self.verdict = verdict
        self.camera = camera
        self.capture = capture
        self.references = references
        self.startedByOtherUser = startedByOtherUser
    }
}

/// What an attempt does, decided by `TrustPolicy`.
public struct Effects: Sendable, Equatable {
    /// Record a fresh authentication of the user on the connection.
    public var reverify: Bool
    /// What happens to the user's failure count.
    public var lockout: AttemptVerdict.LockoutEffect

    public init(reverify: Bool, lockout: AttemptVerdict.LockoutEffect) {
        self.reverify = reverify
        self.lockout = lockout
    }
}

/// The one place where what an attempt showed becomes what it grants (SPEC §4: "only a run that
/// proved what the policy asks counts as that authentication: a real (not virtual) camera, the
/// configured liveness floor, a factor of the user's policy").
public enum TrustPolicy {
    /// Whether the attempt proved the user: a match against the user's own templates, on a
    /// trusted camera (a biometric factor), with every knob at its floor.
    public static func proves(_ evidence: Evidence) -> Bool {
        guard evidence.verdict == .matched, evidence.references == .enrolled, evidence.capture.isAtFloor else { return false }
        if evidence.factor.isBiometric { return evidence.camera?.isTrusted == true }
        return true
    }

    /// What the attempt does, for a method that declared `declared` and a user whose policy lists
    /// `policyFactors` (nil: the user has no policy record; the default factors apply).
    /// - Re-verification: declared, proved, and the factor is one of the user's policy.
    /// - Lockout: a proven success resets the count when declared; an unproven match (virtual
    ///   camera, loosened knobs, the caller's templates) leaves it; a non-match or a presentation
    ///   attack counts one more failure; nothing judged leaves it. An attempt another user
    ///   started never touches the count.
    public static func effects(of evidence: Evidence, declared: Grants, policyFactors: [Factor]?) -> Effects {
        let proven = proves(evidence)
        let inPolicy = (policyFactors ?? AuthPolicy.defaultFactors).contains(evidence.factor)
        let reverify = proven && inPolicy && declared.contains(.reverification)
        var lockout: AttemptVerdict.LockoutEffect
        switch evidence.verdict.lockoutEffect {
        case .reset: lockout = proven && declared.contains(.lockoutReset) ? .reset : .none
        case .countFailure: lockout = .countFailure
        case .none: lockout = .none
        }
        if evidence.startedByOtherUser { lockout = .none }
        // The PIN has its own counter, and a correct PIN clears the biometric lockout in the same
        // transaction that counts it (AuthService.verifyPIN): nothing more here.
        if evidence.factor == .pin { lockout = .none }
        return Effects(reverify: reverify, lockout: lockout)
    }

    /// 1:N answers nothing about users it did not match (issue 33, item 5): of the ranked
    /// candidates (best first), only those at or above the threshold are named, with their
    /// scores; a step-up (the best matched, the runner-up within `stepUpMargin`) also names the
    /// candidates it could not tell from the best, since the person must say which they are. A
    /// stranger in front of a greeter learns no user name and no near miss.
    public static func disclosed<C>(_ candidates: [C], score: (C) -> Double, threshold: Double, stepUpMargin: Double? = nil) -> [C] {
        guard let best = candidates.first.map(score), best >= threshold else { return [] }
        return candidates.filter { candidate in
            let s = score(candidate)
            return s >= threshold || (stepUpMargin.map { margin in best - s < margin } ?? false)
        }
    }
}
