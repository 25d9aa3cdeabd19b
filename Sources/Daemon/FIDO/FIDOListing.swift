import BiometricProtocol
import BiometricStore
import Crypto
import Foundation

/// key.list's view of a user's FIDO2 credentials: the public facts (RP, user name, public key,
/// counter) and how the user was verified when it was made — never the private key.
enum FIDOListing {
    /// nil for a row that does not decode (logged nowhere: key.list lists what it can).
    static func wire(_ record: FIDOCredentialRecord) -> FIDOCredentialInfo? {
        guard let credential = try? DaemonCredentialStore.decode(record),
              let key = try? P256.Signing.PrivateKey(rawRepresentation: credential.privateKey)
        else { return nil }
        let id = record.id.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        return FIDOCredentialInfo(credentialID: id, rpID: credential.rpID, userName: credential.userName, verifiedBy: record.verifiedBy,
                                  publicKey: key.publicKey.pemRepresentation, counter: Int(record.counter), created: record.created)
    }
}
