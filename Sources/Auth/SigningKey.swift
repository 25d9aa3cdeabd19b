import Crypto
import Foundation

/// A biometric-bound ECDSA P-256 key and the WebAuthn-style data it signs, so that any WebAuthn
/// or FIDO UAF verifier can check a signature: authenticator data = SHA-256(app_id) ‖ flags ‖
/// 32-bit big-endian signature counter, signed together with SHA-256(challenge).
public enum BoundKey {
    /// Flags of the authenticator data (WebAuthn §6.1).
    public static let userPresent: UInt8 = 0x01
    public static let userVerified: UInt8 = 0x04

    public struct Generated: Sendable {
        public var handle: String
        public var publicKeyPEM: String
        /// The raw private scalar; sealed by the store, never exported.
        public var privateKey: Data
    }

    public static func generate() -> Generated {
        let key = P256.Signing.PrivateKey()
        var handleBytes = [UInt8](repeating: 0, count: 24)
        var rng = SystemRandomNumberGenerator()
        for i in handleBytes.indices { handleBytes[i] = UInt8.random(in: 0...255, using: &rng) }
        return Generated(handle: base64URL(Data(handleBytes)), publicKeyPEM: key.publicKey.pemRepresentation,
                         privateKey: key.rawRepresentation)
    }

    public static func authenticatorData(appID: String, userVerified: Bool, counter: UInt32) -> Data {
        var data = Data(SHA256.hash(data: Data(appID.utf8)))
        data.append(userVerified ? Self.userPresent | Self.userVerified : 0)
        withUnsafeBytes(of: counter.bigEndian) { data.append(contentsOf: $0) }
        return data
    }

    public struct Signature: Sendable {
        public var authenticatorData: Data
        /// DER-encoded ECDSA signature over authenticatorData ‖ SHA-256(challenge).
        public var der: Data
    }

    public static func sign(privateKey: Data, appID: String, challenge: Data, userVerified: Bool, counter: UInt32) throws -> Signature {
        let key = try P256.Signing.PrivateKey(rawRepresentation: privateKey)
        let authData = authenticatorData(appID: appID, userVerified: userVerified, counter: counter)
        var signed = authData
        signed.append(contentsOf: SHA256.hash(data: challenge))
        let signature = try key.signature(for: signed)
        return Signature(authenticatorData: authData, der: signature.derRepresentation)
    }

    /// What a relying party does with the result (the tests use it; so can callers).
    public static func verify(publicKeyPEM: String, authenticatorData: Data, challenge: Data, der: Data) -> Bool {
        guard let key = try? P256.Signing.PublicKey(pemRepresentation: publicKeyPEM),
              let signature = try? P256.Signing.ECDSASignature(derRepresentation: der) else { return false }
        var signed = authenticatorData
        signed.append(contentsOf: SHA256.hash(data: challenge))
        return key.isValidSignature(signature, for: signed)
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
