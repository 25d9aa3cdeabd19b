import BiometricFIDO
import Foundation
import Logging
import Synchronization

/// The FIDO2 authenticator in the daemon (`fido = yes`): a `CTAP2Authenticator` over the daemon's
/// verifier, PIN and store, run by a `CTAPHIDDevice` on the transport `FIDOTransportChoice`
/// picks — the kernel's uhid (a USB-HID device whose hidraw node clients open), or in a test
/// instance the HID report stream over a Unix socket. The device exists while the daemon runs.
final class FIDOService: Sendable {
    /// biometricd's AAGUID: one value for every installation (no shared attestation key; each
    /// credential gets a one-time self-signed attestation certificate, Docs/fido.md).
    static let aaguid: [UInt8] = [0x62, 0x69, 0x6f, 0x6d, 0x65, 0x74, 0x72, 0x69, 0x63, 0x64, 0x2d, 0x66, 0x69, 0x64, 0x6f, 0x32]

    enum Transport: Sendable {
        case uhid(UHIDTransport)
        case socket(TestSocketTransport)

        func send(_ report: [UInt8]) {
            switch self {
            case .uhid(let t): t.send(report)
            case .socket(let t): t.send(report)
            }
        }

        func run(_ device: CTAPHIDDevice) async {
            switch self {
            case .uhid(let t): await t.run(device: device)
            case .socket(let t): await t.run(device: device)
            }
        }

        func close() {
            switch self {
            case .uhid(let t): t.close()
            case .socket(let t): t.close()
            }
        }

        var description: String {
            switch self {
            case .uhid: "uhid device (/dev/uhid)"
            case .socket(let t): "test socket \(t.path)"
            }
        }
    }

    private let running = Mutex<(transport: Transport, device: CTAPHIDDevice, reader: Task<Void, Never>)?>(nil)
    let choice: FIDOTransportChoice
    private let authenticator: CTAP2Authenticator
    private let logger: Logger
    /// Whom the authenticator serves (the seat's active user, or the kiosk user).
    private let users: FIDOUserSource
    /// Watches the seat's active user: a change re-creates the device (issue 33, item 6).
    private let watcher = Mutex<Task<Void, Never>?>(nil)
    /// How often the seat's active user is read (logind's state files: cheap).
    static let seatPollMs = 1000

    init(choice: FIDOTransportChoice, verifier: UserVerifier, pins: PINVerifier, store: CredentialStore, users: FIDOUserSource,
         logger: Logger) {
        self.choice = choice
        self.logger = logger
        self.users = users
        var configuration = CTAP2Authenticator.Configuration(aaguid: Self.aaguid)
        configuration.currentUser = { users.current()?.name }
        authenticator = CTAP2Authenticator(configuration: configuration, verifier: verifier, pins: pins, store: store)
    }

    /// Creates the device and serves it until `stop`; in seat mode, re-creates it whenever another
    /// user comes to the front of the seat, so that a hidraw descriptor opened during the previous
    /// session (or a token obtained then) serves nobody afterwards.
    func start() async throws {
        try await startDevice()
        guard case .seat = users.mode else { return }
        let first = users.current()?.uid
        let task = Task { [weak self] in
            var served = first
            while !Task.isCancelled {
                try? await Task.sleep(nanoseconds: UInt64(Self.seatPollMs) * 1_000_000)
                guard let self, !Task.isCancelled else { return }
                let now = self.users.current()?.uid
                if now != served {
                    served = now
                    await self.userChanged(to: now)
                }
            }
        }
        watcher.withLock { $0 = task }
    }

    /// Another user (or none) is in front of the seat: forget the previous user's state and
    /// re-create the device.
    func userChanged(to uid: UInt32?) async {
        logger.notice("FIDO2: the seat's active user changed (now \(uid.map { "uid \($0)" } ?? "nobody")): the device is re-created")
        await authenticator.userChanged()
        await stopDevice()
        do {
            try await startDevice()
        } catch {
            logger.error("FIDO2 device not re-created after the user change: \(error)")
        }
    }

    private func startDevice() async throws {
        let transport: Transport
        switch choice {
        case .uhid: transport = .uhid(try UHIDTransport())
        case .testSocket(let path): transport = .socket(try TestSocketTransport(path: path))
        }
        let device = CTAPHIDDevice(authenticator: authenticator) { transport.send($0) }
        await device.start()
        let reader = Task { await transport.run(device) }
        running.withLock { $0 = (transport, device, reader) }
        logger.info("FIDO2 authenticator up: \(transport.description)")
    }

    /// Removes the device (its hidraw node goes away) and ends any request in progress.
    func stop() async {
        watcher.withLock { task in
            task?.cancel()
            task = nil
        }
        await stopDevice()
    }

    private func stopDevice() async {
        guard let current = running.withLock({ state -> (transport: Transport, device: CTAPHIDDevice, reader: Task<Void, Never>)? in
            defer { state = nil }
            return state
        }) else { return }
        current.transport.close()
        await current.device.stop()
        await current.reader.value
        logger.info("FIDO2 authenticator removed")
    }
}
