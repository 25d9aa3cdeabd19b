import ArgumentParser
import BiometricClient
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `authctl keyring enable|disable|status` (issue 36, Docs/auth.md "The keyring"): the user's
/// login password, proven once to the root helper `biometricd-password` (PAM, as the password
/// proof), sealed there by the TPM with systemd-creds; a face or finger login on this machine's
/// login screen then hands it to pam_gnome_keyring / pam_kwallet5, and the login keyring opens.
/// The password goes to the root helper only: never to the daemon, never on the command line.
struct KeyringCommand: ParsableCommand {
    /// What --json prints.
    struct KeyringState: Encodable {
        var user: String
        var sealed: Bool?
        var removed: Bool?
    }

    static let configuration = CommandConfiguration(
        commandName: "keyring",
        abstract: "Let a face or finger login open your login keyring (GNOME Keyring, KWallet).",
        discussion: """
            enable asks your password once and has the root helper seal it with the TPM \
            (/var/lib/biometricd-keyring, root only). A face or finger login at the login screen then \
            opens your login keyring as a password login does. A password change through passwd \
            re-seals it; a change made another way makes it stale: the next face login says so \
            and removes it. Needs a TPM 2.0.
            """,
        subcommands: [Enable.self, Disable.self, Status.self])

    /// The login name of the caller (the default user).
    static func callerName() throws -> String {
        guard let pw = getpwuid(getuid()), let name = pw.pointee.pw_name else { throw ValidationError("your uid has no user name") }
        return String(cString: name)
    }

    static var helperPath: String {
        ProcessInfo.processInfo.environment["BIOMETRICD_PASSWORD_SOCKET"] ?? PasswordHelper.defaultPath
    }

    static func fail(_ reply: [String: Any]) -> ExitCode {
        let reason = reply["reason"] as? String ?? "error"
        let message = reply["message"] as? String ?? "refused"
        FileHandle.standardError.write(Data("authctl: \(message) (\(reason))\n".utf8))
        return ExitCode(reason == "internal" || reason == "keyring_failed" ? Exit.otherError : Exit.refused)
    }

    struct Enable: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Seal your login password for the keyring (asks it once).")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "The user (default: you; only root may name another).") var user: String?

        func run() throws {
            let user = try self.user ?? KeyringCommand.callerName()
            var password: String
            do {
                password = try SecretInput.read("Login password for \(user) (it opens the keyring): ")
            } catch {
                FileHandle.standardError.write(Data("authctl: no password given\n".utf8))
                throw ExitCode(Exit.refused)
            }
            defer { password = String(repeating: "\0", count: password.utf8.count) }
            let request = try JSONSerialization.data(withJSONObject: ["op": "keyring.seal", "user": user, "password": password])
            let reply = try PasswordHelper.exchange(path: KeyringCommand.helperPath, line: request)
            guard reply["ok"] as? Bool == true else { throw KeyringCommand.fail(reply) }
            try options.output(KeyringState(user: user, sealed: true)) {
                "Sealed by the TPM: a face or finger login on this machine's login screen now opens \(user)'s login keyring."
            }
        }
    }

    struct Disable: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Forget the sealed password (the keyring asks for it again).")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "The user (default: you; only root may name another).") var user: String?

        func run() throws {
            let user = try self.user ?? KeyringCommand.callerName()
            let request = try JSONSerialization.data(withJSONObject: ["op": "keyring.remove", "user": user])
            let reply = try PasswordHelper.exchange(path: KeyringCommand.helperPath, line: request)
            guard reply["ok"] as? Bool == true else { throw KeyringCommand.fail(reply) }
            let removed = reply["removed"] as? Bool == true
            try options.output(KeyringState(user: user, removed: removed)) {
                removed ? "Removed: a face or finger login no longer opens \(user)'s keyring." : "Nothing was sealed for \(user)."
            }
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Whether a sealed password is kept for the keyring.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "The user (default: you).") var user: String?

        func run() throws {
            let user = try self.user ?? KeyringCommand.callerName()
            let request = try JSONSerialization.data(withJSONObject: ["op": "keyring.status", "user": user])
            let reply = try PasswordHelper.exchange(path: KeyringCommand.helperPath, line: request)
            guard reply["ok"] as? Bool == true else { throw KeyringCommand.fail(reply) }
            let sealed = reply["sealed"] as? Bool == true
            try options.output(KeyringState(user: user, sealed: sealed)) {
                sealed ? "\(user): a sealed login password is kept; a face or finger login opens the keyring."
                       : "\(user): nothing sealed; the keyring asks for the password (authctl keyring enable)."
            }
        }
    }
}
