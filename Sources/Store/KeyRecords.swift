import Foundation

/// A registered biometric-bound key (the private half stays sealed in the store).
public struct KeyRecord: Sendable, Equatable {
    public var handle: String
    public var user: String
    public var appID: String
    public var aaid: String
    public var publicKeyPEM: String
    public var counter: UInt32
    public var created: String
}

/// Biometric-bound signing keys: the private half sealed in the store, a signature counter
/// raised on disk before each signature.
/// Each read-modify-write runs in one transaction under the connection lock, so concurrent
/// clients count exactly, and each change is on disk (synchronous=FULL) before the caller replies.
public struct KeyRecords: Sendable {
    let store: Store

    // MARK: Keys

    /// Stores a new key for (user, app_id, aaid), replacing an earlier registration of the same
    /// triple (as a FIDO authenticator re-registers). Creates the user when new.
    public func add(user name: String, appID: String, aaid: String, handle: String, publicKeyPEM: String,
                       privateKey: Data, quota: Quota? = nil) throws(StoreError) -> KeyRecord
    {
        let created = Store.timestamp()
        return try store.connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) -> KeyRecord in
                let uuid = try store.ensureUser(db, name: name, created: created)
                try db.query("DELETE FROM keys WHERE user_uuid = ? AND app_id = ? AND aaid = ?", [.text(uuid), .text(appID), .text(aaid)])
                if let quota {
                    var have = 0
                    try db.query("SELECT count(*) FROM keys WHERE user_uuid = ?", [.text(uuid)]) { row in have = Int(row.int(0)) }
                    // Thrown inside the transaction: the replaced registration is kept.
                    guard have < quota.max else { throw .quotaExceeded(quota.name, max: quota.max, have: have) }
                }
                let sealed = try store.seal(privateKey, associatedData: Store.keyAssociatedData(user: uuid, handle: handle))
                try db.query("""
                    INSERT INTO keys(handle, user_uuid, app_id, aaid, public_pem, sealed, counter, created) VALUES (?,?,?,?,?,?,0,?)
                    """, [.text(handle), .text(uuid), .text(appID), .text(aaid), .text(publicKeyPEM), .blob(sealed), .text(created)])
                return KeyRecord(handle: handle, user: name, appID: appID, aaid: aaid, publicKeyPEM: publicKeyPEM, counter: 0,
                                 created: created)
            }
        }
    }

    public func list(user name: String) throws(StoreError) -> [KeyRecord] {
        try store.connection.withLock { db throws(StoreError) in try Self.keys(db, where: "u.name = ?", [.text(name)]) }
    }

    public func get(handle: String) throws(StoreError) -> KeyRecord? {
        try store.connection.withLock { db throws(StoreError) in try Self.keys(db, where: "k.handle = ?", [.text(handle)]).first }
    }

    private static func keys(_ db: SQLiteConnection, where clause: String, _ binds: [SQLiteConnection.Value]) throws(StoreError)
        -> [KeyRecord]
    {
        var result: [KeyRecord] = []
        try db.query("""
            SELECT k.handle, u.name, k.app_id, k.aaid, k.public_pem, k.counter, k.created
            FROM keys k JOIN users u ON u.uuid = k.user_uuid WHERE \(clause) ORDER BY k.created, k.handle
            """, binds) { row in
            result.append(KeyRecord(handle: row.text(0) ?? "", user: row.text(1) ?? "", appID: row.text(2) ?? "",
                                    aaid: row.text(3) ?? "", publicKeyPEM: row.text(4) ?? "", counter: UInt32(clamping: row.int(5)),
                                    created: row.text(6) ?? ""))
        }
        return result
    }

    /// Raises the key's signature counter by one, on disk, and opens its private key: the counter
    /// a signature carries is never handed out twice, even across a crash.
    public func nextSignature(handle: String) throws(StoreError) -> (counter: UInt32, privateKey: Data) {
        let (uuid, counter, sealed): (String, UInt32, Data) = try store.connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) -> (String, UInt32, Data) in
                try db.query("UPDATE keys SET counter = counter + 1 WHERE handle = ? AND counter < 4294967295", [.text(handle)])
                guard db.changes == 1 else { throw .notFound("key '\(handle)'") }
                var row: (String, UInt32, Data)?
                try db.query("SELECT user_uuid, counter, sealed FROM keys WHERE handle = ?", [.text(handle)]) { r in
                    row = (r.text(0) ?? "", UInt32(clamping: r.int(1)), r.blob(2))
                }
                guard let row else { throw .notFound("key '\(handle)'") }
                return row
            }
        }
        let key = try store.unseal(sealed, associatedData: Store.keyAssociatedData(user: uuid, handle: handle), what: "key \(handle)")
        return (counter, key)
    }

    /// Removes one key (by handle) or all of a user's keys; returns how many.
    public func remove(user name: String, handle: String?) throws(StoreError) -> Int {
        try store.connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) -> Int in
                var sql = "DELETE FROM keys WHERE user_uuid = (SELECT uuid FROM users WHERE name = ?)"
                var binds: [SQLiteConnection.Value] = [.text(name)]
                if let handle {
                    sql += " AND handle = ?"
                    binds.append(.text(handle))
                }
                try db.query(sql, binds)
                let n = db.changes
                if n == 0, let handle { throw .notFound("key '\(handle)' of user '\(name)'") }
                return n
            }
        }
    }
}

extension Store {
    public var keys: KeyRecords { KeyRecords(store: self) }
}
