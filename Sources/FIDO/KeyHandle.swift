import Crypto

/// Credential IDs. Every credential ID this authenticator issues is a key handle: the private key
/// sealed with AES-256-GCM under the store's wrapping key, with the RP ID hash as associated data,
/// so a handle opens only for the RP it was made for, and a copied disk without the (sealed)
/// wrapping key yields no private keys. Discoverable credentials are also kept in the store; their
/// handles carry a flag, and such a handle is honoured only while the store still holds it (so
/// deleting a discoverable credential revokes it).
///
/// Layout: version (1) ‖ nonce (12) ‖ ciphertext of [private key (32) ‖ flags (1: bit 0 discoverable,
/// bit 1 hmac-secret) ‖ credProtect (1)] ‖ tag (16).
struct KeyHandle: Sendable, Equatable {
    static let version: UInt8 = 1
    static let length = 1 + 12 + 34 + 16

    var privateKey: [UInt8]
    var discoverable: Bool
    var credProtect: UInt8
    var hmacSecret = false

    func seal(key: SymmetricKey, rpIDHash: [UInt8]) throws -> [UInt8] {
        let flags: UInt8 = (discoverable ? 1 : 0) | (hmacSecret ? 2 : 0)
        let plaintext = privateKey + [flags, credProtect]
        let box = try AES.GCM.seal(plaintext, using: key, authenticating: [Self.version] + rpIDHash)
        return [Self.version] + Array(box.nonce) + Array(box.ciphertext) + Array(box.tag)
    }

    /// The handle's contents, or nil when it is not ours, not for this RP, or tampered with.
    static func open(_ handle: [UInt8], key: SymmetricKey, rpIDHash: [UInt8]) -> KeyHandle? {
        guard handle.count == length, handle[0] == version,
              let nonce = try? AES.GCM.Nonce(data: handle[1..<13]),
              let box = try? AES.GCM.SealedBox(nonce: nonce, ciphertext: handle[13..<47], tag: handle[47...]),
              let plaintext = try? AES.GCM.open(box, using: key, authenticating: [version] + rpIDHash),
              plaintext.count == 34
        else { return nil }
        let bytes = Array(plaintext)
        return KeyHandle(privateKey: Array(bytes[0..<32]), discoverable: bytes[32] & 1 != 0, credProtect: bytes[33],
                         hmacSecret: bytes[32] & 2 != 0)
    }
}
