@testable import BiometricFIDO
import Crypto
import Foundation
import Synchronization
import XCTest

/// A user verifier the test controls: a queue of answers, then a default.
actor FakeVerifier: UserVerifier {
    var uvAnswers: [UserCheckOutcome] = []
    var upAnswers: [UserCheckOutcome] = []
    var uvDefault: UserCheckOutcome = .verified(.face)
    var upDefault: UserCheckOutcome = .present
    private(set) var uvCalls = 0
    private(set) var upCalls = 0

    func verifyUser(rpID: String?) async -> UserCheckOutcome {
        uvCalls += 1
        return uvAnswers.isEmpty ? uvDefault : uvAnswers.removeFirst()
    }

    func confirmPresence(rpID: String?) async -> UserCheckOutcome {
        upCalls += 1
        return upAnswers.isEmpty ? upDefault : upAnswers.removeFirst()
    }

    func uvRetries() async -> Int { 5 }
    func set(uv: UserCheckOutcome? = nil, up: UserCheckOutcome? = nil) {
        if let uv { uvDefault = uv }
        if let up { upDefault = up }
    }
}

/// The platform side of the tests: builds requests, decodes responses, does PIN protocol crypto.
struct TestPlatform {
    let authenticator: CTAP2Authenticator
    let decoder = CBORDecoder()

    func call(_ command: UInt8, _ parameters: CBORValue? = nil) async -> (CTAPStatus, CBORValue?) {
        let response = await authenticator.handle([command] + (parameters.map(CBOREncoder.encode) ?? []))
        let status = CTAPStatus(rawValue: response[0]) ?? .other
        let body = response.count > 1 ? try? decoder.decode(Array(response.dropFirst())) : nil
        return (status, body)
    }

    func makeCredential(rpID: String = "example.com", userID: [UInt8] = [1, 2, 3], rk: Bool = false, uv: Bool = true,
                        exclude: [[UInt8]] = [], extra: [CBORMapEntry] = [], token: ([UInt8], PINUVAuthProtocol)? = nil,
                        clientDataHash: [UInt8] = [UInt8](repeating: 9, count: 32)) async -> (CTAPStatus, CBORValue?) {
        var p: [CBORMapEntry] = [
            .init(1, .bytes(clientDataHash)),
            .init(2, .map([.init("id", .text(rpID)), .init("name", "Example")])),
            .init(3, .map([.init("id", .bytes(userID)), .init("name", "alice"), .init("displayName", "Alice")])),
            .init(4, .array([.map([.init("alg", -8), .init("type", "public-key")]), .map([.init("alg", -7), .init("type", "public-key")])])),
            .init(7, .map([.init("rk", .bool(rk)), .init("uv", .bool(uv))])),
        ]
        if !exclude.isEmpty {
            p.append(.init(5, .array(exclude.map { .map([.init("id", .bytes($0)), .init("type", "public-key")]) })))
        }
        if let (value, pinProtocol) = token {
            p.append(.init(8, .bytes(pinProtocol.authenticate(key: value, clientDataHash))))
            p.append(.init(9, .int(pinProtocol.rawValue)))
        }
        return await call(0x01, .map(p + extra))
    }

    func getAssertion(rpID: String = "example.com", allow: [[UInt8]]? = nil, up: Bool = true, uv: Bool = false,
                      token: ([UInt8], PINUVAuthProtocol)? = nil, extensions: CBORValue? = nil,
                      clientDataHash: [UInt8] = [UInt8](repeating: 7, count: 32)) async -> (CTAPStatus, CBORValue?) {
        var p: [CBORMapEntry] = [
            .init(1, .text(rpID)), .init(2, .bytes(clientDataHash)),
            .init(5, .map([.init("up", .bool(up)), .init("uv", .bool(uv))])),
        ]
        if let allow { p.append(.init(3, .array(allow.map { .map([.init("id", .bytes($0)), .init("type", "public-key")]) }))) }
        if let extensions { p.append(.init(4, extensions)) }
        if let (value, pinProtocol) = token {
            p.append(.init(6, .bytes(pinProtocol.authenticate(key: value, clientDataHash))))
            p.append(.init(7, .int(pinProtocol.rawValue)))
        }
        return await call(0x02, .map(p))
    }

    /// getKeyAgreement, then the shared secret and our COSE key.
    func agree(_ pinProtocol: PINUVAuthProtocol) async throws -> ([UInt8], CBORValue) {
        let (status, body) = await call(0x06, .map([.init(1, .int(pinProtocol.rawValue)), .init(2, 2)]))
        XCTAssertEqual(status, .success)
        let ours = P256.KeyAgreement.PrivateKey()
        let secret = try pinProtocol.sharedSecret(ours: ours, platformKey: body![1]!)
        return (secret, coseKey(ours.publicKey.x963Representation, algorithm: -25))
    }

    /// getPinUvAuthTokenUsingPinWithPermissions (or getPinToken without permissions).
    func tokenUsingPIN(_ pin: String, _ pinProtocol: PINUVAuthProtocol, permissions: Int? = 0x03,
                       rpID: String? = nil) async throws -> (CTAPStatus, [UInt8]?) {
        let (secret, key) = try await agree(pinProtocol)
        let pinHash = Array(SHA256.hash(data: Array(pin.utf8)).prefix(16))
        var p: [CBORMapEntry] = [
            .init(1, .int(pinProtocol.rawValue)), .init(2, permissions == nil ? 5 : 9), .init(3, key),
            .init(6, .bytes(try pinProtocol.encrypt(secret: secret, pinHash))),
        ]
        if let permissions { p.append(.init(9, .int(permissions))) }
        if let rpID { p.append(.init(10, .text(rpID))) }
        let (status, body) = await call(0x06, .map(p))
        guard status == .success, let encrypted = body?[2]?.bytesValue else { return (status, nil) }
        return (status, try pinProtocol.decrypt(secret: secret, encrypted))
    }

    func tokenUsingUV(_ pinProtocol: PINUVAuthProtocol, permissions: Int, rpID: String? = nil) async throws -> (CTAPStatus, [UInt8]?) {
        let (secret, key) = try await agree(pinProtocol)
        var p: [CBORMapEntry] = [.init(1, .int(pinProtocol.rawValue)), .init(2, 6), .init(3, key), .init(9, .int(permissions))]
        if let rpID { p.append(.init(10, .text(rpID))) }
        let (status, body) = await call(0x06, .map(p))
        guard status == .success, let encrypted = body?[2]?.bytesValue else { return (status, nil) }
        return (status, try pinProtocol.decrypt(secret: secret, encrypted))
    }
}

/// Parsed attested credential data.
struct AttestedCredential {
    let rpIDHash: [UInt8]
    let flags: UInt8
    let counter: UInt32
    let credentialID: [UInt8]
    let publicKey: P256.Signing.PublicKey

    init(_ authData: [UInt8]) throws {
        rpIDHash = Array(authData[0..<32])
        flags = authData[32]
        counter = authData[33..<37].reduce(0) { $0 << 8 | UInt32($1) }
        let length = Int(authData[53]) << 8 | Int(authData[54])
        credentialID = Array(authData[55..<55 + length])
        let (cose, _) = try CBORDecoder().decodePrefixForTests(Array(authData[(55 + length)...]))
        publicKey = try P256.Signing.PublicKey(rawRepresentation: cose[-2]!.bytesValue! + cose[-3]!.bytesValue!)
    }
}

extension CBORDecoder {
    /// Decodes the leading item (the COSE key) of authData's tail, which may carry extensions after it.
    func decodePrefixForTests(_ bytes: [UInt8]) throws -> (CBORValue, Int) {
        for end in stride(from: bytes.count, through: 1, by: -1) {
            if let value = try? decode(Array(bytes[..<end])) { return (value, end) }
        }
        throw CBORError.truncated
    }
}

final class AuthenticatorTests: XCTestCase {
    let aaguid = (0..<16).map { UInt8($0 * 3) }
    var verifier: FakeVerifier!
    var pins: InMemoryPINVerifier!
    var store: InMemoryCredentialStore!
    var platform: TestPlatform!

    override func setUp() {
        verifier = FakeVerifier()
        pins = InMemoryPINVerifier(pin: "1234", maxRetries: 8)
        store = InMemoryCredentialStore(capacity: 4)
        platform = TestPlatform(authenticator: CTAP2Authenticator(
            configuration: .init(aaguid: aaguid), verifier: verifier, pins: pins, store: store))
    }

    func testGetInfoAdvertisesWhatIsImplemented() async {
        let (status, info) = await platform.call(0x04)
        XCTAssertEqual(status, .success)
        XCTAssertEqual(info?[1], .array(["FIDO_2_0", "FIDO_2_1"]))
        XCTAssertEqual(info?[2], .array(["credProtect", "hmac-secret"]))
        XCTAssertEqual(info?[3], .bytes(aaguid))
        XCTAssertEqual(info?[4]?["clientPin"], true)
        XCTAssertEqual(info?[4]?["uv"], true)
        XCTAssertEqual(info?[4]?["credMgmt"], true)
        XCTAssertEqual(info?[6], .array([2, 1]))
        XCTAssertEqual(info?[0x0a], .array([.map([.init("alg", -7), .init("type", "public-key")])]))
    }

    func testMakeCredentialWithUVGivesPackedAttestationWithAOneTimeCertificate() async throws {
        let cdh = [UInt8](repeating: 0x42, count: 32)
        let (status, response) = await platform.makeCredential(clientDataHash: cdh)
        XCTAssertEqual(status, .success)
        XCTAssertEqual(response?[1], "packed")
        let authData = try XCTUnwrap(response?[2]?.bytesValue)
        let credential = try AttestedCredential(authData)
        XCTAssertEqual(credential.rpIDHash, sha256("example.com"))
        XCTAssertEqual(credential.flags, 0x45, "UP | UV | AT")
        XCTAssertEqual(Array(authData[37..<53]), aaguid)
        XCTAssertEqual(response?[3]?["alg"], -7)
        // Signed by the attestation key in x5c (AttestationTests checks the certificate), not the credential's.
        let x5c = try XCTUnwrap(response?[3]?["x5c"]?.arrayValue)
        XCTAssertEqual(x5c.count, 1)
        let attestationKey = try AttestationTests.publicKey(of: try XCTUnwrap(x5c[0].bytesValue))
        let signature = try P256.Signing.ECDSASignature(derRepresentation: try XCTUnwrap(response?[3]?["sig"]?.bytesValue))
        XCTAssertTrue(attestationKey.isValidSignature(signature, for: authData + cdh))
        XCTAssertFalse(credential.publicKey.isValidSignature(signature, for: authData + cdh))
        XCTAssertNotEqual(attestationKey.rawRepresentation, credential.publicKey.rawRepresentation)
        let uvCalls = await verifier.uvCalls, upCalls = await verifier.upCalls
        XCTAssertEqual(uvCalls, 1)
        XCTAssertEqual(upCalls, 0, "one prompt, not two: UV implies UP")
    }

    func testAssertionsVerifyAndCountersIncrease() async throws {
        let (_, made) = await platform.makeCredential(uv: false)
        let credential = try AttestedCredential(made![2]!.bytesValue!)
        XCTAssertEqual(credential.flags & 0x04, 0, "no UV asked, none claimed")
        for expected: UInt32 in 1...3 {
            let cdh = [UInt8](repeating: UInt8(expected), count: 32)
            let (status, response) = await platform.getAssertion(allow: [[9, 9], credential.credentialID], clientDataHash: cdh)
            XCTAssertEqual(status, .success)
            let authData = try XCTUnwrap(response?[2]?.bytesValue)
            XCTAssertEqual(authData[32], 0x01, "UP only")
            XCTAssertEqual(authData[33..<37].reduce(0) { $0 << 8 | UInt32($1) }, expected)
            XCTAssertEqual(response?[1]?["id"]?.bytesValue, credential.credentialID)
            let signature = try P256.Signing.ECDSASignature(derRepresentation: response![3]!.bytesValue!)
            XCTAssertTrue(credential.publicKey.isValidSignature(signature, for: authData + cdh))
        }
        // UV on request, and up=false gives a silent assertion without the UP flag.
        let (_, uvResponse) = await platform.getAssertion(allow: [credential.credentialID], uv: true)
        XCTAssertEqual(uvResponse?[2]?.bytesValue?[32], 0x05)
        let (_, silent) = await platform.getAssertion(allow: [credential.credentialID], up: false)
        XCTAssertEqual(silent?[2]?.bytesValue?[32], 0x00)
    }

    func testKeyHandlesAreBoundToTheirRPAndTamperEvident() async throws {
        let (_, made) = await platform.makeCredential(uv: false)
        let id = try AttestedCredential(made![2]!.bytesValue!).credentialID
        XCTAssertEqual(id.count, KeyHandle.length)
        let (other, _) = await platform.getAssertion(rpID: "evil.example", allow: [id])
        XCTAssertEqual(other, .noCredentials)
        for index in [0, 5, 20, id.count - 1] {
            var tampered = id
            tampered[index] ^= 0x01
            let (status, _) = await platform.getAssertion(allow: [tampered])
            XCTAssertEqual(status, .noCredentials, "byte \(index)")
        }
        // authenticatorReset replaces the wrapping key: old handles die.
        await assertEqual(await platform.call(0x07).0, .success)
        await assertEqual(await platform.getAssertion(allow: [id]).0, .noCredentials)
    }

    func testDiscoverableCredentialsNeedUVAndEnumerateWithGetNextAssertion() async throws {
        await assertEqual(await platform.makeCredential(rk: true, uv: false).0, .puatRequired)
        await assertEqual(await platform.makeCredential(userID: [1], rk: true).0, .success)
        await assertEqual(await platform.makeCredential(userID: [2], rk: true).0, .success)
        // The same user again replaces the first.
        await assertEqual(await platform.makeCredential(userID: [2], rk: true).0, .success)
        await assertEqual(await platform.makeCredential(rpID: "other.example", userID: [3], rk: true).0, .success)
        let (status, first) = await platform.getAssertion(uv: true)
        XCTAssertEqual(status, .success)
        XCTAssertEqual(first?[5], 2)
        XCTAssertEqual(first?[4]?["id"], .bytes([2]), "newest first")
        XCTAssertEqual(first?[4]?["name"], "alice", "names after UV")
        let (nextStatus, next) = await platform.call(0x08)
        XCTAssertEqual(nextStatus, .success)
        XCTAssertEqual(next?[4]?["id"], .bytes([1]))
        XCTAssertNil(next?[5])
        await assertEqual(await platform.call(0x08).0, .notAllowed)
        // Without UV the user's names stay hidden.
        let (_, quiet) = await platform.getAssertion()
        XCTAssertNil(quiet?[4]?["name"])
        await assertEqual(await platform.getAssertion(rpID: "none.example").0, .noCredentials)
    }

    func testExcludeListRefusesASecondCredential() async throws {
        let (_, made) = await platform.makeCredential(uv: false)
        let id = try AttestedCredential(made![2]!.bytesValue!).credentialID
        await assertEqual(await platform.makeCredential(exclude: [[1, 2, 3], id]).0, .credentialExcluded)
        await assertEqual(await platform.makeCredential(rpID: "other.example", exclude: [id]).0, .success)
    }

    func testCredProtectLevelThreeNeedsUV() async throws {
        let (status, made) = await platform.makeCredential(extra: [.init(6, .map([.init("credProtect", 3)]))])
        XCTAssertEqual(status, .success)
        let authData = made![2]!.bytesValue!
        XCTAssertEqual(authData[32] & 0x80, 0x80, "extension data")
        XCTAssertTrue(hex(authData).hasSuffix(hex(CBOREncoder.encode(.map([.init("credProtect", 3)])))))
        let id = try AttestedCredential(authData).credentialID
        await assertEqual(await platform.getAssertion(allow: [id]).0, .noCredentials)
        await assertEqual(await platform.getAssertion(allow: [id], uv: true).0, .success)
        await assertEqual(await platform.makeCredential(extra: [.init(6, .map([.init("credProtect", 4)]))]).0, .invalidParameter)
    }

    func testHMACSecretGivesStableSecretsPerCredentialAndUV() async throws {
        let (status, made) = await platform.makeCredential(rk: true, extra: [.init(6, .map([.init("hmac-secret", true)]))])
        XCTAssertEqual(status, .success)
        let authData = made![2]!.bytesValue!
        XCTAssertTrue(hex(authData).hasSuffix(hex(CBOREncoder.encode(.map([.init("hmac-secret", true)])))))
        let id = try AttestedCredential(authData).credentialID
        let (_, plain) = await platform.makeCredential(uv: false)
        let plainID = try AttestedCredential(plain![2]!.bytesValue!).credentialID

        func secret(_ pinProtocol: PINUVAuthProtocol, salt: [UInt8], uv: Bool = false, up: Bool = true,
                    credential: [UInt8]? = nil, badAuth: Bool = false) async throws -> (CTAPStatus, [UInt8]?) {
            let (shared, key) = try await platform.agree(pinProtocol)
            let saltEnc = try pinProtocol.encrypt(secret: shared, salt)
            var saltAuth = pinProtocol.authenticate(key: shared, saltEnc)
            if badAuth { saltAuth[0] ^= 1 }
            let input: CBORValue = .map([.init("hmac-secret", .map([
                .init(1, key), .init(2, .bytes(saltEnc)), .init(3, .bytes(saltAuth)), .init(4, .int(pinProtocol.rawValue)),
            ]))])
            let (status, response) = await platform.getAssertion(allow: [credential ?? id], up: up, uv: uv, extensions: input)
            guard status == .success, let data = response?[2]?.bytesValue else { return (status, nil) }
            guard data[32] & 0x80 != 0 else { return (status, nil) }
            let outputs = try CBORDecoder().decode(Array(data[37...]))
            return (status, try pinProtocol.decrypt(secret: shared, try XCTUnwrap(outputs["hmac-secret"]?.bytesValue)))
        }
        let salt1 = [UInt8](repeating: 5, count: 32), salt2 = [UInt8](repeating: 6, count: 32)
        let (s1, one) = try await secret(.one, salt: salt1)
        let (s2, two) = try await secret(.two, salt: salt1)
        XCTAssertEqual(s1, .success)
        XCTAssertEqual(s2, .success)
        XCTAssertEqual(one?.count, 32)
        XCTAssertEqual(one, two, "the same credential, salt and UV state give the same secret in either protocol")
        let (_, both) = try await secret(.two, salt: salt1 + salt2)
        XCTAssertEqual(both.map { Array($0[..<32]) }, one)
        XCTAssertEqual(both?.count, 64)
        let (_, withUV) = try await secret(.two, salt: salt1, uv: true)
        XCTAssertNotEqual(withUV, one, "CredRandomWithUV differs from CredRandomWithoutUV")
        let (_, otherSalt) = try await secret(.two, salt: salt2)
        XCTAssertNotEqual(otherSalt, one)
        try await assertEqual(try await secret(.two, salt: salt1, badAuth: true).0, .pinAuthInvalid)
        try await assertEqual(try await secret(.two, salt: salt1, up: false).0, .unsupportedOption)
        try await assertEqual(try await secret(.two, salt: [UInt8](repeating: 1, count: 16)).0, .invalidLength)
        let (plainStatus, none) = try await secret(.two, salt: salt1, credential: plainID)
        XCTAssertEqual(plainStatus, .success)
        XCTAssertNil(none, "no hmac-secret for a credential made without it")
    }

    func testUVOutcomesMapToCTAPStatuses() async {
        await verifier.set(uv: .denied)
        await assertEqual(await platform.makeCredential().0, .uvInvalid)
        await verifier.set(uv: .cancelled)
        await assertEqual(await platform.makeCredential().0, .keepaliveCancel)
        await verifier.set(uv: .timedOut)
        await assertEqual(await platform.makeCredential().0, .userActionTimeout)
        await verifier.set(uv: .blocked)
        await assertEqual(await platform.makeCredential().0, .uvBlocked)
        await verifier.set(up: .denied)
        await assertEqual(await platform.makeCredential(uv: false).0, .operationDenied)
        await assertEqual(await platform.call(0x0b).0, .operationDenied)
        await verifier.set(up: .present)
        await assertEqual(await platform.call(0x0b).0, .success)
    }

    func testPINTokensInBothProtocols() async throws {
        for pinProtocol in PINUVAuthProtocol.allCases {
            let (status, token) = try await platform.tokenUsingPIN("1234", pinProtocol, rpID: "example.com")
            XCTAssertEqual(status, .success)
            let value = try XCTUnwrap(token)
            XCTAssertEqual(value.count, 32)
            let (made, response) = await platform.makeCredential(rk: true, uv: false, token: (value, pinProtocol))
            XCTAssertEqual(made, .success, "protocol \(pinProtocol)")
            XCTAssertEqual(response?[2]?.bytesValue?[32], 0x45, "UV by PIN, UP asked separately")
            // The token is bound to example.com.
            await assertEqual(await platform.makeCredential(rpID: "other.example", uv: false, token: (value, pinProtocol)).0, .pinAuthInvalid)
            // A wrong pinUvAuthParam is refused.
            await assertEqual(await platform.makeCredential(uv: false, token: ([UInt8](repeating: 1, count: 32), pinProtocol)).0, .pinAuthInvalid)
            let (legacy, legacyToken) = try await platform.tokenUsingPIN("1234", pinProtocol, permissions: nil)
            XCTAssertEqual(legacy, .success)
            await assertEqual(await platform.getAssertion(token: (legacyToken!, pinProtocol)).0, .success)
        }
        // A token without the ga permission cannot sign.
        let (_, mcOnly) = try await platform.tokenUsingPIN("1234", .two, permissions: 0x01)
        await assertEqual(await platform.getAssertion(token: (mcOnly!, .two)).0, .pinAuthInvalid)
        try await assertEqual(try await platform.tokenUsingPIN("1234", .two, permissions: 0x08).0, .unauthorizedPermission)
        try await assertEqual(try await platform.tokenUsingPIN("1234", .two, permissions: 0).0, .invalidParameter)
    }

    func testWrongPINsBlockAfterThreeInARowAndRetriesRunOut() async throws {
        for attempt in 1...3 {
            let (status, _) = try await platform.tokenUsingPIN("0000", .two)
            XCTAssertEqual(status, attempt < 3 ? .pinInvalid : .pinAuthBlocked)
        }
        try await assertEqual(try await platform.tokenUsingPIN("1234", .two).0, .pinAuthBlocked, "until power cycle")
        let (_, retries) = await platform.call(0x06, .map([.init(2, 1)]))
        XCTAssertEqual(retries?[3], 5)

        // With three retries in all, the third wrong PIN blocks the PIN.
        let strict = TestPlatform(authenticator: CTAP2Authenticator(
            configuration: .init(aaguid: aaguid), verifier: verifier, pins: InMemoryPINVerifier(pin: "1234", maxRetries: 3),
            store: store))
        try await assertEqual(try await strict.tokenUsingPIN("0000", .one).0, .pinInvalid)
        try await assertEqual(try await strict.tokenUsingPIN("1234", .one).0, .success, "a right PIN resets the count")
        try await assertEqual(try await strict.tokenUsingPIN("0000", .one).0, .pinInvalid)
        try await assertEqual(try await strict.tokenUsingPIN("0000", .one).0, .pinInvalid)
        try await assertEqual(try await strict.tokenUsingPIN("0000", .one).0, .pinBlocked)
        try await assertEqual(try await strict.tokenUsingPIN("1234", .one).0, .pinBlocked)

        let noPIN = TestPlatform(authenticator: CTAP2Authenticator(
            configuration: .init(aaguid: aaguid), verifier: verifier, pins: InMemoryPINVerifier(pin: nil), store: store))
        try await assertEqual(try await noPIN.tokenUsingPIN("1234", .two).0, .pinNotSet)
        await assertEqual(await noPIN.call(0x04).1?[4]?["clientPin"], false)
    }

    /// SPEC §4 / issue 33 item 6: a PIN/UV token belongs to the user who obtained it. A token
    /// obtained with ann's PIN stops working when bob comes to the front of the seat, and
    /// `userChanged` (the daemon re-creates the device then) forgets it outright.
    func testATokenBelongsToTheUserWhoObtainedIt() async throws {
        let seat = Mutex<String?>("ann")
        var configuration = CTAP2Authenticator.Configuration(aaguid: aaguid)
        configuration.currentUser = { seat.withLock { $0 } }
        let authenticator = CTAP2Authenticator(configuration: configuration, verifier: verifier, pins: pins, store: store)
        let device = TestPlatform(authenticator: authenticator)
        let (status, token) = try await device.tokenUsingPIN("1234", .two, rpID: "example.com")
        XCTAssertEqual(status, .success)
        await assertEqual(await device.getAssertion(token: (token!, .two)).0, .noCredentials, "ann's token works for ann")
        seat.withLock { $0 = "bob" }
        await assertEqual(await device.getAssertion(token: (token!, .two)).0, .pinAuthInvalid, "not for bob")
        seat.withLock { $0 = "ann" }
        await assertEqual(await device.getAssertion(token: (token!, .two)).0, .pinAuthInvalid, "and never again: it was discarded")
        let (_, again) = try await device.tokenUsingPIN("1234", .two, rpID: "example.com")
        await authenticator.userChanged()
        await assertEqual(await device.getAssertion(token: (again!, .two)).0, .pinAuthInvalid, "a user change forgets the token")
    }

    func testTokenByUserVerification() async throws {
        let (status, token) = try await platform.tokenUsingUV(.two, permissions: 0x03, rpID: "example.com")
        XCTAssertEqual(status, .success)
        let (made, response) = await platform.makeCredential(uv: false, token: (token!, .two))
        XCTAssertEqual(made, .success)
        XCTAssertEqual(response?[2]?.bytesValue?[32], 0x45)
        let upCalls = await verifier.upCalls
        XCTAssertEqual(upCalls, 0, "the face check counted as presence")
        await verifier.set(uv: .denied)
        try await assertEqual(try await platform.tokenUsingUV(.one, permissions: 0x02).0, .uvInvalid)
    }

    func testCredentialManagementListsAndDeletes() async throws {
        await assertEqual(await platform.makeCredential(userID: [1], rk: true).0, .success)
        await assertEqual(await platform.makeCredential(userID: [2], rk: true).0, .success)
        await assertEqual(await platform.makeCredential(rpID: "b.example", userID: [3], rk: true).0, .success)
        let (_, token) = try await platform.tokenUsingPIN("1234", .two, permissions: 0x04)
        func cm(_ sub: Int, _ params: CBORValue? = nil) async -> (CTAPStatus, CBORValue?) {
            var p: [CBORMapEntry] = [.init(1, .int(sub))]
            var message = [UInt8(sub)]
            if let params {
                p.append(.init(2, params))
                message += CBOREncoder.encode(params)
            }
            p += [.init(3, 2), .init(4, .bytes(PINUVAuthProtocol.two.authenticate(key: token!, message)))]
            return await platform.call(0x0a, .map(p))
        }
        let (metaStatus, meta) = await cm(1)
        XCTAssertEqual(metaStatus, .success)
        XCTAssertEqual(meta?[1], 3)
        XCTAssertEqual(meta?[2], 1)
        let (_, rp1) = await cm(2)
        XCTAssertEqual(rp1?[3]?["id"], "example.com")
        XCTAssertEqual(rp1?[5], 2)
        let (_, rp2) = await platform.call(0x0a, .map([.init(1, 3)]))
        XCTAssertEqual(rp2?[3]?["id"], "b.example")
        await assertEqual(await platform.call(0x0a, .map([.init(1, 3)])).0, .notAllowed)
        let (_, c1) = await cm(4, .map([.init(1, .bytes(sha256("example.com")))]))
        XCTAssertEqual(c1?[9], 2)
        XCTAssertEqual(c1?[6]?["id"], .bytes([1]))
        XCTAssertEqual(c1?[8]?[3], -7)
        let (_, c2) = await platform.call(0x0a, .map([.init(1, 5)]))
        XCTAssertEqual(c2?[6]?["id"], .bytes([2]))
        let id = try XCTUnwrap(c2?[7]?["id"]?.bytesValue)
        await assertEqual(await cm(6, .map([.init(2, .map([.init("id", .bytes(id)), .init("type", "public-key")]))])).0, .success)
        await assertEqual(await cm(1).1?[1], 2)
        // The deleted discoverable credential's handle no longer works either.
        await assertEqual(await platform.getAssertion(allow: [id]).0, .noCredentials)
        // Without a token: refused.
        await assertEqual(await platform.call(0x0a, .map([.init(1, 1)])).0, .puatRequired)
    }

    func testResetOnlyInTheFirstTenSeconds() async {
        let late = TestPlatform(authenticator: CTAP2Authenticator(
            configuration: .init(aaguid: aaguid), verifier: verifier, pins: pins, store: store,
            appeared: .now.advanced(by: .seconds(-11))))
        await assertEqual(await late.call(0x07).0, .notAllowed)
        await assertEqual(await platform.makeCredential(rk: true).0, .success)
        await assertEqual(await platform.call(0x07).0, .success)
        let remaining = await store.allResidentCredentials().count
        XCTAssertEqual(remaining, 0)
    }

    func testMalformedRequestsGetStatusCodes() async {
        await assertEqual(await platform.authenticator.handle([]), [CTAPStatus.invalidLength.rawValue])
        await assertEqual(await platform.authenticator.handle([0x55]), [CTAPStatus.invalidCommand.rawValue])
        await assertEqual(await platform.authenticator.handle([0x01, 0xff]), [CTAPStatus.invalidCBOR.rawValue])
        await assertEqual(await platform.authenticator.handle([0x01, 0x80]), [CTAPStatus.cborUnexpectedType.rawValue])
        await assertEqual(await platform.call(0x01, .map([])).0, .missingParameter)
        await assertEqual(await platform.call(0x01, .map([.init(1, "not bytes")])).0, .cborUnexpectedType)
        await assertEqual(await platform.call(0x02, .map([.init(1, "x"), .init(2, .bytes([1])), .init(5, .map([.init("rk", true)]))])).0,
                       .unsupportedOption)
        await assertEqual(await platform.call(0x06, .map([.init(1, 3), .init(2, 2)])).0, .invalidParameter)
        await assertEqual(await platform.call(0x06, .map([.init(1, 2), .init(2, 0x20)])).0, .invalidSubcommand)
    }

    /// ≥ 100,000 mutated CTAP2 requests: each is answered with one status byte (and CBOR on success).
    func testFuzzedRequestsAlwaysGetAStatus() async throws {
        let (_, made) = await platform.makeCredential(rk: true)
        let id = try AttestedCredential(made![2]!.bytesValue!).credentialID
        let seeds: [[UInt8]] = [
            [0x01] + CBOREncoder.encode(.map([
                .init(1, .bytes([UInt8](repeating: 1, count: 32))), .init(2, .map([.init("id", "example.com")])),
                .init(3, .map([.init("id", .bytes([1]))])), .init(4, .array([.map([.init("alg", -7), .init("type", "public-key")])])),
                .init(7, .map([.init("up", false)])),
            ])),
            [0x02] + CBOREncoder.encode(.map([
                .init(1, "example.com"), .init(2, .bytes([UInt8](repeating: 1, count: 32))),
                .init(3, .array([.map([.init("id", .bytes(id)), .init("type", "public-key")])])), .init(5, .map([.init("up", false)])),
            ])),
            [0x06] + CBOREncoder.encode(.map([.init(1, 2), .init(2, 9), .init(3, .map([.init(1, 2), .init(-1, 1)])), .init(9, 3)])),
            [0x0a] + CBOREncoder.encode(.map([.init(1, 4), .init(2, .map([.init(1, .bytes([1]))])), .init(3, 2), .init(4, .bytes([1]))])),
            [0x04], [0x08],
        ]
        await verifier.set(uv: .denied, up: .denied)
        var rng = SplitMix64(seed: 0xf1d0)
        var statuses = Set<UInt8>()
        for _ in 0..<100_000 {
            var input = seeds[Int(rng.next() % UInt64(seeds.count))]
            for _ in 0...Int(rng.next() % 3) {
                let at = Int(rng.next() % UInt64(input.count))
                switch rng.next() % 3 {
                case 0: input[at] = UInt8(truncatingIfNeeded: rng.next())
                case 1: if input.count > 1 { input.remove(at: at) }
                default: input.insert(UInt8(truncatingIfNeeded: rng.next()), at: at)
                }
            }
            let response = await platform.authenticator.handle(input)
            XCTAssertFalse(response.isEmpty)
            statuses.insert(response[0])
        }
        XCTAssertGreaterThan(statuses.count, 5, "the mutations reach many different checks")
    }
}

/// XCTAssertEqual for expressions that await.
func assertEqual<T: Equatable>(_ a: @autoclosure () async throws -> T, _ b: @autoclosure () async throws -> T,
                               _ message: String = "", file: StaticString = #filePath, line: UInt = #line) async rethrows {
    let x = try await a()
    let y = try await b()
    XCTAssertEqual(x, y, message, file: file, line: line)
}
