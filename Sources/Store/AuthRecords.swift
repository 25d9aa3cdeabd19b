import BiometricAuth
import Crypto
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

/// PINs, policies, lockout state and keys (schema version 2). Each read-modify-write runs in one
/// transaction under the connection lock, so concurrent clients count exactly, and each change
/// is on disk (synchronous=FULL) before the caller replies.
extension TemplateStore {
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

    // MARK: Policy

    /// The user's policy; nil for an unknown user.
    public func policy(user name: String) throws(StoreError) -> AuthPolicy? {
        try connection.withLock { db throws(StoreError) in
            var result: AuthPolicy?
            try db.query("SELECT policy, require_liveness FROM users WHERE name = ?", [.text(name)]) { row in
                let names = Self.factorNames(row.text(0))
                result = AuthPolicy(factors: names.compactMap(Factor.init(rawValue:)), requireLiveness: row.int(1) != 0)
            }
            return result
        }
    }

    /// Sets the policy (creating the user when new).
    public func setPolicy(user name: String, _ policy: AuthPolicy) throws(StoreError) {
        let created = Self.timestamp()
        let json = String(decoding: (try? JSONEncoder().encode(policy.factors.map(\.rawValue))) ?? Data("[]".utf8), as: UTF8.self)
        try connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                let uuid = try ensureUser(db, name: name, created: created)
                try db.query("UPDATE users SET policy = ?, require_liveness = ? WHERE uuid = ?",
                             [.text(json), .int(policy.requireLiveness ? 1 : 0), .text(uuid)])
            }
        }
    }

    // MARK: PIN

    public func pin(user name: String) throws(StoreError) -> PINState? {
        try connection.withLock { db throws(StoreError) in
            var result: PINState?
            try db.query("SELECT p.hash, p.failures FROM pins p JOIN users u ON u.uuid = p.user_uuid WHERE u.name = ?",
                         [.text(name)]) { row in result = PINState(hash: row.text(0) ?? "", failures: Int(row.int(1))) }
            return result
        }
    }

    /// Stores a new PIN hash (creating the user when new) with no failures counted. `ctapHash`
    /// is the Argon2id of LEFT(SHA-256(PIN), 16) for FIDO clientPIN, sealed; without it the
    /// PIN's CTAP form is cleared (an old one would no longer match the PIN).
    public func setPIN(user name: String, hash: String, ctapHash: String? = nil) throws(StoreError) {
        let now = Self.timestamp()
        try connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                let uuid = try ensureUser(db, name: name, created: now)
                let ctap: SQLiteConnection.Value = try ctapHash.map { h throws(StoreError) in .blob(try sealCTAPPIN(h, uuid: uuid)) } ?? .null
                try db.query("""
                    INSERT INTO pins(user_uuid, hash, failures, updated, ctap_sealed) VALUES (?, ?, 0, ?, ?)
                    ON CONFLICT(user_uuid) DO UPDATE SET hash = excluded.hash, failures = 0, updated = excluded.updated,
                        ctap_sealed = excluded.ctap_sealed
                    """, [.text(uuid), .text(hash), .text(now), ctap])
                try db.query("UPDATE users SET pin_set = 1 WHERE uuid = ?", [.text(uuid)])
            }
        }
    }

    /// Records a PIN attempt: a wrong one counts; a right one clears the PIN count and the
    /// biometric lockout (SPEC §4: a successful PIN unlocks biometrics). `rehash` replaces the
    /// stored hash (after a success with outdated parameters). Returns the new state.
    @discardableResult
    public func recordPINAttempt(user name: String, success: Bool, rehash: String? = nil) throws(StoreError) -> PINState {
        let now = Self.timestamp()
        return try connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) -> PINState in
                guard let uuid = try Self.uuid(db, name: name) else { throw .notFound("user '\(name)'") }
                if success {
                    try db.query("UPDATE pins SET failures = 0, hash = coalesce(?, hash), updated = ? WHERE user_uuid = ?",
                                 [rehash.map { .text($0) } ?? .null, .text(now), .text(uuid)])
                    try db.query("DELETE FROM lockout WHERE user_uuid = ?", [.text(uuid)])
                } else {
                    try db.query("UPDATE pins SET failures = failures + 1, updated = ? WHERE user_uuid = ?", [.text(now), .text(uuid)])
                }
                var state: PINState?
                try db.query("SELECT hash, failures FROM pins WHERE user_uuid = ?", [.text(uuid)]) { row in
                    state = PINState(hash: row.text(0) ?? "", failures: Int(row.int(1)))
                }
                guard let state else { throw .notFound("PIN of user '\(name)'") }
                return state
            }
        }
    }

    /// Admin reset: clears the PIN count and the biometric lockout; with `removePIN` the PIN too.
    public func resetPIN(user name: String, removePIN: Bool) throws(StoreError) {
        try connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                guard let uuid = try Self.uuid(db, name: name) else { throw .notFound("user '\(name)'") }
                if removePIN {
                    try db.query("DELETE FROM pins WHERE user_uuid = ?", [.text(uuid)])
                    try db.query("UPDATE users SET pin_set = 0 WHERE uuid = ?", [.text(uuid)])
                } else {
                    try db.query("UPDATE pins SET failures = 0 WHERE user_uuid = ?", [.text(uuid)])
                }
                try db.query("DELETE FROM lockout WHERE user_uuid = ?", [.text(uuid)])
            }
        }
    }

    // MARK: Biometric lockout

    public func lockout(user name: String) throws(StoreError) -> LockoutState {
        try connection.withLock { db throws(StoreError) in try Self.lockout(db, name: name) }
    }

    private static func lockout(_ db: SQLiteConnection, name: String) throws(StoreError) -> LockoutState {
        var state = LockoutState()
        try db.query("""
            SELECT l.failures, l.locked_until, l.requires_pin FROM lockout l JOIN users u ON u.uuid = l.user_uuid WHERE u.name = ?
            """, [.text(name)]) { row in
            state = LockoutState(failures: Int(row.int(0)), lockedUntil: row.double(1), requiresPIN: row.int(2) != 0)
        }
        return state
    }

    /// Applies `change` to the user's lockout state in one transaction; returns the new state.
    @discardableResult
    public func updateLockout(user name: String, _ change: @Sendable (inout LockoutState) -> Void) throws(StoreError) -> LockoutState {
        try connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) -> LockoutState in
                guard let uuid = try Self.uuid(db, name: name) else { throw .notFound("user '\(name)'") }
                var state = try Self.lockout(db, name: name)
                change(&state)
                try db.query("""
                    INSERT INTO lockout(user_uuid, failures, locked_until, requires_pin) VALUES (?, ?, ?, ?)
                    ON CONFLICT(user_uuid) DO UPDATE SET failures = excluded.failures, locked_until = excluded.locked_until,
                        requires_pin = excluded.requires_pin
                    """, [.text(uuid), .int(Int64(state.failures)), .double(state.lockedUntil), .int(state.requiresPIN ? 1 : 0)])
                return state
            }
        }
    }

    /// Clears a user's biometric lockout (a password login, an administrator). False for an unknown user.
    @discardableResult
    public func clearLockout(user name: String) throws(StoreError) -> Bool {
        try connection.withLock { db throws(StoreError) in
            guard let uuid = try Self.uuid(db, name: name) else { return false }
            try db.query("DELETE FROM lockout WHERE user_uuid = ?", [.text(uuid)])
            return true
        }
    }

    // MARK: Camera lockout (1:N)

    /// A camera's identify lockout: failures in a row of attempts that saw a face and matched
    /// nobody. `requiresPIN` means here: locked until an administrator clears it.
    public func cameraLockout(camera: String) throws(StoreError) -> LockoutState {
        try connection.withLock { db throws(StoreError) in try Self.cameraLockout(db, camera) }
    }

    private static func cameraLockout(_ db: SQLiteConnection, _ camera: String) throws(StoreError) -> LockoutState {
        var state = LockoutState()
        try db.query("SELECT failures, locked_until, requires_admin FROM camera_lockout WHERE camera = ?", [.text(camera)]) { row in
            state = LockoutState(failures: Int(row.int(0)), lockedUntil: row.double(1), requiresPIN: row.int(2) != 0)
        }
        return state
    }

    @discardableResult
    public func updateCameraLockout(camera: String, _ change: @Sendable (inout LockoutState) -> Void) throws(StoreError) -> LockoutState {
        try connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) -> LockoutState in
                var state = try Self.cameraLockout(db, camera)
                change(&state)
                try db.query("""
                    INSERT INTO camera_lockout(camera, failures, locked_until, requires_admin) VALUES (?, ?, ?, ?)
                    ON CONFLICT(camera) DO UPDATE SET failures = excluded.failures, locked_until = excluded.locked_until,
                        requires_admin = excluded.requires_admin
                    """, [.text(camera), .int(Int64(state.failures)), .double(state.lockedUntil), .int(state.requiresPIN ? 1 : 0)])
                return state
            }
        }
    }

    public func clearCameraLockout(camera: String) throws(StoreError) {
        try connection.withLock { db throws(StoreError) in try db.query("DELETE FROM camera_lockout WHERE camera = ?", [.text(camera)]) }
    }

    // MARK: Keys

    /// Stores a new key for (user, app_id, aaid), replacing an earlier registration of the same
    /// triple (as a FIDO authenticator re-registers). Creates the user when new.
    public func addKey(user name: String, appID: String, aaid: String, handle: String, publicKeyPEM: String,
                       privateKey: Data, quota: Quota? = nil) throws(StoreError) -> KeyRecord
    {
        let created = Self.timestamp()
        return try connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) -> KeyRecord in
                let uuid = try ensureUser(db, name: name, created: created)
                try db.query("DELETE FROM keys WHERE user_uuid = ? AND app_id = ? AND aaid = ?", [.text(uuid), .text(appID), .text(aaid)])
                if let quota {
                    var have = 0
                    try db.query("SELECT count(*) FROM keys WHERE user_uuid = ?", [.text(uuid)]) { row in have = Int(row.int(0)) }
                    // Thrown inside the transaction: the replaced registration is kept.
                    guard have < quota.max else { throw .quotaExceeded(quota.name, max: quota.max, have: have) }
                }
                let sealed = try seal(privateKey, associatedData: Self.keyAssociatedData(user: uuid, handle: handle))
                try db.query("""
                    INSERT INTO keys(handle, user_uuid, app_id, aaid, public_pem, sealed, counter, created) VALUES (?,?,?,?,?,?,0,?)
                    """, [.text(handle), .text(uuid), .text(appID), .text(aaid), .text(publicKeyPEM), .blob(sealed), .text(created)])
                return KeyRecord(handle: handle, user: name, appID: appID, aaid: aaid, publicKeyPEM: publicKeyPEM, counter: 0,
                                 created: created)
            }
        }
    }

    public func keys(user name: String) throws(StoreError) -> [KeyRecord] {
        try connection.withLock { db throws(StoreError) in try Self.keys(db, where: "u.name = ?", [.text(name)]) }
    }

    public func key(handle: String) throws(StoreError) -> KeyRecord? {
        try connection.withLock { db throws(StoreError) in try Self.keys(db, where: "k.handle = ?", [.text(handle)]).first }
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
        let (uuid, counter, sealed): (String, UInt32, Data) = try connection.withLock { db throws(StoreError) in
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
        let key = try unseal(sealed, associatedData: Self.keyAssociatedData(user: uuid, handle: handle), what: "key \(handle)")
        return (counter, key)
    }

    /// Removes one key (by handle) or all of a user's keys; returns how many.
    public func removeKeys(user name: String, handle: String?) throws(StoreError) -> Int {
        try connection.withLock { db throws(StoreError) in
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

    /// The `users.policy` column: a JSON array of factor names (unreadable: none).
    static func factorNames(_ json: String?) -> [String] {
        (try? JSONDecoder().decode([String].self, from: Data((json ?? "[]").utf8))) ?? []
    }

    static func keyAssociatedData(user: String, handle: String) -> Data {
        Data("biometricd/key/v1|\(user)|\(handle)".utf8)
    }

    static func uuid(_ db: SQLiteConnection, name: String) throws(StoreError) -> String? {
        var uuid: String?
        try db.query("SELECT uuid FROM users WHERE name = ?", [.text(name)]) { row in uuid = row.text(0) }
        return uuid
    }
}
