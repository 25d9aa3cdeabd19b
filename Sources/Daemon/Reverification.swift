import BiometricAuth
import BiometricCore
import BiometricProtocol
import Foundation
import Synchronization

/// Fresh authentications on one connection (issue 20, SPEC §4: "changes to a user's factors by a
/// caller who is not an admin need a fresh authentication of that user"). A user passes a factor
/// they already have (auth.authenticate, pin.verify, a face or finger verify that matched) or
/// proves the account password (auth.password.begin → the root helper → auth.password.proven);
/// for `windowSeconds` after that, this connection may change that user's factors. Kept per
/// connection, so another process of the same user (malware running as alice) gains nothing
/// from alice's own authentication elsewhere.
final class Reverification: Sendable {
    /// Five minutes: long enough for a guided enrolment after the check, short enough that an
    /// unattended terminal does not stay open to changes.
    static let windowSeconds = 300
    private let times = Mutex<[String: UInt64]>([:])

    func record(_ user: String) {
        let now = monotonicNanoseconds()
        times.withLock { $0[user] = now }
    }

    func isFresh(_ user: String, now: UInt64 = monotonicNanoseconds()) -> Bool {
        guard let at = times.withLock({ $0[user] }) else { return false }
        return now &- at <= UInt64(Self.windowSeconds) * 1_000_000_000
    }
}

/// Password proofs under way: a nonce handed to one connection for one user, waiting for the
/// root helper's report (auth.password.proven). A report for an unknown, expired or other
/// user's nonce changes nothing. The connection is held weakly: a closed one proves nothing.
final class PasswordProofs: Sendable {
    static let lifetimeSeconds = 120
    /// At most this many proofs wait at once per uid (each is one PAM conversation's worth).
    static let maxPendingPerUser = 4

    private struct Pending {
        weak var connection: ClientConnection?
        let user: String
        let uid: UInt32
        let expires: UInt64
    }
    private let pending = Mutex<[String: Pending]>([:])

    /// A new nonce for `user` on `connection` (43 base64url characters, from the system CSPRNG).
    func begin(user: String, connection: ClientConnection) -> String? {
        var bytes = [UInt8](repeating: 0, count: 32)
        var rng = SystemRandomNumberGenerator()
        for i in bytes.indices { bytes[i] = UInt8.random(in: 0...255, using: &rng) }
        let nonce = Self.base64url(bytes)
        let now = monotonicNanoseconds()
        let uid = connection.peer.uid
        return pending.withLock { all -> String? in
            all = all.filter { $0.value.expires > now && $0.value.connection != nil }
            guard all.values.filter({ $0.uid == uid }).count < Self.maxPendingPerUser else { return nil }
            all[nonce] = Pending(connection: connection, user: user, uid: uid,
                                 expires: now + UInt64(Self.lifetimeSeconds) * 1_000_000_000)
            return nonce
        }
    }

    /// The root helper's report: the connection that asked is now freshly authenticated as
    /// `user`. Single use. False when no such live proof waits.
    func proven(user: String, nonce: String) -> Bool {
        let now = monotonicNanoseconds()
        let entry = pending.withLock { $0.removeValue(forKey: nonce) }
        guard let entry, entry.user == user, entry.expires > now, let connection = entry.connection else { return false }
        connection.reverification.record(user)
        return true
    }

    static func base64url(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

/// Identifications on one connection that answered `step_up_required` (two candidates too close
/// to tell apart), waiting to be completed by auth.authenticate with `step_up` (Incode: "confirm
/// the identity by entering the requested code"). Single use, 60 s, candidates only.
final class StepUps: Sendable {
    static let lifetimeSeconds = 60
    struct Pending: Sendable {
        var candidates: [String]
        /// The modality the identification used: the second factor must be another.
        var modality: Factor
        var expires: UInt64
    }
    private let pending = Mutex<[RequestID: Pending]>([:])

    func record(_ request: RequestID, candidates: [String], modality: Factor) {
        let expires = monotonicNanoseconds() + UInt64(Self.lifetimeSeconds) * 1_000_000_000
        pending.withLock { all in
            if all.count >= 16, let oldest = all.min(by: { $0.value.expires < $1.value.expires })?.key { all[oldest] = nil }
            all[request] = Pending(candidates: candidates, modality: modality, expires: expires)
        }
    }

    /// The identification `request` if it waits, has not expired and named `user`; consumed.
    func take(_ request: RequestID, user: String) -> Pending? {
        let now = monotonicNanoseconds()
        guard let entry = pending.withLock({ $0.removeValue(forKey: request) }), entry.expires > now,
              entry.candidates.contains(user) else { return nil }
        return entry
    }
}
