import BiometricFIDO
import BiometricStore
import Foundation

/// The authenticator's `CredentialStore` over biometricd's store: everything is the current FIDO
/// user's (`FIDOUserSource`) — their wrapping key, discoverable credentials and counters — so one
/// seat user's key handles and passkeys are not another's. Each credential is stored as the
/// authenticator describes it (JSON), sealed under the store key; counters are committed before
/// this returns, so before the authenticator signs.
struct DaemonCredentialStore: CredentialStore {
    let store: Store
    let users: FIDOUserSource
    /// Discoverable credentials one user may hold.
    let capacity: Int

    enum Failure: Error, CustomStringConvertible {
        case noUser
        var description: String { "no FIDO user now: no active session on seat0, and no fido_user configured" }
    }

    private func user() throws -> String {
        guard let user = users.current() else { throw Failure.noUser }
        return user.name
    }

    static func methodName(_ method: VerificationMethod) -> String {
        switch method {
        case .none: "none"
        case .face: "face"
        case .finger: "finger"
        case .pin: "pin"
        }
    }

    static func decode(_ record: FIDOCredentialRecord) throws -> StoredCredential {
        try JSONDecoder().decode(StoredCredential.self, from: record.payload)
    }

    func wrappingKey() async throws -> [UInt8] { Array(try store.fido.wrappingKey(user: try user())) }

    func residentCredentials(rpIDHash: [UInt8]) async throws -> [StoredCredential] {
        try store.fido.credentials(user: try user(), rpIDHash: Data(rpIDHash)).map(Self.decode)
    }

    func allResidentCredentials() async throws -> [StoredCredential] {
        try store.fido.credentials(user: try user()).map(Self.decode)
    }

    func save(_ credential: StoredCredential) async throws {
        do {
            try store.fido.saveCredential(user: try user(), id: Data(credential.id), rpID: credential.rpID, userHandle: Data(credential.userID),
                                         verifiedBy: Self.methodName(credential.verifiedBy), payload: try JSONEncoder().encode(credential),
                                         quota: Quota(name: "fido_credentials", max: capacity))
        } catch StoreError.quotaExceeded {
            throw CredentialStoreError.full
        }
    }

    func update(_ credential: StoredCredential) async throws {
        try store.fido.updateCredential(user: try user(), id: Data(credential.id), payload: try JSONEncoder().encode(credential))
    }

    func delete(credentialID: [UInt8]) async throws {
        try store.fido.deleteCredential(user: try user(), id: Data(credentialID))
    }

    func nextSignatureCount(credentialID: [UInt8]) async throws -> UInt32 {
        try store.fido.nextSignatureCount(user: try user(), credentialID: Data(credentialID))
    }

    func reset() async throws { try store.fido.reset(user: try user()) }
}

/// The daemon PIN as the authenticator's `PINVerifier`: the CTAP form of the current FIDO user's
/// PIN (`CTAPPINHash`), its retries and lock the daemon PIN's own (`AuthService.verifyCTAPPIN`).
/// A PIN set before biometricd kept the CTAP form reads as not set until it is set again.
struct DaemonPINVerifier: PINVerifier {
    let auth: AuthService
    let users: FIDOUserSource

    func isSet() async -> Bool {
        guard let user = users.current() else { return false }
        return ((try? auth.store.pins.ctapHash(user: user.name)) ?? nil) != nil
    }

    func retries() async -> Int {
        guard let user = users.current(), let state = (try? auth.store.pins.get(user: user.name)) ?? nil else { return 0 }
        return state.retriesLeft(maxRetries: auth.pinMaxRetries).map { min($0, 255) } ?? CTAPPINHash.unlimitedRetries
    }

    func verify(pinHash: [UInt8]) async -> PINCheck {
        guard let user = users.current() else { return .notSet }
        do {
            return try await auth.verifyCTAPPIN(user: user.name, pinHash: pinHash, caller: user.uid)
        } catch {
            // A store that cannot be read fails closed.
            return .blocked
        }
    }
}
