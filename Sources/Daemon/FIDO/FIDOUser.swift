import CSystemd
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The user the FIDO authenticator acts for, at the moment of a request.
struct FIDOUser: Sendable, Equatable {
    var name: String
    var uid: UInt32
    var gid: UInt32
}

/// Who verifies, decided in one place: a kiosk's configured user (`fido_user`), or else the
/// owner of the active session on seat0 (logind). The hidraw node is tagged `uaccess`, so only
/// that session's user can open it; the face at the camera must then be theirs.
struct FIDOUserSource: Sendable {
    enum Mode: Sendable, Equatable {
        /// The active session on this logind seat.
        case seat(String)
        /// One configured user, whoever is logged in (a kiosk).
        case kiosk(String)
    }

    let mode: Mode
    /// The active session's uid on a seat; nil when none (no session, no logind). A seam for tests.
    let activeUID: @Sendable (String) -> UInt32?
    /// A uid's account; nil when the uid has no passwd entry.
    let account: @Sendable (UInt32) -> FIDOUser?
    /// A name's account, for the kiosk user (nil: not a system account; it may still be a biometricd user).
    let named: @Sendable (String) -> FIDOUser?

    init(kioskUser: String?) {
        self.init(mode: kioskUser.map(Mode.kiosk) ?? .seat("seat0"), activeUID: Self.logindActiveUID,
                  account: Self.passwdAccount, named: Self.passwdAccount(named:))
    }

    init(mode: Mode, activeUID: @escaping @Sendable (String) -> UInt32?, account: @escaping @Sendable (UInt32) -> FIDOUser?,
         named: @escaping @Sendable (String) -> FIDOUser? = { _ in nil }) {
        self.mode = mode
        self.activeUID = activeUID
        self.account = account
        self.named = named
    }

    /// The user now; nil when there is none (nobody logged in on the seat).
    func current() -> FIDOUser? {
        switch mode {
        case .kiosk(let name):
            // Not necessarily a system account: the uid only books its turn in the PIN queue.
            return named(name) ?? FIDOUser(name: name, uid: 65534, gid: 65534)
        case .seat(let seat):
            guard let uid = activeUID(seat) else { return nil }
            return account(uid)
        }
    }

    /// A description for the log and daemon's startup line.
    var description: String {
        switch mode {
        case .kiosk(let name): "the configured user '\(name)' (fido_user)"
        case .seat(let seat): "the user of the active session on \(seat) (logind)"
        }
    }

    static func logindActiveUID(_ seat: String) -> UInt32? {
        var uid: UInt32 = 0
        return csd_seat_active_uid(seat, &uid) == 0 ? uid : nil
    }

    static func passwdAccount(_ uid: UInt32) -> FIDOUser? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid_t(uid), &entry, &buffer, buffer.count, &result) == 0, result != nil, let name = entry.pw_name else {
            return nil
        }
        return FIDOUser(name: String(cString: name), uid: uid, gid: UInt32(entry.pw_gid))
    }

    static func passwdAccount(named name: String) -> FIDOUser? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwnam_r(name, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return FIDOUser(name: name, uid: UInt32(entry.pw_uid), gid: UInt32(entry.pw_gid))
    }
}
