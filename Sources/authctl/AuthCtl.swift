import ArgumentParser
import BiometricClient
import BiometricProtocol
import Foundation

/// Exit codes of SPEC §7.
enum Exit {
    static let success: Int32 = 0
    static let refused: Int32 = 1
    static let usage: Int32 = 2
    static let unreachable: Int32 = 3
    static let otherError: Int32 = 4
}

struct GlobalOptions: ParsableArguments {
    @Option(help: "Daemon socket (default $BIOMETRICD_SOCKET or /run/biometricd/biometricd.sock).")
    var socket: String?

    @Flag(help: "Machine-readable output: one JSON object per event line, then the result.")
    var json = false

    func connect() throws -> BiometricClient {
        try BiometricClient(socketPath: socket ?? BiometricClient.defaultSocketPath)
    }

    /// Runs a long call with live guidance on the terminal (or JSON event lines with --json);
    /// with `preview`, the latest preview image is kept in that file.
    func live<P: Encodable, R: Decodable>(_ method: String, _ params: P, preview: String? = nil) throws -> R {
        let renderer = ProgressRenderer(json: json)
        renderer.previewFile = preview.map(PreviewFile.init)
        defer { renderer.finish() }
        return try connect().call(method, params, as: R.self) { renderer.render($0) }
    }

    /// Prints `value` as JSON, or `text` for people.
    func output<T: Encodable>(_ value: T, text: () -> String) throws {
        if json {
            let data = try JSONCoding.encoder.encode(value)
            print(String(decoding: data, as: UTF8.self))
        } else {
            print(text())
        }
    }
}

/// A session's live preview (issue 25): downscaled JPEG frames in its progress events.
struct PreviewOptions: ParsableArguments {
    @Option(name: .customLong("preview"), help: ArgumentHelp(
        "Keep the latest preview frame (JPEG) in this file, replaced atomically, for a greeter or kiosk to show.",
        valueName: "file"))
    var file: String?
    @Option(name: .customLong("preview-fps"), help: "Preview frames per second (1-15, default 5).") var fps: Int?
    @Option(name: .customLong("preview-width"), help: "Preview width in pixels (64-1280, default 320).") var width: Int?

    /// The session's `preview` param: on when any of the options is given.
    var request: PreviewRequest? { file == nil && fps == nil && width == nil ? nil : PreviewRequest(fps: fps, width: width) }
}

/// prctl(2) (Glibc's module map does not carry <sys/prctl.h>); its four further arguments are
/// unsigned longs, so this non-variadic declaration has prctl's calling convention on Linux.
@_silgen_name("prctl")
private func prctl(_ option: Int32, _ arg2: UInt, _ arg3: UInt, _ arg4: UInt, _ arg5: UInt) -> Int32

/// PR_SET_DUMPABLE 0: no core dump, and other processes of the same uid may not ptrace this one
/// or read its memory (/proc/PID/mem).
func setNotDumpable() -> Bool {
    let prSetDumpable: Int32 = 4
    return prctl(prSetDumpable, 0, 0, 0, 0) == 0
}

@main
struct AuthCtl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "authctl",
        abstract: "Command-line client of biometricd.",
        discussion: "Exit codes: 0 success or match, 1 no match or refused, 2 usage, 3 daemon unreachable, 4 other error.",
        version: "0.1.0",
        subcommands: [Status.self, DoctorCommand.self, Cameras.self, CameraGroup.self, Snapshot.self, Users.self, User.self, Face.self, Finger.self, Pin.self, Auth.self, Key.self, KeyringCommand.self])

    static func main() {
        // PINs and passwords pass through this process: no core dump, no ptrace by another
        // process of the same uid (issue 33, item 9). Harmless where it fails.
        _ = setNotDumpable()
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch let error as ClientError {
            FileHandle.standardError.write(Data("authctl: \(error)\n".utf8))
            Foundation.exit(exitCode(for: error))
        } catch {
            let code = exitCode(for: error)
            if code == .validationFailure {
                FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
                Foundation.exit(Exit.usage)
            }
            exit(withError: error)
        }
    }

    static func exitCode(for error: ClientError) -> Int32 {
        switch error {
        case .unreachable: return Exit.unreachable
        case .protocolViolation: return Exit.otherError
        case .rpc(let rpc):
            switch rpc.errorReason {
            case .permissionDenied?, .lockedOut?, .pinLocked?, .pinFormat?, .pinNotSet?, .spoofDetected?, .blinkTimeout?, .noFaceRegistered?,
                 .noFingerRegistered?, .badCapture?: return Exit.refused
            default: return rpc.code == RPCError.invalidParamsCode ? Exit.usage : Exit.otherError
            }
        }
    }
}

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show whether the daemon runs, its cameras and models.")
    @OptionGroup var options: GlobalOptions

    func run() throws {
        let status: DaemonStatus = try options.connect().call(Method.daemonStatus)
        try options.output(status) {
            var lines = ["biometricd \(status.version), up \(Int(status.uptimeS)) s, pid \(status.pid)\(status.privileged || status.socketActivated ? "" : " (unprivileged)")",
                         "cameras: \(status.cameras.isEmpty ? "none" : status.cameras.joined(separator: ", "))",
                         "models: \(status.models.loaded.count) loaded" + (status.models.missing.isEmpty ? "" : ", missing \(status.models.missing.joined(separator: ", "))")
                            + (status.models.corrupt.isEmpty ? "" : ", CORRUPT \(status.models.corrupt.joined(separator: ", "))"),
                         "users: \(status.users), sessions: \(status.activeSessions), clients: \(status.clients)"]
            if status.socketActivated { lines.append("socket: activated by systemd") }
            if let store = status.store {
                lines.append(store.state == "open"
                    ? "templates: sealed; key \(Status.protectionText(store))"
                    : "STORE REFUSED (\(store.state)): \(store.message ?? "")")
            }
            return lines.joined(separator: "\n")
        }
    }
}

extension Status {
    /// One phrase for daemon.status `store.protection` (older daemons send only `store.key`).
    static func protectionText(_ store: StoreStatus) -> String {
        switch store.protection ?? store.key {
        case "tpm2": "sealed by the TPM 2.0 and the host key (systemd-creds)"
        case "host": "sealed by the host key (systemd-creds; no TPM)"
        case "credential": "from a systemd credential"
        case "file": "in a 0600 file (no systemd credentials)"
        default: "from \(store.protection ?? store.key ?? "an unknown source")"
        }
    }
}

struct Cameras: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List cameras; --watch follows hot-plug.")
    @OptionGroup var options: GlobalOptions
    @Flag(help: "Keep running and show cameras as they are plugged in or removed.")
    var watch = false

    func run() throws {
        let client = try options.connect()
        let cameras: [CameraInfo]
        let renderer = ProgressRenderer(json: options.json, isTerminal: false)
        if watch {
            cameras = try client.call(Method.cameraWatch, as: WatchResult.self).cameras
        } else {
            cameras = try client.call(Method.cameraList)
        }
        try options.output(cameras) {
            guard !cameras.isEmpty else { return "no cameras" }
            return cameras.map { c in
                let modes = Dictionary(grouping: c.formats, by: \.fourcc).sorted { $0.key < $1.key }
                    .map { "\($0.key) " + $0.value.map { "\($0.width)x\($0.height)@\(Int($0.fps))" }.joined(separator: " ") }
                let physical = (c.device.map { ", device \($0)" } ?? "") + (c.sibling.map { ", \(c.ir ? "RGB" : "IR") sibling \($0)" } ?? "")
                return "\(c.id)\(c.busy ? " [busy]" : "")\(c.ir ? " [IR]" : "")\(c.virtual == true ? " [virtual]" : "")  \(c.name)\n  path \(c.path), driver \(c.driver), bus \(c.bus)\(physical)\n  " + modes.joined(separator: "\n  ")
            }.joined(separator: "\n")
        }
        guard watch else { return }
        while true {
            let message = try client.readMessage()
            if message["method"] == "event", let event = message["params"] { renderer.render(event) }
        }
    }
}

struct Snapshot: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Save a camera frame as PNG (admin).")
    @OptionGroup var options: GlobalOptions
    @Option(name: .shortAndLong, help: "PNG file to write.") var output: String
    @Option(help: "Camera id, path or spec (default: the first free one).") var camera: String?
    @Option(help: "Frames to skip first while exposure settles.") var warmup: Int?

    func run() throws {
        let result: SnapshotResult = try options.connect().call(
            Method.cameraSnapshot, SnapshotParams(camera: camera, warmupFrames: warmup))
        guard let png = Data(base64Encoded: result.image) else { throw ClientError.protocolViolation("image is not base64") }
        try png.write(to: URL(fileURLWithPath: output))
        var summary = result
        summary.image = output
        try options.output(summary) { "\(output): \(result.width)x\(result.height) from \(result.camera)\(result.ir ? " (IR)" : "")" }
    }
}

struct Users: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List enrolled users (admin).")
    @OptionGroup var options: GlobalOptions

    func run() throws {
        let list: UserList = try options.connect().call(Method.userList)
        try options.output(list) {
            list.users.isEmpty ? "no users" : list.users.map {
                "\($0.name)  faces \($0.faceTemplates), fingers \($0.fingerTemplates)\($0.pinSet ? ", PIN" : "")  \($0.uuid)"
            }.joined(separator: "\n")
        }
    }
}

struct User: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show or delete one user.", subcommands: [Show.self, Delete.self])

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show a user's templates and policy.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "User name.") var name: String

        func run() throws {
            let user: UserRecord = try options.connect().call(Method.userGet, UserParams(user: name))
            try options.output(user) {
                "\(user.name) (\(user.uuid)), enrolled \(user.created)\nface templates: \(user.faceTemplates)\nfinger templates: \(user.fingerTemplates)\nPIN: \(user.pinSet ? "set" : "not set")\npolicy: \(user.policy.joined(separator: " → "))"
            }
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a user and all their templates.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "User name.") var name: String

        func run() throws {
            let result: DeleteResult = try options.change(Method.userDelete, UserParams(user: name), user: name)
            try options.output(result) { "deleted \(name) (\(result.templatesRemoved) templates)" }
        }
    }
}
