import ArgumentParser
import BiometricClient
import BiometricProtocol
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Reads a secret (a PIN) from the terminal without echo, or one line of standard input when it
/// is not a terminal (scripts). Never from the command line, where `ps` would show it.
enum SecretInput {
    static func read(_ prompt: String) throws -> String {
        if isatty(STDIN_FILENO) != 0 {
            FileHandle.standardError.write(Data(prompt.utf8))
            var saved = termios()
            tcgetattr(STDIN_FILENO, &saved)
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet)
            defer {
                tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved)
                FileHandle.standardError.write(Data("\n".utf8))
            }
            return Swift.readLine(strippingNewline: true) ?? ""
        }
        guard let line = Swift.readLine(strippingNewline: true) else {
            throw ValidationError("nothing on standard input (a PIN or password is read from there when it is not a terminal)")
        }
        return line
    }
}

struct Pin: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Set, check or reset a PIN (read from the terminal without echo, or from standard input).",
        subcommands: [Set.self, Verify.self, Reset.self])

    struct Set: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Set or change a PIN (the old one is asked for unless you are an administrator).")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "User name (default: you).") var user: String = currentUser()
        @Flag(help: "Ask for the current PIN first (needed to change your own PIN).") var change = false

        func run() throws {
            let old = change ? try SecretInput.read("Current PIN: ") : nil
            let pin = try SecretInput.read("New PIN: ")
            if isatty(STDIN_FILENO) != 0 {
                guard try SecretInput.read("Repeat the new PIN: ") == pin else { throw ValidationError("the PINs differ") }
            }
            let result: PINResult = try options.change(Method.pinSet, PINSetParams(user: user, pin: pin, oldPIN: old), user: user)
            try options.output(result) { result.ok ? "PIN set for \(user)" : "wrong current PIN" + Self.left(result.retriesLeft) }
            if !result.ok { throw ExitCode(Exit.refused) }
        }

        static func left(_ n: Int?) -> String { n.map { " (\($0) attempt\($0 == 1 ? "" : "s") left)" } ?? "" }
    }

    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Check a PIN. Exit 0 when right, 1 when wrong or locked.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "User name (default: you).") var user: String = currentUser()

        func run() throws {
            let pin = try SecretInput.read("PIN: ")
            let result: PINResult = try options.connect().call(Method.pinVerify, PINVerifyParams(user: user, pin: pin))
            try options.output(result) { result.ok ? "PIN correct" : "wrong PIN" + Set.left(result.retriesLeft) }
            if !result.ok { throw ExitCode(Exit.refused) }
        }
    }

    struct Reset: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Unlock a user's PIN and biometrics (admin); --remove deletes the PIN.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "User name.") var user: String
        @Flag(help: "Delete the PIN too.") var remove = false

        func run() throws {
            let result: PINResult = try options.connect().call(Method.pinReset, PINResetParams(user: user, removePIN: remove ? true : nil))
            try options.output(result) { remove ? "PIN of \(user) removed, lockout cleared" : "PIN and lockout of \(user) reset" }
        }
    }
}

struct Auth: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Authentication policy, lockout status and a guided login.",
        subcommands: [Policy.self, Status.self, Login.self, Unlock.self])

    struct Policy: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show or set which factors a user authenticates with.",
                                                        subcommands: [Show.self, Set.self], defaultSubcommand: Show.self)

        struct Show: ParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Show a user's policy.")
            @OptionGroup var options: GlobalOptions
            @Argument(help: "User name (default: you).") var user: String = currentUser()

            func run() throws {
                let result: PolicyResult = try options.connect().call(Method.authPolicyGet, UserParams(user: user))
                try options.output(result) { Self.describe(result) }
            }

            static func describe(_ p: PolicyResult) -> String {
                "\(p.user): \(p.factors.isEmpty ? "no factor" : p.factors.joined(separator: " → ")) (\(p.mode)), liveness \(p.requireLiveness ? "required" : "OFF")"
            }
        }

        struct Set: ParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Set the factors in order (face,finger,pin) or a mode (none, biometric, password).")
            @OptionGroup var options: GlobalOptions
            @Argument(help: "User name.") var user: String
            @Argument(help: "Comma-separated factors in order, or none|biometric|password.") var factors: String
            @Flag(help: "Turn liveness checks off (administrators only).") var noLiveness = false
            @Flag(help: "Turn liveness checks back on.") var liveness = false

            func run() throws {
                let mode = PolicyMode(rawValue: factors)
                let params = PolicySetParams(
                    user: user, factors: mode == nil ? factors.split(separator: ",").map(String.init) : nil,
                    mode: mode, requireLiveness: noLiveness ? false : liveness ? true : nil)
                let result: PolicyResult = try options.change(Method.authPolicySet, params, user: user)
                try options.output(result) { Show.describe(result) }
            }
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Lockout and PIN state of a user.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "User name (default: you).") var user: String = currentUser()

        func run() throws {
            let s: AuthStatusResult = try options.connect().call(Method.authStatus, UserParams(user: user))
            try options.output(s) {
                let lock = s.requiresPIN ? "locked until a correct PIN" : s.lockedOut ? "locked for \(s.retryAfterS ?? 0) s" : "not locked"
                let pin = !s.pinSet ? "no PIN" : s.pinLocked ? "PIN locked" : "PIN set" + Pin.Set.left(s.pinRetriesLeft)
                return "\(s.user): biometrics \(lock), \(s.biometricFailures) failure(s) in a row; \(pin)"
            }
        }
    }

    struct Unlock: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Clear a user's biometric lockout, or a camera's identification lockout (admin).")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "User name.") var user: String?
        @Option(help: "Camera id (from `authctl cameras`) whose 1:N lockout to clear.") var camera: String?

        func validate() throws {
            guard (user == nil) != (camera == nil) else { throw ValidationError("give a user name or --camera, not both") }
        }

        func run() throws {
            let r: OKResult = try options.connect().call(Method.authLockoutClear, LockoutClearParams(user: user, camera: camera))
            try options.output(r) { user.map { "lockout of \($0) cleared" } ?? "identification lockout of camera \(camera ?? "") cleared" }
        }
    }

    struct Login: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Authenticate a user with their policy's factors, in order (\"Look at the camera\", then \"Enter PIN\" if needed).")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "User name (default: you).") var user: String = currentUser()
        @Option(help: "Camera id, path or spec.") var camera: String?
        @Option(help: "Comma-separated factors to use (a subset of the policy).") var factors: String?
        @Option(help: "Give up after this many ms (1000-300000).") var timeout: Int?

        func run() throws {
            let factorList = factors.map { $0.split(separator: ",").map(String.init) }
            var result: AuthenticateResult = try options.live(Method.authAuthenticate, AuthenticateParams(
                user: user, factors: factorList, camera: camera, timeoutMs: timeout))
            // The PIN comes second, only when asked for: the biometric factors ran without it.
            // (With no terminal and nothing on standard input, there is no PIN to try.)
            if !result.ok, result.skipped.contains(where: { $0.reason == "no_pin_given" }),
               let pin = try? SecretInput.read("Enter PIN: ") {
                let pinResult: AuthenticateResult = try options.connect().call(
                    Method.authAuthenticate, AuthenticateParams(user: user, factors: ["pin"], pin: pin, timeoutMs: timeout))
                result = AuthenticateResult(ok: pinResult.ok, factor: pinResult.factor, user: user, score: nil,
                                            tried: result.tried + pinResult.tried,
                                            skipped: result.skipped.filter { $0.factor != "pin" } + pinResult.skipped,
                                            durationMs: result.durationMs + pinResult.durationMs)
            }
            try options.output(result) {
                if result.ok { return "authenticated \(user) by \(result.factor ?? "?") in \(result.durationMs) ms" }
                let tried = result.tried.map { "  \($0.name): \($0.message)" }
                let skipped = result.skipped.map { "  \($0.factor): skipped (\($0.reason.replacingOccurrences(of: "_", with: " ")))" }
                return (["not authenticated"] + tried + skipped).joined(separator: "\n")
            }
            if !result.ok { throw ExitCode(Exit.refused) }
        }
    }
}

struct Key: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Biometric-bound signing keys (ECDSA P-256): register, sign, list, deregister.",
        subcommands: [Register.self, Sign.self, List.self, Deregister.self])

    struct Register: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a key for an app; prints the public key (PEM) and its handle.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "User name.") var user: String
        @Option(help: "The app (relying party) id, e.g. https://example.com.") var appID: String
        @Option(help: "Authenticator AAID, \"VVVV#MMMM\".") var aaid: String = "4242#0001"

        func run() throws {
            let key: KeyInfo = try options.change(Method.keyRegister, KeyRegisterParams(user: user, appID: appID, aaid: aaid), user: user)
            try options.output(key) { "key_handle \(key.keyHandle)\n\(key.publicKey)" }
        }
    }

    struct Sign: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Sign a challenge after the user passes their policy's factors.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "User name.") var user: String
        // A handle is base64url, so it may begin with "-": take the next word whatever it looks like.
        @Option(parsing: .unconditional, help: "Key handle from key register.") var keyHandle: String
        @Option(help: "The challenge, base64.") var challenge: String
        @Option(help: "Camera id, path or spec.") var camera: String?
        @Flag(help: "Read a PIN first (for a policy that has the pin factor).") var pin = false

        func run() throws {
            let secret = pin ? try SecretInput.read("PIN: ") : nil
            let result: KeySignResult = try options.live(Method.keySign, KeySignParams(
                user: user, keyHandle: keyHandle, challenge: challenge, pin: secret, camera: camera))
            try options.output(result) {
                guard result.ok else { return "not signed: " + result.tried.map { "\($0.name): \($0.message)" }.joined(separator: "; ") }
                return "signature \(result.signature ?? "")\nauthenticator_data \(result.authenticatorData ?? "")\ncounter \(result.counter ?? 0)"
            }
            if !result.ok { throw ExitCode(Exit.refused) }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List a user's keys.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "User name (default: you).") var user: String = currentUser()

        func run() throws {
            let result: KeyListResult = try options.connect().call(Method.keyList, UserParams(user: user))
            try options.output(result) {
                let keys = result.keys.map { "\($0.keyHandle)  \($0.aaid)  \($0.appID)  counter \($0.counter)" }
                // The FIDO2 authenticator's passkeys, with how the user was verified when each was made.
                let fido = result.fidoCredentials.map {
                    "fido  \($0.rpID)  \($0.userName ?? "-")  verified by \($0.verifiedBy)  counter \($0.counter)"
                }
                return keys.isEmpty && fido.isEmpty ? "no keys" : (keys + fido).joined(separator: "\n")
            }
        }
    }

    struct Deregister: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove one key (--key-handle) or all of a user's keys.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "User name.") var user: String
        @Option(parsing: .unconditional, help: "Key handle (default: all of the user's keys).") var keyHandle: String?

        func run() throws {
            let result: RemovedResult = try options.connect().call(Method.keyDeregister, KeyDeregisterParams(user: user, keyHandle: keyHandle))
            try options.output(result) { "removed \(result.removed) key(s) of \(user)" }
        }
    }
}
