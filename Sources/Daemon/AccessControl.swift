import BiometricProtocol
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Who is on the other end of a connection, from SO_PEERCRED (the kernel's word, not the client's).
public struct Peer: Sendable, Equatable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32
    /// The uid's login name; nil for a uid with no passwd entry (it may then act on no user).
    public var userName: String?
    /// root, the admin group, or (unprivileged daemon) the daemon's own uid.
    public var isAdmin: Bool
    /// Member of the login group (a greeter): may identify (1:N).
    public var isLogin: Bool
}

/// Who may call a method, declared where the method is registered (`MethodTable.register`), so a
/// newcomer finds a method's rule next to its name and a test can list every method's rule.
public enum AccessRule: String, Sendable, Equatable, CaseIterable {
    /// Any local uid (daemon.status, camera.list, session.cancel).
    case anyone
    /// root or the admin group.
    case admin
    /// An admin, or the login group (greeters): 1:N identification.
    case adminOrLogin = "admin_or_login"
    /// An admin, or the user named in the call; a call that names no user needs an admin.
    case selfOrAdmin = "self_or_admin"
    /// A change to a user's factors (enrol, policy, PIN, keys, delete): an admin, or the user
    /// themself freshly authenticated on this connection (`Reverification`).
    case selfReverifiedOrAdmin = "self_reverified_or_admin"
    /// uid 0 only, not the admin group: reports only root can make (a password proof).
    case root
    /// `selfOrAdmin`, and also the login group when the call completes a step-up of its own
    /// identification (auth.authenticate with step_up; the handler checks the binding).
    case selfOrAdminOrStepUp = "self_or_admin_or_login_step_up"
}

/// A method's rule with what it needs from the call: a phrase for messages and, for the
/// self rules, the user the call acts on.
public struct Access<P>: Sendable {
    public let rule: AccessRule
    public let action: String
    let user: (@Sendable (P) -> String?)?
    /// For `selfReverifiedOrAdmin`: the call carries a factor of its own (pin.set's old_pin),
    /// which its handler checks before anything changes; it stands in for a fresh authentication.
    let factorInCall: (@Sendable (P) -> Bool)?
    /// A param only root may set (auth.authenticate's `other_user`, sent by the PAM module in a
    /// setuid program): the name of the one the call sets, nil when it sets none.
    let rootOnlyParam: (@Sendable (P) -> String?)?

    init(rule: AccessRule, action: String, user: (@Sendable (P) -> String?)?, factorInCall: (@Sendable (P) -> Bool)? = nil,
         rootOnlyParam: (@Sendable (P) -> String?)? = nil) {
        self.rule = rule
        self.action = action
        self.user = user
        self.factorInCall = factorInCall
        self.rootOnlyParam = rootOnlyParam
    }

    /// This access, and `field` (when `set` says the call sets it) from root only.
    public func rootOnly(_ set: @escaping @Sendable (P) -> String?) -> Access {
        Access(rule: rule, action: action, user: user, factorInCall: factorInCall, rootOnlyParam: set)
    }

    public static var anyone: Access { Access(rule: .anyone, action: "", user: nil) }
    public static func admin(_ action: String) -> Access { Access(rule: .admin, action: action, user: nil) }
    public static func adminOrLogin(_ action: String) -> Access { Access(rule: .adminOrLogin, action: action, user: nil) }
    public static func root(_ action: String) -> Access { Access(rule: .root, action: action, user: nil) }
    public static func selfOrAdmin(_ action: String, user: @escaping @Sendable (P) -> String?) -> Access {
        Access(rule: .selfOrAdmin, action: action, user: user)
    }
    /// `loginStepUp`: the call completes a step-up (a greeter in the login group may make it).
    public static func selfOrAdminOrStepUp(_ action: String, user: @escaping @Sendable (P) -> String?,
                                           loginStepUp: @escaping @Sendable (P) -> Bool) -> Access {
        Access(rule: .selfOrAdminOrStepUp, action: action, user: user, factorInCall: loginStepUp)
    }
    public static func selfReverifiedOrAdmin(_ action: String, user: @escaping @Sendable (P) -> String?,
                                             factorInCall: (@Sendable (P) -> Bool)? = nil) -> Access {
        Access(rule: .selfReverifiedOrAdmin, action: action, user: user, factorInCall: factorInCall)
    }
}

/// The access decision on one call: a value, decided in one place (`AccessPolicy.decide`).
public enum AccessDecision: Sendable, Equatable {
    case allowed
    case denied
    /// The user's own change, without a fresh authentication on this connection.
    case reverificationNeeded
}

/// SPEC §3: root and the admin group may act on any user; anyone else only on their own name;
/// 1:N identification needs admin or the login group. Checked before any work is done.
public struct AccessPolicy: Sendable {
    public let adminGroup: String
    public let loginGroup: String
    /// The daemon's uid when it runs unprivileged: that uid is treated as admin.
    public let unprivilegedOwner: UInt32?

    public init(adminGroup: String, loginGroup: String, daemonUID: UInt32 = geteuid()) {
        self.adminGroup = adminGroup
        self.loginGroup = loginGroup
        self.unprivilegedOwner = daemonUID == 0 ? nil : daemonUID
    }

    /// Resolves the peer's name and group memberships.
    public func peer(pid: Int32, uid: UInt32, gid: UInt32) -> Peer {
        let name = Self.userName(uid: uid)
        let groups = Set(name.map { Self.groups(user: $0, primary: gid) } ?? [gid])
        let adminGID = Self.groupID(adminGroup)
        let loginGID = Self.groupID(loginGroup)
        let isAdmin = uid == 0 || uid == unprivilegedOwner || adminGID.map(groups.contains) == true
        let isLogin = loginGID.map(groups.contains) == true
        return Peer(pid: pid, uid: uid, gid: gid, userName: name, isAdmin: isAdmin, isLogin: isLogin)
    }

    // MARK: The decision

    /// Whether `peer` may make a call of `rule` acting on `user` (nil: the call names no user);
    /// `fresh`: the peer authenticated as `user` on this connection within the window.
    /// For `selfOrAdminOrStepUp`, `fresh` says the call carries a step-up binding.
    public func decide(_ rule: AccessRule, peer: Peer, user: String?, fresh: Bool) -> AccessDecision {
        switch rule {
        case .anyone: return .allowed
        case .admin: return peer.isAdmin ? .allowed : .denied
        case .adminOrLogin: return peer.isAdmin || peer.isLogin ? .allowed : .denied
        case .root: return peer.uid == 0 ? .allowed : .denied
        case .selfOrAdmin:
            if peer.isAdmin { return .allowed }
            guard let user, peer.userName == user else { return .denied }
            return .allowed
        case .selfReverifiedOrAdmin:
            if peer.isAdmin { return .allowed }
            guard let user, peer.userName == user else { return .denied }
            return fresh ? .allowed : .reverificationNeeded
        case .selfOrAdminOrStepUp:
            if peer.isAdmin || (peer.isLogin && fresh) { return .allowed }
            guard let user, peer.userName == user else { return .denied }
            return .allowed
        }
    }

    /// The error a refused call gets (permission_denied, with what to do).
    func refusal(_ decision: AccessDecision, rule: AccessRule, action: String, peer: Peer, user: String?) -> RPCError? {
        switch decision {
        case .allowed: return nil
        case .reverificationNeeded:
            return .app(.permissionDenied, "to \(action) '\(user ?? "")', authenticate first (within \(Reverification.windowSeconds / 60) minutes, on this connection)",
                        hint: "authctl does this for you: it asks for your face, finger or PIN (auth.authenticate), or your account password if you have no factor yet (auth.password.begin)",
                        details: ["reverification_required": true, "user": .string(user ?? "")])
        case .denied:
            switch rule {
            case .admin: return permission { () throws(RPCError) in try requireAdmin(peer, action) }
            case .adminOrLogin: return permission { () throws(RPCError) in try requireAdminOrLogin(peer, action) }
            case .root:
                return .app(.permissionDenied, "\(action) is accepted from root only", hint: "it is made by a root-owned component")
            case .selfOrAdmin, .selfReverifiedOrAdmin, .selfOrAdminOrStepUp:
                guard let user else { return permission { () throws(RPCError) in try requireAdmin(peer, "\(action) every user") } }
                return permission { () throws(RPCError) in try requireSelfOrAdmin(peer, user: user, action) }
            case .anyone: return nil
            }
        }
    }

    private func permission(_ check: () throws(RPCError) -> Void) -> RPCError? {
        do { try check() } catch { return error }
        return nil
    }

    // MARK: Checks (each throws permission_denied)

    public func requireAdmin(_ peer: Peer, _ action: String) throws(RPCError) {
        guard peer.isAdmin else {
            throw .app(.permissionDenied, "\(action) needs an administrator",
                       hint: "run as root or as a member of the '\(adminGroup)' group")
        }
    }

    /// Acting on `user`: allowed for admins and for the user themself.
    public func requireSelfOrAdmin(_ peer: Peer, user: String, _ action: String) throws(RPCError) {
        guard peer.isAdmin || peer.userName == user else {
            throw .app(.permissionDenied, "uid \(peer.uid) may not \(action) user '\(user)'",
                       hint: "you may act only on your own user name (\(peer.userName ?? "none")); administrators are in '\(adminGroup)'")
        }
    }

    public func requireAdminOrLogin(_ peer: Peer, _ action: String) throws(RPCError) {
        guard peer.isAdmin || peer.isLogin else {
            throw .app(.permissionDenied, "\(action) needs an administrator or a login manager",
                       hint: "add the caller to '\(loginGroup)' (greeters) or '\(adminGroup)'")
        }
    }

    // MARK: NSS lookups (reentrant variants)

    static func userName(uid: UInt32) -> String? {
        var pwd = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &pwd, &buffer, buffer.count, &result) == 0, result != nil, let name = pwd.pw_name else {
            return nil
        }
        return String(cString: name)
    }

    static func groupID(_ name: String) -> UInt32? {
        var grp = group()
        var result: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 16384)
        guard getgrnam_r(name, &grp, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return grp.gr_gid
    }

    static func groups(user: String, primary: UInt32) -> [UInt32] {
        var count: Int32 = 64
        var list = [gid_t](repeating: 0, count: Int(count))
        if getgrouplist(user, primary, &list, &count) == -1 {
            list = [gid_t](repeating: 0, count: Int(count))
            _ = getgrouplist(user, primary, &list, &count)
        }
        return Array(list.prefix(Int(max(count, 0))))
    }
}
