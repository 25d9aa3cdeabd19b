import Crypto
import Foundation

/// authenticatorMakeCredential, authenticatorGetAssertion and authenticatorGetNextAssertion
/// (CTAP 2.1 §6.1–6.3).
extension CTAP2Authenticator {
    static let flagUP: UInt8 = 0x01
    static let flagUV: UInt8 = 0x04
    static let flagAT: UInt8 = 0x40
    static let flagED: UInt8 = 0x80

    func makeCredential(_ p: CBORValue) async throws -> CBORValue {
        let clientDataHash = try p.requiredBytes(1)
        let rp = try p.requiredMap(2)
        let user = try p.requiredMap(3)
        let algorithms = try p.requiredArray(4)
        let rpID = try rp.requiredText("id")
        let userID = try user.requiredBytes("id")
        guard userID.count <= 64 else { throw CTAPStatus.invalidParameter }
        let pinUvAuthParam = try p.optionalBytes(8)
        if pinUvAuthParam?.isEmpty == true { try await answerSelectionProbe(rpID: rpID) }
        // Only ES256; each entry is still checked for shape.
        var es256 = false
        for entry in algorithms {
            guard case .map = entry else { throw CTAPStatus.cborUnexpectedType }
            let alg = try entry.requiredInt("alg")
            let type = try entry.requiredText("type")
            if alg == -7 && type == "public-key" { es256 = true }
        }
        guard es256 else { throw CTAPStatus.unsupportedAlgorithm }
        let options = try p.optionalMap(7)
        let rk = try options?.optionalBool("rk") ?? false
        if try options?.optionalBool("up") == false { throw CTAPStatus.invalidOption }
        let uvOption = try options?.optionalBool("uv") ?? false
        let extensions = try p.optionalMap(6)
        let credProtect = try extensions?.optionalInt("credProtect")
        if let credProtect, !(1...3).contains(credProtect) { throw CTAPStatus.invalidParameter }
        let hmacSecret = try extensions?.optionalBool("hmac-secret") ?? false
        if p[0x0a] != nil { throw CTAPStatus.invalidParameter }  // no enterprise attestation
        let rpIDHash = sha256(rpID)

        var verifiedBy: VerificationMethod?
        var present = false
        if let pinUvAuthParam {
            let used = try useToken(pinUvAuthParam, protocolNumber: p[9], message: clientDataHash,
                                    permission: PINToken.makeCredential, rpID: rpID)
            verifiedBy = used.verifiedBy
            present = used.userPresent
        } else if uvOption {
            verifiedBy = try await check(.verify, rpID: rpID)
            present = true
        } else if rk {
            // makeCredUvNotRqd covers non-discoverable credentials only.
            throw CTAPStatus.puatRequired
        }

        if let excludeList = try p.optionalArray(5) {
            for descriptor in excludeList {
                guard let id = try descriptor.credentialID(),
                      let found = await ownCredential(id: id, rpID: rpID, rpIDHash: rpIDHash)
                else { continue }
                if found.credProtect == 3 && verifiedBy == nil { continue }
                if !present { _ = try await check(.presence, rpID: rpID) }
                throw CTAPStatus.credentialExcluded
            }
        }
        if !present { _ = try await check(.presence, rpID: rpID) }
        if pinUvAuthParam != nil { token.userPresent = false }

        let key = P256.Signing.PrivateKey()
        let protection = UInt8(credProtect ?? 1)
        let handle = try KeyHandle(privateKey: Array(key.rawRepresentation), discoverable: rk, credProtect: protection,
                                   hmacSecret: hmacSecret)
            .seal(key: SymmetricKey(data: try await store.wrappingKey()), rpIDHash: rpIDHash)
        if rk {
            do {
                try await store.save(StoredCredential(
                    id: handle, rpID: rpID, rpName: try rp.optionalText("name"), userID: userID,
                    userName: try user.optionalText("name"), userDisplayName: try user.optionalText("displayName"),
                    privateKey: Array(key.rawRepresentation), credProtect: protection, hmacSecret: hmacSecret,
                    verifiedBy: verifiedBy ?? .none, created: Date()))
            } catch CredentialStoreError.full {
                throw CTAPStatus.keyStoreFull
            }
        }
        var flags = Self.flagUP | Self.flagAT
        if verifiedBy != nil { flags |= Self.flagUV }
        var outputs: [CBORMapEntry] = []
        if let credProtect { outputs.append(.init("credProtect", .int(credProtect))) }
        if hmacSecret { outputs.append(.init("hmac-secret", true)) }
        var extensionOutput: [UInt8] = []
        if !outputs.isEmpty {
            flags |= Self.flagED
            extensionOutput = CBOREncoder.encode(.map(outputs))
        }
        let authData = rpIDHash + [flags] + [0, 0, 0, 0] + configuration.aaguid
            + [UInt8(handle.count >> 8), UInt8(handle.count & 0xff)] + handle
            + CBOREncoder.encode(coseKey(key.publicKey.x963Representation, algorithm: -7)) + extensionOutput
        // Packed attestation by a one-time key with its own self-signed certificate (see
        // PackedAttestation: no cross-RP link, no trust claimed; libfido2's fido_cred_verify needs x5c).
        let attestation = try PackedAttestation(aaguid: configuration.aaguid, authenticatorData: authData,
                                                clientDataHash: clientDataHash)
        return .map([
            .init(1, "packed"), .init(2, .bytes(authData)), .init(3, attestation.statement),
        ])
    }

    func getAssertion(_ p: CBORValue) async throws -> CBORValue {
        let rpID = try p.requiredText(1)
        let clientDataHash = try p.requiredBytes(2)
        let allowList = try p.optionalArray(3)
        let options = try p.optionalMap(5)
        if options?["rk"] != nil { throw CTAPStatus.unsupportedOption }
        let up = try options?.optionalBool("up") ?? true
        let uvOption = try options?.optionalBool("uv") ?? false
        let hmacRequest = try hmacSecretRequest(try p.optionalMap(4))
        // Derived secrets only with the user present: a silent probe must not unlock a disk.
        if hmacRequest != nil && !up { throw CTAPStatus.unsupportedOption }
        let pinUvAuthParam = try p.optionalBytes(6)
        if pinUvAuthParam?.isEmpty == true { try await answerSelectionProbe(rpID: rpID) }
        let rpIDHash = sha256(rpID)

        var verifiedBy: VerificationMethod?
        var present = false
        if let pinUvAuthParam {
            let used = try useToken(pinUvAuthParam, protocolNumber: p[7], message: clientDataHash,
                                    permission: PINToken.getAssertion, rpID: rpID)
            verifiedBy = used.verifiedBy
            present = used.userPresent
        } else if uvOption {
            verifiedBy = try await check(.verify, rpID: rpID)
            present = true
        }

        var candidates: [StoredCredential] = []
        if let allowList, !allowList.isEmpty {
            for descriptor in allowList {
                guard let id = try descriptor.credentialID(),
                      let found = await ownCredential(id: id, rpID: rpID, rpIDHash: rpIDHash)
                else { continue }
                // credProtect level 3 needs UV even with the credential ID in hand.
                if found.credProtect == 3 && verifiedBy == nil { continue }
                candidates = [found]
                break
            }
        } else {
            candidates = try await store.residentCredentials(rpIDHash: rpIDHash)
                .filter { $0.credProtect == 1 || verifiedBy != nil }
                .sorted { $0.created > $1.created }
        }
        guard !candidates.isEmpty else { throw CTAPStatus.noCredentials }
        if up && !present { _ = try await check(.presence, rpID: rpID) }
        if pinUvAuthParam != nil && up { token.userPresent = false }

        var flags: UInt8 = up ? Self.flagUP : 0
        if verifiedBy != nil { flags |= Self.flagUV }
        let discoverable = allowList?.isEmpty ?? true
        var response = try await assertion(candidates[0], clientDataHash: clientDataHash, flags: flags,
                                           includeUser: discoverable, userVerified: verifiedBy != nil, hmac: hmacRequest)
        if discoverable && candidates.count > 1 {
            response.append(.init(5, .int(candidates.count)))
            pendingAssertions = PendingAssertions(
                credentials: Array(candidates.dropFirst()), clientDataHash: clientDataHash, rpIDHash: rpIDHash,
                flags: flags, hmac: hmacRequest, expires: .now.advanced(by: configuration.continuationWindow))
        }
        return .map(response)
    }

    func getNextAssertion() async throws -> CBORValue {
        guard var pending = pendingAssertions, ContinuousClock.now < pending.expires, !pending.credentials.isEmpty else {
            pendingAssertions = nil
            throw CTAPStatus.notAllowed
        }
        let next = pending.credentials.removeFirst()
        pendingAssertions = pending.credentials.isEmpty ? nil : pending
        return .map(try await assertion(next, clientDataHash: pending.clientDataHash, flags: pending.flags,
                                        includeUser: true, userVerified: pending.flags & Self.flagUV != 0, hmac: pending.hmac))
    }

    /// One assertion: the counter is incremented and persisted before the signature is made.
    private func assertion(_ credential: StoredCredential, clientDataHash: [UInt8], flags: UInt8,
                           includeUser: Bool, userVerified: Bool, hmac: HMACSecretRequest?) async throws -> [CBORMapEntry] {
        var flags = flags
        var extensions: [UInt8] = []
        if let hmac, credential.hmacSecret {
            flags |= Self.flagED
            extensions = CBOREncoder.encode(.map([
                .init("hmac-secret", .bytes(try hmac.output(privateKey: credential.privateKey, userVerified: userVerified))),
            ]))
        }
        let count = try await store.nextSignatureCount(credentialID: credential.id)
        let authData = credential.rpIDHash + [flags] + CTAPHIDState.bigEndian(count) + extensions
        let key = try P256.Signing.PrivateKey(rawRepresentation: credential.privateKey)
        let signature = try key.signature(for: authData + clientDataHash).derRepresentation
        var entries: [CBORMapEntry] = [
            .init(1, .map([.init("id", .bytes(credential.id)), .init("type", "public-key")])),
            .init(2, .bytes(authData)),
            .init(3, .bytes(Array(signature))),
        ]
        if includeUser && !credential.userID.isEmpty {
            // Names identify the user: only after UV (§6.2.2 step 11).
            var user: [CBORMapEntry] = [.init("id", .bytes(credential.userID))]
            if userVerified, let name = credential.userName { user.append(.init("name", .text(name))) }
            if userVerified, let name = credential.userDisplayName { user.append(.init("displayName", .text(name))) }
            entries.append(.init(4, .map(user)))
        }
        return entries
    }

    /// The credential behind an ID we issued for this RP, or nil. A discoverable credential's
    /// handle counts only while the store still holds it.
    func ownCredential(id: [UInt8], rpID: String, rpIDHash: [UInt8]) async -> StoredCredential? {
        guard let key = try? await store.wrappingKey(),
              let handle = KeyHandle.open(id, key: SymmetricKey(data: key), rpIDHash: rpIDHash) else { return nil }
        if handle.discoverable {
            return (try? await store.residentCredentials(rpIDHash: rpIDHash))?.first { $0.id == id }
        }
        return StoredCredential(id: id, rpID: rpID, rpName: nil, userID: [], userName: nil, userDisplayName: nil,
                                privateKey: handle.privateKey, credProtect: handle.credProtect, hmacSecret: handle.hmacSecret,
                                verifiedBy: .none,
                                created: .distantPast)
    }
}

func sha256(_ text: String) -> [UInt8] { Array(SHA256.hash(data: Array(text.utf8))) }

/// The hmac-secret extension's getAssertion input (CTAP 2.1 §12.5), checked and decrypted.
struct HMACSecretRequest: Sendable {
    var secret: [UInt8]
    var pinProtocol: PINUVAuthProtocol
    var salts: [[UInt8]]

    /// HMAC-SHA-256(CredRandom, salt) for each salt, encrypted to the platform. CredRandom is
    /// derived from the credential's private key, one for assertions with UV and one without, so
    /// nothing more is stored per credential.
    func output(privateKey: [UInt8], userVerified: Bool) throws(CTAPStatus) -> [UInt8] {
        let label = Array("biometricd hmac-secret CredRandom".utf8) + [userVerified ? 1 : 0]
        let credRandom = SymmetricKey(data: Array(HMAC<SHA256>.authenticationCode(for: label, using: SymmetricKey(data: privateKey))))
        let outputs = salts.flatMap { Array(HMAC<SHA256>.authenticationCode(for: $0, using: credRandom)) }
        return try pinProtocol.encrypt(secret: secret, outputs)
    }
}

extension CTAP2Authenticator {
    func hmacSecretRequest(_ extensions: CBORValue?) throws(CTAPStatus) -> HMACSecretRequest? {
        guard let input = extensions?["hmac-secret"] else { return nil }
        guard case .map = input else { throw .cborUnexpectedType }
        let platformKey = try input.requiredMap(1)
        let saltEnc = try input.requiredBytes(2)
        let saltAuth = try input.requiredBytes(3)
        let pinProtocol = try authProtocol(input[4], required: false) ?? .one
        let secret = try pinProtocol.sharedSecret(ours: keyAgreement, platformKey: platformKey)
        guard pinProtocol.verify(key: secret, saltEnc, signature: saltAuth) else { throw .pinAuthInvalid }
        let salts = try pinProtocol.decrypt(secret: secret, saltEnc)
        guard salts.count == 32 || salts.count == 64 else { throw .invalidLength }
        return HMACSecretRequest(secret: secret, pinProtocol: pinProtocol,
                                 salts: salts.count == 32 ? [salts] : [Array(salts[..<32]), Array(salts[32...])])
    }
}

// MARK: Typed parameter access: missing is CTAP2_ERR_MISSING_PARAMETER, the wrong type
// CTAP2_ERR_CBOR_UNEXPECTED_TYPE, decided here once.

extension CBORValue {
    func required(_ key: CBORValue) throws(CTAPStatus) -> CBORValue {
        guard let value = self[key] else { throw .missingParameter }
        return value
    }

    func requiredBytes(_ key: CBORValue) throws(CTAPStatus) -> [UInt8] {
        guard let v = try required(key).bytesValue else { throw .cborUnexpectedType }
        return v
    }

    func requiredText(_ key: CBORValue) throws(CTAPStatus) -> String {
        guard let v = try required(key).textValue else { throw .cborUnexpectedType }
        return v
    }

    func requiredInt(_ key: CBORValue) throws(CTAPStatus) -> Int {
        guard let v = try required(key).intValue else { throw .cborUnexpectedType }
        return v
    }

    func requiredArray(_ key: CBORValue) throws(CTAPStatus) -> [CBORValue] {
        guard let v = try required(key).arrayValue else { throw .cborUnexpectedType }
        return v
    }

    func requiredMap(_ key: CBORValue) throws(CTAPStatus) -> CBORValue {
        let v = try required(key)
        guard case .map = v else { throw .cborUnexpectedType }
        return v
    }

    func optionalBytes(_ key: CBORValue) throws(CTAPStatus) -> [UInt8]? {
        guard self[key] != nil else { return nil }
        return try requiredBytes(key)
    }

    func optionalText(_ key: CBORValue) throws(CTAPStatus) -> String? {
        guard self[key] != nil else { return nil }
        return try requiredText(key)
    }

    func optionalInt(_ key: CBORValue) throws(CTAPStatus) -> Int? {
        guard self[key] != nil else { return nil }
        return try requiredInt(key)
    }

    func optionalBool(_ key: CBORValue) throws(CTAPStatus) -> Bool? {
        guard let v = self[key] else { return nil }
        guard let b = v.boolValue else { throw .cborUnexpectedType }
        return b
    }

    func optionalArray(_ key: CBORValue) throws(CTAPStatus) -> [CBORValue]? {
        guard self[key] != nil else { return nil }
        return try requiredArray(key)
    }

    func optionalMap(_ key: CBORValue) throws(CTAPStatus) -> CBORValue? {
        guard self[key] != nil else { return nil }
        return try requiredMap(key)
    }

    /// The ID of a PublicKeyCredentialDescriptor, nil when its type is not "public-key".
    func credentialID() throws(CTAPStatus) -> [UInt8]? {
        guard case .map = self else { throw .cborUnexpectedType }
        let id = try requiredBytes("id")
        return try requiredText("type") == "public-key" ? id : nil
    }
}
