import BiometricAuth

/// What a method requires beyond its access rule, declared at its registration (issue 33, item 1).
public struct Requirements: Sendable, Equatable {
    /// Every knob of the call's capture at its floor (`CallerLimits.judge`): a caller who is not
    /// an administrator asking for less is refused before anything runs. nil: the method takes
    /// no capture knobs.
    public var floors: CallerLimits.Modality?
    /// What the call's camera must be (`VirtualCameraRule`).
    public var camera: CameraRequirement

    public init(floors: CallerLimits.Modality? = nil, camera: CameraRequirement = .any) {
        self.floors = floors
        self.camera = camera
    }

    /// Nothing beyond the access rule.
    public static let nothing = Requirements()

    /// A live capture of `modality`: its knobs at their floors, and a camera as `camera` says.
    public static func liveCapture(_ modality: CallerLimits.Modality, camera: CameraRequirement) -> Requirements {
        Requirements(floors: modality, camera: camera)
    }

    /// A capture whose factors are run inside the call (auth.authenticate, key.sign): the daemon
    /// builds their knobs itself (always at the floor), and the camera must be trusted.
    public static let loginCapture = Requirements(floors: nil, camera: .trusted)
}

/// One method's whole security declaration: who may call it, what it requires, and what its
/// success grants. `MethodTable` keeps them by name, so a newcomer (and AccessMatrixTests) reads a
/// method's rule, requirements and grants from its JSON-RPC name.
public struct MethodSecurity: Sendable, Equatable {
    public var access: AccessRule
    public var requires: Requirements
    public var grants: Grants

    public init(access: AccessRule, requires: Requirements = .nothing, grants: Grants = .none) {
        self.access = access
        self.requires = requires
        self.grants = grants
    }

    /// A fresh authentication of the user (or an administrator) first.
    public var requiresFreshAuthentication: Bool { access == .selfReverifiedOrAdmin }

    /// What a call runs under when no table set it (an internal caller that forgot): nothing
    /// trusted, nothing granted.
    static let unchecked = MethodSecurity(access: .admin, requires: Requirements(camera: .trusted), grants: .none)
}
