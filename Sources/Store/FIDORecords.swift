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
/// like templates. (The CTAP form of the PIN is with the PIN: `PINRecords.ctapHash`.)
public struct FIDORecords: Sendable {
    let store: Store

    static let verificationMethods: Set<String> = ["none", "face", "finger", "pin"]

    private static func sha256(_ data: Data) -> Data { Data(SHA256.hash(data: data)) }

    // MARK: Wrapping key

    /// The user's 32-byte key-handle wrapping key, made (random, sealed) on first use. Only a
    /// known user has one: the authenticator serves users biometricd knows.
    public func wrappingKey(user name: String) throws(StoreError) -> Data {
        let now = Store.timestamp()
        let (uuid, sealed): (String, Data) = try store.connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) -> (String, Data) in
                let uuid = try Store.requireUUID(db, name)
                var existing: Data?
                try db.query("SELECT sealed FROM fido_keys WHERE user_uuid = ?", [.text(uuid)]) { row in existing = row.blob(0) }
                if let existing { return (uuid, existing) }
                var fresh = Data(count: 32)
                fresh.withUnsafeMutableBytes { raw in
                    var generator = SystemRandomNumberGenerator()
                    for i in raw.indices { raw[i] = UInt8.random(in: 0...255, using: &generator) }
                }
                let sealed = try store.seal(fresh, associatedData: Store.fidoKeyAssociatedData(user: uuid))
                try db.query("INSERT INTO fido_keys(user_uuid, sealed, created) VALUES (?, ?, ?)",
                             [.text(uuid), .blob(sealed), .text(now)])
                return (uuid, sealed)
            }
        }
        return try store.unseal(sealed, associatedData: Store.fidoKeyAssociatedData(user: uuid), what: "FIDO wrapping key of '\(name)'")
    }

    // MARK: Credentials

    /// Seals and stores a discoverable credential of `user`, replacing any of the same RP and
    /// user handle (CTAP 2.1 §6.1.2 step 16). `quota` counts the user's credentials.
    public func saveCredential(user name: String, id: Data, rpID: String, userHandle: Data, verifiedBy: String,
                                   payload: Data, quota: Quota? = nil) throws(StoreError)
    {
        guard Self.verificationMethods.contains(verifiedBy) else { throw .io("unknown verification method '\(verifiedBy)'") }
        let now = Store.timestamp()
        let rpHash = Self.sha256(Data(rpID.utf8)), handleHash = Self.sha256(userHandle)
        try store.connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                let uuid = try Store.requireUUID(db, name)
                try db.query("DELETE FROM fido_credentials WHERE user_uuid = ? AND rp_id_hash = ? AND user_handle_hash = ?",
                             [.text(uuid), .blob(rpHash), .blob(handleHash)])
                if let quota {
                    var have = 0
                    try db.query("SELECT count(*) FROM fido_credentials WHERE user_uuid = ?", [.text(uuid)]) { have = Int($0.int(0)) }
                    guard have < quota.max else { throw .quotaExceeded(quota.name, max: quota.max, have: have) }
                }
                let sealed = try store.seal(payload, associatedData: Store.fidoCredentialAssociatedData(user: uuid, id: id))
                try db.query("""
                    INSERT INTO fido_credentials(id, user_uuid, rp_id_hash, user_handle_hash, verified_by, created, sealed)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """, [.blob(id), .text(uuid), .blob(rpHash), .blob(handleHash), .text(verifiedBy), .text(now), .blob(sealed)])
            }
        }
    }

    /// Replaces the sealed payload of one of `user`'s credentials (updateUserInformation).
    public func updateCredential(user name: String, id: Data, payload: Data) throws(StoreError) {
        try store.connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                let uuid = try Store.requireUUID(db, name)
                let sealed = try store.seal(payload, associatedData: Store.fidoCredentialAssociatedData(user: uuid, id: id))
                try db.query("UPDATE fido_credentials SET sealed = ? WHERE id = ? AND user_uuid = ?", [.blob(sealed), .blob(id), .text(uuid)])
                guard db.changes == 1 else { throw .notFound("FIDO credential of '\(name)'") }
            }
        }
    }

    /// `user`'s discoverable credentials, opened, newest first; only those of one RP when
    /// `rpIDHash` (SHA-256 of the RP ID) is given. An unknown user has none.
    public func credentials(user name: String, rpIDHash: Data? = nil) throws(StoreError) -> [FIDOCredentialRecord] {
        let rows: [(String, Data, String, String, UInt32, Data)] = try store.connection.withLock { db throws(StoreError) in
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
            let payload = try store.unseal(sealed, associatedData: Store.fidoCredentialAssociatedData(user: uuid, id: id),
                                     what: "FIDO credential of '\(name)'")
            opened.append(FIDOCredentialRecord(id: id, user: name, verifiedBy: method, created: created, counter: counter, payload: payload))
        }
        return opened
    }

    /// Deletes one of `user`'s credentials and its counter; false when there was none.
    @discardableResult
    public func deleteCredential(user name: String, id: Data) throws(StoreError) -> Bool {
        try store.connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) -> Bool in
                guard let uuid = try Store.uuid(db, name: name) else { return false }
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
    public func nextSignatureCount(user name: String, credentialID: Data) throws(StoreError) -> UInt32 {
        let key = Self.sha256(credentialID)
        return try store.connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) -> UInt32 in
                let uuid = try Store.requireUUID(db, name)
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
    public func reset(user name: String) throws(StoreError) {
        try store.connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                guard let uuid = try Store.uuid(db, name: name) else { return }
                for table in ["fido_credentials", "fido_counters", "fido_keys"] {
                    try db.query("DELETE FROM \(table) WHERE user_uuid = ?", [.text(uuid)])
                }
            }
        }
    }

}

extension Store {
    public var fido: FIDORecords { FIDORecords(store: self) }
}
