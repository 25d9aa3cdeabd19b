import Crypto
import Foundation
import SwiftASN1
import X509

/// The attestation statement of a new credential: `packed` with a one-time attestation key.
///
/// Why not self-attestation: libfido2's `fido_cred_verify` — what pam-u2f 1.1.0 (Debian 12's
/// `pamu2fcfg`) calls — needs an attestation certificate (`x5c`) and refuses a statement without
/// one. Why not a shared (batch) attestation key: biometricd is software, so any such key would sit
/// on every machine's disk, claim a trust it cannot back, and — one key for every credential —
/// let relying parties link one user's credentials. Instead each credential gets a **fresh random
/// P-256 key and a self-signed certificate for it**, made here and dropped after the reply: no two
/// credentials share a key or a certificate (no link across RPs, as with self-attestation), and no
/// trust is claimed (the certificate chains to nothing; an RP sees it as "Basic, no trusted root").
///
/// The certificate follows the FIDO packed-attestation certificate requirements (WebAuthn §8.2.1):
/// X.509 v3; subject C, O, OU = "Authenticator Attestation", CN; Basic Constraints CA:false; the
/// id-fido-gen-ce-aaguid extension (1.3.6.1.4.1.45724.1.1.4, non-critical) carrying the AAGUID;
/// valid from a fixed past date to 9999-12-31 (no meaningful expiry, RFC 5280 §4.1.2.5).
public struct PackedAttestation: Sendable {
    /// id-fido-gen-ce-aaguid.
    public static let aaguidExtensionOID: ASN1ObjectIdentifier = [1, 3, 6, 1, 4, 1, 45724, 1, 1, 4]
    /// The subject (and issuer) of every attestation certificate: the same for all, so it says
    /// nothing about the user or machine. "XX" is ISO 3166's user-assigned "unknown" code: there is
    /// no vendor country to name.
    public static let subjectCountry = "XX"
    public static let subjectOrganization = "biometricd"
    public static let subjectOrganizationalUnit = "Authenticator Attestation"
    public static let subjectCommonName = "biometricd FIDO2 per-credential attestation"
    /// 2024-01-01T00:00:00Z: fixed, so the certificate does not reveal when the credential was made.
    public static let notValidBefore = Date(timeIntervalSince1970: 1_704_067_200)
    /// 9999-12-31T23:59:59Z.
    public static let notValidAfter = Date(timeIntervalSince1970: 253_402_300_799)

    /// The attestation statement (`attStmt`): `{alg: -7, sig, x5c: [certificate]}`.
    public let statement: CBORValue
    /// The DER certificate in `x5c` (for tests and tools).
    public let certificateDER: [UInt8]

    /// Makes a new attestation key and certificate for one credential and signs
    /// `authData || clientDataHash` with it. The key lives only inside this call.
    public init(aaguid: [UInt8], authenticatorData: [UInt8], clientDataHash: [UInt8]) throws {
        precondition(aaguid.count == 16, "an AAGUID is 16 bytes")
        let key = P256.Signing.PrivateKey()
        certificateDER = try Self.certificate(for: key, aaguid: aaguid)
        let signature = try key.signature(for: authenticatorData + clientDataHash).derRepresentation
        statement = .map([
            .init("alg", -7), .init("sig", .bytes(Array(signature))),
            .init("x5c", .array([.bytes(certificateDER)])),
        ])
    }

    /// The self-signed certificate for `key` (DER).
    static func certificate(for key: P256.Signing.PrivateKey, aaguid: [UInt8]) throws -> [UInt8] {
        let name = try DistinguishedName {
            CountryName(subjectCountry)
            OrganizationName(subjectOrganization)
            OrganizationalUnitName(subjectOrganizationalUnit)
            CommonName(subjectCommonName)
        }
        // extnValue holds the DER of `OCTET STRING (16 bytes)`.
        let aaguidExtension = Certificate.Extension(
            oid: aaguidExtensionOID, critical: false, value: ([0x04, 0x10] + aaguid)[...])
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(),
            publicKey: .init(key.publicKey),
            notValidBefore: notValidBefore, notValidAfter: notValidAfter,
            issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                aaguidExtension
            },
            issuerPrivateKey: .init(key))
        return try certificate.serializeAsPEM().derBytes
    }
}
