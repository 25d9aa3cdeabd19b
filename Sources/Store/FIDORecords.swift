import Crypto
import Foundation

/// A FIDO2 credential as the store holds it for one daemon user. The authenticator's own
/// description of the credential (private key, RP ID, user handle and names) is `payload`, sealed
/// at rest; only hashes and the verification method stay in clear, so a copied disk does not list
/// the sites a user has passkeys for.
public struct FIDOCredentialRecord: Sendable, Equatable {
    /// The credential ID (the key handle the platform sends back).
    public var id: Data
    /// The daemon user it belongs to.
    public var user: String
    /// How the user was verified when it was made: none, face, finger or pin (the seed's AAIDs).
    public var verifiedBy: String
    public var created: String
    /// The signature counter as last persisted.
    public var counter: UInt32
    /// The opened payload (the authenticator's serialised credential).
    public var payload: Data
}

/// FIDO2 authenticator state (schema version 5), per daemon user: the key-handle wrapping key,
/// discoverable credentials and per-credential signature counters, sealed under the store key
/// like templates; and the CTAP form of the daemon PIN (`pins.ctap_sealed`: a sealed Argon2id
/// of LEFT(SHA-256(PIN), 16), written when the PIN is set through biometricd).
extension TemplateStore {
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

    static let fidoVerificationMethods: Set<String> = ["none", "face", "finger", "pin"]

    static func fidoKeyAssociatedData(user: String) -> Data { Data("biometricd/fido-key/v1|\(user)".utf8) }

    static func fidoCredentialAssociatedData(user: String, id: Data) -> Data {
        Data("biometricd/fido-credential/v1|\(user)|".utf8) + id
    }

    static func ctapPINAssociatedData(user: String) -> Data { Data("biometricd/ctap-pin/v1|\(user)".utf8) }

    private static func sha256(_ data: Data) -> Data { Data(SHA256.hash(data: data)) }

    private static func requireUUID(_ db: SQLiteConnection, _ name: String) throws(StoreError) -> String {
        guard let uuid = try uuid(db, name: name) else { throw .notFound("user '\(name)'") }
        return uuid
    }

    // MARK: Wrapping key

    /// The user's 32-byte key-handle wrapping key, made (random, sealed) on first use. Only a
    /// known user has one: the authenticator serves users biometricd knows.
    public func fidoWrappingKey(user name: String) throws(StoreError) -> Data {
        let now = Self.timestamp()
        let (uuid, sealed): (String, Data) = try connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) -> (String, Data) in
                let uuid = try Self.requireUUID(db, name)
                var existing: Data?
                try db.query("SELECT sealed FROM fido_keys WHERE user_uuid = ?", [.text(uuid)]) { row in existing = row.blob(0) }
                if let existing { return (uuid, existing) }
                var fresh = Data(count: 32)
                fresh.withUnsafeMutableBytes { raw in
                    var generator = SystemRandomNumberGenerator()
                    for i in raw.indices { raw[i] = UInt8.random(in: 0...255, using: &generator) }
                }
                let sealed = try seal(fresh, associatedData: Self.fidoKeyAssociatedData(user: uuid))
                try db.query("INSERT INTO fido_keys(user_uuid, sealed, created) VALUES (?, ?, ?)",
                             [.text(uuid), .blob(sealed), .text(now)])
                return (uuid, sealed)
            }
        }
        return try unseal(sealed, associatedData: Self.fidoKeyAssociatedData(user: uuid), what: "FIDO wrapping key of '\(name)'")
    }

    // MARK: Credentials

    /// Seals and stores a discoverable credential of `user`, replacing any of the same RP and
    /// user handle (CTAP 2.1 §6.1.2 step 16). `quota` counts the user's credentials.
    public func saveFIDOCredential(user name: String, id: Data, rpID: String, userHandle: Data, verifiedBy: String,
                                   payload: Data, quota: Quota? = nil) throws(StoreError)
    {
        guard Self.fidoVerificationMethods.contains(verifiedBy) else { throw .io("unknown verification method '\(verifiedBy)'") }
        let now = Self.timestamp()
        let rpHash = Self.sha256(Data(rpID.utf8)), handleHash = Self.sha256(userHandle)
        try connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                let uuid = try Self.requireUUID(db, name)
                try db.query("DELETE FROM fido_credentials WHERE user_uuid = ? AND rp_id_hash = ? AND user_handle_hash = ?",
                             [.text(uuid), .blob(rpHash), .blob(handleHash)])
                if let quota {
                    var have = 0
                    try db.query("SELECT count(*) FROM fido_credentials WHERE user_uuid = ?", [.text(uuid)]) { have = Int($0.int(0)) }
                    guard have < quota.max else { throw .quotaExceeded(quota.name, max: quota.max, have: have) }
                }
                let sealed = try seal(payload, associatedData: Self.fidoCredentialAssociatedData(user: uuid, id: id))
                try db.query("""
                    INSERT INTO fido_credentials(id, user_uuid, rp_id_hash, user_handle_hash, verified_by, created, sealed)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """, [.blob(id), .text(uuid), .blob(rpHash), .blob(handleHash), .text(verifiedBy), .text(now), .blob(sealed)])
            }
        }
    }

    /// Replaces the sealed payload of one of `user`'s credentials (updateUserInformation).
    public func updateFIDOCredential(user name: String, id: Data, payload: Data) throws(StoreError) {
        try connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                let uuid = try Self.requireUUID(db, name)
                let sealed = try seal(payload, associatedData: Self.fidoCredentialAssociatedData(user: uuid, id: id))
                try db.query("UPDATE fido_credentials SET sealed = ? WHERE id = ? AND user_uuid = ?", [.blob(sealed), .blob(id), .text(uuid)])
                guard db.changes == 1 else { throw .notFound("FIDO credential of '\(name)'") }
            }
        }
    }

    /// `user`'s discoverable credentials, opened, newest first; only those of one RP when
    /// `rpIDHash` (SHA-256 of the RP ID) is given. An unknown user has none.
    public func fidoCredentials(user name: String, rpIDHash: Data? = nil) throws(StoreError) -> [FIDOCredentialRecord] {
        let rows: [(String, Data, String, String, UInt32, Data)] = try connection.withLock { db throws(StoreError) in
            var result: [(String, Data, String, String, UInt32, Data)] = []
            var binds: [SQLiteConnection.Value] = [.text(name)]
            var filter = ""
            if let rpIDHash {
                filter = " AND c.rp_id_hash = ?"
                binds.append(.blob(rpIDHash))
            }
            try db.query("""
                SELECT c.user_uuid, c.id, c.verified_by, c.created, c.sealed
                FROM fido_credentials c JOIN users u ON u.uuid = c.user_uuid
                WHERE u.name = ?\(filter) ORDER BY c.created DESC, c.rowid DESC
                """, binds) { row in
                result.append((row.text(0) ?? "", row.blob(1), row.text(2) ?? "none", row.text(3) ?? "", 0, row.blob(4)))
            }
            for i in result.indices {
                try db.query("SELECT counter FROM fido_counters WHERE user_uuid = ? AND credential_hash = ?",
                             [.text(result[i].0), .blob(Self.sha256(result[i].1))]) { row in result[i].4 = UInt32(clamping: row.int(0)) }
            }
            return result
        }
        var opened: [FIDOCredentialRecord] = []
        for (uuid, id, method, created, counter, sealed) in rows {
            let payload = try unseal(sealed, associatedData: Self.fidoCredentialAssociatedData(user: uuid, id: id),
                                     what: "FIDO credential of '\(name)'")
            opened.append(FIDOCredentialRecord(id: id, user: name, verifiedBy: method, created: created, counter: counter, payload: payload))
        }
        return opened
    }

    /// Deletes one of `user`'s credentials and its counter; false when there was none.
    @discardableResult
    public func deleteFIDOCredential(user name: String, id: Data) throws(StoreError) -> Bool {
        try connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) -> Bool in
                guard let uuid = try Self.uuid(db, name: name) else { return false }
                try db.query("DELETE FROM fido_credentials WHERE id = ? AND user_uuid = ?", [.blob(id), .text(uuid)])
                let removed = db.changes
                try db.query("DELETE FROM fido_counters WHERE user_uuid = ? AND credential_hash = ?",
                             [.text(uuid), .blob(Self.sha256(id))])
                return removed > 0
            }
        }
    }

    /// Raises the signature counter of a credential of `user` (discoverable or not) by one and
    /// commits it before returning: a counter is never handed out twice, even across a crash.
    /// Saturates at 2³²−1.
    public func nextFIDOSignatureCount(user name: String, credentialID: Data) throws(StoreError) -> UInt32 {
        let key = Self.sha256(credentialID)
        return try connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) -> UInt32 in
                let uuid = try Self.requireUUID(db, name)
                try db.query("""
                    INSERT INTO fido_counters(user_uuid, credential_hash, counter) VALUES (?, ?, 1)
                    ON CONFLICT(user_uuid, credential_hash) DO UPDATE SET counter = min(counter + 1, 4294967295)
                    """, [.text(uuid), .blob(key)])
                var value: UInt32 = 0
                try db.query("SELECT counter FROM fido_counters WHERE user_uuid = ? AND credential_hash = ?", [.text(uuid), .blob(key)]) {
                    value = UInt32(clamping: $0.int(0))
                }
                return value
            }
        }
    }

    /// authenticatorReset for `user`: every credential and counter goes and the wrapping key is
    /// forgotten (the next use makes a new one), so old key handles stop opening. The PIN stays.
    public func resetFIDO(user name: String) throws(StoreError) {
        try connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                guard let uuid = try Self.uuid(db, name: name) else { return }
                for table in ["fido_credentials", "fido_counters", "fido_keys"] {
                    try db.query("DELETE FROM \(table) WHERE user_uuid = ?", [.text(uuid)])
                }
            }
        }
    }

    // MARK: The PIN, as CTAP sends it

    /// The Argon2id hash of LEFT(SHA-256(PIN), 16) kept for CTAP clientPIN, opened; nil when the
    /// user has no PIN or set it before biometricd kept this form.
    public func ctapPINHash(user name: String) throws(StoreError) -> String? {
        let row: (String, Data)? = try connection.withLock { db throws(StoreError) in
            var found: (String, Data)?
            try db.query("""
                SELECT p.user_uuid, p.ctap_sealed FROM pins p JOIN users u ON u.uuid = p.user_uuid
                WHERE u.name = ? AND p.ctap_sealed IS NOT NULL
                """, [.text(name)]) { row in found = (row.text(0) ?? "", row.blob(1)) }
            return found
        }
        guard let (uuid, sealed) = row else { return nil }
        let opened = try unseal(sealed, associatedData: Self.ctapPINAssociatedData(user: uuid), what: "CTAP PIN of '\(name)'")
        return String(decoding: opened, as: UTF8.self)
    }

    /// Seals the CTAP hash of the PIN stored for the user in the same change (`setPIN`).
    func sealCTAPPIN(_ hash: String, uuid: String) throws(StoreError) -> Data {
        try seal(Data(hash.utf8), associatedData: Self.ctapPINAssociatedData(user: uuid))
    }
}
