import Crypto
import Foundation

/// The daemon PIN as FIDO clientPIN carries it. CTAP never sends the PIN: the platform sends
/// LEFT(SHA-256(PIN), 16) (CTAP 2.1 §6.5.5.7). biometricd keeps an Argon2id of that hash beside
/// the PIN's own Argon2id, written whenever the PIN is set through biometricd; it hashes the
/// 16 bytes' lowercase hex, so PINHasher (which takes text) serves both.
enum CTAPPINHash {
    /// What getPINRetries reports when pin_max_retries is unlimited (CTAP's own maximum is 8).
    static let unlimitedRetries = 8

    static func bytes(ofPIN pin: String) -> [UInt8] { Array(SHA256.hash(data: Data(pin.utf8)).prefix(16)) }

    static func text(ofHash hash: [UInt8]) -> String { hash.map { String(format: "%02x", $0) }.joined() }

    static func text(ofPIN pin: String) -> String { text(ofHash: bytes(ofPIN: pin)) }
}
