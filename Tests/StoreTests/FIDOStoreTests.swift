import BiometricAuth
@testable import BiometricStore
import Crypto
import Foundation
import XCTest

/// Schema 5: the FIDO2 authenticator's wrapping keys, discoverable credentials, counters and the
/// CTAP form of the PIN, sealed per user.
final class FIDOStoreTests: XCTestCase {
    private var dir = ""

    override func setUp() { dir = NSTemporaryDirectory() + "fido-store-\(UUID().uuidString)" }
    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    private func openStore() throws -> Store {
        try Store(directory: dir, key: try TemplateKey.load(stateDirectory: dir, credentialsDirectory: nil))
    }

    private func storeWithUsers(_ names: String...) throws -> Store {
        let store = try openStore()
        for name in names { try store.templates.add(user: name, modality: .face, quality: 70, payload: Data([1])) }
        return store
    }

    private func rp(_ id: String) -> Data { Data(SHA256.hash(data: Data(id.utf8))) }

    private func fileBytes() -> Data {
        var all = Data()
        for suffix in ["", "-wal"] { all += FileManager.default.contents(atPath: dir + "/" + Store.fileName + suffix) ?? Data() }
        return all
    }

    func testWrappingKeyIsPerUserStableAndSealed() throws {
        var store: Store? = try storeWithUsers("ann", "bob")
        let ann = try store!.fido.wrappingKey(user: "ann")
        XCTAssertEqual(ann.count, 32)
        XCTAssertEqual(try store!.fido.wrappingKey(user: "ann"), ann, "made once, then kept")
        XCTAssertNotEqual(try store!.fido.wrappingKey(user: "bob"), ann, "each user has their own")
        XCTAssertThrowsError(try store!.fido.wrappingKey(user: "nobody")) { error in
            guard case .notFound? = error as? StoreError else { return XCTFail("\(error)") }
        }
        XCTAssertNil(fileBytes().range(of: ann), "the key is never on disk in the clear")
        store = nil
        XCTAssertEqual(try openStore().fido.wrappingKey(user: "ann"), ann, "survives a restart")
    }

    func testCredentialsSaveReplaceFilterDeleteAndSealing() throws {
        let store = try storeWithUsers("ann", "bob")
        let marker = Data("PRIVATE-KEY-MARKER-example.com".utf8)
        try store.fido.saveCredential(user: "ann", id: Data([1, 1]), rpID: "example.com", userHandle: Data([7]), verifiedBy: "face",
                                     payload: marker)
        try store.fido.saveCredential(user: "ann", id: Data([2, 2]), rpID: "other.org", userHandle: Data([7]), verifiedBy: "pin",
                                     payload: Data("b".utf8))
        XCTAssertEqual(try store.fido.credentials(user: "ann").count, 2)
        XCTAssertEqual(try store.fido.credentials(user: "ann", rpIDHash: rp("example.com")).map(\.payload), [marker])
        XCTAssertEqual(try store.fido.credentials(user: "ann", rpIDHash: rp("example.com")).first?.verifiedBy, "face")
        XCTAssertEqual(try store.fido.credentials(user: "bob"), [], "another user's credentials are not theirs")
        XCTAssertNil(fileBytes().range(of: marker), "the payload is sealed")
        XCTAssertNil(fileBytes().range(of: Data("example.com".utf8)), "no RP ID in the clear")

        // Same RP and user handle: replaced.
        try store.fido.saveCredential(user: "ann", id: Data([3, 3]), rpID: "example.com", userHandle: Data([7]), verifiedBy: "finger",
                                     payload: Data("c".utf8))
        XCTAssertEqual(try store.fido.credentials(user: "ann", rpIDHash: rp("example.com")).map(\.id), [Data([3, 3])])
        XCTAssertThrowsError(try store.fido.saveCredential(user: "ann", id: Data([4]), rpID: "x", userHandle: Data([1]),
                                                          verifiedBy: "retina", payload: Data()))
        XCTAssertThrowsError(try store.fido.saveCredential(user: "ann", id: Data([5]), rpID: "y", userHandle: Data([1]), verifiedBy: "face",
                                                          payload: Data(), quota: Quota(name: "fido_credentials", max: 2))) { error in
            guard case .quotaExceeded("fido_credentials", 2, 2)? = error as? StoreError else { return XCTFail("\(error)") }
        }

        try store.fido.updateCredential(user: "ann", id: Data([3, 3]), payload: Data("d".utf8))
        XCTAssertEqual(try store.fido.credentials(user: "ann", rpIDHash: rp("example.com")).first?.payload, Data("d".utf8))
        XCTAssertThrowsError(try store.fido.updateCredential(user: "bob", id: Data([3, 3]), payload: Data()))

        XCTAssertFalse(try store.fido.deleteCredential(user: "bob", id: Data([3, 3])), "not bob's to delete")
        XCTAssertTrue(try store.fido.deleteCredential(user: "ann", id: Data([3, 3])))
        XCTAssertEqual(try store.fido.credentials(user: "ann").map(\.id), [Data([2, 2])])
    }

    func testCountersPersistPerCredentialAndUser() throws {
        var store: Store? = try storeWithUsers("ann", "bob")
        let handle = Data(repeating: 9, count: 63)  // a non-discoverable credential: a counter, no row
        XCTAssertEqual(try store!.fido.nextSignatureCount(user: "ann", credentialID: handle), 1)
        XCTAssertEqual(try store!.fido.nextSignatureCount(user: "ann", credentialID: handle), 2)
        XCTAssertEqual(try store!.fido.nextSignatureCount(user: "bob", credentialID: handle), 1, "per user")
        store = nil
        store = try openStore()
        XCTAssertEqual(try store!.fido.nextSignatureCount(user: "ann", credentialID: handle), 3, "on disk before it was returned")

        try store!.fido.saveCredential(user: "ann", id: Data([1]), rpID: "a", userHandle: Data([1]), verifiedBy: "face", payload: Data())
        _ = try store!.fido.nextSignatureCount(user: "ann", credentialID: Data([1]))
        XCTAssertEqual(try store!.fido.credentials(user: "ann").first?.counter, 1)
        try store!.fido.deleteCredential(user: "ann", id: Data([1]))
        XCTAssertEqual(try store!.fido.nextSignatureCount(user: "ann", credentialID: Data([1])), 1, "a deleted credential's counter goes too")
    }

    func testResetForgetsCredentialsCountersAndKeyOfThatUserOnly() throws {
        let store = try storeWithUsers("ann", "bob")
        let key = try store.fido.wrappingKey(user: "ann")
        let bobKey = try store.fido.wrappingKey(user: "bob")
        try store.fido.saveCredential(user: "ann", id: Data([1]), rpID: "a", userHandle: Data([1]), verifiedBy: "face", payload: Data())
        try store.fido.saveCredential(user: "bob", id: Data([2]), rpID: "a", userHandle: Data([1]), verifiedBy: "face", payload: Data())
        _ = try store.fido.nextSignatureCount(user: "ann", credentialID: Data([5]))
        try store.pins.set(user: "ann", hash: "h", ctapHash: "c")

        try store.fido.reset(user: "ann")
        XCTAssertEqual(try store.fido.credentials(user: "ann"), [])
        XCTAssertEqual(try store.fido.nextSignatureCount(user: "ann", credentialID: Data([5])), 1)
        XCTAssertNotEqual(try store.fido.wrappingKey(user: "ann"), key, "a new wrapping key: old handles stop opening")
        XCTAssertEqual(try store.pins.ctapHash(user: "ann"), "c", "reset leaves the daemon's PIN alone")
        XCTAssertEqual(try store.fido.credentials(user: "bob").count, 1)
        XCTAssertEqual(try store.fido.wrappingKey(user: "bob"), bobKey)

        _ = try store.users.delete(named: "bob")
        try store.templates.add(user: "bob", modality: .face, quality: 70, payload: Data([1]))
        XCTAssertEqual(try store.fido.credentials(user: "bob"), [], "deleting a user deletes their credentials")
    }

    func testCTAPPINIsSealedAndClearedByAPlainSet() throws {
        let store = try openStore()
        try store.pins.set(user: "ann", hash: "$argon2id$plain", ctapHash: "$argon2id$CTAP-MARKER")
        XCTAssertEqual(try store.pins.ctapHash(user: "ann"), "$argon2id$CTAP-MARKER")
        XCTAssertNil(fileBytes().range(of: Data("CTAP-MARKER".utf8)))
        try store.pins.recordAttempt(user: "ann", success: false)
        XCTAssertEqual(try store.pins.get(user: "ann")?.failures, 1, "one retry counter for both forms")
        try store.pins.set(user: "ann", hash: "$argon2id$other")
        XCTAssertNil(try store.pins.ctapHash(user: "ann"), "a PIN set without its CTAP form clears the old one")
        try store.pins.set(user: "ann", hash: "$argon2id$x", ctapHash: "y")
        try store.pins.reset(user: "ann", removePIN: true)
        XCTAssertNil(try store.pins.ctapHash(user: "ann"))
    }

    /// A database of schema 4 (before FIDO) opens, gains the tables, keeps its users and PINs;
    /// PINs set before report no CTAP form until set again.
    func testMigrationFromSchema4() throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let key = try TemplateKey.load(stateDirectory: dir, credentialsDirectory: nil)
        do {
            let db = try SQLiteConnection(path: dir + "/" + Store.fileName)
            for sql in Store.migrations.prefix(4) { try db.execute(sql) }
            try db.execute("PRAGMA user_version = 4")
            try db.execute("INSERT INTO users(uuid, name, created) VALUES ('u-1', 'ann', 'then')")
            try db.execute("INSERT INTO pins(user_uuid, hash, failures, updated) VALUES ('u-1', '$argon2id$old', 2, 'then')")
            db.close()
        }
        let store = try Store(directory: dir, key: key)
        let db = try SQLiteConnection(path: dir + "/" + Store.fileName)
        var version = 0
        try db.query("PRAGMA user_version") { version = Int($0.int(0)) }
        db.close()
        XCTAssertEqual(version, 5)
        XCTAssertEqual(try store.pins.get(user: "ann"), PINState(hash: "$argon2id$old", failures: 2))
        XCTAssertNil(try store.pins.ctapHash(user: "ann"))
        XCTAssertEqual(try store.fido.wrappingKey(user: "ann").count, 32)
        XCTAssertGreaterThan(try Store.holdsSealedData(directory: dir), 0, "a wrapping key counts as sealed data")
    }
}
