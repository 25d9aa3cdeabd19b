/// What a caller may ask of a biometric decision (SPEC §4: "matching_threshold ... a non-admin
/// may only raise it"; issue 20). The threshold is the only guard between a stranger and a match,
/// and a match resets the user's failure count: a caller who could lower it would both get in
/// and never reach the lockout. So a caller who is not an administrator may raise a threshold,
/// never ask for one below the floor (the SPEC default, or the administrator's setting in
/// biometricd.conf), and never turn liveness off. Decided here, once, as a value.
public struct CallerLimits: Sendable, Equatable {
    /// Face matching threshold: the default every caller gets, and the floor for non-admins.
    public var faceThreshold: Double
    /// Finger matching threshold: likewise.
    public var fingerThreshold: Double

    public init(faceThreshold: Double = 48, fingerThreshold: Double = 48) {
        self.faceThreshold = faceThreshold
        self.fingerThreshold = fingerThreshold
    }

    public enum Modality: String, Sendable { case face, finger }

    public enum ThresholdDecision: Sendable, Equatable {
        /// Run with this threshold.
        case use(Double)
        /// A non-admin asked for less than the floor: refused, nothing runs.
        case belowFloor(asked: Double, floor: Double)
    }

    public func floor(_ modality: Modality) -> Double {
        modality == .face ? faceThreshold : fingerThreshold
    }

    /// The threshold a call runs with: what it asked for (admins any value; others at least the
    /// floor), or the configured one when it asked for none.
    public func threshold(_ modality: Modality, asked: Double?, isAdmin: Bool) -> ThresholdDecision {
        let floor = floor(modality)
        guard let asked else { return .use(floor) }
        if !isAdmin && asked < floor { return .belowFloor(asked: asked, floor: floor) }
        return .use(asked)
    }

    public enum LivenessDecision: Sendable, Equatable {
        case allowed
        /// A non-admin asked to skip liveness (face image mode, finger liveness none).
        case livenessRequired
    }

    /// Whether a caller may run a verify or identify without liveness.
    public func liveness(skipped: Bool, isAdmin: Bool) -> LivenessDecision {
        skipped && !isAdmin ? .livenessRequired : .allowed
    }

    public enum ReferencesDecision: Sendable, Equatable {
        /// Match the live finger against the caller's templates. Such a match shows the finger
        /// fits the templates handed in, not the user's enrolled ones: it never counts as an
        /// authentication of the user on the connection (no reverification from it).
        case allowed
        /// A caller who is not an administrator supplied the templates to match against: with
        /// their own template and their own finger anyone would "match" as any user they may
        /// act on, so only an administrator's reader (a door, a badge terminal) may.
        case adminRequired
    }

    /// Whether a finger.verify may match against templates the caller supplies (`references`).
    public func callerReferences(isAdmin: Bool) -> ReferencesDecision {
        isAdmin ? .allowed : .adminRequired
    }
}
