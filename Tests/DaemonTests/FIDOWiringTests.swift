import BiometricAuth
@testable import BiometricDaemon
@testable import BiometricFIDO
import BiometricProtocol
import BiometricStore
import Crypto
import Foundation
import Logging
import Synchronization
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// The FIDO2 authenticator's daemon wiring: who verifies, how a verification run maps to CTAP,
/// and the authenticator running over the daemon's own store and PIN (issue 24).
final class FIDOWiringTests: XCTestCase {
    private var dir = ""

    override func setUp() { dir = NSTemporaryDirectory() + "fido-wiring-\(UUID().uuidString)" }
    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    private func attempt(_ factor: Factor, _ kind: FactorRunner.FailureKind) -> FactorRunner.Attempt {
        FactorRunner.Attempt(factor: factor, kind: kind, code: 0, reason: kind.rawValue, message: "")
    }

    private func run(_ outcome: FactorRunner.Outcome, tried: [FactorRunner.Attempt] = []) -> FactorRunner.Run {
        FactorRunner.Run(outcome: outcome, tried: tried)
    }

    /// The verdict is read from the typed run, never from the wire result's strings (issue 33, item 10).
    func testVerdictMapping() {
        XCTAssertEqual(FIDOVerdict.outcome(run(.passed(.face, score: 80))), .verified(.face))
        XCTAssertEqual(FIDOVerdict.outcome(run(.passed(.finger, score: 80))), .verified(.finger))
        XCTAssertEqual(FIDOVerdict.outcome(run(.passed(.pin, score: nil))), .denied, "UV never passes by a PIN given to auth.authenticate")
        XCTAssertEqual(FIDOVerdict.outcome(run(.failed, tried: [attempt(.face, .noMatch)])), .denied)
        XCTAssertEqual(FIDOVerdict.outcome(run(.failed, tried: [attempt(.face, .timeout), attempt(.finger, .timeout)])), .timedOut)
        XCTAssertEqual(FIDOVerdict.outcome(run(.failed, tried: [attempt(.face, .timeout), attempt(.finger, .presentationAttack)])), .denied)
        XCTAssertEqual(FIDOVerdict.outcome(run(.failed)), .denied, "nothing tried")
        XCTAssertEqual(FIDOVerdict.outcome(CancellationError()), .cancelled)
        XCTAssertEqual(FIDOVerdict.outcome(LockoutRefusal(subject: .user("ann"), status: .lockedFor(seconds: 9), failures: 5)), .blocked)
        XCTAssertEqual(FIDOVerdict.outcome(PINRefusal.locked(failures: 3)), .blocked)
        XCTAssertEqual(FIDOVerdict.outcome(Deadline(what: "face capture", milliseconds: 1000)), .timedOut)
        XCTAssertEqual(FIDOVerdict.outcome(RPCError.app(.notFound, "nothing enrolled")), .denied)
        // An encoded error is not read: a locked_out RPCError is only "denied".
        XCTAssertEqual(FIDOVerdict.outcome(RPCError.app(.lockedOut, "x")), .denied)
    }

    func testUVRetriesFollowTheLockout() {
        let rules = LockoutRules(failuresToLock: 5, lockSeconds: 30, failuresToRequirePIN: 20)
        XCTAssertEqual(FIDOVerdict.uvRetries(LockoutState(), rules: rules, now: 1000), 5)
        XCTAssertEqual(FIDOVerdict.uvRetries(LockoutState(failures: 3), rules: rules, now: 1000), 2)
        XCTAssertEqual(FIDOVerdict.uvRetries(LockoutState(failures: 5, lockedUntil: 1020), rules: rules, now: 1000), 0, "locked now")
        XCTAssertEqual(FIDOVerdict.uvRetries(LockoutState(failures: 5, lockedUntil: 990), rules: rules, now: 1000), 5, "lock over")
        XCTAssertEqual(FIDOVerdict.uvRetries(LockoutState(failures: 18), rules: rules, now: 1000), 2)
        XCTAssertEqual(FIDOVerdict.uvRetries(LockoutState(failures: 20, requiresPIN: true), rules: rules, now: 1000), 0)
        XCTAssertEqual(FIDOVerdict.uvRetries(LockoutState(), rules: LockoutRules(failuresToLock: 0, lockSeconds: 1, failuresToRequirePIN: 0),
                                             now: 0), 25, "no limit configured: CTAP's most")
    }

    func testTheVerifyingUserIsTheSeatsActiveUserOrTheKioskUser() {
        let active = Mutex<UInt32?>(1000)
        let seat = FIDOUserSource(mode: .seat("seat0"), activeUID: { seat in seat == "seat0" ? active.withLock { $0 } : nil },
                                  account: { $0 == 1000 ? FIDOUser(name: "ann", uid: 1000, gid: 1000) : nil })
        XCTAssertEqual(seat.current()?.name, "ann")
        active.withLock { $0 = nil }
        XCTAssertNil(seat.current(), "nobody logged in on the seat: nobody to verify")
        active.withLock { $0 = 4242 }
        XCTAssertNil(seat.current(), "a uid with no account")
        let kiosk = FIDOUserSource(mode: .kiosk("door"), activeUID: { _ in 1000 }, account: { _ in nil })
        XCTAssertEqual(kiosk.current(), FIDOUser(name: "door", uid: 65534, gid: 65534), "the kiosk user whoever is logged in")
        XCTAssertEqual(FIDOUserSource(kioskUser: nil).mode, .seat("seat0"))
        XCTAssertEqual(FIDOUserSource(kioskUser: "door").mode, .kiosk("door"))
    }

    func testConfigurationKeysAndTheTestSocketRefusal() throws {
        var c = DaemonConfiguration()
        XCTAssertFalse(c.fidoEnabled, "off unless asked for")
        try c.apply(key: "fido", value: "yes", appendLists: false)
        try c.apply(key: "fido_user", value: "door", appendLists: false)
        XCTAssertTrue(c.fidoEnabled)
        XCTAssertEqual(c.fidoUser, "door")
        XCTAssertThrowsError(try c.apply(key: "fido", value: "maybe", appendLists: false))
        XCTAssertThrowsError(try c.apply(key: "fido_user", value: "two words", appendLists: false))
        XCTAssertThrowsError(try c.apply(key: "test_fido_socket", value: "relative", appendLists: false))
        XCTAssertEqual(try Daemon.fidoTransport(c), .uhid)
        try c.apply(key: "test_fido_socket", value: "/tmp/x.sock", appendLists: false)
        // The default socket and state paths make this a production instance: refused.
        XCTAssertThrowsError(try Daemon.fidoTransport(c))
        c.socketPath = "/tmp/t.sock"
        c.stateDirectory = "/tmp/t-state"
        if !c.isProductionInstance { XCTAssertEqual(try Daemon.fidoTransport(c), .testSocket(path: "/tmp/x.sock")) }
        XCTAssertNil(try Daemon.fidoTransport(DaemonConfiguration()), "no authenticator by default")
    }

    func testUVTimeoutKey() throws {
        var c = DaemonConfiguration()
        XCTAssertEqual(c.fidoUVTimeoutSeconds, 30, "CTAP's customary 30 s unless configured")
        XCTAssertEqual(Daemon.fidoVerificationTimeoutMs(c), 30_000)
        try c.apply(key: "fido_uv_timeout", value: "300", appendLists: false)
        XCTAssertEqual(Daemon.fidoVerificationTimeoutMs(c), 300_000)
        try c.apply(key: "fido_uv_timeout", value: "5", appendLists: false)
        XCTAssertEqual(c.fidoUVTimeoutSeconds, 5)
        XCTAssertEqual(DaemonConfiguration.fidoUVTimeoutRange, 5...300)
        XCTAssertEqual(DaemonConfiguration.fidoUVTimeoutRange.upperBound * 1000, FaceCaptureOptions.timeoutMs.range.upperBound,
                       "the face session inside the UV may run the whole window")
        for bad in ["4", "301", "0", "-30", "30s", "", "1e2", "thirty"] {
            XCTAssertThrowsError(try c.apply(key: "fido_uv_timeout", value: bad, appendLists: false), bad) { error in
                XCTAssertEqual((error as? ConfigError)?.key, "fido_uv_timeout")
            }
        }
        XCTAssertEqual(c.fidoUVTimeoutSeconds, 5, "a refused value changes nothing")
        // From a file: the error names the file, the line and the key (the daemon refuses to start).
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let file = dir + "/biometricd.conf"
        try "fido = yes\n# slow hardware\nfido_uv_timeout = 120\n".write(toFile: file, atomically: true, encoding: .utf8)
        var loaded = DaemonConfiguration()
        try loaded.load(file: file)
        XCTAssertEqual(loaded.fidoUVTimeoutSeconds, 120)
        try "fido = yes\nfido_uv_timeout = 900\n".write(toFile: file, atomically: true, encoding: .utf8)
        var refused = DaemonConfiguration()
        XCTAssertThrowsError(try refused.load(file: file)) { error in
            let e = error as? ConfigError
            XCTAssertEqual(e?.file, file)
            XCTAssertEqual(e?.line, 2)
            XCTAssertEqual(e?.key, "fido_uv_timeout")
            XCTAssertTrue(e?.description.contains("from 5 to 300") ?? false, e?.description ?? "")
        }
    }

    func testCTAPPINHashIsLeftSHA256() {
        // SHA-256("1234") = 03ac6742 16f3e15c 761ee1a5 e255f067 9536...
        XCTAssertEqual(CTAPPINHash.text(ofPIN: "1234"), "03ac674216f3e15c761ee1a5e255f067")
        XCTAssertEqual(CTAPPINHash.bytes(ofPIN: "1234").count, 16)
    }

    // MARK: The authenticator over the daemon's store and PIN

    private struct Rig {
        let store: Store
        let auth: AuthService
        let platform: FIDOHost
        let attempts: Counter
    }

    final class Counter: Sendable {
        private let value = Mutex(0)
        func bump() { value.withLock { $0 += 1 } }
        var count: Int { value.withLock { $0 } }
    }

    private func rig(user: String = "ann", answer: UserCheckOutcome = .verified(.face), pinMaxRetries: Int = 3) throws -> Rig {
        let store = try Store(directory: dir, key: try TemplateKey.load(stateDirectory: dir, credentialsDirectory: nil))
        try store.templates.add(user: user, modality: .face, quality: 70, payload: Data([1]))
        var configuration = DaemonConfiguration()
        configuration.pinMaxRetries = pinMaxRetries
        let auth = AuthService(store: store, configuration: configuration,
                               pins: FairQueue(label: "test-pin", width: 1, maxQueuedPerOwner: 64), logger: Logger(label: "test"),
                               hasher: PINHasher(parameters: Argon2Parameters(iterations: 1, memoryKiB: 64, parallelism: 1)))
        let users = FIDOUserSource(mode: .kiosk(user), activeUID: { _ in nil }, account: { _ in nil })
        let attempts = Counter()
        let verifier = DaemonUserVerifier(users: users, attempt: { _, _ in
            attempts.bump()
            return answer
        }, lockout: { try? store.lockouts.get(user: $0) }, rules: configuration.lockout)
        let authenticator = CTAP2Authenticator(configuration: .init(aaguid: FIDOService.aaguid), verifier: verifier,
                                               pins: DaemonPINVerifier(auth: auth, users: users),
                                               store: DaemonCredentialStore(store: store, users: users, capacity: 4))
        return Rig(store: store, auth: auth, platform: FIDOHost(authenticator: authenticator), attempts: attempts)
    }

    func testDiscoverableCredentialIsSealedInTheStoreWithItsMethodAndCounter() async throws {
        let r = try rig()
        let (status, body) = await r.platform.makeCredential(rk: true, uv: true)
        XCTAssertEqual(status, .success)
        let made = try MadeCredential(XCTUnwrap(body?[2]?.bytesValue))
        XCTAssertEqual(made.flags & 0x04, 0x04, "UV")
        XCTAssertEqual(r.attempts.count, 1, "one prompt")
        let stored = try r.store.fido.credentials(user: "ann")
        XCTAssertEqual(stored.map(\.id), [Data(made.credentialID)])
        XCTAssertEqual(stored.first?.verifiedBy, "face")

        let (a1, b1) = await r.platform.getAssertion(uv: true)
        XCTAssertEqual(a1, .success)
        let authData = try XCTUnwrap(b1?[2]?.bytesValue)
        XCTAssertEqual(authData[33..<37].reduce(0) { $0 << 8 | UInt32($1) }, 1)
        XCTAssertEqual(try r.store.fido.credentials(user: "ann").first?.counter, 1, "the counter on disk")
        let signature = try P256.Signing.ECDSASignature(derRepresentation: XCTUnwrap(b1?[3]?.bytesValue))
        XCTAssertTrue(made.publicKey.isValidSignature(signature, for: Data(authData + [UInt8](repeating: 7, count: 32))))

        // A non-discoverable credential: a key handle, its counter in the store too.
        let (s2, b2) = await r.platform.makeCredential(rpID: "other.org", rk: false, uv: true)
        XCTAssertEqual(s2, .success)
        let handle = try MadeCredential(XCTUnwrap(b2?[2]?.bytesValue)).credentialID
        XCTAssertEqual(try r.store.fido.credentials(user: "ann").count, 1, "no row for a key handle")
        let (s3, _) = await r.platform.getAssertion(rpID: "other.org", allow: [handle], uv: true)
        XCTAssertEqual(s3, .success)
        XCTAssertEqual(try r.store.fido.nextSignatureCount(user: "ann", credentialID: Data(handle)), 2)
    }

    /// Issue 33 item 6: when another user comes to the front of the seat, the device is
    /// re-created: a descriptor opened during the previous session serves nobody afterwards (its
    /// connection ends, as a hidraw node's does when the uhid device goes), and a new one serves
    /// the new user.
    func testTheDeviceIsRecreatedWhenTheSeatsUserChanges() async throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let active = Mutex<UInt32?>(1000)
        let accounts = [UInt32(1000): FIDOUser(name: "ann", uid: 1000, gid: 1000), 1001: FIDOUser(name: "bo", uid: 1001, gid: 1001)]
        let users = FIDOUserSource(mode: .seat("seat0"), activeUID: { _ in active.withLock { $0 } }, account: { accounts[$0] })
        let verifier = DaemonUserVerifier(users: users, attempt: { _, _ in .denied }, lockout: { _ in nil }, rules: LockoutRules())
        let path = dir + "/fido.sock"
        let service = FIDOService(choice: .testSocket(path: path), verifier: verifier, pins: InMemoryPINVerifier(pin: nil),
                                  store: InMemoryCredentialStore(), users: users, logger: Logger(label: "test"))
        try await service.start()
        func open() throws -> Int32 {
            let fd = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
            let rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard rc == 0 else { throw POSIXError(.ECONNREFUSED) }
            return fd
        }
        /// Whether the connection is ended within `seconds` (recv returns 0).
        func ended(_ fd: Int32, within seconds: Double) -> Bool {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(seconds * 1000)) == 1 else { return false }
            var byte: UInt8 = 0
            return recv(fd, &byte, 1, Int32(MSG_DONTWAIT)) == 0
        }
        let ann = try open()
        defer { close(ann) }
        XCTAssertFalse(ended(ann, within: 0.3), "ann's descriptor serves while ann is in front")
        active.withLock { $0 = 1001 }
        XCTAssertTrue(ended(ann, within: Double(FIDOService.seatPollMs) / 1000 * 3), "bo came to the front: ann's descriptor is cut off")
        var bo: Int32 = -1
        for _ in 0..<50 where bo < 0 {
            bo = (try? open()) ?? -1
            if bo < 0 { try await Task.sleep(nanoseconds: 50_000_000) }
        }
        XCTAssertGreaterThanOrEqual(bo, 0, "a new device serves bo")
        if bo >= 0 { close(bo) }
        await service.stop()
    }

    func testDeniedVerificationMakesNothing() async throws {
        let r = try rig(answer: .denied)
        let (status, _) = await r.platform.makeCredential(rk: true, uv: true)
        XCTAssertEqual(status, .uvInvalid, "built-in UV failed (CTAP 2.1 §6.1.2 step 11)")
        XCTAssertEqual(try r.store.fido.credentials(user: "ann"), [])
        let blocked = try rig(user: "bob", answer: .blocked)
        let (s2, _) = await blocked.platform.makeCredential(rk: true, uv: true)
        XCTAssertNotEqual(s2, .success)
    }

    func testClientPINUsesTheDaemonPINItsRetriesAndLock() async throws {
        let r = try rig(pinMaxRetries: 3)
        // A PIN set before the CTAP form was kept: not set, for CTAP.
        try r.store.pins.set(user: "ann", hash: try PINHasher(parameters: Argon2Parameters(iterations: 1, memoryKiB: 64, parallelism: 1)).hash("2468"))
        var (status, _) = try await r.platform.tokenUsingPIN("2468", .two)
        XCTAssertEqual(status, .pinNotSet)

        try await r.auth.setPIN(user: "ann", pin: "2468", caller: 0)
        let (ok, token) = try await r.platform.tokenUsingPIN("2468", .two)
        XCTAssertEqual(ok, .success)
        XCTAssertEqual(token?.count, 32)
        (status, _) = try await r.platform.tokenUsingPIN("1111", .two)
        XCTAssertEqual(status, .pinInvalid)
        XCTAssertEqual(try r.store.pins.get(user: "ann")?.failures, 1, "counted on the daemon PIN")
        let (retriesStatus, retries) = await r.platform.call(0x06, .map([.init(1, 2), .init(2, 1)]))
        XCTAssertEqual(retriesStatus, .success)
        XCTAssertEqual(retries?[3]?.intValue, 2)
        // The daemon's pin.verify path counts on the same counter.
        let wrong = try await r.auth.verifyPIN(user: "ann", pin: "9999", caller: 0)
        XCTAssertFalse(wrong.ok)
        (status, _) = try await r.platform.tokenUsingPIN("1111", .one)
        XCTAssertEqual(status, .pinBlocked, "third wrong PIN in all: locked")
        (status, _) = try await r.platform.tokenUsingPIN("2468", .two)
        XCTAssertEqual(status, .pinBlocked, "locked for the right PIN too, as pin.verify")
        let viaDaemon = try? await r.auth.verifyPIN(user: "ann", pin: "2468", caller: 0)
        XCTAssertNil(viaDaemon, "pin.verify answers pin_locked too")

        // A PIN set again through biometricd (admin reset + set) works for both.
        try r.store.pins.reset(user: "ann", removePIN: false)
        try await r.auth.setPIN(user: "ann", pin: "13579", caller: 0)
        (status, _) = try await r.platform.tokenUsingPIN("13579", .one)
        XCTAssertEqual(status, .success)
    }

    func testResetIsPerUserAndReplacesTheWrappingKey() async throws {
        let r = try rig()
        let before = try r.store.fido.wrappingKey(user: "ann")
        _ = await r.platform.makeCredential(rk: true, uv: true)
        let (status, _) = await r.platform.call(0x07)
        XCTAssertEqual(status, .success, "within 10 s of the device appearing")
        XCTAssertEqual(try r.store.fido.credentials(user: "ann"), [])
        XCTAssertNotEqual(try r.store.fido.wrappingKey(user: "ann"), before)
    }

    func testNoUserOnTheSeatIsRefusedNotCrashed() async throws {
        let store = try Store(directory: dir, key: try TemplateKey.load(stateDirectory: dir, credentialsDirectory: nil))
        let nobody = FIDOUserSource(mode: .seat("seat0"), activeUID: { _ in nil }, account: { _ in nil })
        let attempts = Mutex(0)
        let verifier = DaemonUserVerifier(users: nobody, attempt: { _, _ in attempts.withLock { $0 += 1 }; return .verified(.face) },
                                          lockout: { _ in nil }, rules: LockoutRules())
        let outcome = await verifier.verifyUser(rpID: nil)
        XCTAssertEqual(outcome, .denied)
        let retries = await verifier.uvRetries()
        XCTAssertEqual(retries, 0)
        XCTAssertEqual(attempts.withLock { $0 }, 0, "no prompt for nobody")
        let authenticator = CTAP2Authenticator(configuration: .init(aaguid: FIDOService.aaguid), verifier: verifier,
                                               pins: InMemoryPINVerifier(pin: nil), store: DaemonCredentialStore(store: store, users: nobody, capacity: 4))
        let (status, _) = await FIDOHost(authenticator: authenticator).getAssertion(allow: [[UInt8](repeating: 1, count: 63)], uv: false)
        XCTAssertNotEqual(status, .success)
    }

    func testCancellationAnswersCancelled() async throws {
        let users = FIDOUserSource(mode: .kiosk("ann"), activeUID: { _ in nil }, account: { _ in nil })
        let verifier = DaemonUserVerifier(users: users, attempt: { _, _ in
            for _ in 0..<500 {
                if Task.isCancelled { return FIDOVerdict.outcome(CancellationError()) }
                try? await Task.sleep(for: .milliseconds(10))
            }
            return .verified(.face)
        }, lockout: { _ in nil }, rules: LockoutRules())
        let task = Task { await verifier.verifyUser(rpID: "example.com") }
        try await Task.sleep(for: .milliseconds(50))
        task.cancel()
        let outcome = await task.value
        XCTAssertEqual(outcome, .cancelled)
    }
}

/// The platform side (what libfido2 or python-fido2 do): requests built, responses decoded, PIN
/// protocol crypto. A trimmed copy of FIDOTests' TestPlatform (test targets cannot share code).
struct FIDOHost {
    let authenticator: CTAP2Authenticator
    let decoder = CBORDecoder()

    func call(_ command: UInt8, _ parameters: CBORValue? = nil) async -> (CTAPStatus, CBORValue?) {
        let response = await authenticator.handle([command] + (parameters.map(CBOREncoder.encode) ?? []))
        let status = CTAPStatus(rawValue: response[0]) ?? .other
        let body = response.count > 1 ? try? decoder.decode(Array(response.dropFirst())) : nil
        return (status, body)
    }

    func makeCredential(rpID: String = "example.com", rk: Bool, uv: Bool) async -> (CTAPStatus, CBORValue?) {
        await call(0x01, .map([
            .init(1, .bytes([UInt8](repeating: 9, count: 32))),
            .init(2, .map([.init("id", .text(rpID)), .init("name", "Example")])),
            .init(3, .map([.init("id", .bytes([1, 2, 3])), .init("name", "alice"), .init("displayName", "Alice")])),
            .init(4, .array([.map([.init("alg", -7), .init("type", "public-key")])])),
            .init(7, .map([.init("rk", .bool(rk)), .init("uv", .bool(uv))])),
        ]))
    }

    func getAssertion(rpID: String = "example.com", allow: [[UInt8]]? = nil, uv: Bool) async -> (CTAPStatus, CBORValue?) {
        var p: [CBORMapEntry] = [
            .init(1, .text(rpID)), .init(2, .bytes([UInt8](repeating: 7, count: 32))),
            .init(5, .map([.init("up", true), .init("uv", .bool(uv))])),
        ]
        if let allow { p.append(.init(3, .array(allow.map { .map([.init("id", .bytes($0)), .init("type", "public-key")]) }))) }
        return await call(0x02, .map(p))
    }

    func tokenUsingPIN(_ pin: String, _ pinProtocol: PINUVAuthProtocol) async throws -> (CTAPStatus, [UInt8]?) {
        let (status, body) = await call(0x06, .map([.init(1, .int(pinProtocol.rawValue)), .init(2, 2)]))
        XCTAssertEqual(status, .success)
        let ours = P256.KeyAgreement.PrivateKey()
        let secret = try pinProtocol.sharedSecret(ours: ours, platformKey: body![1]!)
        let pinHash = Array(SHA256.hash(data: Array(pin.utf8)).prefix(16))
        let (answer, reply) = await call(0x06, .map([
            .init(1, .int(pinProtocol.rawValue)), .init(2, 9), .init(3, coseKey(ours.publicKey.x963Representation, algorithm: -25)),
            .init(6, .bytes(try pinProtocol.encrypt(secret: secret, pinHash))), .init(9, 0x03),
        ]))
        guard answer == .success, let encrypted = reply?[2]?.bytesValue else { return (answer, nil) }
        return (answer, try pinProtocol.decrypt(secret: secret, encrypted))
    }
}

/// The parts of attested credential data the tests look at.
struct MadeCredential {
    let flags: UInt8
    let credentialID: [UInt8]
    let publicKey: P256.Signing.PublicKey

    init(_ authData: [UInt8]) throws {
        flags = authData[32]
        let length = Int(authData[53]) << 8 | Int(authData[54])
        credentialID = Array(authData[55..<55 + length])
        var tail = Array(authData[(55 + length)...])
        var cose: CBORValue?
        while !tail.isEmpty, cose == nil {
            cose = try? CBORDecoder().decode(tail)
            if cose == nil { tail.removeLast() }
        }
        let key = try XCTUnwrap(cose)
        publicKey = try P256.Signing.PublicKey(rawRepresentation: XCTUnwrap(key[-2]?.bytesValue) + XCTUnwrap(key[-3]?.bytesValue))
    }
}

extension FIDOWiringTests {
    /// getInfo's `uv` says whether this user can be verified by a face or finger now.
    func testGetInfoUVFollowsEnrolmentAndPolicy() async throws {
        let store = try Store(directory: dir, key: try TemplateKey.load(stateDirectory: dir, credentialsDirectory: nil))
        try store.pins.set(user: "pinonly", hash: "x")
        try store.templates.add(user: "ann", modality: .face, quality: 70, payload: Data([1]))
        XCTAssertTrue(Daemon.biometricConfigured(store, user: "ann"))
        XCTAssertFalse(Daemon.biometricConfigured(store, user: "pinonly"), "nothing enrolled")
        XCTAssertFalse(Daemon.biometricConfigured(store, user: "nobody"))
        try store.policies.set(user: "ann", AuthPolicy(factors: [.finger, .pin], requireLiveness: true))
        XCTAssertFalse(Daemon.biometricConfigured(store, user: "ann"), "a face the policy does not use")

        for (user, expected) in [("ann", false), ("bob", true)] {
            if user == "bob" { try store.templates.add(user: "bob", modality: .face, quality: 70, payload: Data([1])) }
            let users = FIDOUserSource(mode: .kiosk(user), activeUID: { _ in nil }, account: { _ in nil })
            let verifier = DaemonUserVerifier(users: users, attempt: { _, _ in .denied }, lockout: { _ in nil }, rules: LockoutRules(),
                                              configured: { Daemon.biometricConfigured(store, user: $0) })
            let authenticator = CTAP2Authenticator(configuration: .init(aaguid: FIDOService.aaguid), verifier: verifier,
                                                   pins: InMemoryPINVerifier(pin: nil), store: InMemoryCredentialStore())
            let (status, info) = await FIDOHost(authenticator: authenticator).call(0x04)
            XCTAssertEqual(status, .success)
            XCTAssertEqual(info?[4]?["uv"], .bool(expected), user)
        }
    }
}
