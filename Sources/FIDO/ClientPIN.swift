import Crypto
import Foundation

/// authenticatorClientPIN (CTAP 2.1 §6.5), authenticatorReset (§6.6), authenticatorSelection (§6.9)
/// and the pinUvAuthToken check every other command uses.
extension CTAP2Authenticator {
    enum PINSubcommand: Int {
        case getPINRetries = 1
        case getKeyAgreement = 2
        case setPIN = 3
        case changePIN = 4
        case getPINToken = 5
        case getTokenUsingUV = 6
        case getUVRetries = 7
        case getTokenUsingPIN = 9
    }

    func clientPIN(_ p: CBORValue) async throws -> CBORValue {
        let subcommand = PINSubcommand(rawValue: try p.requiredInt(2))
        // getPINRetries and getUVRetries need no protocol (§6.5.5.2).
        if subcommand == .getPINRetries {
            return .map([.init(3, .int(await pins.retries())), .init(4, false)])
        }
        if subcommand == .getUVRetries { return .map([.init(5, .int(await verifier.uvRetries()))]) }
        let pinProtocol = try authProtocol(p[1], required: true)!
        switch subcommand {
        case .getKeyAgreement:
            return .map([.init(1, coseKey(keyAgreement.publicKey.x963Representation, algorithm: -25))])
        case .getPINToken:
            guard p[9] == nil, p[10] == nil else { throw CTAPStatus.invalidParameter }
            return try await tokenUsingPIN(p, pinProtocol, permissions: PINToken.makeCredential | PINToken.getAssertion, rpID: nil)
        case .getTokenUsingPIN:
            let (permissions, rpID) = try requestedPermissions(p)
            return try await tokenUsingPIN(p, pinProtocol, permissions: permissions, rpID: rpID)
        case .getTokenUsingUV:
            let (permissions, rpID) = try requestedPermissions(p)
            let secret = try pinProtocol.sharedSecret(ours: keyAgreement, platformKey: try p.requiredMap(3))
            let method = try await check(.verify, rpID: rpID)
            issueToken(permissions: permissions, rpID: rpID, by: method, present: true, protocol: pinProtocol)
            return .map([.init(2, .bytes(try pinProtocol.encrypt(secret: secret, token.value)))])
        case .setPIN, .changePIN:
            // The PIN is the daemon's own (with its retries and lock): set it through biometricd.
            throw CTAPStatus.notAllowed
        default:
            throw CTAPStatus.invalidSubcommand
        }
    }

    private func requestedPermissions(_ p: CBORValue) throws(CTAPStatus) -> (UInt8, String?) {
        let permissions = try p.requiredInt(9)
        guard permissions > 0, permissions <= 0xff else { throw .invalidParameter }
        guard UInt8(permissions) & ~PINToken.supported == 0 else { throw .unauthorizedPermission }
        return (UInt8(permissions), try p.optionalText(10))
    }

    private func tokenUsingPIN(_ p: CBORValue, _ pinProtocol: PINUVAuthProtocol, permissions: UInt8,
                               rpID: String?) async throws -> CBORValue {
        let platformKey = try p.requiredMap(3)
        let pinHashEnc = try p.requiredBytes(6)
        guard await pins.isSet() else { throw CTAPStatus.pinNotSet }
        guard await pins.retries() > 0 else { throw CTAPStatus.pinBlocked }
        guard consecutivePINFailures < 3 else { throw CTAPStatus.pinAuthBlocked }
        let secret = try pinProtocol.sharedSecret(ours: keyAgreement, platformKey: platformKey)
        let pinHash = try pinProtocol.decrypt(secret: secret, pinHashEnc)
        guard pinHash.count == 16 else { throw CTAPStatus.invalidParameter }
        switch await pins.verify(pinHash: pinHash) {
        case .correct:
            consecutivePINFailures = 0
        case .wrong(let left):
            // A new key agreement after every failure (§6.5.5.7.1 step 6).
            keyAgreement = P256.KeyAgreement.PrivateKey()
            consecutivePINFailures += 1
            if left <= 0 { throw CTAPStatus.pinBlocked }
            throw consecutivePINFailures >= 3 ? CTAPStatus.pinAuthBlocked : CTAPStatus.pinInvalid
        case .blocked: throw CTAPStatus.pinBlocked
        case .notSet: throw CTAPStatus.pinNotSet
        }
        issueToken(permissions: permissions, rpID: rpID, by: .pin, present: false, protocol: pinProtocol)
        return .map([.init(2, .bytes(try pinProtocol.encrypt(secret: secret, token.value)))])
    }

    private func issueToken(permissions: UInt8, rpID: String?, by method: VerificationMethod, present: Bool,
                            protocol pinProtocol: PINUVAuthProtocol) {
        token.regenerate()
        token.permissions = permissions
        token.rpID = rpID
        token.userVerified = true
        token.userPresent = present
        token.verifiedBy = method
        token.protocolVersion = pinProtocol
        token.expires = .now.advanced(by: configuration.tokenLifetime)
        token.owner = configuration.currentUser()
    }

    func authProtocol(_ value: CBORValue?, required: Bool) throws(CTAPStatus) -> PINUVAuthProtocol? {
        guard let value else {
            if required { throw .missingParameter }
            return nil
        }
        guard let number = value.intValue else { throw .cborUnexpectedType }
        guard let pinProtocol = PINUVAuthProtocol(rawValue: number) else { throw .invalidParameter }
        return pinProtocol
    }

    /// Checks a pinUvAuthParam against the current token: protocol, signature over `message`,
    /// permission and RP binding, all decided here (§6.5.5.8 and each command's step).
    func useToken(_ param: [UInt8], protocolNumber: CBORValue?, message: [UInt8], permission: UInt8,
                  rpID: String?) throws(CTAPStatus) -> PINToken {
        let pinProtocol = try authProtocol(protocolNumber, required: true)!
        guard token.inUse, token.protocolVersion == pinProtocol,
              pinProtocol.verify(key: token.value, message, signature: param)
        else { throw .pinAuthInvalid }
        guard token.permissions & permission != 0, token.userVerified else { throw .pinAuthInvalid }
        // Another user's token (obtained before the seat's user changed) is no token at all.
        guard token.owner == configuration.currentUser() else {
            token.regenerate()
            throw .pinAuthInvalid
        }
        if let bound = token.rpID {
            guard let rpID, bound == rpID else { throw .pinAuthInvalid }
        } else if let rpID, permission & (PINToken.makeCredential | PINToken.getAssertion) != 0 {
            token.rpID = rpID
        }
        return token
    }

    // MARK: authenticatorReset, authenticatorSelection

    func reset() async throws -> CBORValue? {
        guard ContinuousClock.now - appeared <= configuration.resetWindow else { throw CTAPStatus.notAllowed }
        _ = try await check(.presence, rpID: nil)
        try await store.reset()
        token.regenerate()
        keyAgreement = P256.KeyAgreement.PrivateKey()
        consecutivePINFailures = 0
        return nil
    }

    /// The user the authenticator serves changed (another session came to the front of the seat):
    /// whatever the previous user obtained stops working — the token, the key agreement, pending
    /// continuations and the PIN failure count of this power-up.
    public func userChanged() {
        token.regenerate()
        keyAgreement = P256.KeyAgreement.PrivateKey()
        consecutivePINFailures = 0
        pendingAssertions = nil
        pendingRPs = nil
        pendingCredentials = nil
    }

    func selection() async throws -> CBORValue? {
        _ = try await check(.presence, rpID: nil)
        return nil
    }
}
