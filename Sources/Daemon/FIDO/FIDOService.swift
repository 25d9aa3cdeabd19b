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

    init(choice: FIDOTransportChoice, verifier: UserVerifier, pins: PINVerifier, store: CredentialStore, logger: Logger) {
        self.choice = choice
        self.logger = logger
        authenticator = CTAP2Authenticator(configuration: .init(aaguid: Self.aaguid), verifier: verifier, pins: pins, store: store)
    }

    /// Creates the device and serves it until `stop`.
    func start() async throws {
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
