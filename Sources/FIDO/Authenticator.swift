import Crypto
import Foundation

/// The CTAP2 authenticator (CTAP 2.1 §6): one request in, one response out, as bytes — the
/// command byte and CBOR parameters in, the status byte and CBOR result out. User verification,
/// the PIN and persistence are seams, so this runs the same under uhid, the test socket and tests.
///
/// It is an actor because requests await the user; the CTAPHID layer admits one request at a
/// time, so reentrancy across those awaits does not interleave two requests. Cancelling the task
/// running `handle` cancels the user prompt (the verifier answers `.cancelled`).
public actor CTAP2Authenticator {
    public enum Command: UInt8 {
        case makeCredential = 0x01
        case getAssertion = 0x02
        case getInfo = 0x04
        case clientPIN = 0x06
        case reset = 0x07
        case getNextAssertion = 0x08
        case credentialManagement = 0x0a
        case selection = 0x0b
        /// The CTAP 2.1 pre-release command number, still sent by some platforms.
        case credentialManagementPreview = 0x41
    }

    public struct Configuration: Sendable {
        public var aaguid: [UInt8]
        /// authenticatorReset is allowed only this long after the device appeared (§6.6).
        public var resetWindow: Duration = .seconds(10)
        /// A pinUvAuthToken stays usable this long (§6.5.2.1 allows up to ten minutes).
        public var tokenLifetime: Duration = .seconds(600)
        /// getNextAssertion and the enumeration commands must follow within this time.
        public var continuationWindow: Duration = .seconds(30)
        /// Whom the authenticator serves now (the daemon: the active session's user on the seat,
        /// or the kiosk user). A pinUvAuthToken belongs to the user it was issued to and stops
        /// working for anyone else (SPEC §4 "PIN/UV tokens belong to the user who obtained them").
        public var currentUser: @Sendable () -> String? = { nil }
        public init(aaguid: [UInt8]) { self.aaguid = aaguid }
    }

    let configuration: Configuration
    let verifier: UserVerifier
    let pins: PINVerifier
    let store: CredentialStore
    let appeared: ContinuousClock.Instant
    let decoder = CBORDecoder()

    var keyAgreement = P256.KeyAgreement.PrivateKey()
    var token = PINToken()
    /// Consecutive wrong PINs since power-up; three give PIN_AUTH_BLOCKED until the next one.
    var consecutivePINFailures = 0
    var pendingAssertions: PendingAssertions?
    var pendingRPs: PendingList<StoredCredential>?
    var pendingCredentials: PendingList<StoredCredential>?
    /// True while a request waits for the user (the transport then sends KEEPALIVE UPNEEDED).
    public private(set) var isWaitingForUser = false

    public init(configuration: Configuration, verifier: UserVerifier, pins: PINVerifier, store: CredentialStore,
                appeared: ContinuousClock.Instant = .now) {
        precondition(configuration.aaguid.count == 16, "an AAGUID is 16 bytes")
        self.configuration = configuration
        self.verifier = verifier
        self.pins = pins
        self.store = store
        self.appeared = appeared
    }

    /// Runs one CTAP2 request (`[command] + CBOR`) and returns `[status] + CBOR`.
    public func handle(_ request: [UInt8]) async -> [UInt8] {
        guard let first = request.first else { return [CTAPStatus.invalidLength.rawValue] }
        let command = Command(rawValue: first)
        // Continuation state lives only until a different command arrives (§6.3, §6.8).
        if command != .getNextAssertion { pendingAssertions = nil }
        if command != .credentialManagement && command != .credentialManagementPreview {
            pendingRPs = nil
            pendingCredentials = nil
        }
        do {
            let parameters = try self.parameters(Array(request.dropFirst()))
            let result: CBORValue?
            switch command {
            case .getInfo?: result = await getInfo()
            case .makeCredential?: result = try await makeCredential(parameters)
            case .getAssertion?: result = try await getAssertion(parameters)
            case .getNextAssertion?: result = try await getNextAssertion()
            case .clientPIN?: result = try await clientPIN(parameters)
            case .credentialManagement?, .credentialManagementPreview?: result = try await credentialManagement(parameters)
            case .reset?: result = try await reset()
            case .selection?: result = try await selection()
            case nil: throw CTAPStatus.invalidCommand
            }
            return [CTAPStatus.success.rawValue] + (result.map(CBOREncoder.encode) ?? [])
        } catch let status as CTAPStatus {
            return [status.rawValue]
        } catch let error as CBORError {
            return [error.ctapStatus.rawValue]
        } catch {
            return [CTAPStatus.other.rawValue]
        }
    }

    /// The request's CBOR map (empty when the command has no parameters).
    private func parameters(_ bytes: [UInt8]) throws -> CBORValue {
        if bytes.isEmpty { return .map([]) }
        let value = try decoder.decode(bytes)
        guard case .map = value else { throw CTAPStatus.cborUnexpectedType }
        return value
    }

    // MARK: authenticatorGetInfo

    func getInfo() async -> CBORValue {
        let pinSet = await pins.isSet()
        let uvConfigured = await verifier.isConfigured()
        return .map([
            .init(0x01, .array(["FIDO_2_0", "FIDO_2_1"])),
            .init(0x02, .array(["credProtect", "hmac-secret"])),
            .init(0x03, .bytes(configuration.aaguid)),
            .init(0x04, .map([
                .init("rk", true), .init("up", true), .init("uv", .bool(uvConfigured)), .init("clientPin", .bool(pinSet)),
                .init("credMgmt", true), .init("pinUvAuthToken", true), .init("makeCredUvNotRqd", true),
            ])),
            .init(0x05, .int(CTAPHIDState.maxMessageSize)),
            .init(0x06, .array([2, 1])),
            .init(0x07, .int(Self.maxCredentialsInList)),
            .init(0x08, .int(KeyHandle.length)),
            .init(0x09, .array(["usb"])),
            .init(0x0a, .array([.map([.init("alg", -7), .init("type", "public-key")])])),
            .init(0x0e, 0x0001_0000),
        ])
    }

    static let maxCredentialsInList = 8

    // MARK: User checks

    /// Asks the verifier and maps its answer onto CTAP statuses in one place.
    func check(_ kind: UserCheck, rpID: String?) async throws(CTAPStatus) -> VerificationMethod {
        isWaitingForUser = true
        defer { isWaitingForUser = false }
        let outcome = kind == .verify ? await verifier.verifyUser(rpID: rpID) : await verifier.confirmPresence(rpID: rpID)
        if Task.isCancelled { throw .keepaliveCancel }
        switch outcome {
        case .verified(let method): return method
        case .present:
            guard kind == .presence else { throw .uvInvalid }
            return .none
        case .denied: throw kind == .verify ? .uvInvalid : .operationDenied
        case .cancelled: throw .keepaliveCancel
        case .timedOut: throw .userActionTimeout
        case .blocked: throw kind == .verify ? .uvBlocked : .operationDenied
        }
    }

    enum UserCheck { case verify, presence }

    /// A zero-length pinUvAuthParam: the platform asks the user to pick this authenticator (§6.1.2 step 1).
    func answerSelectionProbe(rpID: String?) async throws -> Never {
        _ = try await check(.presence, rpID: rpID)
        throw await pins.isSet() ? CTAPStatus.pinInvalid : CTAPStatus.pinNotSet
    }
}

/// The pinUvAuthToken and its state (§6.5.2.1).
struct PINToken: Sendable {
    static let makeCredential: UInt8 = 0x01
    static let getAssertion: UInt8 = 0x02
    static let credentialManagement: UInt8 = 0x04
    static let supported: UInt8 = 0x07

    var value: [UInt8] = randomBytes(32)
    var permissions: UInt8 = 0
    var rpID: String?
    var expires: ContinuousClock.Instant?
    var userVerified = false
    var userPresent = false
    var verifiedBy: VerificationMethod = .none
    var protocolVersion: PINUVAuthProtocol = .two
    /// The user it was issued to (`Configuration.currentUser` then).
    var owner: String?

    var inUse: Bool {
        guard let expires else { return false }
        return ContinuousClock.now < expires
    }

    /// A fresh token; the old one stops working (§6.5.5.7 "resetPinUvAuthToken").
    mutating func regenerate() { self = PINToken() }
}

struct PendingAssertions: Sendable {
    var credentials: [StoredCredential]
    var clientDataHash: [UInt8]
    var rpIDHash: [UInt8]
    var flags: UInt8
    var hmac: HMACSecretRequest?
    var expires: ContinuousClock.Instant
}

struct PendingList<Element: Sendable>: Sendable {
    var items: [Element]
    var expires: ContinuousClock.Instant
}
