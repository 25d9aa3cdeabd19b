/// Which biometric runs may use a virtual capture device (`refuse_virtual_cameras`, formerly
/// `face_liveness_refuse_virtual`), for face and finger.
///
/// Why: liveness checks judge what a camera *sees*; they cannot judge frames that never passed
/// through a sensor. A virtual capture driver (v4l2loopback — OBS's virtual camera —, vivid) lets
/// any process feed the daemon a video of the user, which passes passive liveness as it passes
/// blink liveness, and a finger capture as easily. `camera.list` flags such devices (`virtual`);
/// this rule turns the flag into what a run on such a device may do (issue 33): whatever the
/// policy, a run on an untrusted virtual camera **grants nothing** (no login, no re-verification,
/// no lockout reset); the policy says which runs are refused outright.
public enum VirtualCameraPolicy: String, Sendable, CaseIterable {
    /// Every path that grants anything by itself (auth.authenticate — PAM's path —, key.sign, the
    /// FIDO authenticator's user verification, face and finger identification) refuses a virtual
    /// camera before capture; face.verify and finger.verify run on one but their match proves
    /// nothing (no re-verification, no lockout reset).
    case pam
    /// Every verification and identification refuses a virtual camera before capture.
    case yes
    /// A virtual camera is treated like any other (an administrator's choice: a test rig).
    case no

    public static let `default` = Self.pam
    public static var wireNames: [String] { allCases.map(\.rawValue) }
}

/// What a method's camera must be, declared at its registration (issue 33, item 1).
public enum CameraRequirement: String, Sendable, Equatable, CaseIterable {
    /// Any camera: the run proves nothing about a person (finger.capture, snapshots, enrolment,
    /// whose own access rule asks for a fresh authentication first).
    case any
    /// A verification: it may run on a virtual camera (policy `pam`), but only a trusted camera's
    /// match grants what the method declares.
    case trustedToGrant = "trusted_to_grant"
    /// A login path (PAM, FIDO, key.sign, 1:N): a virtual camera is refused before capture.
    case trusted
}

/// How far a run's camera can be believed; decided by `VirtualCameraRule`.
public enum CameraTrust: Sendable, Equatable {
    /// A sensor (not a virtual driver).
    case sensor
    /// A virtual device the configuration allows (`refuse_virtual_cameras = no`, or a test
    /// daemon's own replay cameras): trusted like a sensor.
    case allowedVirtual(driver: String)
    /// A virtual device the run may use but whose frames prove nothing: it grants nothing.
    case untrusted(driver: String)
    /// A virtual device refused before capture.
    case refused(driver: String)

    /// Whether a match on this camera may prove anything.
    public var isTrusted: Bool {
        switch self {
        case .sensor, .allowedVirtual: true
        case .untrusted, .refused: false
        }
    }
}

/// The one place a camera is judged for being virtual.
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
    /// replay cameras are trusted, since that is how the clip and socket tests present faces and
    /// fingers. Kernel virtual drivers are judged by the policy there too.
    public var testInstance: Bool

    public init(policy: VirtualCameraPolicy = .default, testInstance: Bool) {
        self.policy = policy
        self.testInstance = testInstance
    }

    /// The trust of `camera` for a method that requires `requirement`.
    public func decide(_ camera: Camera, requirement: CameraRequirement) -> CameraTrust {
        guard camera.isVirtual else { return .sensor }
        if (camera.isReplay && testInstance) || policy == .no { return .allowedVirtual(driver: camera.driver) }
        switch (requirement, policy) {
        case (.any, _): return .untrusted(driver: camera.driver)
        case (.trusted, _), (.trustedToGrant, .yes): return .refused(driver: camera.driver)
        case (.trustedToGrant, _): return .untrusted(driver: camera.driver)
        }
    }
}
