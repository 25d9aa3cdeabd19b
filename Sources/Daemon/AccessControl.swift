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
