import BiometricAuth
import Foundation

/// Each user's authentication policy: the factors that may authenticate them and whether
/// liveness is required.
/// Each read-modify-write runs in one transaction under the connection lock, so concurrent
/// clients count exactly, and each change is on disk (synchronous=FULL) before the caller replies.
public struct PolicyRecords: Sendable {
    let store: Store

    /// The user's policy; nil for an unknown user.
    public func get(user name: String) throws(StoreError) -> AuthPolicy? {
        try store.connection.withLock { db throws(StoreError) in
            var result: AuthPolicy?
            try db.query("SELECT policy, require_liveness FROM users WHERE name = ?", [.text(name)]) { row in
                let names = Store.factorNames(row.text(0))
                result = AuthPolicy(factors: names.compactMap(Factor.init(rawValue:)), requireLiveness: row.int(1) != 0)
            }
            return result
        }
    }

    /// Sets the policy (creating the user when new).
    public func set(user name: String, _ policy: AuthPolicy) throws(StoreError) {
        let created = Store.timestamp()
        let json = String(decoding: (try? JSONEncoder().encode(policy.factors.map(\.rawValue))) ?? Data("[]".utf8), as: UTF8.self)
        try store.connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                let uuid = try store.ensureUser(db, name: name, created: created)
                try db.query("UPDATE users SET policy = ?, require_liveness = ? WHERE uuid = ?",
                             [.text(json), .int(policy.requireLiveness ? 1 : 0), .text(uuid)])
            }
        }
    }

}

extension Store {
    public var policies: PolicyRecords { PolicyRecords(store: self) }
}
