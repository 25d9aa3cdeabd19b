import BiometricClient
import BiometricProtocol
import BiometricStore
import Foundation
import XCTest
import TestRequirements

/// SPEC §3 with real uids: a daemon started by root, `authctl` run as `nobody` via runuser.
final class AccessControlTests: XCTestCase {
    var daemon: DaemonProcess!
    let authctl = productsDirectory + "/authctl"

    override func setUpWithError() throws {
        guard geteuid() == 0 else { throw missing("needs root to run clients as another uid (CI runs as root)") }
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser") else { throw missing("runuser missing") }
        // An enrolled user "alice" with a template, written before the daemon starts.
        daemon = try DaemonProcess(cameras: ["replay:\(lfw)/Aaron_Eckhart?fps=20&loop=true"]) { state in
            let store = try Store(directory: state, key: try TemplateKey.load(stateDirectory: state, credentialsDirectory: nil))
            try store.templates.add(user: "alice", modality: .face, quality: 80, payload: Data(repeating: 1, count: 64))
            try store.templates.add(user: "alice", modality: .finger, position: "right_index", quality: 70,
                                  payload: Data(repeating: 2, count: 64))
        }
    }

    override func tearDown() {
        daemon = nil
    }

    private func authctlArgs(_ arguments: [String]) -> [String] {
        // Options belong to the (innermost) subcommand: append them.
        arguments + ["--socket", daemon.socket]
    }

    private func asNobody(_ arguments: String...) throws -> (status: Int32, stdout: String, stderr: String) {
        try runProgram("/usr/sbin/runuser", ["-u", "nobody", "--", authctl] + authctlArgs(arguments))
    }

    private func asRoot(_ arguments: String...) throws -> (status: Int32, stdout: String, stderr: String) {
        try runProgram(authctl, authctlArgs(arguments))
    }

    func testNobodyMayReadStatusButNotAdminMethods() throws {
        // The socket appears already open to everyone (bound under a staging name, then renamed):
        // a non-root client that races the daemon's start is never refused by the file's mode.
        let mode = (try FileManager.default.attributesOfItem(atPath: daemon.socket)[.posixPermissions] as? Int) ?? 0
        XCTAssertEqual(mode & 0o777, 0o666)
        XCTAssertFalse(FileManager.default.fileExists(atPath: daemon.socket + ".binding"))
        XCTAssertEqual(try asNobody("status").status, 0)
        XCTAssertEqual(try asNobody("cameras").status, 0)
        let users = try asNobody("users")
        XCTAssertEqual(users.status, 1, "permission_denied exits 1")
        XCTAssertTrue(users.stderr.contains("administrator"), users.stderr)
        let snapshot = try asNobody("snapshot", "-o", "/tmp/nobody-snap.png")
        XCTAssertEqual(snapshot.status, 1)
        XCTAssertFalse(FileManager.default.fileExists(atPath: "/tmp/nobody-snap.png"))
    }

    func testNobodyCannotTouchAnotherUser() throws {
        XCTAssertEqual(try asNobody("user", "show", "alice").status, 1)
        let delete = try asNobody("user", "delete", "alice")
        XCTAssertEqual(delete.status, 1)
        XCTAssertTrue(delete.stderr.contains("may not delete"), delete.stderr)
        // Nothing changed: alice and her template are still there.
        let alice = try asRoot("user", "show", "alice", "--json")
        XCTAssertEqual(alice.status, 0, alice.stderr)
        let record = try JSONDecoder().decode(UserRecord.self, from: Data(alice.stdout.utf8))
        XCTAssertEqual(record.faceTemplates, 1)
        // nobody may ask about itself: it is simply not enrolled.
        XCTAssertEqual(try asNobody("user", "show", "nobody").status, 4)
    }

    /// Issue 20: a caller's own threshold was a lockout bypass (threshold 0 matched any face and
    /// reset the failure count). A non-admin may raise it, never lower it or skip liveness; a
    /// refusal changes nothing.
    func testNobodyCannotLowerTheThresholdOrSkipLiveness() throws {
        let before = try asRoot("auth", "status", "alice", "--json")
        let low = try asNobody("face", "verify", "nobody", "--threshold", "0")
        XCTAssertEqual(low.status, 1, low.stderr)
        XCTAssertTrue(low.stderr.contains("below 48"), low.stderr)
        let image = try asNobody("face", "verify", "nobody", "--no-liveness")
        XCTAssertEqual(image.status, 1, image.stderr)
        XCTAssertTrue(image.stderr.contains("needs an administrator"), image.stderr)
        let finger = try asNobody("finger", "verify", "nobody", "--threshold", "10")
        XCTAssertEqual(finger.status, 1, finger.stderr)
        XCTAssertTrue(finger.stderr.contains("below 48"), finger.stderr)
        // Raising it is allowed: the call goes on (to fail later for another reason: this daemon has no models).
        let high = try asNobody("face", "verify", "nobody", "--threshold", "60")
        XCTAssertFalse(high.stderr.contains("administrator") || high.stderr.contains("below"), high.stderr)
        XCTAssertEqual(try asRoot("auth", "status", "alice", "--json").stdout, before.stdout, "nothing changed")
    }

    /// Issue 20: adding a factor needs a fresh authentication of that user (for a first factor,
    /// the account password through the root helper). Without it the change is refused and
    /// nothing is stored; another user's account is refused outright; an admin may.
    func testAddingAFactorNeedsAFreshAuthentication() throws {
        // No password helper runs here: the password step cannot complete, so nothing may change.
        let environment = ["BIOMETRICD_PASSWORD_SOCKET": daemon.root + "/no-helper.sock", "PATH": "/usr/bin:/bin"]
        let own = try runProgram("/usr/sbin/runuser", ["-u", "nobody", "--", authctl] + authctlArgs(["face", "enroll", "nobody", "--countdown", "0"]),
                                 environment: environment, input: "not-the-password\n")
        XCTAssertNotEqual(own.status, 0, own.stderr)
        XCTAssertTrue(own.stderr.contains("confirm it is you"), own.stderr)
        XCTAssertEqual(try asRoot("user", "show", "nobody").status, 4, "nothing was enrolled for nobody")
        for change in [["pin", "set", "nobody"], ["auth", "policy", "set", "nobody", "face"], ["key", "register", "nobody", "--app-id", "https://a.example", "--aaid", "4e4e#4005"]] {
            let r = try runProgram("/usr/sbin/runuser", ["-u", "nobody", "--", authctl] + authctlArgs(change), environment: environment, input: "1234\n1234\n")
            XCTAssertNotEqual(r.status, 0, "\(change): \(r.stderr)")
        }
        XCTAssertEqual(try asRoot("user", "show", "nobody").status, 4, "no PIN, policy or key stored for nobody either")
        // Another user's account: refused before any authentication is asked for.
        let other = try asNobody("face", "enroll", "alice", "--countdown", "0")
        XCTAssertEqual(other.status, 1)
        XCTAssertTrue(other.stderr.contains("may not enrol"), other.stderr)
        XCTAssertFalse(other.stderr.contains("confirm it is you"), other.stderr)
        // An admin needs no re-verification (this daemon has no models: it fails later, not on access).
        let admin = try asRoot("face", "enroll", "alice", "--countdown", "0")
        XCTAssertFalse(admin.stderr.contains("confirm") || admin.stderr.contains("permission"), admin.stderr)
    }

    func testNobodyCannotTouchAnotherUsersFingers() throws {
        for arguments in [["finger", "list", "alice"], ["finger", "remove", "alice"], ["finger", "enroll", "alice"],
                          ["finger", "verify", "alice"], ["finger", "list", "--all"], ["finger", "capture"], ["finger", "identify"]] {
            let result = try runProgram("/usr/sbin/runuser", ["-u", "nobody", "--", authctl] + authctlArgs(arguments))
            XCTAssertEqual(result.status, 1, "\(arguments): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains("permission") || result.stderr.contains("may not") || result.stderr.contains("administrator"),
                          "\(arguments): \(result.stderr)")
        }
        // Nothing changed: alice's finger template is still there.
        let list = try asRoot("finger", "list", "alice", "--json")
        XCTAssertEqual(list.status, 0, list.stderr)
        let templates = try JSONDecoder().decode(FingerListResult.self, from: Data(list.stdout.utf8)).templates
        XCTAssertEqual(templates.map(\.position), ["right_index"])
        // nobody may manage its own (empty) fingers.
        XCTAssertEqual(try asNobody("finger", "list", "nobody").status, 0)
    }

    func testPeerCredentialsAreTheCallersNotTheDaemons() throws {
        // Over the raw protocol, as nobody: the refusal carries the stable code and reason.
        let script = "printf '%s\\n' '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"user.delete\",\"params\":{\"user\":\"alice\"}}' | timeout 5 python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(sys.stdin.buffer.read()); print(s.recv(4096).decode())' \(daemon.socket)"
        let result = try runProgram("/usr/sbin/runuser", ["-u", "nobody", "--", "/bin/sh", "-c", script])
        let reply = try JSONDecoder().decode(JSONValue.self, from: Data(result.stdout.utf8))
        XCTAssertEqual(reply["error"]?["code"], 1003)
        XCTAssertEqual(reply["error"]?["data"]?["reason"], "permission_denied")
        let list = try asRoot("users", "--json")
        XCTAssertEqual(list.status, 0)
        XCTAssertTrue(list.stdout.contains("\"alice\""))
    }

    func testRootIsAdmin() throws {
        let delete = try asRoot("user", "delete", "alice")
        XCTAssertEqual(delete.status, 0, delete.stderr)
        XCTAssertEqual(try asRoot("user", "show", "alice").status, 4, "not_found after delete")
    }
}

/// authctl's exit codes (SPEC §7) and the daemon's start-up checks.
final class CommandLineTests: XCTestCase {
    let authctl = productsDirectory + "/authctl"
    let biometricd = productsDirectory + "/biometricd"

    func testAuthctlUnreachableAndUsage() throws {
        guard FileManager.default.isExecutableFile(atPath: authctl) else { throw missing("build first") }
        let unreachable = try runProgram(authctl, ["status", "--socket", "/tmp/no-such-daemon.sock"])
        XCTAssertEqual(unreachable.status, 3)
        XCTAssertTrue(unreachable.stderr.contains("not running"), unreachable.stderr)
        XCTAssertEqual(try runProgram(authctl, ["frobnicate"]).status, 2)
        XCTAssertEqual(try runProgram(authctl, ["snapshot"]).status, 2, "missing -o")
        let completion = try runProgram(authctl, ["--generate-completion-script", "bash"])
        XCTAssertEqual(completion.status, 0)
        XCTAssertTrue(completion.stdout.contains("snapshot"))
    }

    /// The protocol's names are the command line's values: a typo is a usage error (exit 2) that
    /// lists the accepted names, before any call; a right name goes on to the daemon (here: none, 3).
    func testAuthctlRefusesNamesThatAreNotInTheProtocol() throws {
        guard FileManager.default.isExecutableFile(atPath: authctl) else { throw missing("build first") }
        let socket = ["--socket", "/tmp/no-such-daemon.sock"]
        let hand = try runProgram(authctl, ["finger", "enroll", "ana", "--hand", "middle"] + socket)
        XCTAssertEqual(hand.status, 2)
        XCTAssertTrue(hand.stderr.contains("'left'") && hand.stderr.contains("'right'"), hand.stderr)
        let thumb = try runProgram(authctl, ["finger", "enroll", "ana", "--amputated", "thumb"] + socket)
        XCTAssertEqual(thumb.status, 2, "the thumb is --thumb, not an amputated finger")
        let accepted = thumb.stderr.components(separatedBy: "provide one of").last ?? ""
        XCTAssertTrue(accepted.contains("'index'") && !accepted.contains("'thumb'"), thumb.stderr)
        XCTAssertEqual(try runProgram(authctl, ["finger", "capture", "--liveness", "high"] + socket).status, 2)
        XCTAssertEqual(try runProgram(authctl, ["finger", "capture", "--format", "gif", "-o", "/tmp/x"] + socket).status, 2)
        let good = try runProgram(authctl, ["finger", "enroll", "ana", "--hand", "left", "--amputated", "ring", "--liveness", "very_low"] + socket)
        XCTAssertEqual(good.status, 3, good.stderr)
        // A key handle is base64url and begins with "-" once in 64 keys: it is a value, not an option.
        let sign = try runProgram(authctl, ["key", "sign", "ana", "--key-handle", "-q3Xf", "--challenge", "aGk="] + socket)
        XCTAssertEqual(sign.status, 3, sign.stderr)
        let deregister = try runProgram(authctl, ["key", "deregister", "ana", "--key-handle", "-q3Xf"] + socket)
        XCTAssertEqual(deregister.status, 3, deregister.stderr)
    }

    func testAuthctlAgainstADaemon() throws {
        let daemon = try DaemonProcess(cameras: ["replay:\(lfw)/Aaron_Eckhart?fps=20&loop=true"])
        let status = try runProgram(authctl, ["status", "--socket", daemon.socket])
        XCTAssertEqual(status.status, 0, status.stderr)
        XCTAssertTrue(status.stdout.contains("cameras: replay0"), status.stdout)
        let env = ProcessInfo.processInfo.environment.merging(["BIOMETRICD_SOCKET": daemon.socket]) { $1 }
        let cameras = try runProgram(authctl, ["cameras", "--json"], environment: env)
        XCTAssertEqual(cameras.status, 0, "the socket comes from BIOMETRICD_SOCKET")
        let list = try JSONDecoder().decode([CameraInfo].self, from: Data(cameras.stdout.utf8))
        XCTAssertEqual(list.first?.formats.first?.width, 250)
        let png = daemon.root + "/snap.png"
        let snap = try runProgram(authctl, ["snapshot", "-o", png], environment: env)
        XCTAssertEqual(snap.status, 0, snap.stderr)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: png)).prefix(4), Data([0x89, 0x50, 0x4E, 0x47]))
        XCTAssertEqual(try runProgram(authctl, ["user", "show", "ghost"], environment: env).status, 4)
    }

    private func startupFailure(_ arguments: [String]) throws -> String {
        guard FileManager.default.isExecutableFile(atPath: biometricd) else { throw missing("build first") }
        let result = try runProgram(biometricd, ["--socket", "/tmp/bmd-fail-\(UUID().uuidString.prefix(6)).sock",
                                          "--state-dir", NSTemporaryDirectory() + "bmd-fail-state"] + arguments)
        XCTAssertNotEqual(result.status, 0, "must refuse to start: \(arguments)")
        return result.stderr
    }

    func testBadConfigurationIsRefusedWithTheKeyNamed() throws {
        let config = NSTemporaryDirectory() + "bmd-\(UUID().uuidString.prefix(6)).conf"
        try "# comment\nlog_level = debug\nanalysis_threads = 200\n".write(toFile: config, atomically: true, encoding: .utf8)
        let threads = try startupFailure(["--config", config])
        XCTAssertTrue(threads.contains("\(config):3") && threads.contains("analysis_threads"), threads)
        try "socket = /tmp/x.sock\nfavourite_colour = blue\n".write(toFile: config, atomically: true, encoding: .utf8)
        XCTAssertTrue(try startupFailure(["--config", config]).contains("'favourite_colour' unknown key"))
        try "finger_optics = replay0 hfov=500\n".write(toFile: config, atomically: true, encoding: .utf8)
        let optics = try startupFailure(["--config", config])
        XCTAssertTrue(optics.contains("\(config):1") && optics.contains("finger_optics") && optics.contains("hfov="), optics)
        try "camera = usb:0\n".write(toFile: config, atomically: true, encoding: .utf8)
        XCTAssertTrue(try startupFailure(["--config", config]).contains("camera"))
        XCTAssertTrue(try startupFailure(["--config", "/nonexistent/biometricd.conf"]).contains("cannot be read"))
    }

    func testBadCamerasAreRefused() throws {
        XCTAssertTrue(try startupFailure(["--camera", "v4l2:/dev/null"]).contains("not a V4L2 capture device"))
        XCTAssertTrue(try startupFailure(["--camera", "replay:/nonexistent"]).contains("does not exist"))
        XCTAssertTrue(try startupFailure(["--camera", "webcam"]).contains("replay:PATH"))
        XCTAssertTrue(try startupFailure(["--log-level", "loud"]).contains("log_level"))
    }
}
