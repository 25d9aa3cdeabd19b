/// The authentication layer's refusals as typed values (issue 33, item 10). They are decided
/// here and in the daemon's services, read by type wherever a decision depends on them (what an
/// attempt counts for, what a factor run reports, what FIDO answers), and become SPEC §6 errors
/// only at the RPC edge (the daemon's `ErrorMapping.swift`).

/// Biometrics are locked, for a user or for a camera's identification (SPEC §4, 5001 locked_out).
public struct LockoutRefusal: Error, Sendable, Equatable {
    public enum Subject: Sendable, Equatable {
        /// A user's biometrics.
        case user(String)
        /// Identification (1:N) on a camera.
        case camera(String)
    }

    public var subject: Subject
    /// `.lockedFor` or `.lockedUntilPIN` (never `.open`).
    public var status: LockoutState.Status
    public var failures: Int
    /// auth.authenticate: the user has a PIN and gave none, so the PIN could stand in.
    public var pinFallback: Bool

    public init(subject: Subject, status: LockoutState.Status, failures: Int, pinFallback: Bool = false) {
        self.subject = subject
        self.status = status
        self.failures = failures
        self.pinFallback = pinFallback
    }

    /// Seconds until the lock ends; nil when it lasts until a PIN (or an administrator).
    public var retryAfterSeconds: Int? {
        if case .lockedFor(let seconds) = status { return seconds }
        return nil
    }
}

/// A PIN check or change that cannot be made (SPEC §6 5002–5004).
public enum PINRefusal: Error, Sendable, Equatable {
    /// The user has no PIN.
    case notSet(user: String)
    /// Too many wrong PINs: locked until an administrator resets it.
    case locked(failures: Int)
    /// Not digits, or a length the rules refuse (`field` names the param).
    case format(PINRules.Violation, field: String)
}

/// A run refused for what it would be run on (issue 33, item 3).
public enum TrustRefusal: Error, Sendable, Equatable {
    /// The camera is a virtual capture device and the method's `CameraRequirement` with the
    /// configured `VirtualCameraPolicy` refuses it (`VirtualCameraRule`).
    case virtualCamera(driver: String)
}
