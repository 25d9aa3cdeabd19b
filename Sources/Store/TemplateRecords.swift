import Foundation

/// A template to store: its clear-text facts and the payload to seal.
public struct NewTemplate: Sendable {
    /// The id to store it under (an import keeping its id); nil: a new UUID.
    public var id: String?
    public var position: String?
    public var quality: Double
    public var meta: TemplateMeta
    public var payload: Data

    public init(id: String? = nil, position: String? = nil, quality: Double, meta: TemplateMeta = TemplateMeta(), payload: Data) {
        self.id = id
        self.position = position
        self.quality = quality
        self.meta = meta
        self.payload = payload
    }
}

/// A template's clear-text facts (the biometric payload itself stays sealed until asked for).
public struct TemplateInfo: Sendable, Equatable {
    public var id: String
    public var user: String
    public var modality: Modality
    public var position: String?
    public var quality: Double
    public var created: String
    /// Non-biometric metadata (pose, frames, source).
    public var meta: TemplateMeta
}

/// Biometric templates: payloads sealed with AES-256-GCM, the associated data binding each
/// ciphertext to its user and template id, so a blob copied to another row or user does not open.
public struct TemplateRecords: Sendable {
    let store: Store

    // MARK: Templates

    /// Seals and stores a template for `user` (created if new), in one transaction.
    @discardableResult
    public func add(user name: String, modality: Modality, position: String? = nil, quality: Double,
                            meta: TemplateMeta = TemplateMeta(), payload: Data, quota: Quota? = nil) throws(StoreError) -> TemplateInfo
    {
        try add(user: name, modality: modality,
                         [NewTemplate(position: position, quality: quality, meta: meta, payload: payload)], quota: quota)[0]
    }

    /// Seals and stores one user's new templates in one transaction: all of them, or (quota
    /// passed, I/O error) none. `quota` counts the user's templates of `modality` inside the
    /// transaction, so concurrent calls cannot together pass it.
    public func add(user name: String, modality: Modality, _ items: [NewTemplate], quota: Quota? = nil) throws(StoreError)
        -> [TemplateInfo]
    {
        let created = Store.timestamp()
        return try store.connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) -> [TemplateInfo] in
                if let quota {
                    var have = 0
                    try db.query("""
                        SELECT count(*) FROM templates t JOIN users u ON u.uuid = t.user_uuid WHERE u.name = ? AND t.modality = ?
                        """, [.text(name), .text(modality.rawValue)]) { row in have = Int(row.int(0)) }
                    guard have + items.count <= quota.max else { throw .quotaExceeded(quota.name, max: quota.max, have: have) }
                }
                let uuid = try store.ensureUser(db, name: name, created: created)
                var infos: [TemplateInfo] = []
                for item in items {
                    let id = item.id ?? UUID().uuidString.lowercased()
                    if item.id != nil {
                        var used = false
                        try db.query("SELECT 1 FROM templates WHERE id = ?", [.text(id)]) { _ in used = true }
                        if used { throw .conflict("template id '\(id)' is already used") }
                    }
                    let sealed = try seal(item.payload, user: uuid, template: id)
                    try db.query(
                        "INSERT INTO templates(id, user_uuid, modality, position, quality, created, meta, sealed) VALUES (?,?,?,?,?,?,?,?)",
                        [.text(id), .text(uuid), .text(modality.rawValue), item.position.map { .text($0) } ?? .null,
                         .double(item.quality), .text(created), .text(item.meta.stored), .blob(sealed)])
                    infos.append(TemplateInfo(id: id, user: name, modality: modality, position: item.position, quality: item.quality,
                                              created: created, meta: item.meta))
                }
                return infos
            }
        }
    }

    /// Seals and stores many templates in one transaction (bulk imports and benchmarks: one
    /// durable write instead of one per template).
    public func add(_ items: [(user: String, modality: Modality, quality: Double, payload: Data)]) throws(StoreError) {
        let created = Store.timestamp()
        try store.connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                var users: [String: String] = [:]
                for item in items {
                    let uuid: String
                    if let known = users[item.user] { uuid = known } else {
                        uuid = try store.ensureUser(db, name: item.user, created: created)
                        users[item.user] = uuid
                    }
                    let id = UUID().uuidString.lowercased()
                    let sealed = try seal(item.payload, user: uuid, template: id)
                    try db.query(
                        "INSERT INTO templates(id, user_uuid, modality, position, quality, created, meta, sealed) VALUES (?,?,?,?,?,?,?,?)",
                        [.text(id), .text(uuid), .text(item.modality.rawValue), .null, .double(item.quality), .text(created),
                         .text(TemplateMeta().stored), .blob(sealed)])
                }
            }
        }
    }

    /// Templates of one user (or everyone's when `user` is nil), without payloads.
    public func list(user: String?, modality: Modality) throws(StoreError) -> [TemplateInfo] {
        try store.connection.withLock { db throws(StoreError) in
            try Self.rows(db, user: user, modality: modality, sealed: false).map(\.info)
        }
    }

    /// Opens the sealed payloads of one user's (or everyone's) templates.
    public func payloads(user: String?, modality: Modality) throws(StoreError) -> [(TemplateInfo, Data)] {
        let rows = try store.connection.withLock { db throws(StoreError) in
            try Self.rows(db, user: user, modality: modality, sealed: true)
        }
        var opened: [(TemplateInfo, Data)] = []
        for (info, uuid, sealed) in rows {
            opened.append((info, try unseal(sealed ?? Data(), user: uuid, template: info.id)))
        }
        return opened
    }

    /// The templates of `modality`, one user's (or everyone's when `user` is nil), oldest first:
    /// each with its user's uuid and, when `sealed`, its sealed payload (nil otherwise).
    private static func rows(_ db: SQLiteConnection, user: String?, modality: Modality, sealed: Bool) throws(StoreError)
        -> [(info: TemplateInfo, uuid: String, sealed: Data?)]
    {
        var result: [(info: TemplateInfo, uuid: String, sealed: Data?)] = []
        var sql = """
            SELECT t.id, u.name, t.position, t.quality, t.created, t.meta, u.uuid\(sealed ? ", t.sealed" : "")
            FROM templates t JOIN users u ON u.uuid = t.user_uuid WHERE t.modality = ?
            """
        var binds: [SQLiteConnection.Value] = [.text(modality.rawValue)]
        if let user {
            sql += " AND u.name = ?"
            binds.append(.text(user))
        }
        try db.query(sql + " ORDER BY t.created, t.id", binds) { row in
            let info = TemplateInfo(id: row.text(0) ?? "", user: row.text(1) ?? "", modality: modality,
                                    position: row.text(2), quality: row.double(3), created: row.text(4) ?? "",
                                    meta: TemplateMeta(stored: row.text(5) ?? "{}"))
            result.append((info, row.text(6) ?? "", sealed ? row.blob(7) : nil))
        }
        return result
    }

    // MARK: Bulk access for 1:N galleries

    /// The number of stored templates of a modality.
    public func count(modality: Modality) throws(StoreError) -> Int {
        try store.connection.withLock { db throws(StoreError) in
            var n = 0
            try db.query("SELECT count(*) FROM templates WHERE modality = ?", [.text(modality.rawValue)]) { row in n = Int(row.int(0)) }
            return n
        }
    }

    /// Up to `limit` opened payloads with a row key greater than `after`, in key order: a gallery
    /// loads page by page, so the store's lock is never held for long and progress can be told.
    public func payloadPage(modality: Modality, after key: Int64, limit: Int) throws(StoreError) -> [(key: Int64, data: Data)] {
        let rows: [(Int64, String, String, Data)] = try store.connection.withLock { db throws(StoreError) in
            var result: [(Int64, String, String, Data)] = []
            try db.query("""
                SELECT t.rowid, t.id, t.user_uuid, t.sealed FROM templates t
                WHERE t.modality = ? AND t.rowid > ? ORDER BY t.rowid LIMIT ?
                """, [.text(modality.rawValue), .int(key), .int(Int64(limit))]) { row in
                result.append((row.int(0), row.text(1) ?? "", row.text(2) ?? "", row.blob(3)))
            }
            return result
        }
        var opened: [(key: Int64, data: Data)] = []
        opened.reserveCapacity(rows.count)
        for (key, id, uuid, sealed) in rows { opened.append((key, try unseal(sealed, user: uuid, template: id))) }
        return opened
    }

    /// The opened payloads and users of the templates stored under `keys` (row keys from
    /// `payloadPage`); keys no longer stored are left out.
    public func payloads(keys: [Int64], modality: Modality) throws(StoreError) -> [(key: Int64, user: String, data: Data)] {
        guard !keys.isEmpty else { return [] }
        let rows: [(Int64, String, String, String, Data)] = try store.connection.withLock { db throws(StoreError) in
            var result: [(Int64, String, String, String, Data)] = []
            // One statement per 500 keys (SQLite's default limit on bound parameters is 32766).
            // Only the rowid is in the WHERE clause, so SQLite looks the rows up by key; a
            // modality condition there can make it scan the whole table instead.
            for start in stride(from: 0, to: keys.count, by: 500) {
                let part = keys[start..<min(keys.count, start + 500)]
                let marks = Array(repeating: "?", count: part.count).joined(separator: ",")
                try db.query("""
                    SELECT t.rowid, t.id, u.uuid, u.name, t.sealed, t.modality FROM templates t JOIN users u ON u.uuid = t.user_uuid
                    WHERE t.rowid IN (\(marks))
                    """, part.map { .int($0) }) { row in
                    guard row.text(5) == modality.rawValue else { return }
                    result.append((row.int(0), row.text(1) ?? "", row.text(2) ?? "", row.text(3) ?? "", row.blob(4)))
                }
            }
            return result
        }
        var opened: [(key: Int64, user: String, data: Data)] = []
        opened.reserveCapacity(rows.count)
        for (key, id, uuid, name, sealed) in rows { opened.append((key, name, try unseal(sealed, user: uuid, template: id))) }
        return opened
    }

    /// Removes one template (when `id` is given) or all of a user's templates of a modality.
    public func remove(user: String, modality: Modality, id: String?) throws(StoreError) -> Int {
        try store.connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) -> Int in
                var sql = "DELETE FROM templates WHERE modality = ? AND user_uuid = (SELECT uuid FROM users WHERE name = ?)"
                var binds: [SQLiteConnection.Value] = [.text(modality.rawValue), .text(user)]
                if let id {
                    sql += " AND id = ?"
                    binds.append(.text(id))
                }
                try db.query(sql, binds)
                let n = db.changes
                if n == 0, id != nil { throw .notFound("template '\(id!)' of user '\(user)'") }
                return n
            }
        }
    }

    private func seal(_ payload: Data, user: String, template: String) throws(StoreError) -> Data {
        try store.seal(payload, associatedData: Store.associatedData(user: user, template: template))
    }

    private func unseal(_ sealed: Data, user: String, template: String) throws(StoreError) -> Data {
        try store.unseal(sealed, associatedData: Store.associatedData(user: user, template: template), what: template)
    }
}

extension Store {
    public var templates: TemplateRecords { TemplateRecords(store: self) }
}
