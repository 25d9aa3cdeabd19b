import Crypto
import _CryptoExtras
import Foundation

/// PIN/UV auth protocols one and two (CTAP 2.1 §6.5.6, §6.5.7): ECDH on P-256 with the platform,
/// then AES-256-CBC to carry the PIN hash and token, HMAC-SHA-256 to authenticate requests.
public enum PINUVAuthProtocol: Int, Sendable, CaseIterable {
    case one = 1
    case two = 2

    /// The shared secret from the platform's COSE key (alg -25, ECDH-ES+HKDF-256).
    func sharedSecret(ours: P256.KeyAgreement.PrivateKey, platformKey: CBORValue) throws(CTAPStatus) -> [UInt8] {
        guard platformKey[1]?.intValue == 2, platformKey[-1]?.intValue == 1,
              let x = platformKey[-2]?.bytesValue, let y = platformKey[-3]?.bytesValue, x.count == 32, y.count == 32,
              let theirs = try? P256.KeyAgreement.PublicKey(rawRepresentation: x + y),
              let z = try? ours.sharedSecretFromKeyAgreement(with: theirs)
        else { throw .invalidParameter }
        let zBytes = z.withUnsafeBytes { Array($0) }
        switch self {
        case .one:
            return Array(SHA256.hash(data: zBytes))
        case .two:
            let salt = [UInt8](repeating: 0, count: 32)
            let hmacKey = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: zBytes), salt: salt,
                                                 info: Array("CTAP2 HMAC key".utf8), outputByteCount: 32)
            let aesKey = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: zBytes), salt: salt,
                                                info: Array("CTAP2 AES key".utf8), outputByteCount: 32)
            return hmacKey.withUnsafeBytes { Array($0) } + aesKey.withUnsafeBytes { Array($0) }
        }
    }

    private func aesKey(_ secret: [UInt8]) -> SymmetricKey {
        SymmetricKey(data: self == .one ? secret : Array(secret[32...]))
    }

    private func hmacKey(_ secret: [UInt8]) -> [UInt8] {
        self == .two && secret.count == 64 ? Array(secret[..<32]) : secret
    }

    public func encrypt(secret: [UInt8], _ plaintext: [UInt8]) throws(CTAPStatus) -> [UInt8] {
        do {
            switch self {
            case .one:
                return Array(try AES._CBC.encrypt(plaintext, using: aesKey(secret), iv: AES._CBC.IV(ivBytes: [UInt8](repeating: 0, count: 16)), noPadding: true))
            case .two:
                let ivBytes = randomBytes(16)
                return ivBytes + Array(try AES._CBC.encrypt(plaintext, using: aesKey(secret), iv: AES._CBC.IV(ivBytes: ivBytes), noPadding: true))
            }
        } catch { throw .other }
    }

    /// Decrypts, refusing ciphertexts that are not whole blocks (a typed error, not a trap).
    public func decrypt(secret: [UInt8], _ ciphertext: [UInt8]) throws(CTAPStatus) -> [UInt8] {
        do {
            switch self {
            case .one:
                guard !ciphertext.isEmpty, ciphertext.count % 16 == 0 else { throw CTAPStatus.invalidParameter }
                return Array(try AES._CBC.decrypt(ciphertext, using: aesKey(secret), iv: AES._CBC.IV(ivBytes: [UInt8](repeating: 0, count: 16)), noPadding: true))
            case .two:
                guard ciphertext.count >= 32, ciphertext.count % 16 == 0 else { throw CTAPStatus.invalidParameter }
                let iv = try AES._CBC.IV(ivBytes: ciphertext[..<16])
                return Array(try AES._CBC.decrypt(ciphertext[16...], using: aesKey(secret), iv: iv, noPadding: true))
            }
        } catch let status as CTAPStatus { throw status } catch { throw .invalidParameter }
    }

    /// authenticate(key, message): HMAC-SHA-256, truncated to 16 bytes in protocol one.
    public func authenticate(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        let mac = Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: hmacKey(key))))
        return self == .one ? Array(mac.prefix(16)) : mac
    }

    /// verify(key, message, signature), in constant time.
    public func verify(key: [UInt8], _ message: [UInt8], signature: [UInt8]) -> Bool {
        let expected = authenticate(key: key, message)
        guard signature.count == expected.count else { return false }
        return zip(expected, signature).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

/// The COSE_Key of a P-256 public key: for the credential (alg ES256) or key agreement (alg -25).
func coseKey(_ x963: Data, algorithm: Int) -> CBORValue {
    let raw = Array(x963.dropFirst())  // 0x04 || x || y
    return .map([
        .init(1, 2), .init(3, .int(algorithm)), .init(-1, 1),
        .init(-2, .bytes(Array(raw[0..<32]))), .init(-3, .bytes(Array(raw[32..<64]))),
    ])
}

/// Random bytes from the system generator.
func randomBytes(_ count: Int) -> [UInt8] {
    var rng = SystemRandomNumberGenerator()
    return (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
}
