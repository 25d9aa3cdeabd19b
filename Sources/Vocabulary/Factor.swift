/// An authentication factor of a user's policy (SPEC §4 auth.*: `factors`, auth.factor events): its raw
/// value is its wire name, so the wire's list of factors (`FactorName`) is this list.
public enum Factor: String, Sendable, CaseIterable, Codable {
    case face
    case finger
    case pin

    public var friendlyName: String {
        switch self {
        case .face: "Face"
        case .finger: "Fingerprint"
        case .pin: "PIN"
        }
    }

    public var isBiometric: Bool { self != .pin }
}

/// auth.policy.set `mode`: a preset list of factors (`AuthPolicy.Mode`; its factors are in Auth).
public enum PolicyMode: String, WireEnum {
    case none, biometric, password
}
