import Crypto
import Foundation

/// How a user was verified; recorded with each credential (issue 24's seed AAIDs: biometric or PIN).
public enum VerificationMethod: UInt8, Sendable, Codable {
    case none = 0
    case face = 1
    case finger = 2
    case pin = 3
}

/// The answer of a user-verification or user-presence request.
public enum UserCheckOutcome: Sendable, Equatable {
    /// The user was verified by this method (which also proves presence: one prompt, not two).
    case verified(VerificationMethod)
    /// Presence only, when presence was all that was asked.
    case present
    /// The wrong person, or no one.
    case denied
    /// The host sent CTAPHID_CANCEL (or the task was cancelled).
    case cancelled
    case timedOut
    /// Lockout or policy refuses to try.
    case blocked
}

/// The daemon's user verification, plugged in later (face or finger with liveness, by policy);
/// tests plug in a fake. Implementations honour task cancellation by returning `.cancelled`.
public protocol UserVerifier: Sendable {
    /// A live match of the session's user (CTAP "uv"); `rpID` is shown in the prompt when known.
    func verifyUser(rpID: String?) async -> UserCheckOutcome
    /// A user-presence test (CTAP "up"); answering with `.verified` is fine too.
    func confirmPresence(rpID: String?) async -> UserCheckOutcome
    /// Built-in UV attempts left before UV is blocked (clientPIN getUVRetries).
    func uvRetries() async -> Int
    /// Whether built-in UV can verify anyone now (getInfo's `uv`: true, or false = "capable but
    /// not configured", so platforms use the PIN instead). The daemon: the user has a face or
    /// finger enrolled and in their policy.
    func isConfigured() async -> Bool
}

extension UserVerifier {
    public func isConfigured() async -> Bool { true }
}

/// The outcome of one PIN attempt.
public enum PINCheck: Sendable, Equatable {
    case correct
    /// Wrong, with the retries left afterwards (0 means now blocked).
    case wrong(retriesLeft: Int)
    case blocked
    case notSet
}

/// The daemon's PIN, as CTAP sees it: the platform sends LEFT(SHA-256(PIN), 16), never the PIN, so
/// the verifier checks that hash. It owns the retry counter and the block (persisted by the daemon).
public protocol PINVerifier: Sendable {
    func isSet() async -> Bool
    func retries() async -> Int
    /// Checks a PIN hash in constant time, counting a failure before it answers.
    func verify(pinHash: [UInt8]) async -> PINCheck
}

/// A discoverable (resident) credential, or the counter record of a non-discoverable one.
public struct StoredCredential: Sendable, Equatable, Codable {
    public var id: [UInt8]
    public var rpID: String
    public var rpName: String?
    public var userID: [UInt8]
    public var userName: String?
    public var userDisplayName: String?
    /// The P-256 private key, raw (32 bytes). The store seals it at rest.
    public var privateKey: [UInt8]
    public var credProtect: UInt8
    /// Made with the hmac-secret extension (its secrets derive from the private key).
    public var hmacSecret: Bool
    public var verifiedBy: VerificationMethod
    public var created: Date

    public var rpIDHash: [UInt8] { Array(SHA256.hash(data: Array(rpID.utf8))) }

    public init(id: [UInt8], rpID: String, rpName: String?, userID: [UInt8], userName: String?, userDisplayName: String?,
                privateKey: [UInt8], credProtect: UInt8, hmacSecret: Bool = false, verifiedBy: VerificationMethod, created: Date) {
        self.id = id
        self.rpID = rpID
        self.rpName = rpName
        self.userID = userID
        self.userName = userName
        self.userDisplayName = userDisplayName
        self.privateKey = privateKey
        self.credProtect = credProtect
        self.hmacSecret = hmacSecret
        self.verifiedBy = verifiedBy
        self.created = created
    }
}

public enum CredentialStoreError: Error, Sendable, Equatable {
    case full
    case failed(String)
}

/// Where discoverable credentials, signature counters and the key-handle wrapping key live. The
/// daemon's implementation seals them in its store; `InMemoryCredentialStore` serves tests.
public protocol CredentialStore: Sendable {
    /// The AES-256 key (32 bytes) that wraps credentials' private keys into key handles.
    func wrappingKey() async throws -> [UInt8]
    func residentCredentials(rpIDHash: [UInt8]) async throws -> [StoredCredential]
    func allResidentCredentials() async throws -> [StoredCredential]
    /// Saves a discoverable credential, replacing any of the same RP and user ID.
    func save(_ credential: StoredCredential) async throws
    func update(_ credential: StoredCredential) async throws
    func delete(credentialID: [UInt8]) async throws
    /// Increments and persists the credential's signature counter, returning the new value; the
    /// authenticator signs only after this returns.
    func nextSignatureCount(credentialID: [UInt8]) async throws -> UInt32
    var capacity: Int { get }
    /// Forgets every credential and counter and replaces the wrapping key (authenticatorReset), so
    /// old key handles stop working too.
    func reset() async throws
}

/// A credential store in memory, for tests and the test authenticator.
public actor InMemoryCredentialStore: CredentialStore {
    private var key = randomBytes(32)
    private var credentials: [StoredCredential] = []
    private var counters: [[UInt8]: UInt32] = [:]
    public nonisolated let capacity: Int

    public init(capacity: Int = 64) { self.capacity = capacity }

    public func wrappingKey() -> [UInt8] { key }

    public func residentCredentials(rpIDHash: [UInt8]) -> [StoredCredential] {
        credentials.filter { $0.rpIDHash == rpIDHash }
    }

    public func allResidentCredentials() -> [StoredCredential] { credentials }

    public func save(_ credential: StoredCredential) throws {
        credentials.removeAll { $0.rpID == credential.rpID && $0.userID == credential.userID }
        guard credentials.count < capacity else { throw CredentialStoreError.full }
        credentials.append(credential)
    }

    public func update(_ credential: StoredCredential) {
        if let i = credentials.firstIndex(where: { $0.id == credential.id }) { credentials[i] = credential }
    }

    public func delete(credentialID: [UInt8]) {
        credentials.removeAll { $0.id == credentialID }
        counters[Array(SHA256.hash(data: credentialID))] = nil
    }

    public func nextSignatureCount(credentialID: [UInt8]) -> UInt32 {
        let slot = Array(SHA256.hash(data: credentialID))
        let next = (counters[slot] ?? 0) &+ 1
        counters[slot] = next
        return next
    }

    public func reset() {
        credentials = []
        counters = [:]
        key = randomBytes(32)
    }
}

/// A PIN verifier in memory, for tests and the test authenticator: it keeps LEFT(SHA-256(PIN), 16),
/// counts retries down from `maxRetries` on each wrong PIN and blocks at zero.
public actor InMemoryPINVerifier: PINVerifier {
    private var pinHash: [UInt8]?
    private var remaining: Int
    public nonisolated let maxRetries: Int

    public init(pin: String?, maxRetries: Int = 8) {
        self.maxRetries = maxRetries
        remaining = maxRetries
        pinHash = pin.map { Array(SHA256.hash(data: Array($0.utf8)).prefix(16)) }
    }

    public func isSet() -> Bool { pinHash != nil }
    public func retries() -> Int { remaining }

    public func verify(pinHash candidate: [UInt8]) -> PINCheck {
        guard let pinHash else { return .notSet }
        guard remaining > 0 else { return .blocked }
        // Counted first, restored on success: a crash mid-check cannot hand out a free guess.
        remaining -= 1
        guard candidate.count == pinHash.count,
              zip(candidate, pinHash).reduce(UInt8(0), { $0 | ($1.0 ^ $1.1) }) == 0
        else { return .wrong(retriesLeft: remaining) }
        remaining = maxRetries
        return .correct
    }
}
