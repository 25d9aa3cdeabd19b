import BiometricAuth
import Foundation

/// Biometric lockouts: per user (failed attempts against a claimed identity) and per camera
/// (failed 1:N identifications from it).
/// Each read-modify-write runs in one transaction under the connection lock, so concurrent
/// clients count exactly, and each change is on disk (synchronous=FULL) before the caller replies.
public struct LockoutRecords: Sendable {
    let store: Store

    // MARK: Biometric lockout

    public func get(user name: String) throws(StoreError) -> LockoutState {
        try store.connection.withLock { db throws(StoreError) in try Self.lockout(db, name: name) }
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
    public func update(user name: String, _ change: @Sendable (inout LockoutState) -> Void) throws(StoreError) -> LockoutState {
        try store.connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) -> LockoutState in
                guard let uuid = try Store.uuid(db, name: name) else { throw .notFound("user '\(name)'") }
                var state = try Self.lockout(db, name: name)
                change(&state)
                try Self.save(state, db, table: "lockout", key: ("user_uuid", uuid), flag: "requires_pin")
                return state
            }
        }
    }

    /// Clears a user's biometric lockout (a password login, an administrator). False for an unknown user.
    @discardableResult
    public func clear(user name: String) throws(StoreError) -> Bool {
        try store.connection.withLock { db throws(StoreError) in
            guard let uuid = try Store.uuid(db, name: name) else { return false }
            try db.query("DELETE FROM lockout WHERE user_uuid = ?", [.text(uuid)])
            return true
        }
    }

    // MARK: Camera lockout (1:N)

    /// A camera's identify lockout: failures in a row of attempts that saw a face and matched
    /// nobody. `requiresPIN` means here: locked until an administrator clears it.
    public func get(camera: String) throws(StoreError) -> LockoutState {
        try store.connection.withLock { db throws(StoreError) in try Self.cameraLockout(db, camera) }
    }

    private static func cameraLockout(_ db: SQLiteConnection, _ camera: String) throws(StoreError) -> LockoutState {
        var state = LockoutState()
        try db.query("SELECT failures, locked_until, requires_admin FROM camera_lockout WHERE camera = ?", [.text(camera)]) { row in
            state = LockoutState(failures: Int(row.int(0)), lockedUntil: row.double(1), requiresPIN: row.int(2) != 0)
        }
        return state
    }

    @discardableResult
    public func update(camera: String, _ change: @Sendable (inout LockoutState) -> Void) throws(StoreError) -> LockoutState {
        try store.connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) -> LockoutState in
                var state = try Self.cameraLockout(db, camera)
                change(&state)
                try Self.save(state, db, table: "camera_lockout", key: ("camera", camera), flag: "requires_admin")
                return state
            }
        }
    }

    public func clear(camera: String) throws(StoreError) {
        try store.connection.withLock { db throws(StoreError) in try db.query("DELETE FROM camera_lockout WHERE camera = ?", [.text(camera)]) }
    }

    /// Writes `state` into the user's or the camera's row (`table` and its columns are this
    /// file's constants, never input); `flag` is the column `requiresPIN` is kept in.
    private static func save(_ state: LockoutState, _ db: SQLiteConnection, table: String, key: (column: String, value: String),
                             flag: String) throws(StoreError)
    {
        try db.query("""
            INSERT INTO \(table)(\(key.column), failures, locked_until, \(flag)) VALUES (?, ?, ?, ?)
            ON CONFLICT(\(key.column)) DO UPDATE SET failures = excluded.failures, locked_until = excluded.locked_until,
                \(flag) = excluded.\(flag)
            """, [.text(key.value), .int(Int64(state.failures)), .double(state.lockedUntil), .int(state.requiresPIN ? 1 : 0)])
    }
}

extension Store {
    public var lockouts: LockoutRecords { LockoutRecords(store: self) }
}
