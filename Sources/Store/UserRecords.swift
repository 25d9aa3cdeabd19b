import Foundation

/// A user as `users.named` and `users.all` list them.
public struct StoredUser: Sendable, Equatable {
    public var uuid: String
    public var name: String
    public var created: String
    public var faceTemplates: Int
    public var fingerTemplates: Int
    public var pinSet: Bool
    public var policy: [String]
}

/// The users: who is enrolled, with their template counts and factor policy. A user is
/// created by the first record stored for them and deleted with everything they own.
public struct UserRecords: Sendable {
    let store: Store

    /// The number of users. Kept in memory between changes, so that `daemon.status` (answered on
    /// the event loop) does not scan the table or wait for a write.
    public func count() throws(StoreError) -> Int {
        let cached = store.cachedUserCount.load(ordering: .acquiring)
        if cached >= 0 { return cached }
        return try store.connection.withLock { db throws(StoreError) in
            var n = 0
            try db.query("SELECT count(*) FROM users") { row in n = Int(row.int(0)) }
            // Under the lock: a change (which clears it under the same lock) cannot come between.
            store.cachedUserCount.store(n, ordering: .releasing)
            return n
        }
    }

    public func named(_ name: String) throws(StoreError) -> StoredUser? {
        try store.connection.withLock { db throws(StoreError) in try Self.users(db, where: "u.name = ?", [.text(name)]).first }
    }

    public func all() throws(StoreError) -> [StoredUser] {
        try store.connection.withLock { db throws(StoreError) in try Self.users(db, where: "1", []) }
    }

    private static func users(_ db: SQLiteConnection, where clause: String, _ binds: [SQLiteConnection.Value]) throws(StoreError)
        -> [StoredUser]
    {
        var result: [StoredUser] = []
        let sql = """
            SELECT u.uuid, u.name, u.created, u.pin_set, u.policy,
                   (SELECT count(*) FROM templates t WHERE t.user_uuid = u.uuid AND t.modality = 'face'),
                   (SELECT count(*) FROM templates t WHERE t.user_uuid = u.uuid AND t.modality = 'finger')
            FROM users u WHERE \(clause) ORDER BY u.name
            """
        try db.query(sql, binds) { row in
            let policy = Store.factorNames(row.text(4))
            result.append(StoredUser(uuid: row.text(0) ?? "", name: row.text(1) ?? "", created: row.text(2) ?? "",
                                     faceTemplates: Int(row.int(5)), fingerTemplates: Int(row.int(6)),
                                     pinSet: row.int(3) != 0, policy: policy))
        }
        return result
    }

    /// Deletes a user and all their templates. Returns the number of templates removed.
    public func delete(named name: String) throws(StoreError) -> Int {
        try store.connection.withLock { db throws(StoreError) in
            defer { store.usersMayHaveChanged() }
            return try db.transaction { () throws(StoreError) -> Int in
                var uuid: String?
                try db.query("SELECT uuid FROM users WHERE name = ?", [.text(name)]) { row in uuid = row.text(0) }
                guard let uuid else { throw .notFound("user '\(name)'") }
                var removed = 0
                try db.query("SELECT count(*) FROM templates WHERE user_uuid = ?", [.text(uuid)]) { row in removed = Int(row.int(0)) }
                try db.query("DELETE FROM users WHERE uuid = ?", [.text(uuid)])
                return removed
            }
        }
    }
}

extension Store {
    public var users: UserRecords { UserRecords(store: self) }
}
