import ArgumentParser
import BiometricClient
import BiometricProtocol
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Changes to a user's factors (enrol, PIN, policy, keys, delete) need a fresh authentication of
/// that user on the same connection (issue 20). authctl makes the change; when the daemon answers
/// `reverification_required`, it authenticates the user on that connection — the user's own
/// factors (auth.authenticate: face, finger, PIN), or, when they have none yet, the account
/// password through the root helper `biometricd-password` — then makes the change again, once.
extension GlobalOptions {
    func change<P: Encodable, R: Decodable>(_ method: String, _ params: P, user: String, live: Bool = false,
                                            preview: String? = nil) throws -> R {
        let client = try connect()
        let renderer = live ? ProgressRenderer(json: json) : nil
        renderer?.previewFile = preview.map(PreviewFile.init)
        defer { renderer?.finish() }
        func attempt() throws -> R {
            try client.call(method, params, as: R.self) { renderer?.render($0) }
        }
        do {
            return try attempt()
        } catch ClientError.rpc(let error) where error.data?["reverification_required"] == .bool(true) {
            try reverify(client, user: user)
            return try attempt()
        }
    }

    private func say(_ line: String) {
        if !json { FileHandle.standardError.write(Data((line + "\n").utf8)) }
    }

    /// Authenticates `user` on `client`'s connection: their factors first, the account password
    /// when they have no factor (or none passed).
    func reverify(_ client: BiometricClient, user: String) throws {
        say("Changing \(user)'s sign-in methods needs you to confirm it is you.")
        let status: UserRecord? = try? client.call(Method.userGet, UserParams(user: user))
        let hasFactor = status.map { $0.faceTemplates > 0 || $0.fingerTemplates > 0 || $0.pinSet } ?? false
        if hasFactor {
            let renderer = ProgressRenderer(json: json)
            // A PIN is asked for only when it is the user's one factor; a face or finger is tried first.
            let biometric = (status?.faceTemplates ?? 0) > 0 || (status?.fingerTemplates ?? 0) > 0
            let pin = biometric ? nil : try? SecretInput.read("PIN for \(user): ")
            let result: AuthenticateResult? = try? client.call(Method.authAuthenticate, AuthenticateParams(user: user, pin: pin)) {
                renderer.render($0)
            }
            renderer.finish()
            if result?.ok == true { return }
            say("That did not confirm it; your account password will do.")
        }
        try provePassword(client, user: user)
    }

    /// auth.password.begin on this connection, then the password to the root helper, which runs
    /// PAM and tells the daemon. The password goes to the helper only, never to the daemon.
    func provePassword(_ client: BiometricClient, user: String) throws {
        let begun: PasswordBeginResult = try client.call(Method.authPasswordBegin, PasswordBeginParams(user: user))
        var password: String
        do {
            password = try SecretInput.read("Password for \(user): ")
        } catch {
            FileHandle.standardError.write(Data("authctl: cannot confirm it is you: no password given\n".utf8))
            throw ExitCode(Exit.refused)
        }
        defer { password = String(repeating: "\0", count: password.utf8.count) }
        let path = ProcessInfo.processInfo.environment["BIOMETRICD_PASSWORD_SOCKET"] ?? PasswordHelper.defaultPath
        let request = try JSONSerialization.data(withJSONObject: ["user": user, "nonce": begun.nonce, "password": password])
        let reply = try PasswordHelper.exchange(path: path, line: request)
        guard reply["ok"] as? Bool == true else {
            let reason = reply["reason"] as? String ?? "error"
            let message = reply["message"] as? String ?? "the password was not accepted"
            FileHandle.standardError.write(Data("authctl: \(message) (\(reason))\n".utf8))
            throw ExitCode(reason == "daemon_unreachable" || reason == "internal" ? Exit.otherError : Exit.refused)
        }
    }
}

/// glibc's `struct ucred` (not visible to Swift without _GNU_SOURCE), as SO_PEERCRED fills it.
struct PeerCredentials {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
}

/// One request to the root password helper's socket: a JSON line out, a JSON line back.
enum PasswordHelper {
    /// In a folder of its own that systemd makes for the socket unit, owned by root: the daemon's
    /// user owns /run/biometricd and could put anything there (issue 33, item 8).
    static let defaultPath = "/run/biometricd-password/password.sock"

    /// Why `path` may not be where the root helper answers, or nil when it may: the socket itself
    /// (not a link) and its folder must belong to root, and nobody else may replace the socket
    /// (the folder not writable by group or others, unless sticky). Under socket activation the
    /// peer credentials name systemd, which listened, whatever answers; so the path, which only
    /// root can have made, is what proves the answerer. The same rule as the PAM module's.
    static func untrusted(_ path: String) -> String? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return "it does not exist" }
        guard st.st_mode & S_IFMT == S_IFSOCK else { return "it is not a socket (a link, or a file)" }
        guard st.st_uid == 0 else { return "it belongs to uid \(st.st_uid), not root" }
        let folder = (path as NSString).deletingLastPathComponent
        guard stat(folder.isEmpty ? "." : folder, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else { return "its folder cannot be read" }
        guard st.st_uid == 0 else { return "its folder belongs to uid \(st.st_uid), not root" }
        if st.st_mode & (S_IWGRP | S_IWOTH) != 0 && st.st_mode & S_ISVTX == 0 { return "its folder is writable by others" }
        return nil
    }

    static func exchange(path: String, line: Data, quiet: Bool = false) throws -> [String: Any] {
        func say(_ text: String) { if !quiet { FileHandle.standardError.write(Data(text.utf8)) } }
        if let why = untrusted(path) {
            say("authctl: \(path) is not the root password helper (\(why)); no password sent\n")
            throw ExitCode(why == "it does not exist" ? Exit.unreachable : Exit.refused)
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ValidationError("cannot create a socket") }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw ValidationError("password helper socket path too long") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            say("authctl: the password helper is not reachable at \(path) (is biometricd-password.socket enabled?)\n")
            throw ExitCode(Exit.unreachable)
        }
        // And the listener must be root too (the helper, or systemd for it): a second check.
        var credentials = PeerCredentials()
        var size = socklen_t(MemoryLayout<PeerCredentials>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &size) == 0, credentials.uid == 0 else {
            say("authctl: \(path) is not the root password helper (its peer is uid \(credentials.uid)); no password sent\n")
            throw ExitCode(Exit.refused)
        }
        var out = line + Data("\n".utf8)
        defer { out.resetBytes(in: 0..<out.count) }
        var sent = 0
        while sent < out.count {
            let n = out.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw ExitCode(Exit.otherError) }
            sent += n
        }
        var reply = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !reply.contains(UInt8(ascii: "\n")) && reply.count < 65536 {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            reply.append(contentsOf: buffer[0..<n])
        }
        guard let object = try? JSONSerialization.jsonObject(with: reply.prefix { $0 != UInt8(ascii: "\n") }) as? [String: Any] else {
            throw ValidationError("the password helper gave no answer")
        }
        return object
    }
}
