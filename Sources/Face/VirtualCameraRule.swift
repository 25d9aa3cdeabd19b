/// Which liveness sessions refuse a virtual capture device (`face_liveness_refuse_virtual`).
///
/// Why: the presentation-attack detector and the cues judge what a camera *sees*; they cannot
/// judge frames that never passed through a sensor. A virtual capture driver (v4l2loopback,
/// vivid) lets any process feed the daemon a video of the user, which passes passive liveness
/// as it passes blink liveness (Docs/face.md "What it judges, and what not"). `camera.list`
/// flags such devices (`virtual`); this rule turns the flag into a refusal.
public enum VirtualCameraPolicy: String, Sendable, CaseIterable {
    /// The login path only: `auth.authenticate` (pam_biometricd and `authctl auth login` call it).
    case pam
    /// Every liveness session (face.verify, face.identify and the login path).
    case yes
    /// Never: a virtual camera is treated like any other.
    case no

    public static let `default` = Self.pam
    public static var wireNames: [String] { allCases.map(\.rawValue) }
}

/// What a liveness session may do with the camera it leased; decided by `VirtualCameraRule`.
public enum VirtualCameraDecision: Sendable, Equatable {
    case allowed
    /// The camera has no sensor behind it and the policy refuses it here: `driver` names it.
    case refused(driver: String)
}

/// The one place a camera is refused for being virtual.
public struct VirtualCameraRule: Sendable, Equatable {
    /// The camera a session leased, as the registry sees it.
    public struct Camera: Sendable, Equatable {
        /// No sensor behind it (`CameraRoles.isVirtual`: vivid, v4l2loopback, replay).
        public var isVirtual: Bool
        /// The daemon's own replay device (a file or a folder played as a camera).
        public var isReplay: Bool
        public var driver: String

        public init(isVirtual: Bool, isReplay: Bool, driver: String) {
            self.isVirtual = isVirtual
            self.isReplay = isReplay
            self.driver = driver
        }
    }

    public var policy: VirtualCameraPolicy
    /// An unprivileged test daemon (not root, not on the system paths, not under systemd): its
    /// replay cameras stay allowed, since that is how the clip and socket tests present faces.
    /// Kernel virtual drivers are refused there too.
    public var testInstance: Bool

    public init(policy: VirtualCameraPolicy = .default, testInstance: Bool) {
        self.policy = policy
        self.testInstance = testInstance
    }

    /// `liveness`: the session checks liveness (image mode never refuses: it claims nothing about
    /// the presentation). `login`: the call is `auth.authenticate` (PAM's path).
    public func decide(_ camera: Camera, liveness: Bool, login: Bool) -> VirtualCameraDecision {
        guard liveness, camera.isVirtual else { return .allowed }
        if camera.isReplay && testInstance { return .allowed }
        switch policy {
        case .no: return .allowed
        case .pam: return login ? .refused(driver: camera.driver) : .allowed
        case .yes: return .refused(driver: camera.driver)
        }
    }
}
