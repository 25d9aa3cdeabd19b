import BiometricAuth
import BiometricFIDO
import BiometricProtocol
import BiometricStore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The FIDO2 authenticator's place in the daemon's life: made at start when configured, from the
/// daemon's own store, PIN and auth.authenticate; removed on stop.
extension Daemon {
    /// How long one user verification may take (a capture with liveness; CTAP clients wait with
    /// keepalives): `fido_uv_timeout`. auth.authenticate hands the face session all of it (its
    /// ceiling, 300 s, is the key's); a finger capture inside keeps its own 120 s ceiling.
    static func fidoVerificationTimeoutMs(_ configuration: DaemonConfiguration) -> Int {
        configuration.fidoUVTimeoutSeconds * 1000
    }

    /// The transport, decided by `FIDOTransportChoice`; nil when the authenticator is off.
    static func fidoTransport(_ configuration: DaemonConfiguration) throws(StartupError) -> FIDOTransportChoice? {
        guard configuration.fidoEnabled || configuration.testFIDOSocket != nil else { return nil }
        do {
            return try FIDOTransportChoice.decide(testSocketPath: configuration.testFIDOSocket,
                                                  systemService: configuration.isProductionInstance)
        } catch {
            throw StartupError(description: "'test_fido_socket' is a test hook and this is a production instance (root, the system paths, or started by systemd); remove it")
        }
    }

    /// Starts the authenticator when configured. A device that cannot be created (no uhid
    /// module, no access to /dev/uhid) is logged and the daemon serves on without it.
    func startFIDO() async throws -> FIDOService? {
        guard let choice = try Self.fidoTransport(configuration) else { return nil }
        let users = FIDOUserSource(kioskUser: configuration.fidoUser)
        let store = self.store, rules = configuration.lockout
        let verifier = DaemonUserVerifier(users: users, attempt: { [self] user, rpID in await fidoVerify(user, rpID: rpID) },
                                          lockout: { try? store.lockouts.get(user: $0) }, rules: rules,
                                          configured: { Self.biometricConfigured(store, user: $0) })
        let service = FIDOService(choice: choice, verifier: verifier, pins: DaemonPINVerifier(auth: auth, users: users),
                                  store: DaemonCredentialStore(store: store, users: users, capacity: configuration.quotas.keys),
                                  users: users, logger: logger)
        do {
            try await service.start()
        } catch {
            logger.error("FIDO2 authenticator not started: \(error) (is the uhid module loaded, and /dev/uhid allowed to the daemon?)")
            return nil
        }
        logger.info("FIDO2 user verification for \(users.description), up to \(configuration.fidoUVTimeoutSeconds) s each")
        return service
    }

    /// getInfo's `uv`: the user has a face or finger template whose factor their policy lists.
    static func biometricConfigured(_ store: Store, user: String) -> Bool {
        guard let record = try? store.users.named(user), let policy = try? store.policies.get(user: user) else { return false }
        return (record.faceTemplates > 0 && policy.factors.contains(.face)) || (record.fingerTemplates > 0 && policy.factors.contains(.finger))
    }

    /// What a FIDO user verification requires and grants, as a method declares it: a trusted
    /// camera (a virtual one is refused, as on every login path), knobs at their floors (built by
    /// auth.authenticate), and a proven match resets the lockout; nothing else (the connection is
    /// internal and thrown away).
    static let fidoVerification = MethodSecurity(access: .selfOrAdmin, requires: .loginCapture, grants: .lockoutReset)

    /// One FIDO user verification: auth.authenticate for `user` with the face and finger factors
    /// of their policy (never the PIN: clientPIN carries that), liveness forced on, as an
    /// internal caller of that user's uid (no events: there is no client connection to send them).
    func fidoVerify(_ user: FIDOUser, rpID: String?) async -> UserCheckOutcome {
        let peer = Peer(pid: getpid(), uid: user.uid, gid: user.gid, userName: user.name, isAdmin: false, isLogin: false)
        let connection = ClientConnection(peer: peer, channel: nil, methods: MethodTable(policy: policy), onClose: {})
        let context = CallContext(peer: peer, request: nil, connection: connection, security: Self.fidoVerification, ledger: ledger)
        do {
            guard let userPolicy = try store.policies.get(user: user.name) else {
                logger.notice("FIDO verification: '\(LogText(user.name))' is not enrolled")
                return .denied
            }
            let factors = userPolicy.factors.filter { $0 != .pin }
            guard !factors.isEmpty else {
                logger.notice("FIDO verification: the policy of '\(LogText(user.name))' has no face or finger factor")
                return .blocked
            }
            let result = try await authGroups.auth.authenticate(user: user.name, override: factors, pin: nil, camera: nil,
                                                                timeoutMs: Self.fidoVerificationTimeoutMs(configuration), context: context,
                                                                forceLiveness: true)
            let outcome = FIDOVerdict.outcome(result.run)
            logger.notice("FIDO verification of '\(LogText(user.name))'\(rpID.map { " for \($0)" } ?? ""): \(FIDOVerdict.describe(outcome)) in \(result.durationMs) ms")
            return outcome
        } catch {
            let outcome = FIDOVerdict.outcome(error)
            logger.notice("FIDO verification of '\(LogText(user.name))'\(rpID.map { " for \($0)" } ?? ""): \(FIDOVerdict.describe(outcome)) (\(error))")
            return outcome
        }
    }
}
