import BiometricAuth
import Logging
import Synchronization

/// What the runs of one call showed so far, recorded by the parts that judged it: the floors
/// (`MethodTable` for a caller's knobs, auth.authenticate for its own factors) and the camera
/// lease (`CameraLeases`, through `VirtualCameraRule`). A handler reads neither to decide
/// anything: `TrustLedger.settle` does.
final class CallRun: Sendable {
    private struct State {
        var camera: CameraTrust?
        var capture: CaptureDecision?
    }
    private let state = Mutex(State())

    init() {}

    /// The trust of the camera the current run leased (nil before a lease, or for the PIN).
    var camera: CameraTrust? { state.withLock { $0.camera } }
    /// How the current run's knobs compare with the floors (nil: never judged — nothing proven).
    var capture: CaptureDecision? { state.withLock { $0.capture } }

    func leased(_ trust: CameraTrust?) { state.withLock { $0.camera = trust } }
    func judged(_ decision: CaptureDecision) { state.withLock { $0.capture = decision } }
    /// A new run starts (auth.authenticate's next factor): nothing proven yet.
    func startRun() { state.withLock { $0 = State() } }
}

/// The one place an attempt's evidence becomes its effects: `TrustPolicy` decides, with the
/// method's declared grants and the user's policy; this applies the decision — the lockout in the
/// store before the reply, the re-verification on the connection.
struct TrustLedger: Sendable {
    let auth: AuthService
    let logger: Logger

    /// Applies what `evidence` is worth under `declared`; returns whether it proved the user and
    /// what it did.
    @discardableResult
    func settle(_ evidence: Evidence, declared: Grants, connection: ClientConnection?) -> Settlement {
        // A store that cannot be read grants nothing (no factor is "in the policy").
        let factors: [BiometricAuth.Factor]? = switch Result(catching: { try auth.store.policies.get(user: evidence.user) }) {
        case .success(let policy): policy?.factors
        case .failure: []
        }
        let effects = TrustPolicy.effects(of: evidence, declared: declared, policyFactors: factors)
        auth.apply(effects.lockout, to: evidence.user, verdict: evidence.verdict, modality: evidence.factor.rawValue)
        if effects.reverify { connection?.reverification.record(evidence.user) }
        let proven = TrustPolicy.proves(evidence)
        if evidence.verdict == .matched && !proven {
            logger.notice("\(evidence.factor.rawValue) match of \(LogText(evidence.user)) proves nothing: \(Self.why(evidence))")
        }
        return Settlement(proven: proven, effects: effects)
    }

    /// Why a match proved nothing, for the log and the result.
    static func why(_ evidence: Evidence) -> String {
        var reasons: [String] = []
        if evidence.factor.isBiometric {
            switch evidence.camera {
            case .untrusted(let driver)?, .refused(let driver)?: reasons.append("virtual camera (driver \(driver))")
            case nil: reasons.append("no camera recorded")
            default: break
            }
        }
        switch evidence.capture {
        case .weakened(let knobs): reasons.append("loosened " + (knobs.isEmpty ? "settings" : knobs.map(\.rawValue).joined(separator: ", ")))
        case .refused(let l): reasons.append("\(l.knob.rawValue) below its floor")
        case .atFloor: break
        }
        if evidence.references == .callerSupplied { reasons.append("templates supplied by the caller") }
        return reasons.isEmpty ? "-" : reasons.joined(separator: "; ")
    }
}

/// What settling one attempt came to.
struct Settlement: Sendable, Equatable {
    /// The attempt proved the user (`TrustPolicy.proves`).
    var proven: Bool
    var effects: Effects
}
