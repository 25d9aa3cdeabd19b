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

/// The store: one SQLite file (WAL, synchronous=FULL, mode 0600) behind one connection and its
/// lock, the key that seals its sensitive rows, and the schema. Records are read and written by
/// kind, each through its own type: `users`, `templates`, `policies`, `pins`, `lockouts`, `keys`,
/// `fido` (UserRecords.swift … FIDORecords.swift).
///
/// Sealed rows (templates, keys, FIDO keys and credentials, the CTAP PIN) are AES-256-GCM with
/// associated data naming their row, so a blob copied to another row or user does not open.
/// Every change is one transaction: a crash at any point leaves the last committed state.
public final class Store: Sendable {
    public static let fileName = "biometricd.sqlite"
    public static let schemaVersion = 5

    let connection: Mutex<SQLiteConnection>
    /// −1 when unknown (see `UserRecords.count`).
    let cachedUserCount = Atomic<Int>(-1)
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


    static let authSchema = """
        ALTER TABLE users ADD COLUMN require_liveness INTEGER NOT NULL DEFAULT 1;
        CREATE TABLE pins(
            user_uuid TEXT PRIMARY KEY REFERENCES users(uuid) ON DELETE CASCADE,
            hash TEXT NOT NULL,
            failures INTEGER NOT NULL DEFAULT 0,
            updated TEXT NOT NULL
        );
        CREATE TABLE lockout(
            user_uuid TEXT PRIMARY KEY REFERENCES users(uuid) ON DELETE CASCADE,
            failures INTEGER NOT NULL DEFAULT 0,
            locked_until REAL NOT NULL DEFAULT 0,
            requires_pin INTEGER NOT NULL DEFAULT 0
        );
        CREATE TABLE keys(
            handle TEXT PRIMARY KEY,
            user_uuid TEXT NOT NULL REFERENCES users(uuid) ON DELETE CASCADE,
            app_id TEXT NOT NULL,
            aaid TEXT NOT NULL,
            public_pem TEXT NOT NULL,
            sealed BLOB NOT NULL,
            counter INTEGER NOT NULL DEFAULT 0,
            created TEXT NOT NULL,
            UNIQUE(user_uuid, app_id, aaid)
        );
        """

    static let fidoSchema = """
        CREATE TABLE fido_keys(
            user_uuid TEXT PRIMARY KEY REFERENCES users(uuid) ON DELETE CASCADE,
            sealed BLOB NOT NULL,
            created TEXT NOT NULL
        );
        CREATE TABLE fido_credentials(
            id BLOB PRIMARY KEY,
            user_uuid TEXT NOT NULL REFERENCES users(uuid) ON DELETE CASCADE,
            rp_id_hash BLOB NOT NULL,
            user_handle_hash BLOB NOT NULL,
            verified_by TEXT NOT NULL CHECK (verified_by IN ('none', 'face', 'finger', 'pin')),
            created TEXT NOT NULL,
            sealed BLOB NOT NULL,
            UNIQUE(user_uuid, rp_id_hash, user_handle_hash)
        );
        CREATE TABLE fido_counters(
            user_uuid TEXT NOT NULL REFERENCES users(uuid) ON DELETE CASCADE,
            credential_hash BLOB NOT NULL,
            counter INTEGER NOT NULL,
            PRIMARY KEY(user_uuid, credential_hash)
        );
        ALTER TABLE pins ADD COLUMN ctap_sealed BLOB;
        """

    // MARK: Users, for every kind of record

    /// Forgets the user count; called under `connection`'s lock by anything that may add or
    /// remove a user (whether or not its transaction then commits).
    func usersMayHaveChanged() { cachedUserCount.store(-1, ordering: .releasing) }

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

    /// The `users.policy` column: a JSON array of factor names (unreadable: none).
    static func factorNames(_ json: String?) -> [String] {
        (try? JSONDecoder().decode([String].self, from: Data((json ?? "[]").utf8))) ?? []
    }

    static func uuid(_ db: SQLiteConnection, name: String) throws(StoreError) -> String? {
        var uuid: String?
        try db.query("SELECT uuid FROM users WHERE name = ?", [.text(name)]) { row in uuid = row.text(0) }
        return uuid
    }

    static func requireUUID(_ db: SQLiteConnection, _ name: String) throws(StoreError) -> String {
        guard let uuid = try uuid(db, name: name) else { throw .notFound("user '\(name)'") }
        return uuid
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

    static func keyAssociatedData(user: String, handle: String) -> Data {
        Data("biometricd/key/v1|\(user)|\(handle)".utf8)
    }

    static func fidoKeyAssociatedData(user: String) -> Data { Data("biometricd/fido-key/v1|\(user)".utf8) }

    static func fidoCredentialAssociatedData(user: String, id: Data) -> Data {
        Data("biometricd/fido-credential/v1|\(user)|".utf8) + id
    }

    static func ctapPINAssociatedData(user: String) -> Data { Data("biometricd/ctap-pin/v1|\(user)".utf8) }

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

