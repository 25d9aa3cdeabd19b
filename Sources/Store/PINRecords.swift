import BiometricAuth
import Foundation

/// The daemon PIN: its Argon2id hash, the failures counted against it, and its CTAP form
/// (`ctap_sealed`: a sealed Argon2id of LEFT(SHA-256(PIN), 16), written when the PIN is set
/// through biometricd, for FIDO2 clientPIN).
/// Each read-modify-write runs in one transaction under the connection lock, so concurrent
/// clients count exactly, and each change is on disk (synchronous=FULL) before the caller replies.
public struct PINRecords: Sendable {
    let store: Store

    public func get(user name: String) throws(StoreError) -> PINState? {
        try store.connection.withLock { db throws(StoreError) in
            var result: PINState?
            try db.query("SELECT p.hash, p.failures FROM pins p JOIN users u ON u.uuid = p.user_uuid WHERE u.name = ?",
                         [.text(name)]) { row in result = PINState(hash: row.text(0) ?? "", failures: Int(row.int(1))) }
            return result
        }
    }

    /// Stores a new PIN hash (creating the user when new) with no failures counted. `ctapHash`
    /// is the Argon2id of LEFT(SHA-256(PIN), 16) for FIDO clientPIN, sealed; without it the
    /// PIN's CTAP form is cleared (an old one would no longer match the PIN).
    public func set(user name: String, hash: String, ctapHash: String? = nil) throws(StoreError) {
        let now = Store.timestamp()
        try store.connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                let uuid = try store.ensureUser(db, name: name, created: now)
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
    public func recordAttempt(user name: String, success: Bool, rehash: String? = nil) throws(StoreError) -> PINState {
        let now = Store.timestamp()
        return try store.connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) -> PINState in
                guard let uuid = try Store.uuid(db, name: name) else { throw .notFound("user '\(name)'") }
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
    public func reset(user name: String, removePIN: Bool) throws(StoreError) {
        try store.connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                guard let uuid = try Store.uuid(db, name: name) else { throw .notFound("user '\(name)'") }
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


    // MARK: The PIN, as CTAP sends it

    /// The Argon2id hash of LEFT(SHA-256(PIN), 16) kept for CTAP clientPIN, opened; nil when the
    /// user has no PIN or set it before biometricd kept this form.
    public func ctapHash(user name: String) throws(StoreError) -> String? {
        let row: (String, Data)? = try store.connection.withLock { db throws(StoreError) in
            var found: (String, Data)?
            try db.query("""
                SELECT p.user_uuid, p.ctap_sealed FROM pins p JOIN users u ON u.uuid = p.user_uuid
                WHERE u.name = ? AND p.ctap_sealed IS NOT NULL
                """, [.text(name)]) { row in found = (row.text(0) ?? "", row.blob(1)) }
            return found
        }
        guard let (uuid, sealed) = row else { return nil }
        let opened = try store.unseal(sealed, associatedData: Store.ctapPINAssociatedData(user: uuid), what: "CTAP PIN of '\(name)'")
        return String(decoding: opened, as: UTF8.self)
    }

    /// Seals the CTAP hash of the PIN stored for the user in the same change (`setPIN`).
    func sealCTAPPIN(_ hash: String, uuid: String) throws(StoreError) -> Data {
        try store.seal(Data(hash.utf8), associatedData: Store.ctapPINAssociatedData(user: uuid))
    }
}

extension Store {
    public var pins: PINRecords { PINRecords(store: self) }
}
