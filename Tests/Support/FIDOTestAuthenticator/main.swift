// fido-test-authenticator: the CTAP2 authenticator over the test socket transport, with a user
// verifier the test controls, for the python-fido2 tests (Tests/fido). Not installed; refuses to
// run under systemd (FIDOTransportChoice).
//
//   fido-test-authenticator --socket PATH --control FILE [--pin PIN] [--pin-retries N]
//   fido-test-authenticator --uhid --control FILE [...]     (a real device through /dev/uhid, for
//                                                            the VM; clients find its hidraw node)
//
// The control file holds the verifier's next answers, re-read on every prompt, e.g. "uv=face up=present":
//   uv = face | finger | deny | wait | timeout | blocked      up = present | deny | wait
// "wait" blocks until the host cancels (CTAPHID_CANCEL), then answers "cancelled".
import BiometricFIDO
import Foundation

struct Options {
    var socket: String?
    var uhid = false
    var control: String?
    var pin: String?
    var pinRetries = 8

    init(_ arguments: [String]) {
        var it = arguments.dropFirst().makeIterator()
        while let flag = it.next() {
            switch flag {
            case "--socket": socket = it.next()
            case "--uhid": uhid = true
            case "--control": control = it.next()
            case "--pin": pin = it.next()
            case "--pin-retries": pinRetries = Int(it.next() ?? "") ?? pinRetries
            default: fail("unknown argument \(flag)")
            }
        }
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("fido-test-authenticator: \(message)\n".utf8))
    exit(2)
}

/// Reads the control file at each prompt.
struct ControlledVerifier: UserVerifier {
    let path: String

    private func answer(_ key: String) -> String {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        for word in text.split(whereSeparator: { $0 == " " || $0 == "\n" }) {
            let parts = word.split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0] == key { return String(parts[1]) }
        }
        return key == "uv" ? "face" : "present"
    }

    private func waitForCancel() async -> UserCheckOutcome {
        for _ in 0..<300 {
            if Task.isCancelled { return .cancelled }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return .timedOut
    }

    func verifyUser(rpID: String?) async -> UserCheckOutcome {
        switch answer("uv") {
        case "face": return .verified(.face)
        case "finger": return .verified(.finger)
        case "wait": return await waitForCancel()
        case "timeout": return .timedOut
        case "blocked": return .blocked
        default: return .denied
        }
    }

    func confirmPresence(rpID: String?) async -> UserCheckOutcome {
        switch answer("up") {
        case "present": return .present
        case "wait": return await waitForCancel()
        default: return .denied
        }
    }

    func uvRetries() async -> Int { 5 }
}

let options = Options(CommandLine.arguments)
guard let control = options.control, (options.socket != nil) != options.uhid else {
    fail("--control and one of --socket PATH or --uhid are required")
}
let choice: FIDOTransportChoice
do {
    choice = try FIDOTransportChoice.decide(
        testSocketPath: options.socket, systemService: FIDOTransportChoice.startedBySystemd(ProcessInfo.processInfo.environment))
} catch {
    fail("the test socket transport is refused under systemd")
}

// A fixed test AAGUID (not a registered one).
let aaguid: [UInt8] = Array("biometricd-test!".utf8)
let authenticator = CTAP2Authenticator(
    configuration: .init(aaguid: aaguid), verifier: ControlledVerifier(path: control),
    pins: InMemoryPINVerifier(pin: options.pin, maxRetries: options.pinRetries), store: InMemoryCredentialStore(capacity: 32))
signal(SIGPIPE, SIG_IGN)
switch choice {
case .testSocket(let path):
    let transport: TestSocketTransport
    do { transport = try TestSocketTransport(path: path) } catch { fail("cannot listen at \(path): \(error)") }
    let device = CTAPHIDDevice(authenticator: authenticator) { transport.send($0) }
    await device.start()
    FileHandle.standardOutput.write(Data("ready \(path)\n".utf8))
    await transport.run(device: device)
case .uhid:
    let transport: UHIDTransport
    do { transport = try UHIDTransport() } catch { fail("cannot create the uhid device: \(error)") }
    let device = CTAPHIDDevice(authenticator: authenticator) { transport.send($0) }
    await device.start()
    // SIGTERM destroys the device cleanly (its hidraw node goes away).
    signal(SIGTERM, SIG_IGN)
    let term = DispatchSource.makeSignalSource(signal: SIGTERM)
    term.setEventHandler { transport.close() }
    term.resume()
    FileHandle.standardOutput.write(Data("ready uhid\n".utf8))
    await transport.run(device: device)
}
