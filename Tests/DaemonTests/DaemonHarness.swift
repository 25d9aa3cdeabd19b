import BiometricClient
import BiometricProtocol
import CVisionReference
import Foundation
import XCTest
import TestRequirements

/// Where `swift build` put the executables (next to the test bundle).
let productsDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path
let sharedData = repositoryRoot + "/../shared/data"
let lfw = sharedData + "/faces/lfw/images"

/// A real `biometricd` process in unprivileged-mode layout (temp socket, state and models), on
/// replay cameras. Stopped with SIGTERM when the test ends.
final class DaemonProcess {
    let root: String
    let socket: String
    let stateDir: String
    let process = Process()
    let logPath: String

    /// Removes the folder when the object goes (a restart test hands it to the next daemon).
    var removeFiles = true

    /// `root` reuses a stopped daemon's folder (state, key) for a restart; `user` runs the daemon
    /// as that user when the tests run as root (test hooks are refused by a root daemon);
    /// `environment` is added to the test's own (e.g. INVOCATION_ID: a production instance).
    /// A daemon started as root (CI) is a production instance, whose replay cameras are the
    /// virtual devices they are: unless the test sets `refuse_virtual_cameras` itself (the
    /// virtual-camera tests do), the harness trusts them (`refuse_virtual_cameras=no`), so that
    /// clip and photo tests exercise the login paths as on a real camera.
    init(cameras: [String], extraArguments: [String] = [], root existing: String? = nil, user: String? = nil,
         environment: [String: String] = [:], prepare: ((String) throws -> Void)? = nil) throws {
        let binary = productsDirectory + "/biometricd"
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw missing("\(binary) missing: run `swift build` before `swift test`")
        }
        root = existing ?? "/tmp/bmd-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o755])
        socket = root + "/biometricd.sock"
        stateDir = root + "/state"
        logPath = root + "/daemon.log"
        try prepare?(stateDir)
        FileManager.default.createFile(atPath: logPath, contents: nil)
        let trustReplay = extraArguments.contains { $0.hasPrefix("refuse_virtual_cameras=") || $0.hasPrefix("face_liveness_refuse_virtual=") }
            ? [] : ["--set", "refuse_virtual_cameras=no"]
        let arguments = ["--socket", socket, "--state-dir", stateDir, "--models", root + "/no-models",
                         "--log-level", "debug"] + cameras.flatMap { ["--camera", $0] } + trustReplay + extraArguments
        if let user, geteuid() == 0 {
            _ = try runProgram("/bin/chown", ["-R", user, root])
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid=\(user)", "--regid=\(user == "nobody" ? "nogroup" : user)", "--clear-groups", "--", binary] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = arguments
        }
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.standardError = FileHandle(forWritingAtPath: logPath)
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            if (try? BiometricClient(socketPath: socket)) != nil { return }
            guard process.isRunning else { break }
            usleep(20_000)
        }
        throw DaemonFailed(log: log)
    }

    struct DaemonFailed: Error, CustomStringConvertible {
        let log: String
        var description: String { "daemon did not start:\n\(log)" }
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    func client() throws -> BiometricClient { try BiometricClient(socketPath: socket) }

    /// SIGTERM and wait; returns the exit status.
    @discardableResult
    func stop() -> Int32 {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        return process.terminationStatus
    }

    /// SIGKILL: no clean shutdown, no checkpoint.
    func kill9() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    deinit {
        stop()
        if removeFiles { try? FileManager.default.removeItem(atPath: root) }
    }
}

/// A raw connection for protocol-level checks: send bytes, read lines with a timeout.
final class RawConnection: @unchecked Sendable {  // tests use one from one thread at a time
    let fd: Int32
    private var buffer = [UInt8]()

    init(_ path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let bytes = Array(path.utf8)
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard rc == 0 else { throw POSIXError(.ECONNREFUSED) }
    }

    deinit { close(fd) }

    func send(_ text: String) { send(Data(text.utf8)) }

    func send(_ data: Data) {
        var offset = 0
        while offset < data.count {
            let n = data.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            offset += n
        }
    }

    /// The next line as JSON, or nil on timeout / EOF.
    func read(timeout: Double = 10) -> JSONValue? {
        guard let line = readLine(timeout: timeout) else { return nil }
        return try? JSONDecoder().decode(JSONValue.self, from: line)
    }

    func readLine(timeout: Double = 10) -> Data? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let nl = buffer.firstIndex(of: 10) {
                let line = Data(buffer[..<nl])
                buffer.removeSubrange(...nl)
                return line
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return nil }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(left * 1000)) > 0 else { return nil }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = Glibc.read(fd, &chunk, chunk.count)
            guard n > 0 else { return nil }
            buffer.append(contentsOf: chunk[..<n])
        }
    }

    /// True when the daemon closed the connection (EOF) within `timeout`.
    func closedByPeer(timeout: Double = 5) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while deadline.timeIntervalSinceNow > 0 {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 100) >= 0 else { return true }
            if p.revents != 0 {
                var chunk = [UInt8](repeating: 0, count: 65536)
                let n = Glibc.read(fd, &chunk, chunk.count)
                if n <= 0 { return true }
            }
        }
        return false
    }
}

/// Runs a program, returning its exit status and output.
@discardableResult
func runProgram(_ executable: String, _ arguments: [String], environment: [String: String]? = nil, input: String? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    let stdin = Pipe()
    process.standardInput = input == nil ? FileHandle.nullDevice : stdin
    try process.run()
    if let input {
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try? stdin.fileHandleForWriting.close()
    }
    let stdout = out.fileHandleForReading.readDataToEndOfFile()
    let stderr = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
}

func rpcError(_ body: () throws -> Void) -> RPCError? {
    do {
        try body()
        return nil
    } catch ClientError.rpc(let e) {
        return e
    } catch {
        XCTFail("expected an RPC error, got \(error)")
        return nil
    }
}

/// A replay-camera frame file: packed BGR pixels as an uncompressed BMP (OpenCV's imencode),
/// because a test's replay camera decoding PNGs spends more time in zlib than the daemon spends on
/// the frames (finger-scene's `--format bmp` writes its frames the same way).
func bmpFile(bgr: UnsafeBufferPointer<UInt8>, width: Int, height: Int) throws -> Data {
    var length = 0
    guard let bytes = cvref_imencode(".bmp", bgr.baseAddress, Int32(width), Int32(height), 3, 0, &length) else {
        throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "BMP encoding failed"])
    }
    defer { cvref_free(bytes) }
    return Data(bytes: bytes, count: length)
}
