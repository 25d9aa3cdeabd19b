import BiometricVocabulary

/// What a caller may ask of a biometric decision (SPEC §4: "a caller who is not an admin may make
/// any threshold, liveness or quality setting stricter, never looser"; issues 20 and 33).
///
/// The threshold is the only guard between a stranger and a match, liveness the only guard
/// between a photo and a match, and a match resets the user's failure count and re-verifies the
/// connection. A caller who could loosen any of them would both get in and never reach the
/// lockout. So every knob a verify or identify takes has a **floor** — the SPEC default, or the
/// administrator's setting in biometricd.conf — and one function (`judge`) compares a call's asks
/// with the floors, once, as a value:
/// - a caller who is not an administrator asking for less than a floor is refused before any
///   camera opens (`CaptureDecision.refused`);
/// - an administrator may loosen a knob (a lab, a door with its own guard), but such a run is
///   `weakened`: its match grants nothing (`TrustPolicy`), not even a lockout reset.
public struct CallerLimits: Sendable, Equatable {
    /// Face matching threshold: the default every caller gets, and the floor for non-admins.
    public var faceThreshold: Double
    /// Finger matching threshold: likewise.
    public var fingerThreshold: Double
    /// Face quality threshold floor (SPEC default 48): lower lets poorer frames be judged.
    public var faceQuality: Int
    /// Finger quality threshold floor (the SPEC default, 40).
    public var fingerQuality: Int
    /// Face liveness threshold floor (SPEC default 50): lower passes more presentation attacks.
    public var faceLivenessThreshold: Int
    /// The face liveness checks the administrator configured (`face_liveness_mode`): a call may
    /// name another mode only when it runs every one of these checks too.
    public var faceLiveness: LivenessChecks
    /// The finger liveness level floor (`low`).
    public var fingerLiveness: LivenessLevel

    public init(faceThreshold: Double = 48, fingerThreshold: Double = 48, faceQuality: Int = 48, fingerQuality: Int = 40,
                faceLivenessThreshold: Int = 50, faceLiveness: LivenessChecks = .passive, fingerLiveness: LivenessLevel = .low) {
        self.faceThreshold = faceThreshold
        self.fingerThreshold = fingerThreshold
        self.faceQuality = faceQuality
        self.fingerQuality = fingerQuality
        self.faceLivenessThreshold = faceLivenessThreshold
        self.faceLiveness = faceLiveness
        self.fingerLiveness = fingerLiveness
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

    // MARK: Every knob against its floor

    /// Judges every knob of one capture against its floor. `livenessRequired`: whether this user
    /// must prove liveness (the user's policy; only an administrator can turn it off), so that a
    /// run without liveness for such a user is not a loosening.
    public func judge(_ ask: CaptureAsk, isAdmin: Bool, livenessRequired: Bool = true) -> CaptureDecision {
        var looser: [CaptureDecision.Loosening] = []
        func check(_ knob: Knob, _ isLooser: Bool, asked: @autoclosure () -> String, floor: @autoclosure () -> String) {
            if isLooser { looser.append(.init(knob: knob, asked: asked(), floor: floor())) }
        }
        switch ask.modality {
        case .face:
            if let t = ask.matchingThreshold { check(.matchingThreshold, t < faceThreshold, asked: Self.text(t), floor: Self.text(faceThreshold)) }
            if let q = ask.qualityThreshold { check(.qualityThreshold, q < faceQuality, asked: "\(q)", floor: "\(faceQuality)") }
            if let checks = ask.faceLiveness {
                if checks.isEmpty {
                    check(.liveness, livenessRequired, asked: "none", floor: faceLiveness.description)
                } else {
                    check(.livenessMode, !checks.isSuperset(of: faceLiveness), asked: checks.description, floor: faceLiveness.description)
                }
            }
            if ask.faceLiveness?.isEmpty != true, let l = ask.livenessThreshold {
                check(.livenessThreshold, l < faceLivenessThreshold, asked: "\(l)", floor: "\(faceLivenessThreshold)")
            }
        case .finger:
            if let t = ask.matchingThreshold { check(.matchingThreshold, t < fingerThreshold, asked: Self.text(t), floor: Self.text(fingerThreshold)) }
            if let q = ask.qualityThreshold { check(.qualityThreshold, q < fingerQuality, asked: "\(q)", floor: "\(fingerQuality)") }
            if let level = ask.fingerLiveness {
                if level == .none {
                    check(.liveness, livenessRequired, asked: "none", floor: fingerLiveness.rawValue)
                } else {
                    check(.livenessLevel, level < fingerLiveness, asked: level.rawValue, floor: fingerLiveness.rawValue)
                }
            }
        }
        guard let first = looser.first else { return .atFloor }
        return isAdmin ? .weakened(looser.map(\.knob)) : .refused(first)
    }

    private static func text(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
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

/// The face liveness checks a mode runs. A mode is at least as strict as another when it runs
/// every check of the other: blink = {blink}, challenge = {blink, moves}, passive = {passive},
/// passive+blink = {passive, blink}; image mode runs none.
public struct LivenessChecks: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Keep still, then blink.
    public static let blink = LivenessChecks(rawValue: 1)
    /// Random head moves asked for.
    public static let moves = LivenessChecks(rawValue: 2)
    /// The presentation-attack detector and the replay cues.
    public static let passive = LivenessChecks(rawValue: 4)

    public var description: String {
        let names = [(Self.passive, "passive"), (.blink, "blink"), (.moves, "moves")].filter { contains($0.0) }.map(\.1)
        return names.isEmpty ? "none" : names.joined(separator: "+")
    }
}

/// A knob of a biometric capture that has a floor.
public enum Knob: String, Sendable, Equatable, CaseIterable {
    case matchingThreshold = "matching_threshold"
    case qualityThreshold = "quality_threshold"
    case livenessThreshold = "liveness_threshold"
    /// Face: the liveness mode (its checks).
    case livenessMode = "liveness_mode"
    /// Finger: the liveness level.
    case livenessLevel = "liveness_level"
    /// No liveness at all (face image mode, finger liveness none).
    case liveness
}

/// What one verify or identify asks of its capture, in the terms the floors are set in (the
/// daemon maps the wire params here; nil = not asked, the floor applies).
public struct CaptureAsk: Sendable, Equatable {
    public var modality: CallerLimits.Modality
    public var matchingThreshold: Double?
    public var qualityThreshold: Int?
    /// Face: the checks of the liveness mode asked; [] for image mode (no liveness).
    public var faceLiveness: LivenessChecks?
    /// Face: the liveness threshold asked.
    public var livenessThreshold: Int?
    /// Finger: the liveness level asked.
    public var fingerLiveness: LivenessLevel?

    public init(modality: CallerLimits.Modality, matchingThreshold: Double? = nil, qualityThreshold: Int? = nil,
                faceLiveness: LivenessChecks? = nil, livenessThreshold: Int? = nil, fingerLiveness: LivenessLevel? = nil) {
        self.modality = modality
        self.matchingThreshold = matchingThreshold
        self.qualityThreshold = qualityThreshold
        self.faceLiveness = faceLiveness
        self.livenessThreshold = livenessThreshold
        self.fingerLiveness = fingerLiveness
    }
}

/// How a capture's asks compare with the floors (`CallerLimits.judge`).
public enum CaptureDecision: Sendable, Equatable {
    /// Every knob at or above its floor: a match proves what the policy asks.
    case atFloor
    /// An administrator loosened these knobs: the run may go on, and its match grants nothing.
    case weakened([Knob])
    /// A caller who is not an administrator asked for less than a floor: refused before
    /// anything runs (the first such knob).
    case refused(Loosening)

    public struct Loosening: Sendable, Equatable {
        public var knob: Knob
        public var asked: String
        public var floor: String
    }

    /// Whether a match in such a run may prove anything.
    public var isAtFloor: Bool { self == .atFloor }
}
