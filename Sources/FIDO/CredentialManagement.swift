import Crypto
import Foundation

/// authenticatorCredentialManagement (CTAP 2.1 §6.8): metadata, enumerate RPs and their
/// credentials, delete, update user information — discoverable credentials only.
extension CTAP2Authenticator {
    enum CredentialSubcommand: Int {
        case getCredsMetadata = 1
        case enumerateRPsBegin = 2
        case enumerateRPsGetNextRP = 3
        case enumerateCredentialsBegin = 4
        case enumerateCredentialsGetNextCredential = 5
        case deleteCredential = 6
        case updateUserInformation = 7
    }

    func credentialManagement(_ p: CBORValue) async throws -> CBORValue {
        guard let subcommand = CredentialSubcommand(rawValue: try p.requiredInt(1)) else {
            throw CTAPStatus.invalidSubcommand
        }
        let parameters = try p.optionalMap(2)
        switch subcommand {
        case .enumerateRPsGetNextRP:
            return try nextRP()
        case .enumerateCredentialsGetNextCredential:
            return try await nextCredential(total: nil)
        default:
            break
        }
        // Every other subcommand is authorised by a token with the cm permission over
        // subCommand ‖ subCommandParams (as canonical CBOR, which is what platforms send).
        guard let param = try p.optionalBytes(4) else { throw CTAPStatus.puatRequired }
        let message = [UInt8(subcommand.rawValue)] + (parameters.map(CBOREncoder.encode) ?? [])
        let used = try useToken(param, protocolNumber: p[3], message: message, permission: PINToken.credentialManagement, rpID: nil)
        let all = try await store.allResidentCredentials()

        /// A token bound to one RP may manage only that RP's credentials.
        func allowed(_ rpIDHash: [UInt8]) -> Bool { used.rpID.map { sha256($0) == rpIDHash } ?? true }

        switch subcommand {
        case .getCredsMetadata:
            guard used.rpID == nil else { throw CTAPStatus.pinAuthInvalid }
            return .map([.init(1, .int(all.count)), .init(2, .int(max(0, store.capacity - all.count)))])
        case .enumerateRPsBegin:
            guard used.rpID == nil else { throw CTAPStatus.pinAuthInvalid }
            var seen = Set<String>()
            let rps = all.sorted { $0.created < $1.created }.filter { seen.insert($0.rpID).inserted }
            guard let first = rps.first else { throw CTAPStatus.noCredentials }
            pendingRPs = PendingList(items: Array(rps.dropFirst()), expires: .now.advanced(by: configuration.continuationWindow))
            return .map(rpEntry(first) + [.init(5, .int(rps.count))])
        case .enumerateCredentialsBegin:
            guard let parameters else { throw CTAPStatus.missingParameter }
            let rpIDHash = try parameters.requiredBytes(1)
            guard allowed(rpIDHash) else { throw CTAPStatus.pinAuthInvalid }
            let credentials = all.filter { $0.rpIDHash == rpIDHash }.sorted { $0.created < $1.created }
            guard !credentials.isEmpty else { throw CTAPStatus.noCredentials }
            pendingCredentials = PendingList(items: credentials, expires: .now.advanced(by: configuration.continuationWindow))
            return try await nextCredential(total: credentials.count)
        case .deleteCredential, .updateUserInformation:
            guard let descriptor = parameters?[2] else { throw CTAPStatus.missingParameter }
            guard let id = try descriptor.credentialID(), var credential = all.first(where: { $0.id == id }) else {
                throw CTAPStatus.noCredentials
            }
            guard allowed(credential.rpIDHash) else { throw CTAPStatus.pinAuthInvalid }
            if subcommand == .deleteCredential {
                try await store.delete(credentialID: id)
            } else {
                let user = try parameters!.requiredMap(3)
                guard try user.requiredBytes("id") == credential.userID else { throw CTAPStatus.invalidParameter }
                credential.userName = try user.optionalText("name")
                credential.userDisplayName = try user.optionalText("displayName")
                try await store.update(credential)
            }
            return .map([])
        case .enumerateRPsGetNextRP, .enumerateCredentialsGetNextCredential:
            throw CTAPStatus.other  // answered above
        }
    }

    private func rpEntry(_ credential: StoredCredential) -> [CBORMapEntry] {
        var rp: [CBORMapEntry] = [.init("id", .text(credential.rpID))]
        if let name = credential.rpName { rp.append(.init("name", .text(name))) }
        return [.init(3, .map(rp)), .init(4, .bytes(credential.rpIDHash))]
    }

    private func nextRP() throws -> CBORValue {
        guard var pending = pendingRPs, ContinuousClock.now < pending.expires, !pending.items.isEmpty else {
            pendingRPs = nil
            throw CTAPStatus.notAllowed
        }
        let next = pending.items.removeFirst()
        pendingRPs = pending.items.isEmpty ? nil : pending
        return .map(rpEntry(next))
    }

    private func nextCredential(total: Int?) async throws -> CBORValue {
        guard var pending = pendingCredentials, ContinuousClock.now < pending.expires, !pending.items.isEmpty else {
            pendingCredentials = nil
            throw CTAPStatus.notAllowed
        }
        let next = pending.items.removeFirst()
        pendingCredentials = pending.items.isEmpty ? nil : pending
        var user: [CBORMapEntry] = [.init("id", .bytes(next.userID))]
        if let name = next.userName { user.append(.init("name", .text(name))) }
        if let name = next.userDisplayName { user.append(.init("displayName", .text(name))) }
        let publicKey = try P256.Signing.PrivateKey(rawRepresentation: next.privateKey).publicKey
        var entries: [CBORMapEntry] = [
            .init(6, .map(user)),
            .init(7, .map([.init("id", .bytes(next.id)), .init("type", "public-key")])),
            .init(8, coseKey(publicKey.x963Representation, algorithm: -7)),
            .init(0x0a, .int(Int(next.credProtect))),
        ]
        if let total { entries.append(.init(9, .int(total))) }
        return .map(entries)
    }
}
