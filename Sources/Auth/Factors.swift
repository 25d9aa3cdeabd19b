// The factors and the policy presets are shared words (BiometricVocabulary); a user of this module's
// API (policies, runs, evidence) sees them through it.
@_exported import BiometricVocabulary

/// Which factors a user authenticates with, in the order they are offered (the Acceptto
/// manager's order), and whether biometrics must prove liveness.
public struct AuthPolicy: Sendable, Equatable {
    public var factors: [Factor]
    public var requireLiveness: Bool

    public init(factors: [Factor] = AuthPolicy.defaultFactors, requireLiveness: Bool = true) {
        self.factors = factors
        self.requireLiveness = requireLiveness
    }

    public static let defaultFactors: [Factor] = [.face, .finger, .pin]

    /// KOBIL's authentication modes as named factor lists: the wire's auth.policy.set `mode`.
    public typealias Mode = PolicyMode

    /// The preset these factors are, or nil for another list ("custom").
    public var mode: Mode? { Mode.allCases.first { $0.factors == factors } }

    /// The factors to run for a call that asks for `override` (nil = the policy's own): only the
    /// policy's factors, in the order asked; the others are reported as not in the policy.
    public func plan(override: [Factor]?) -> (run: [Factor], notInPolicy: [Factor]) {
        guard let override else { return (factors, []) }
        return (override.filter(factors.contains), override.filter { !factors.contains($0) })
    }
}

extension PolicyMode {
    /// The factors of the preset. none: no factor (keys sign without user verification;
    /// auth.authenticate never succeeds).
    public var factors: [Factor] {
        switch self {
        case .none: []
        case .biometric: [.face, .finger]
        case .password: [.pin]
        }
    }
}
