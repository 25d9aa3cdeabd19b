import BiometricVocabulary
import Foundation

extension Method {
    public static let pinSet = "pin.set"
    public static let pinVerify = "pin.verify"
    public static let pinReset = "pin.reset"
    public static let authPolicyGet = "auth.policy.get"
    public static let authPolicySet = "auth.policy.set"
    public static let authAuthenticate = "auth.authenticate"
    public static let authStatus = "auth.status"
    public static let keyRegister = "key.register"
    public static let keySign = "key.sign"
    public static let keyList = "key.list"
    public static let keyDeregister = "key.deregister"
    /// A user starts proving their account password (the first factor, issue 20): a nonce.
    public static let authPasswordBegin = "auth.password.begin"
    /// The root password helper reports that the user proved it for that nonce (root only).
    public static let authPasswordProven = "auth.password.proven"
    /// Clears a user's biometric lockout or a camera's 1:N lockout (admin; the PAM module after a
    /// password login, as root).
    public static let authLockoutClear = "auth.lockout.clear"
}

public struct LockoutClearParams: RPCParams, Encodable {
    public static let fields = wireNames(CodingKeys.self)
    enum CodingKeys: String, CodingKey, CaseIterable { case user, camera }
    public var user: String?
    public var camera: String?
    public init(user: String? = nil, camera: String? = nil) {
        self.user = user
        self.camera = camera
    }
    public func validate() throws(RPCError) {
        guard (user == nil) != (camera == nil) else {
            throw .invalidParams(field: user == nil ? "user" : "camera", "give exactly one of 'user' and 'camera'")
        }
        if let user { try UserName.validate(user) }
        if let camera, camera.isEmpty || camera.utf8.count > 4096 {
            throw .invalidParams(field: "camera", "'camera' must be a camera id")
        }
    }
}

// MARK: auth.password.*

public struct PasswordBeginParams: RPCParams, Encodable {
    public static let fields = wireNames(CodingKeys.self)
    enum CodingKeys: String, CodingKey, CaseIterable { case user }
    public var user: String
    public init(user: String) { self.user = user }
    public func validate() throws(RPCError) { try UserName.validate(user) }
}

public struct PasswordBeginResult: Codable, Sendable {
    /// 32 random bytes, base64url without padding (43 characters): give it to the root helper
    /// with the password; it names this connection's request.
    public var nonce: String
    public var expiresS: Int
    enum CodingKeys: String, CodingKey {
        case nonce
        case expiresS = "expires_s"
    }
    public init(nonce: String, expiresS: Int) {
        self.nonce = nonce
        self.expiresS = expiresS
    }
}

public struct PasswordProvenParams: RPCParams, Encodable {
    public static let fields = wireNames(CodingKeys.self)
    enum CodingKeys: String, CodingKey, CaseIterable { case user, nonce }
    public var user: String
    public var nonce: String
    public init(user: String, nonce: String) {
        self.user = user
        self.nonce = nonce
    }
    public func validate() throws(RPCError) {
        try UserName.validate(user)
        guard nonce.utf8.count == 43, nonce.utf8.allSatisfy({ $0 == 0x2D || $0 == 0x5F || (0x30...0x39).contains($0)
            || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }) else {
            throw .invalidParams(field: "nonce", "'nonce' must be the 43 base64url characters auth.password.begin gave")
        }
    }
}

public struct OKResult: Codable, Sendable {
    public var ok: Bool
    public init(ok: Bool) { self.ok = ok }
}

/// The `factors` of auth.policy.set / auth.authenticate as they travel: wire names of `Factor`
/// (its raw values are the names; there is no second list).
public enum FactorName {
    public static let all = Factor.allCases.map(\.rawValue)

    /// The factors named, once `check` passed (every name is a factor).
    public static func factors(_ names: [String]) -> [Factor] { names.compactMap(Factor.init(rawValue:)) }

    public static func check(_ factors: [String]?, field: String) throws(RPCError) {
        guard let factors else { return }
        for (i, f) in factors.enumerated() {
            guard Factor(rawValue: f) != nil else {
                throw .invalidParams(field: "\(field)[\(i)]", "unknown factor '\(f.prefix(20))'; factors are \(all.joined(separator: ", "))")
            }
        }
        guard Set(factors).count == factors.count else {
            throw .invalidParams(field: field, "each factor may appear once")
        }
    }
}

/// A PIN as it travels: a string, checked against the daemon's PIN rules there (pin_format).
enum PINField {
    static func check(_ pin: String?, field: String) throws(RPCError) {
        guard let pin else { return }
        // Longer than any PIN rule allows (at most 64 digits): the PIN's own error, not a params
        // error, so a client handles every bad PIN alike. The daemon checks the rest (pin_format).
        guard pin.utf8.count <= 256 else {
            throw .app(.pinFormat, "the PIN must have at most 64 digits", details: ["field": .string(field), "max_length": 64])
        }
    }
}

// MARK: pin.*

public struct PINSetParams: RPCParams, Encodable {
    public static let fields = wireNames(CodingKeys.self)
    public var user: String
    public var pin: String
    /// Required when the user has a PIN and the caller is not an administrator.
    public var oldPIN: String?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case user, pin
        case oldPIN = "old_pin"
    }

    public init(user: String, pin: String, oldPIN: String? = nil) {
        self.user = user
        self.pin = pin
        self.oldPIN = oldPIN
    }

    public func validate() throws(RPCError) {
        try UserName.validate(user)
        try PINField.check(pin, field: "pin")
        try PINField.check(oldPIN, field: "old_pin")
    }
}

public struct PINVerifyParams: RPCParams, Encodable {
    public static let fields = wireNames(CodingKeys.self)
    enum CodingKeys: String, CodingKey, CaseIterable { case user, pin }
    public var user: String
    public var pin: String

    public init(user: String, pin: String) {
        self.user = user
        self.pin = pin
    }

    public func validate() throws(RPCError) {
        try UserName.validate(user)
        try PINField.check(pin, field: "pin")
    }
}

public struct PINResetParams: RPCParams, Encodable {
    public static let fields = wireNames(CodingKeys.self)
    public var user: String
    /// Also delete the PIN [false]; otherwise only the wrong-PIN count and the lockout are cleared.
    public var removePIN: Bool?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case user
        case removePIN = "remove_pin"
    }

    public init(user: String, removePIN: Bool? = nil) {
        self.user = user
        self.removePIN = removePIN
    }

    public func validate() throws(RPCError) { try UserName.validate(user) }
}

public struct PINResult: Codable, Sendable {
    public var ok: Bool
    /// Wrong PINs still allowed before pin_locked; null when unlimited.
    @Nullable public var retriesLeft: Int?

    enum CodingKeys: String, CodingKey {
        case ok
        case retriesLeft = "retries_left"
    }

    public init(ok: Bool, retriesLeft: Int?) {
        self.ok = ok
        self.retriesLeft = retriesLeft
    }
}

// MARK: auth.policy.*

public struct PolicySetParams: RPCParams, Encodable {
    public static let fields = wireNames(CodingKeys.self)
    public var user: String
    /// Ordered factors (face, finger, pin); or `mode`.
    public var factors: [String]?
    /// KOBIL presets: none ([]), biometric ([face, finger]), password ([pin]).
    public var mode: PolicyMode?
    /// [unchanged; true for a new user]. Only an administrator may set false.
    public var requireLiveness: Bool?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case user, factors, mode
        case requireLiveness = "require_liveness"
    }

    public init(user: String, factors: [String]? = nil, mode: PolicyMode? = nil, requireLiveness: Bool? = nil) {
        self.user = user
        self.factors = factors
        self.mode = mode
        self.requireLiveness = requireLiveness
    }

    public func validate() throws(RPCError) {
        try UserName.validate(user)
        try FactorName.check(factors, field: "factors")
        if factors != nil && mode != nil { throw .invalidParams(field: "mode", "give either 'factors' or 'mode', not both") }
    }
}

public struct PolicyResult: Codable, Sendable, Equatable {
    public var user: String
    public var factors: [String]
    /// none | biometric | password | custom
    public var mode: String
    public var requireLiveness: Bool

    enum CodingKeys: String, CodingKey {
        case user, factors, mode
        case requireLiveness = "require_liveness"
    }

    public init(user: String, factors: [String], mode: String, requireLiveness: Bool) {
        self.user = user
        self.factors = factors
        self.mode = mode
        self.requireLiveness = requireLiveness
    }
}

// MARK: auth.authenticate / auth.status

public struct AuthenticateParams: RPCParams, Encodable {
    public static let fields = wireNames(CodingKeys.self)
    public var user: String
    /// Which of the policy's factors to run, in this order [the policy's].
    public var factors: [String]?
    /// Completes an identification that answered step_up_required: the id of that face.identify
    /// or finger.identify call on this connection (within 60 s); `user` must be one of its
    /// candidates, and the second factor is not the identify's modality [pin].
    public var stepUp: RequestID?
    /// For the pin factor; never logged.
    public var pin: String?
    public var camera: String?
    /// For the whole call, all factors together.
    public var timeoutMs: Int?
    public static let timeoutMs = Setting(CodingKeys.timeoutMs, 1000...300_000, default: 30000)
    /// The attempt was started by another user for this account (`su bob` run by alice, where the
    /// administrator allowed it with pam_biometricd's `other_users=allow`): it never counts toward
    /// the user's lockout, nor resets it (SPEC §4). Root only (the PAM module in a setuid program).
    public var otherUser: Bool?
    /// The face must come into view after the call began (a lock screen whose face service starts
    /// when the screen locks: the face already in view then is not consent to unlock it). Only
    /// stricter: no frame is judged until the camera has seen nobody for a second (`FaceArrival`).
    public var requireArrival: Bool?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case user, factors, pin, camera
        case timeoutMs = "timeout_ms"
        case stepUp = "step_up"
        case otherUser = "other_user"
        case requireArrival = "require_arrival"
    }

    public init(user: String, factors: [String]? = nil, pin: String? = nil, camera: String? = nil, timeoutMs: Int? = nil,
                stepUp: RequestID? = nil) {
        self.stepUp = stepUp
        self.user = user
        self.factors = factors
        self.pin = pin
        self.camera = camera
        self.timeoutMs = timeoutMs
    }

    public func validate() throws(RPCError) {
        try UserName.validate(user)
        try FactorName.check(factors, field: "factors")
        try PINField.check(pin, field: "pin")
        try Self.timeoutMs.check(timeoutMs)
    }
}

/// One factor that was tried and failed (the Acceptto manager's error list).
public struct FactorAttempt: Codable, Sendable, Equatable {
    public var factor: String
    public var name: String
    /// The SPEC §6 code, or 0 for a plain non-match.
    public var code: Int
    /// The SPEC §6 reason, or "no_match".
    public var reason: String
    public var message: String
    public var score: Double?
    public var retriesLeft: Int?

    enum CodingKeys: String, CodingKey {
        case factor, name, code, reason, message, score
        case retriesLeft = "retries_left"
    }

    public init(factor: String, name: String, code: Int, reason: String, message: String, score: Double? = nil, retriesLeft: Int? = nil) {
        self.factor = factor
        self.name = name
        self.code = code
        self.reason = reason
        self.message = message
        self.score = score
        self.retriesLeft = retriesLeft
    }
}

/// A factor of the plan that was not tried, and why (not_enrolled, not_in_policy, no_pin_given,
/// locked_out, pin_locked, no_time_left).
public struct FactorSkip: Codable, Sendable, Equatable {
    public var factor: String
    public var reason: String
    public var retryAfterS: Int?

    enum CodingKeys: String, CodingKey {
        case factor, reason
        case retryAfterS = "retry_after_s"
    }

    public init(factor: String, reason: String, retryAfterS: Int? = nil) {
        self.factor = factor
        self.reason = reason
        self.retryAfterS = retryAfterS
    }
}

public struct AuthenticateResult: Codable, Sendable {
    public var ok: Bool
    /// The factor that passed; null when none did.
    @Nullable public var factor: String?
    public var user: String
    public var score: Double?
    public var tried: [FactorAttempt]
    public var skipped: [FactorSkip]
    public var durationMs: Int

    enum CodingKeys: String, CodingKey {
        case ok, factor, user, score, tried, skipped
        case durationMs = "duration_ms"
    }

    public init(ok: Bool, factor: String?, user: String, score: Double?, tried: [FactorAttempt], skipped: [FactorSkip], durationMs: Int) {
        self.ok = ok
        self.factor = factor
        self.user = user
        self.score = score
        self.tried = tried
        self.skipped = skipped
        self.durationMs = durationMs
    }
}

public struct AuthStatusResult: Codable, Sendable {
    public var user: String
    public var lockedOut: Bool
    /// Seconds until biometrics unlock; null when not locked or locked until a PIN.
    @Nullable public var retryAfterS: Int?
    /// Locked until a successful PIN (or an administrator's pin.reset).
    public var requiresPIN: Bool
    public var biometricFailures: Int
    public var pinSet: Bool
    public var pinLocked: Bool
    /// null when unlimited or no PIN is set.
    @Nullable public var pinRetriesLeft: Int?

    enum CodingKeys: String, CodingKey {
        case user
        case lockedOut = "locked_out"
        case retryAfterS = "retry_after_s"
        case requiresPIN = "requires_pin"
        case biometricFailures = "biometric_failures"
        case pinSet = "pin_set"
        case pinLocked = "pin_locked"
        case pinRetriesLeft = "pin_retries_left"
    }

    public init(user: String, lockedOut: Bool, retryAfterS: Int?, requiresPIN: Bool, biometricFailures: Int, pinSet: Bool,
                pinLocked: Bool, pinRetriesLeft: Int?) {
        self.user = user
        self.lockedOut = lockedOut
        self.retryAfterS = retryAfterS
        self.requiresPIN = requiresPIN
        self.biometricFailures = biometricFailures
        self.pinSet = pinSet
        self.pinLocked = pinLocked
        self.pinRetriesLeft = pinRetriesLeft
    }
}

// MARK: key.*

/// AAIDs are "VVVV#MMMM": vendor and model, four hex digits each (FIDO UAF).
public enum AAID {
    public static func validate(_ aaid: String) throws(RPCError) {
        let bytes = Array(aaid.utf8)
        let hex: (UInt8) -> Bool = { (0x30...0x39).contains($0) || (0x41...0x46).contains($0) || (0x61...0x66).contains($0) }
        guard bytes.count == 9, bytes[4] == UInt8(ascii: "#"), bytes[0..<4].allSatisfy(hex), bytes[5..<9].allSatisfy(hex) else {
            throw .app(.invalidAAID, "AAID '\(aaid.prefix(20))' is not \"VVVV#MMMM\"", hint: "four hex digits, '#', four hex digits, e.g. 4e4e#4005")
        }
    }
}

enum KeyFields {
    static func appID(_ appID: String) throws(RPCError) {
        guard (1...512).contains(appID.utf8.count), !appID.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .invalidParams(field: "app_id", "'app_id' must be 1–512 bytes without control characters (e.g. https://example.com)")
        }
    }

    static func handle(_ handle: String?) throws(RPCError) {
        guard let handle else { return }
        guard (1...128).contains(handle.utf8.count),
              handle.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x2D || $0 == 0x5F })
        else {
            throw .invalidParams(field: "key_handle", "'key_handle' is not a key handle (base64url, as key.register returned it)")
        }
    }
}

public struct KeyRegisterParams: RPCParams, Encodable {
    public static let fields = wireNames(CodingKeys.self)
    public var user: String
    public var appID: String
    public var aaid: String

    enum CodingKeys: String, CodingKey, CaseIterable {
        case user, aaid
        case appID = "app_id"
    }

    public init(user: String, appID: String, aaid: String) {
        self.user = user
        self.appID = appID
        self.aaid = aaid
    }

    public func validate() throws(RPCError) {
        try UserName.validate(user)
        try KeyFields.appID(appID)
        try AAID.validate(aaid)
    }
}

public struct KeyInfo: Codable, Sendable, Equatable {
    public var keyHandle: String
    public var user: String
    public var appID: String
    public var aaid: String
    /// PEM (SubjectPublicKeyInfo) of the P-256 public key.
    public var publicKey: String
    public var counter: Int
    public var created: String

    enum CodingKeys: String, CodingKey {
        case user, aaid, counter, created
        case keyHandle = "key_handle"
        case appID = "app_id"
        case publicKey = "public_key"
    }

    public init(keyHandle: String, user: String, appID: String, aaid: String, publicKey: String, counter: Int, created: String) {
        self.keyHandle = keyHandle
        self.user = user
        self.appID = appID
        self.aaid = aaid
        self.publicKey = publicKey
        self.counter = counter
        self.created = created
    }
}

public struct KeySignParams: RPCParams, Encodable {
    public static let fields = wireNames(CodingKeys.self)
    /// The key's owner (must match the key).
    public var user: String
    public var keyHandle: String
    /// base64, at most 1 KiB once decoded.
    public var challenge: String
    public var pin: String?
    public var camera: String?
    public var timeoutMs: Int?
    public static let timeoutMs = AuthenticateParams.timeoutMs

    enum CodingKeys: String, CodingKey, CaseIterable {
        case user, challenge, pin, camera
        case keyHandle = "key_handle"
        case timeoutMs = "timeout_ms"
    }

    public init(user: String, keyHandle: String, challenge: String, pin: String? = nil, camera: String? = nil, timeoutMs: Int? = nil) {
        self.user = user
        self.keyHandle = keyHandle
        self.challenge = challenge
        self.pin = pin
        self.camera = camera
        self.timeoutMs = timeoutMs
    }

    public static let maxChallengeBytes = 1024

    public var challengeBytes: Data? { Data(base64Encoded: challenge) }

    public func validate() throws(RPCError) {
        try UserName.validate(user)
        try KeyFields.handle(keyHandle)
        guard challenge.utf8.count <= 4 * ((Self.maxChallengeBytes + 2) / 3), let bytes = challengeBytes else {
            throw .invalidParams(field: "challenge", "'challenge' must be base64 of at most \(Self.maxChallengeBytes) bytes")
        }
        guard !bytes.isEmpty, bytes.count <= Self.maxChallengeBytes else {
            throw .invalidParams(field: "challenge", "'challenge' must be 1–\(Self.maxChallengeBytes) bytes once decoded")
        }
        try PINField.check(pin, field: "pin")
        try Self.timeoutMs.check(timeoutMs)
    }
}

public struct KeySignResult: Codable, Sendable {
    /// Signed: the user passed the policy's factors (or the policy has none).
    public var ok: Bool
    public var keyHandle: String
    /// base64 DER ECDSA signature over authenticator_data ‖ SHA-256(challenge).
    public var signature: String?
    /// base64: SHA-256(app_id) ‖ flags ‖ counter (big-endian).
    public var authenticatorData: String?
    public var counter: Int?
    public var userVerified: Bool
    public var factor: String?
    public var tried: [FactorAttempt]
    public var skipped: [FactorSkip]

    enum CodingKeys: String, CodingKey {
        case ok, signature, counter, factor, tried, skipped
        case keyHandle = "key_handle"
        case authenticatorData = "authenticator_data"
        case userVerified = "user_verified"
    }

    public init(ok: Bool, keyHandle: String, signature: String?, authenticatorData: String?, counter: Int?, userVerified: Bool,
                factor: String?, tried: [FactorAttempt], skipped: [FactorSkip]) {
        self.ok = ok
        self.keyHandle = keyHandle
        self.signature = signature
        self.authenticatorData = authenticatorData
        self.counter = counter
        self.userVerified = userVerified
        self.factor = factor
        self.tried = tried
        self.skipped = skipped
    }
}

public struct KeyListResult: Codable, Sendable {
    public var keys: [KeyInfo]
    /// The user's discoverable credentials on biometricd's FIDO2 authenticator (Docs/fido.md);
    /// empty from a daemon without it.
    public var fidoCredentials: [FIDOCredentialInfo]

    enum CodingKeys: String, CodingKey {
        case keys
        case fidoCredentials = "fido_credentials"
    }

    public init(keys: [KeyInfo], fidoCredentials: [FIDOCredentialInfo] = []) {
        self.keys = keys
        self.fidoCredentials = fidoCredentials
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        keys = try c.decode([KeyInfo].self, forKey: .keys)
        fidoCredentials = try c.decodeIfPresent([FIDOCredentialInfo].self, forKey: .fidoCredentials) ?? []
    }
}

/// A discoverable FIDO2 credential as key.list shows it: public facts only, and how the user was
/// verified when it was made (the seed's AAID distinction: face, finger, pin, or none).
public struct FIDOCredentialInfo: Codable, Sendable, Equatable {
    /// The credential ID, base64url without padding (what relying parties store).
    public var credentialID: String
    public var rpID: String
    public var userName: String?
    public var verifiedBy: String
    /// PEM (SubjectPublicKeyInfo) of the P-256 public key.
    public var publicKey: String
    public var counter: Int
    public var created: String

    enum CodingKeys: String, CodingKey {
        case counter, created
        case credentialID = "credential_id"
        case rpID = "rp_id"
        case userName = "user_name"
        case verifiedBy = "verified_by"
        case publicKey = "public_key"
    }

    public init(credentialID: String, rpID: String, userName: String?, verifiedBy: String, publicKey: String, counter: Int,
                created: String) {
        self.credentialID = credentialID
        self.rpID = rpID
        self.userName = userName
        self.verifiedBy = verifiedBy
        self.publicKey = publicKey
        self.counter = counter
        self.created = created
    }
}

public struct KeyDeregisterParams: RPCParams, Encodable {
    public static let fields = wireNames(CodingKeys.self)
    public var user: String
    /// One key; absent: all of the user's keys.
    public var keyHandle: String?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case user
        case keyHandle = "key_handle"
    }

    public init(user: String, keyHandle: String? = nil) {
        self.user = user
        self.keyHandle = keyHandle
    }

    public func validate() throws(RPCError) {
        try UserName.validate(user)
        try KeyFields.handle(keyHandle)
    }
}
