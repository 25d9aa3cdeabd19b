@testable import BiometricFIDO
import Crypto
import Foundation
import SwiftASN1
import X509
import XCTest

/// The per-credential packed attestation: the certificate meets the FIDO packed-attestation
/// certificate requirements, carries the AAGUID, and is new for every credential.
final class AttestationTests: XCTestCase {
    let aaguid = (0..<16).map { UInt8(0xA0 + $0) }

    static func certificate(_ der: [UInt8]) throws -> Certificate { try Certificate(derEncoded: der) }

    static func publicKey(of der: [UInt8]) throws -> P256.Signing.PublicKey {
        try XCTUnwrap(P256.Signing.PublicKey(try certificate(der).publicKey))
    }

    func attestation(_ authData: [UInt8] = [1, 2, 3], _ cdh: [UInt8] = [UInt8](repeating: 7, count: 32)) throws -> PackedAttestation {
        try PackedAttestation(aaguid: aaguid, authenticatorData: authData, clientDataHash: cdh)
    }

    func testCertificateMeetsThePackedAttestationRequirements() throws {
        let certificate = try Self.certificate(try attestation().certificateDER)
        XCTAssertEqual(certificate.version, .v3)
        XCTAssertEqual(certificate.subject, certificate.issuer, "self-signed")
        let subject = certificate.subject.flatMap { $0 }
        func attribute(_ oid: ASN1ObjectIdentifier) -> String? {
            subject.first { $0.type == oid }.map { String(describing: $0.value) }
        }
        XCTAssertEqual(attribute(.RDNAttributeType.countryName), "XX")
        XCTAssertEqual(attribute(.RDNAttributeType.organizationName), "biometricd")
        XCTAssertEqual(attribute(.RDNAttributeType.organizationalUnitName), "Authenticator Attestation")
        XCTAssertEqual(attribute(.RDNAttributeType.commonName), PackedAttestation.subjectCommonName)
        XCTAssertEqual(try certificate.extensions.basicConstraints, .notCertificateAuthority)
        XCTAssertEqual(certificate.notValidBefore, PackedAttestation.notValidBefore)
        XCTAssertEqual(certificate.notValidAfter, PackedAttestation.notValidAfter)
        XCTAssertEqual(certificate.signatureAlgorithm, .ecdsaWithSHA256)
        XCTAssertTrue(certificate.publicKey.isValidSignature(certificate.signature, for: certificate),
                      "signed by its own key")
    }

    func testAAGUIDExtensionIsNonCriticalAndCarriesTheAAGUID() throws {
        let certificate = try Self.certificate(try attestation().certificateDER)
        let ext = try XCTUnwrap(certificate.extensions[oid: PackedAttestation.aaguidExtensionOID])
        XCTAssertFalse(ext.critical)
        XCTAssertEqual(Array(ext.value), [0x04, 0x10] + aaguid, "OCTET STRING (16 bytes) holding the AAGUID")
        let node = try DER.parse(Array(ext.value))
        XCTAssertEqual(Array(try ASN1OctetString(derEncoded: node).bytes), aaguid)
    }

    func testStatementIsSignedByTheCertificateKey() throws {
        let authData: [UInt8] = Array(repeating: 0x55, count: 90), cdh: [UInt8] = Array(repeating: 0x33, count: 32)
        let made = try attestation(authData, cdh)
        XCTAssertEqual(made.statement["alg"], -7)
        XCTAssertEqual(made.statement["x5c"], .array([.bytes(made.certificateDER)]))
        let key = try Self.publicKey(of: made.certificateDER)
        let signature = try P256.Signing.ECDSASignature(derRepresentation: try XCTUnwrap(made.statement["sig"]?.bytesValue))
        XCTAssertTrue(key.isValidSignature(signature, for: authData + cdh))
        XCTAssertFalse(key.isValidSignature(signature, for: authData + [UInt8](repeating: 0x34, count: 32)), "another clientDataHash")
    }

    func testEveryCredentialGetsItsOwnKeyAndCertificate() throws {
        let first = try attestation(), second = try attestation()
        XCTAssertNotEqual(first.certificateDER, second.certificateDER)
        XCTAssertNotEqual(try Self.publicKey(of: first.certificateDER).rawRepresentation,
                          try Self.publicKey(of: second.certificateDER).rawRepresentation)
        XCTAssertNotEqual(try Self.certificate(first.certificateDER).serialNumber,
                          try Self.certificate(second.certificateDER).serialNumber)
    }
}
