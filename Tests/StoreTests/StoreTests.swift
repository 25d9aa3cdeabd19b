import BiometricAuth
@testable import BiometricStore
import Crypto
import Foundation
import SystemPackage
import XCTest
import TestRequirements

final class StoreTests: XCTestCase {
    private var dir = ""

    override func setUp() {
        dir = NSTemporaryDirectory() + "store-\(UUID().uuidString)"
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: dir)
    }

    private func mode(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions]) as? Int) ?? -1
    }

    private func openStore() throws -> Store {
        try Store(directory: dir, key: try TemplateKey.load(stateDirectory: dir, credentialsDirectory: nil))
    }

    func testUsersAndTemplatesRoundTrip() throws {
        let store = try openStore()
        let payload = Data((0..<512).map { UInt8($0 & 0xFF) })
        let a = try store.templates.add(user: "ann", modality: .face, quality: 71, meta: TemplateMeta(pose: "front", frames: 5, source: .capture), payload: payload)
        try store.templates.add(user: "ann", modality: .finger, position: "right_index", quality: 60, payload: Data([1, 2, 3]))
        try store.templates.add(user: "bob", modality: .face, quality: 50, payload: Data([9]))
        XCTAssertEqual(try store.users.all().map(\.name), ["ann", "bob"])
        let ann = try XCTUnwrap(try store.users.named("ann"))
        XCTAssertEqual(ann.faceTemplates, 1)
        XCTAssertEqual(ann.fingerTemplates, 1)
        let opened = try store.templates.payloads(user: "ann", modality: .face)
        XCTAssertEqual(opened.count, 1)
        XCTAssertEqual(opened[0].0.id, a.id)
        XCTAssertEqual(opened[0].1, payload)
        XCTAssertEqual(try store.templates.list(user: nil, modality: .face).count, 2)
        XCTAssertEqual(try store.templates.remove(user: "ann", modality: .face, id: a.id), 1)
        XCTAssertThrowsError(try store.templates.remove(user: "ann", modality: .face, id: a.id)) {
            XCTAssertEqual($0 as? StoreError, .notFound("template '\(a.id)' of user 'ann'"))
        }
        XCTAssertEqual(try store.users.delete(named: "ann"), 1, "the finger template goes with the user")
        XCTAssertNil(try store.users.named("ann"))
        XCTAssertThrowsError(try store.users.delete(named: "ann"))
    }

    /// Metadata is one typed value: what is written reads back the same, rows written before it
    /// (no version, interpolated JSON) keep reading, and a damaged value reads as absent.
    func testTemplateMetadataIsATypedVersionedValue() throws {
        let store = try openStore()
        let meta = TemplateMeta(pose: "left", frames: 5, source: .capture)
        try store.templates.add(user: "ann", modality: .face, quality: 71, meta: meta, payload: Data([1]))
        try store.templates.add(user: "ann", modality: .finger, position: "right_index", quality: 60,
                              meta: TemplateMeta(source: .import, format: "iso19794-2"), payload: Data([2]))
        XCTAssertEqual(try store.templates.list(user: "ann", modality: .face).map(\.meta), [meta])
        XCTAssertEqual(try store.templates.list(user: "ann", modality: .finger).first?.meta.format, "iso19794-2")
        XCTAssertEqual(meta.stored, #"{"frames":5,"pose":"left","source":"capture","v":1}"#)
        // As earlier releases wrote them.
        XCTAssertEqual(TemplateMeta(stored: #"{"pose":"up","frames":3}"#), TemplateMeta(pose: "up", frames: 3))
        XCTAssertEqual(TemplateMeta(stored: #"{"source":"import","format":"ansi378"}"#).source, .import)
        XCTAssertEqual(TemplateMeta(stored: #"{"captures":2}"#).captures, 2)
        // Damaged or from the future: what can be read is kept, the rest is absent.
        XCTAssertEqual(TemplateMeta(stored: "not json"), TemplateMeta())
        XCTAssertEqual(TemplateMeta(stored: #"{"pose":7,"frames":4,"source":"scanner","v":2}"#).frames, 4)
        XCTAssertNil(TemplateMeta(stored: #"{"pose":7,"source":"scanner"}"#).pose)
        XCTAssertNil(TemplateMeta(stored: #"{"source":"scanner"}"#).source)
    }

    func testUserCountFollowsEveryChange() throws {
        let store = try openStore()
        XCTAssertEqual(try store.users.count(), 0)
        try store.templates.add(user: "ann", modality: .face, quality: 50, payload: Data([1]))
        XCTAssertEqual(try store.users.count(), 1)
        try store.templates.add(user: "ann", modality: .face, quality: 50, payload: Data([2]))
        XCTAssertEqual(try store.users.count(), 1, "a second template is not a second user")
        try store.pins.set(user: "bob", hash: "x")
        try store.policies.set(user: "cy", AuthPolicy(factors: [.pin], requireLiveness: true))
        XCTAssertEqual(try store.users.count(), 3, "users made by the auth records count too")
        XCTAssertEqual(try store.users.delete(named: "ann"), 2)
        XCTAssertEqual(try store.users.count(), 2)
        XCTAssertEqual(try openStore().users.count(), 2, "the same number from the table")
    }

    func testTemplatesNeverReachDiskInPlaintext() throws {
        let marker = Data("FACE-EMBEDDING-PLAINTEXT-MARKER".utf8)
        do {
            let store = try openStore()
            for i in 0..<20 {
                try store.templates.add(user: "u\(i)", modality: .face, quality: 50, payload: marker + Data(repeating: 7, count: 256))
            }
            // Before and after checkpoint: the WAL must not hold plaintext either.
            for name in try FileManager.default.contentsOfDirectory(atPath: dir) {
                let bytes = try Data(contentsOf: URL(fileURLWithPath: dir + "/" + name))
                XCTAssertNil(bytes.range(of: marker), "plaintext template found in \(name)")
            }
            store.flush()
        }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: dir + "/" + Store.fileName))
        XCTAssertNil(bytes.range(of: marker))
        XCTAssertNotNil(bytes.range(of: Data("u19".utf8)), "the user names are there, so the scan reads real content")
    }

    func testFileSystemFailuresCarryTheirErrno() throws {
        // A state folder under a regular file cannot be made: the cause is ENOTDIR, not just text.
        let file = dir + ".file"
        XCTAssertTrue(FileManager.default.createFile(atPath: file, contents: Data()))
        defer { try? FileManager.default.removeItem(atPath: file) }
        XCTAssertThrowsError(try TemplateKey.load(stateDirectory: file + "/state", credentialsDirectory: nil)) { error in
            guard case StoreError.system(let what, let cause) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(cause, .notDirectory)
            XCTAssertTrue(what.contains(file + "/state"), what)
            XCTAssertTrue("\(error)".hasSuffix("Not a directory"), "\(error)")
        }
    }

    func testFilesAreOwnerOnly() throws {
        _ = try openStore()
        XCTAssertEqual(mode(dir), 0o700)
        XCTAssertEqual(mode(dir + "/key"), 0o600)
        XCTAssertEqual(mode(dir + "/" + Store.fileName), 0o600)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: dir + "/key")).count, 32)
    }

    func testSealedBlobsAreBoundToTheirUserAndID() throws {
        let store = try openStore()
        let a = try store.templates.add(user: "ann", modality: .face, quality: 50, payload: Data("ann".utf8))
        let b = try store.templates.add(user: "bob", modality: .face, quality: 50, payload: Data("bob".utf8))
        // An attacker with write access swaps the ciphertexts: neither opens any more.
        let db = try SQLiteConnection(path: store.path)
        try db.execute("UPDATE templates SET sealed = (SELECT sealed FROM templates WHERE id = '\(b.id)') WHERE id = '\(a.id)'")
        db.close()
        XCTAssertThrowsError(try store.templates.payloads(user: "ann", modality: .face)) {
            XCTAssertEqual($0 as? StoreError, .corrupt(a.id))
        }
        XCTAssertNoThrow(try store.templates.payloads(user: "bob", modality: .face))
    }

    private func databaseBytes() -> Data? {
        let store = try? openStore()
        store?.flush()
        return FileManager.default.contents(atPath: dir + "/" + Store.fileName)
    }

    /// A different key (another key file, a wrong systemd credential) is refused when the store
    /// opens, not later template by template; nothing in the database changes.
    func testWrongKeyIsRefusedAtOpenAndChangesNothing() throws {
        _ = try openStore().templates.add(user: "ann", modality: .face, quality: 50, payload: Data([1]))
        let before = databaseBytes()
        XCTAssertThrowsError(try Store(directory: dir, key: SymmetricKey(size: .bits256))) { error in
            XCTAssertEqual(error as? StoreError, .keyMismatch(sealedRows: 1))
            XCTAssertTrue("\(error)".contains("does not open"), "\(error)")
        }
        XCTAssertEqual(FileManager.default.contents(atPath: dir + "/" + Store.fileName), before)
        XCTAssertEqual(try openStore().templates.payloads(user: "ann", modality: .face).count, 1, "the right key still opens it")
    }

    /// Also a database from before the key check was kept: checked on a sealed row.
    func testWrongKeyIsRefusedOnADatabaseWithoutTheCheckValue() throws {
        _ = try openStore().templates.add(user: "ann", modality: .face, quality: 50, payload: Data([1]))
        let db = try SQLiteConnection(path: dir + "/" + Store.fileName)
        try db.execute("DELETE FROM store_meta")
        db.close()
        XCTAssertThrowsError(try Store(directory: dir, key: SymmetricKey(size: .bits256))) { error in
            XCTAssertEqual(error as? StoreError, .keyMismatch(sealedRows: 1))
        }
        XCTAssertNoThrow(try openStore(), "the right key opens it and writes the check value again")
    }

    /// A missing key file next to sealed rows is not replaced by a new key.
    func testMissingKeyWithSealedRowsIsNotReplaced() throws {
        let store = try openStore()
        _ = try store.keys.add(user: "ann", appID: "https://a", aaid: "4e4e#4005", handle: "h1", publicKeyPEM: "pem",
                             privateKey: Data(repeating: 7, count: 32))
        store.flush()
        try FileManager.default.removeItem(atPath: dir + "/key")
        XCTAssertThrowsError(try TemplateKey.load(stateDirectory: dir, credentialsDirectory: nil)) { error in
            guard case .keyMissing(let path, let rows)? = error as? StoreError else { return XCTFail("\(error)") }
            XCTAssertEqual(path, dir + "/key")
            XCTAssertGreaterThan(rows, 0)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/key"), "no new key was written")
        // An empty state folder gets a fresh key.
        let fresh = dir + "-fresh"
        defer { try? FileManager.default.removeItem(atPath: fresh) }
        XCTAssertNoThrow(try TemplateKey.load(stateDirectory: fresh, credentialsDirectory: nil))
        XCTAssertTrue(FileManager.default.fileExists(atPath: fresh + "/key"))
    }

    func testKeyFromCredentialsDirectory() throws {
        let creds = dir + "-creds"
        try FileManager.default.createDirectory(atPath: creds, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: creds) }
        let path = creds + "/" + TemplateKey.credentialName
        FileManager.default.createFile(atPath: path, contents: Data(String(repeating: "ab", count: 32).utf8),
                                       attributes: [.posixPermissions: 0o600])
        let key = try TemplateKey.load(stateDirectory: dir, credentialsDirectory: creds)
        XCTAssertEqual(key.withUnsafeBytes { Data($0) }, Data(repeating: 0xAB, count: 32))
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/key"), "no second key is made")
        chmod(path, 0o644)
        XCTAssertThrowsError(try TemplateKey.load(stateDirectory: dir, credentialsDirectory: creds), "a world-readable key is refused")
        FileManager.default.createFile(atPath: path, contents: Data("short".utf8), attributes: [.posixPermissions: 0o600])
        XCTAssertThrowsError(try TemplateKey.load(stateDirectory: dir, credentialsDirectory: creds))
    }

    /// What biometricd-key seals: the daemon learns the protection from the sealed bytes, and an
    /// "unsealable" payload (another TPM) refuses the store instead of making a new key.
    func testSealedCredentialPayload() throws {
        let hex = String(repeating: "cd", count: 32)
        XCTAssertEqual(TemplateKey.Payload.parse(Data("biometricd-template-key v1\nprotection tpm2\nkey \(hex)\n".utf8)),
                       .key(Data(repeating: 0xCD, count: 32), .tpm2))
        XCTAssertEqual(TemplateKey.Payload.parse(Data("biometricd-template-key v1\nprotection host\nkey \(hex)".utf8)),
                       .key(Data(repeating: 0xCD, count: 32), .host))
        XCTAssertEqual(TemplateKey.Payload.parse(Data(hex.utf8)), .key(Data(repeating: 0xCD, count: 32), .credential))
        XCTAssertEqual(TemplateKey.Payload.parse(Data(repeating: 1, count: 32)), .key(Data(repeating: 1, count: 32), .credential))
        XCTAssertEqual(TemplateKey.Payload.parse(Data("biometricd-template-key v1\nunsealable the TPM refused it\n".utf8)),
                       .unsealable("the TPM refused it"))
        // A sealed payload never claims "file", never lacks its key, never carries a short key.
        XCTAssertNil(TemplateKey.Payload.parse(Data("biometricd-template-key v1\nprotection file\nkey \(hex)".utf8)))
        XCTAssertNil(TemplateKey.Payload.parse(Data("biometricd-template-key v1\nprotection tpm2\n".utf8)))
        XCTAssertNil(TemplateKey.Payload.parse(Data("biometricd-template-key v1\nprotection tpm2\nkey abcd".utf8)))
        XCTAssertNil(TemplateKey.Payload.parse(Data("biometricd-template-key v2\nprotection tpm2\nkey \(hex)".utf8)))

        let creds = dir + "-sealed-creds"
        try FileManager.default.createDirectory(atPath: creds, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: creds) }
        let path = creds + "/" + TemplateKey.credentialName
        FileManager.default.createFile(atPath: path, contents: Data("biometricd-template-key v1\nprotection tpm2\nkey \(hex)\n".utf8),
                                       attributes: [.posixPermissions: 0o400])
        let loaded = try TemplateKey.loadWithSource(stateDirectory: dir, credentialsDirectory: creds)
        XCTAssertEqual(loaded.protection, .tpm2)
        XCTAssertEqual(loaded.source, .credential)
        XCTAssertEqual(loaded.key.withUnsafeBytes { Data($0) }, Data(repeating: 0xCD, count: 32))

        FileManager.default.createFile(atPath: path, contents: Data("biometricd-template-key v1\nunsealable no TPM answers\n".utf8),
                                       attributes: [.posixPermissions: 0o400])
        XCTAssertThrowsError(try TemplateKey.loadWithSource(stateDirectory: dir, credentialsDirectory: creds)) { error in
            XCTAssertEqual(error as? StoreError, .keyUnsealable("no TPM answers"))
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/key"), "no plain key is made instead")
    }

    /// A sealed key beside the database but no credential (the daemon started by hand, not by its
    /// unit): refused, and no plain key is made that would shadow the sealed one.
    func testSealedKeyWithoutCredentialIsRefused() throws {
        let state = dir + "-sealed"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: state) }
        FileManager.default.createFile(atPath: state + "/" + TemplateKey.sealedFileName, contents: Data("sealed".utf8),
                                       attributes: [.posixPermissions: 0o600])
        XCTAssertThrowsError(try TemplateKey.loadWithSource(stateDirectory: state, credentialsDirectory: nil)) { error in
            guard case .keyUnsealable(let why)? = error as? StoreError else { return XCTFail("\(error)") }
            XCTAssertTrue(why.contains("systemctl start biometricd"), why)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: state + "/key"))
    }

    func testSchemaIsVersioned() throws {
        _ = try openStore()
        let db = try SQLiteConnection(path: dir + "/" + Store.fileName)
        var version = 0
        try db.query("PRAGMA user_version") { version = Int($0.int(0)) }
        XCTAssertEqual(version, Store.schemaVersion)
        try db.execute("PRAGMA user_version = 99")
        db.close()
        XCTAssertThrowsError(try openStore(), "a newer schema is refused, not damaged")
    }

    /// kill -9 during writes, several times: the database stays consistent and every template
    /// whose commit was reported is there and opens.
    func testCrashDuringWritesLeavesAConsistentStore() throws {
        let writer = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("store-crash-writer").path
        guard FileManager.default.isExecutableFile(atPath: writer) else {
            throw missing("build store-crash-writer first (swift build)")
        }
        var committed: [String: Int] = [:]
        for round in 0..<4 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: writer)
            process.arguments = [dir, "100000"]
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            // Let it write for a while, then pull the plug mid-transaction.
            usleep(useconds_t(150_000 + round * 70_000))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            XCTAssertEqual(process.terminationReason, .uncaughtSignal)
            let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            for line in output.split(separator: "\n") where line.hasPrefix("committed ") {
                let parts = line.split(separator: " ")
                if parts.count == 3 { committed[String(parts[1])] = Int(parts[2]) }
            }
        }
        XCTAssertGreaterThan(committed.count, 10, "the writer made progress before each kill")
        let store = try openStore()
        XCTAssertEqual(try store.integrityCheck(), "ok")
        let all = try store.templates.payloads(user: nil, modality: .face)
        let byID = Dictionary(uniqueKeysWithValues: all.map { ($0.0.id, $0.1) })
        for (id, i) in committed {
            let payload = try XCTUnwrap(byID[id], "committed template \(id) lost")
            XCTAssertTrue(payload.starts(with: Data("PLAINTEXT-MARKER-\(i)-".utf8)))
            XCTAssertEqual(payload.count, "PLAINTEXT-MARKER-\(i)-".utf8.count + 512)
        }
    }
}
