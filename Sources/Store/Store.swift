import Crypto
import Foundation
import SystemPackage
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

public enum Modality: String, Sendable, Codable, CaseIterable {
    case face
    case finger
}

public struct StoredUser: Sendable, Equatable {
    public var uuid: String
    public var name: String
    public var created: String
    public var faceTemplates: Int
    public var fingerTemplates: Int
    public var pinSet: Bool
    public var policy: [String]
}

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

/// A storage quota checked inside the transaction that would pass it: its wire name
/// (`data.quota` of error 1010) and the most a user may hold.
public struct Quota: Sendable, Equatable {
    public var name: String
    public var max: Int
    public init(name: String, max: Int) {
        self.name = name
        self.max = max
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

/// Users and their biometric templates in SQLite (WAL, synchronous=FULL, file mode 0600).
///
/// Template payloads are sealed with AES-256-GCM; the associated data binds each ciphertext to
/// its user and template id, so a blob copied to another row or user does not open.
/// Every change is one transaction: a crash at any point leaves the last committed state.
public final class TemplateStore: Sendable {
    public static let fileName = "biometricd.sqlite"
    public static let schemaVersion = 5

    let connection: Mutex<SQLiteConnection>
    /// −1 when unknown (see `userCount`).
    private let cachedUserCount = Atomic<Int>(-1)
    // Immutable after init; swift-crypto does not mark it Sendable.
    nonisolated(unsafe) private let key: SymmetricKey
    public let path: String

    /// Opens (creating and migrating as needed) the store in `directory`.
    public init(directory: String, key: SymmetricKey) throws(StoreError) {
        try Self.prepareDirectory(directory)
        path = directory + "/" + Self.fileName
        // Create the file 0600 before SQLite does; SQLite gives -wal and -shm the same mode.
        do {
            let fd = try FileDescriptor.open(FilePath(path), .readWrite, options: [.create, .closeOnExec], permissions: .ownerReadWrite)
            fchmod(fd.rawValue, 0o600)
            try fd.close()
        } catch {
            throw .system("cannot create \(path)", error as? Errno ?? .ioError)
        }
        let db = try SQLiteConnection(path: path)
        try db.execute("PRAGMA journal_mode=WAL")
        try db.execute("PRAGMA synchronous=FULL")
        try db.execute("PRAGMA foreign_keys=ON")
        // The key is proven before anything is written (a migration included).
        // (As bytes: the key parameter is not Sendable and would tie `db` to the caller's region.)
        let keyBytes = key.withUnsafeBytes { Data($0) }
        try Self.verifyKey(keyBytes, db)
        try Self.migrate(db)
        try Self.recordKeyCheck(keyBytes, db)
        self.key = key
        connection = Mutex(db)
    }

    // MARK: The key check

    static let keyCheckName = "key_check"
    static let keyCheckData = Data("biometricd/key-check/v1".utf8)

    /// Rows sealed with the store key (templates and keys; PINs are Argon2id hashes, not sealed).
    /// Proves that `key` is the key this database was sealed with, before anything is served or
    /// written: by the sealed check value kept in `store_meta`, or, in a database from before it
    /// was kept, by one sealed row. Refusing here is what keeps a wrong key from "opening" a store
    /// in which every template then fails to open.
    static func verifyKey(_ keyBytes: Data, _ db: SQLiteConnection) throws(StoreError) {
        let key = SymmetricKey(data: keyBytes)
        var tables: Set<String> = []
        try db.query("SELECT name FROM sqlite_master WHERE type = 'table'") { row in if let n = row.text(0) { tables.insert(n) } }
        if tables.contains("store_meta") {
            var check: Data?
            try db.query("SELECT value FROM store_meta WHERE name = ?", [.text(keyCheckName)]) { row in check = row.blob(0) }
            if let check {
                if !opens(check, keyCheckData, key) { throw .keyMismatch(sealedRows: try sealedRows(db, tables)) }
                return
            }
        }
        var sample: (sealed: Data, associated: Data)?
        if tables.contains("templates") {
            try db.query("SELECT sealed, user_uuid, id FROM templates LIMIT 1") { row in
                sample = (row.blob(0), associatedData(user: row.text(1) ?? "", template: row.text(2) ?? ""))
            }
        }
        if sample == nil, tables.contains("keys") {
            try db.query("SELECT sealed, user_uuid, handle FROM keys LIMIT 1") { row in
                sample = (row.blob(0), keyAssociatedData(user: row.text(1) ?? "", handle: row.text(2) ?? ""))
            }
        }
        if let sample, !opens(sample.sealed, sample.associated, key) { throw .keyMismatch(sealedRows: try sealedRows(db, tables)) }
    }

    private static func opens(_ sealed: Data, _ associated: Data, _ key: SymmetricKey) -> Bool {
        (try? AES.GCM.open(try AES.GCM.SealedBox(combined: sealed), using: key, authenticating: associated)) != nil
    }

    private static func sealedRows(_ db: SQLiteConnection, _ tables: Set<String>) throws(StoreError) -> Int {
        var rows = 0
        if tables.contains("templates") { try db.query("SELECT count(*) FROM templates") { rows += Int($0.int(0)) } }
        if tables.contains("keys") { try db.query("SELECT count(*) FROM keys") { rows += Int($0.int(0)) } }
        if tables.contains("fido_keys") { try db.query("SELECT count(*) FROM fido_keys") { rows += Int($0.int(0)) } }
        if tables.contains("fido_credentials") { try db.query("SELECT count(*) FROM fido_credentials") { rows += Int($0.int(0)) } }
        return rows
    }

    /// Writes the sealed check value once (a new database, or one from before it was kept).
    static func recordKeyCheck(_ keyBytes: Data, _ db: SQLiteConnection) throws(StoreError) {
        let key = SymmetricKey(data: keyBytes)
        var present = false
        try db.query("SELECT 1 FROM store_meta WHERE name = ?", [.text(keyCheckName)]) { _ in present = true }
        guard !present else { return }
        guard let sealed = try? AES.GCM.seal(keyCheckData, using: key, authenticating: keyCheckData).combined else {
            throw .io("sealing the key check failed")
        }
        try db.query("INSERT INTO store_meta(name, value) VALUES (?, ?)", [.text(keyCheckName), .blob(sealed)])
    }

    /// How many sealed rows (templates, keys) the database in `directory` holds, or 1 when it
    /// holds none but was sealed with a key before: then a missing key must not be replaced by a
    /// new one. A missing file holds nothing.
    public static func holdsSealedData(directory: String) throws(StoreError) -> Int {
        let path = directory + "/" + fileName
        guard FileManager.default.fileExists(atPath: path) else { return 0 }
        let db = try SQLiteConnection(path: path)
        var tables: Set<String> = []
        try db.query("SELECT name FROM sqlite_master WHERE type = 'table'") { row in if let n = row.text(0) { tables.insert(n) } }
        var check = 0
        if tables.contains("store_meta") {
            try db.query("SELECT count(*) FROM store_meta WHERE name = ?", [.text(keyCheckName)]) { row in check = Int(row.int(0)) }
        }
        let rows = try sealedRows(db, tables)
        // A key check with no rows left still refuses a new key: the next start would not open.
        return rows > 0 ? rows : check
    }

    static func prepareDirectory(_ directory: String) throws(StoreError) {
        var isDir: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isDir) {
            guard isDir.boolValue else { throw .io("\(directory) is not a folder") }
            return
        }
        guard mkdir(directory, 0o700) == 0 || errno == EEXIST else {
            throw .system("cannot create state folder \(directory)", Errno(rawValue: errno))
        }
    }

    // MARK: Schema

    /// Each entry moves the schema from version i to i+1, in one transaction.
    static let migrations: [String] = [
        """
        CREATE TABLE users(
            uuid TEXT PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            created TEXT NOT NULL,
            pin_set INTEGER NOT NULL DEFAULT 0,
            policy TEXT NOT NULL DEFAULT '["face","finger","pin"]'
        );
        CREATE TABLE templates(
            id TEXT PRIMARY KEY,
            user_uuid TEXT NOT NULL REFERENCES users(uuid) ON DELETE CASCADE,
            modality TEXT NOT NULL CHECK (modality IN ('face', 'finger')),
            position TEXT,
            quality REAL NOT NULL,
            created TEXT NOT NULL,
            meta TEXT NOT NULL DEFAULT '{}',
            sealed BLOB NOT NULL
        );
        CREATE INDEX templates_by_user ON templates(user_uuid, modality);
        """,
        authSchema,
        """
        CREATE TABLE store_meta(
            name TEXT PRIMARY KEY,
            value BLOB NOT NULL
        );
        """,
        """
        CREATE TABLE camera_lockout(
            camera TEXT PRIMARY KEY,
            failures INTEGER NOT NULL DEFAULT 0,
            locked_until REAL NOT NULL DEFAULT 0,
            requires_admin INTEGER NOT NULL DEFAULT 0
        );
        """,
        fidoSchema,
    ]

    static func migrate(_ db: SQLiteConnection) throws(StoreError) {
        var version = 0
        try db.query("PRAGMA user_version") { row in version = Int(row.int(0)) }
        guard version <= migrations.count else {
            throw .io("database schema \(version) is newer than this biometricd (\(migrations.count)); upgrade biometricd")
        }
        for target in version..<migrations.count {
            try db.transaction { () throws(StoreError) in
                try db.execute(migrations[target])
                try db.execute("PRAGMA user_version = \(target + 1)")
            }
        }
    }

    // MARK: Users

    public func user(named name: String) throws(StoreError) -> StoredUser? {
        try connection.withLock { db throws(StoreError) in try Self.users(db, where: "u.name = ?", [.text(name)]).first }
    }

    public func listUsers() throws(StoreError) -> [StoredUser] {
        try connection.withLock { db throws(StoreError) in try Self.users(db, where: "1", []) }
    }

    /// The number of users. Kept in memory between changes, so that `daemon.status` (answered on
    /// the event loop) does not scan the table or wait for a write.
    public func userCount() throws(StoreError) -> Int {
        let cached = cachedUserCount.load(ordering: .acquiring)
        if cached >= 0 { return cached }
        return try connection.withLock { db throws(StoreError) in
            var n = 0
            try db.query("SELECT count(*) FROM users") { row in n = Int(row.int(0)) }
            // Under the lock: a change (which clears it under the same lock) cannot come between.
            cachedUserCount.store(n, ordering: .releasing)
            return n
        }
    }

    /// Forgets the user count; called under `connection`'s lock by anything that may add or
    /// remove a user (whether or not its transaction then commits).
    func usersMayHaveChanged() { cachedUserCount.store(-1, ordering: .releasing) }

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
            let policy = Self.factorNames(row.text(4))
            result.append(StoredUser(uuid: row.text(0) ?? "", name: row.text(1) ?? "", created: row.text(2) ?? "",
                                     faceTemplates: Int(row.int(5)), fingerTemplates: Int(row.int(6)),
                                     pinSet: row.int(3) != 0, policy: policy))
        }
        return result
    }

    /// Deletes a user and all their templates. Returns the number of templates removed.
    public func deleteUser(named name: String) throws(StoreError) -> Int {
        try connection.withLock { db throws(StoreError) in
            defer { usersMayHaveChanged() }
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

    // MARK: Templates

    /// Seals and stores a template for `user` (created if new), in one transaction.
    @discardableResult
    public func addTemplate(user name: String, modality: Modality, position: String? = nil, quality: Double,
                            meta: TemplateMeta = TemplateMeta(), payload: Data, quota: Quota? = nil) throws(StoreError) -> TemplateInfo
    {
        try addTemplates(user: name, modality: modality,
                         [NewTemplate(position: position, quality: quality, meta: meta, payload: payload)], quota: quota)[0]
    }

    /// Seals and stores one user's new templates in one transaction: all of them, or (quota
    /// passed, I/O error) none. `quota` counts the user's templates of `modality` inside the
    /// transaction, so concurrent calls cannot together pass it.
    public func addTemplates(user name: String, modality: Modality, _ items: [NewTemplate], quota: Quota? = nil) throws(StoreError)
        -> [TemplateInfo]
    {
        let created = Self.timestamp()
        return try connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) -> [TemplateInfo] in
                if let quota {
                    var have = 0
                    try db.query("""
                        SELECT count(*) FROM templates t JOIN users u ON u.uuid = t.user_uuid WHERE u.name = ? AND t.modality = ?
                        """, [.text(name), .text(modality.rawValue)]) { row in have = Int(row.int(0)) }
                    guard have + items.count <= quota.max else { throw .quotaExceeded(quota.name, max: quota.max, have: have) }
                }
                let uuid = try ensureUser(db, name: name, created: created)
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
    public func addTemplates(_ items: [(user: String, modality: Modality, quality: Double, payload: Data)]) throws(StoreError) {
        let created = Self.timestamp()
        try connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                var users: [String: String] = [:]
                for item in items {
                    let uuid: String
                    if let known = users[item.user] { uuid = known } else {
                        uuid = try ensureUser(db, name: item.user, created: created)
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

    /// The user's uuid, creating the user when new (call inside a transaction, under the lock).
    func ensureUser(_ db: SQLiteConnection, name: String, created: String) throws(StoreError) -> String {
        var uuid: String?
        try db.query("SELECT uuid FROM users WHERE name = ?", [.text(name)]) { row in uuid = row.text(0) }
        if let uuid { return uuid }
        usersMayHaveChanged()
        let new = UUID().uuidString.lowercased()
        try db.query("INSERT INTO users(uuid, name, created) VALUES (?,?,?)", [.text(new), .text(name), .text(created)])
        return new
    }

    /// Templates of one user (or everyone's when `user` is nil), without payloads.
    public func templates(user: String?, modality: Modality) throws(StoreError) -> [TemplateInfo] {
        try connection.withLock { db throws(StoreError) in
            var result: [TemplateInfo] = []
            var sql = """
                SELECT t.id, u.name, t.modality, t.position, t.quality, t.created, t.meta
                FROM templates t JOIN users u ON u.uuid = t.user_uuid WHERE t.modality = ?
                """
            var binds: [SQLiteConnection.Value] = [.text(modality.rawValue)]
            if let user {
                sql += " AND u.name = ?"
                binds.append(.text(user))
            }
            try db.query(sql + " ORDER BY t.created, t.id", binds) { row in
                result.append(TemplateInfo(id: row.text(0) ?? "", user: row.text(1) ?? "",
                                           modality: Modality(rawValue: row.text(2) ?? "") ?? modality,
                                           position: row.text(3), quality: row.double(4), created: row.text(5) ?? "",
                                           meta: TemplateMeta(stored: row.text(6) ?? "{}")))
            }
            return result
        }
    }

    /// Opens the sealed payloads of one user's (or everyone's) templates.
    public func payloads(user: String?, modality: Modality) throws(StoreError) -> [(TemplateInfo, Data)] {
        let rows: [(TemplateInfo, String, Data)] = try connection.withLock { db throws(StoreError) in
            var result: [(TemplateInfo, String, Data)] = []
            var sql = """
                SELECT t.id, u.name, t.position, t.quality, t.created, t.meta, u.uuid, t.sealed
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
                result.append((info, row.text(6) ?? "", row.blob(7)))
            }
            return result
        }
        var opened: [(TemplateInfo, Data)] = []
        for (info, uuid, sealed) in rows {
            opened.append((info, try unseal(sealed, user: uuid, template: info.id)))
        }
        return opened
    }

    // MARK: Bulk access for 1:N galleries

    /// The number of stored templates of a modality.
    public func templateCount(modality: Modality) throws(StoreError) -> Int {
        try connection.withLock { db throws(StoreError) in
            var n = 0
            try db.query("SELECT count(*) FROM templates WHERE modality = ?", [.text(modality.rawValue)]) { row in n = Int(row.int(0)) }
            return n
        }
    }

    /// Up to `limit` opened payloads with a row key greater than `after`, in key order: a gallery
    /// loads page by page, so the store's lock is never held for long and progress can be told.
    public func payloadPage(modality: Modality, after key: Int64, limit: Int) throws(StoreError) -> [(key: Int64, data: Data)] {
        let rows: [(Int64, String, String, Data)] = try connection.withLock { db throws(StoreError) in
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
        let rows: [(Int64, String, String, String, Data)] = try connection.withLock { db throws(StoreError) in
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
    public func removeTemplates(user: String, modality: Modality, id: String?) throws(StoreError) -> Int {
        try connection.withLock { db throws(StoreError) in
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

    /// Runs SQLite's own consistency check (for tests and `daemon.status` diagnostics).
    public func integrityCheck() throws(StoreError) -> String {
        try connection.withLock { db throws(StoreError) in
            var out = ""
            try db.query("PRAGMA integrity_check") { row in out = row.text(0) ?? "" }
            return out
        }
    }

    /// Checkpoints the WAL into the database file (clean shutdown).
    public func flush() {
        connection.withLock { db in try? db.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
    }

    // MARK: Sealing

    static func associatedData(user: String, template: String) -> Data {
        Data("biometricd/template/v1|\(user)|\(template)".utf8)
    }

    private func seal(_ payload: Data, user: String, template: String) throws(StoreError) -> Data {
        try seal(payload, associatedData: Self.associatedData(user: user, template: template))
    }

    private func unseal(_ sealed: Data, user: String, template: String) throws(StoreError) -> Data {
        try unseal(sealed, associatedData: Self.associatedData(user: user, template: template), what: template)
    }

    /// AES-256-GCM with the store key; `associatedData` binds the ciphertext to its row.
    func seal(_ payload: Data, associatedData: Data) throws(StoreError) -> Data {
        do {
            let box = try AES.GCM.seal(payload, using: key, authenticating: associatedData)
            guard let combined = box.combined else { throw StoreError.io("AES-GCM gave no combined form") }
            return combined
        } catch {
            throw .io("sealing failed: \(error)")
        }
    }

    func unseal(_ sealed: Data, associatedData: Data, what: String) throws(StoreError) -> Data {
        do {
            let box = try AES.GCM.SealedBox(combined: sealed)
            return try AES.GCM.open(box, using: key, authenticating: associatedData)
        } catch {
            throw .corrupt(what)
        }
    }

    static func timestamp() -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.string(from: Date())
    }
}
