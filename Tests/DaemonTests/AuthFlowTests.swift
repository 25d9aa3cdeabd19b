import BiometricAuth
import BiometricClient
import BiometricProtocol
import Foundation
import XCTest
import TestRequirements

/// PIN, policy, lockout, auth.authenticate and keys through the socket (SPEC §4, §6).
final class AuthFlowTests: XCTestCase {
    var folders: [String] = []

    override func tearDown() {
        folders.forEach { try? FileManager.default.removeItem(atPath: $0) }
    }

    func photos(_ person: String, _ numbers: [Int]) throws -> String {
        let dir = "/tmp/bmd-photos-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o755])
        for n in numbers {
            let name = String(format: "%@_%04d.jpg", person, n)
            try FileManager.default.createSymbolicLink(atPath: "\(dir)/\(name)", withDestinationPath: "\(lfw)/\(person)/\(name)")
        }
        folders.append(dir)
        return dir
    }

    func daemon(_ extra: [String] = [], cameras: [String] = [], root: String? = nil, user: String? = nil) throws -> DaemonProcess {
        try DaemonProcess(cameras: cameras.isEmpty ? ["replay:\(lfw)/Aaron_Eckhart?fps=20&loop=true"] : cameras,
                          extraArguments: extra, root: root, user: user)
    }

    func testPINRulesRetriesLockAndReset() throws {
        let d = try daemon()
        let c = try d.client()
        XCTAssertEqual(rpcError { let _: PINResult = try c.call(Method.pinSet, PINSetParams(user: "alice", pin: "12a4")) }?.errorReason, .pinFormat)
        XCTAssertEqual(rpcError { let _: PINResult = try c.call(Method.pinSet, PINSetParams(user: "alice", pin: "123")) }?.errorReason, .pinFormat)
        XCTAssertEqual(rpcError { let _: PINResult = try c.call(Method.pinVerify, PINVerifyParams(user: "alice", pin: "1234")) }?.errorReason, .pinNotSet)
        let set: PINResult = try c.call(Method.pinSet, PINSetParams(user: "alice", pin: "4711"))
        XCTAssertTrue(set.ok)
        XCTAssertEqual(set.retriesLeft, 3)
        let good: PINResult = try c.call(Method.pinVerify, PINVerifyParams(user: "alice", pin: "4711"))
        XCTAssertTrue(good.ok)
        // A malformed PIN is refused before it is compared: it costs no retry.
        XCTAssertEqual(rpcError { let _: PINResult = try c.call(Method.pinVerify, PINVerifyParams(user: "alice", pin: "47x1")) }?.errorReason, .pinFormat)
        for left in [2, 1, 0] {
            let wrong: PINResult = try c.call(Method.pinVerify, PINVerifyParams(user: "alice", pin: "0000"))
            XCTAssertFalse(wrong.ok)
            XCTAssertEqual(wrong.retriesLeft, left)
        }
        // Locked: even the right PIN is refused until an admin resets it.
        let locked = rpcError { let _: PINResult = try c.call(Method.pinVerify, PINVerifyParams(user: "alice", pin: "4711")) }
        XCTAssertEqual(locked?.code, 5002)
        XCTAssertEqual(locked?.reason, "pin_locked")
        let status: AuthStatusResult = try c.call(Method.authStatus, UserParams(user: "alice"))
        XCTAssertTrue(status.pinLocked)
        XCTAssertEqual(status.pinRetriesLeft, 0)
        let _: PINResult = try c.call(Method.pinReset, PINResetParams(user: "alice"))
        XCTAssertTrue((try c.call(Method.pinVerify, PINVerifyParams(user: "alice", pin: "4711")) as PINResult).ok)
        // The PIN is nowhere in the daemon's log.
        XCTAssertFalse(d.log.contains("4711"))
    }

    func testTwoClientsCountExactly() throws {
        let d = try daemon(["--set", "pin_max_retries=10"])
        let _: PINResult = try d.client().call(Method.pinSet, PINSetParams(user: "carol", pin: "2580"))
        let group = DispatchGroup()
        let socket = d.socket
        for _ in 0..<2 {
            DispatchQueue.global().async(group: group) {
                guard let client = try? BiometricClient(socketPath: socket) else { return }
                for _ in 0..<3 { _ = try? client.call(Method.pinVerify, PINVerifyParams(user: "carol", pin: "1111"), as: PINResult.self) }
            }
        }
        group.wait()
        let status: AuthStatusResult = try d.client().call(Method.authStatus, UserParams(user: "carol"))
        XCTAssertEqual(status.pinRetriesLeft, 4, "6 wrong PINs from two clients at once, each counted once")
    }

    /// A failure is stored before its reply: a daemon killed between the two still counts it.
    func testFailureSurvivesSIGKILLBeforeTheReply() throws {
        var d = try daemon(["--set", "test_hold_replies_ms=4000"], user: "nobody")
        let _: PINResult = try d.client().call(Method.pinSet, PINSetParams(user: "dave", pin: "8642"))
        let raw = try RawConnection(d.socket)
        raw.send(#"{"jsonrpc":"2.0","id":7,"method":"pin.verify","params":{"user":"dave","pin":"0000"}}"# + "\n")
        // The check takes ~0.1 s; the reply is held 4 s after the count is stored.
        Thread.sleep(forTimeInterval: 1.0)
        XCTAssertNil(raw.readLine(timeout: 0.01), "the reply is still held")
        d.kill9()
        d.removeFiles = false
        let root = d.root
        d = try daemon(root: root, user: "nobody")
        d.removeFiles = true
        let status: AuthStatusResult = try d.client().call(Method.authStatus, UserParams(user: "dave"))
        XCTAssertEqual(status.pinRetriesLeft, 2, "the wrong PIN was counted although its reply never left")
    }

    func testTestHookIsRefusedWhenPrivileged() throws {
        guard geteuid() == 0 else { throw missing("needs root") }
        XCTAssertThrowsError(try daemon(["--set", "test_hold_replies_ms=100"]))
    }

    func testKeysSignVerifiableSignaturesWithAnIncreasingCounter() throws {
        let d = try daemon()
        let c = try d.client()
        XCTAssertEqual(rpcError { let _: KeyInfo = try c.call(Method.keyRegister, KeyRegisterParams(user: "erin", appID: "https://a.example", aaid: "4e4e-4005")) }?.code, 1004)
        XCTAssertEqual(rpcError { let _: KeyInfo = try c.call(Method.keyRegister, KeyRegisterParams(user: "erin", appID: "https://a.example", aaid: "4e4g#4005")) }?.reason, "invalid_aaid")
        XCTAssertEqual(rpcError { let _: KeyInfo = try c.call(Method.keyRegister, KeyRegisterParams(user: "\u{7}bad", appID: "x", aaid: "4e4e#4005")) }?.code, 1001)
        let key: KeyInfo = try c.call(Method.keyRegister, KeyRegisterParams(user: "erin", appID: "https://a.example", aaid: "4e4e#4005"))
        XCTAssertTrue(key.publicKey.hasPrefix("-----BEGIN PUBLIC KEY-----"))
        // Policy "password": the PIN is the factor the signature needs.
        let _: PINResult = try c.call(Method.pinSet, PINSetParams(user: "erin", pin: "135790"))
        let _: PolicyResult = try c.call(Method.authPolicySet, PolicySetParams(user: "erin", mode: .password))
        let challenge = Data("server-nonce-\(UUID())".utf8)
        let refused: KeySignResult = try c.call(Method.keySign, KeySignParams(user: "erin", keyHandle: key.keyHandle,
                                                                             challenge: challenge.base64EncodedString(), pin: "000000"))
        XCTAssertFalse(refused.ok)
        XCTAssertNil(refused.signature)
        XCTAssertEqual(refused.tried.first?.factor, "pin")
        var counters: [Int] = []
        for _ in 0..<2 {
            let signed: KeySignResult = try c.call(Method.keySign, KeySignParams(user: "erin", keyHandle: key.keyHandle,
                                                                                challenge: challenge.base64EncodedString(), pin: "135790"))
            XCTAssertTrue(signed.ok)
            XCTAssertTrue(signed.userVerified)
            let authData = try XCTUnwrap(signed.authenticatorData.flatMap { Data(base64Encoded: $0) })
            let der = try XCTUnwrap(signed.signature.flatMap { Data(base64Encoded: $0) })
            XCTAssertTrue(BoundKey.verify(publicKeyPEM: key.publicKey, authenticatorData: authData, challenge: challenge, der: der))
            XCTAssertEqual(authData[32] & 0x04, 0x04, "user-verified flag")
            counters.append(try XCTUnwrap(signed.counter))
            // And with OpenSSL, as a relying party that does not use our code would.
            if FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl") {
                let dir = NSTemporaryDirectory() + "sig-\(UUID().uuidString.prefix(6))"
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(atPath: dir) }
                try key.publicKey.write(toFile: dir + "/pub.pem", atomically: true, encoding: .utf8)
                try der.write(to: URL(fileURLWithPath: dir + "/sig.der"))
                var message = authData
                message.append(contentsOf: Array(SHA256Digest.of(challenge)))
                try message.write(to: URL(fileURLWithPath: dir + "/msg.bin"))
                let ossl = try runProgram("/usr/bin/openssl", ["dgst", "-sha256", "-verify", dir + "/pub.pem", "-signature", dir + "/sig.der", dir + "/msg.bin"])
                XCTAssertEqual(ossl.status, 0, ossl.stdout + ossl.stderr)
                XCTAssertTrue(ossl.stdout.contains("Verified OK"))
            }
        }
        XCTAssertEqual(counters, [1, 2], "the counter strictly increases (the refused attempt used none)")
        // Bad input.
        XCTAssertEqual(rpcError { let _: KeySignResult = try c.call(Method.keySign, KeySignParams(user: "erin", keyHandle: key.keyHandle, challenge: "not base64!")) }?.field, "challenge")
        XCTAssertEqual(rpcError { let _: KeySignResult = try c.call(Method.keySign, KeySignParams(user: "erin", keyHandle: key.keyHandle, challenge: Data(count: 1025).base64EncodedString())) }?.field, "challenge")
        XCTAssertEqual(rpcError { let _: KeySignResult = try c.call(Method.keySign, KeySignParams(user: "erin", keyHandle: "unknownHandle", challenge: "aGk=")) }?.reason, "not_found")
        let list: KeyListResult = try c.call(Method.keyList, UserParams(user: "erin"))
        XCTAssertEqual(list.keys.map(\.counter), [2])
        // Deleting the user deletes keys, PIN and policy.
        let _: DeleteResult = try c.call(Method.userDelete, UserParams(user: "erin"))
        XCTAssertEqual(rpcError { let _: KeySignResult = try c.call(Method.keySign, KeySignParams(user: "erin", keyHandle: key.keyHandle, challenge: "aGk=")) }?.reason, "not_found")
        XCTAssertEqual(rpcError { let _: PINResult = try c.call(Method.pinVerify, PINVerifyParams(user: "erin", pin: "135790")) }?.reason, "pin_not_set")
        let _: KeyInfo = try c.call(Method.keyRegister, KeyRegisterParams(user: "erin", appID: "b", aaid: "0000#0001"))
        let _: KeyInfo = try c.call(Method.keyRegister, KeyRegisterParams(user: "erin", appID: "c", aaid: "0000#0001"))
        XCTAssertEqual((try c.call(Method.keyDeregister, KeyDeregisterParams(user: "erin")) as RemovedResult).removed, 2)
    }

    func testNobodyCannotTouchAnotherUsersAuthentication() throws {
        guard geteuid() == 0 else { throw missing("needs root to run clients as another uid (CI runs as root)") }
        let d = try daemon()
        let c = try d.client()
        let _: PINResult = try c.call(Method.pinSet, PINSetParams(user: "alice", pin: "9753"))
        let key: KeyInfo = try c.call(Method.keyRegister, KeyRegisterParams(user: "alice", appID: "app", aaid: "4e4e#4005"))
        let authctl = productsDirectory + "/authctl"
        func asNobody(_ args: [String], input: String? = nil) throws -> Int32 {
            let r = try runProgram("/usr/sbin/runuser", ["-u", "nobody", "--", authctl] + args + ["--socket", d.socket], input: input)
            // What authctl said when it was not the expected refusal (exit 2 was seen once in ~15 runs).
            if r.status != 1 { print("authctl \(args.joined(separator: " ")) as nobody: exit \(r.status): \(r.stderr)") }
            return r.status
        }
        XCTAssertEqual(try asNobody(["pin", "set", "alice"], input: "1111\n"), 1)
        XCTAssertEqual(try asNobody(["pin", "verify", "alice"], input: "9753\n"), 1)
        XCTAssertEqual(try asNobody(["pin", "reset", "alice", "--remove"]), 1)
        XCTAssertEqual(try asNobody(["auth", "policy", "set", "alice", "none"]), 1)
        XCTAssertEqual(try asNobody(["auth", "status", "alice"]), 1)
        XCTAssertEqual(try asNobody(["auth", "policy", "show", "alice"]), 1)
        XCTAssertEqual(try asNobody(["key", "list", "alice"]), 1)
        XCTAssertEqual(try asNobody(["key", "register", "alice", "--app-id", "evil"]), 1)
        XCTAssertEqual(try asNobody(["key", "deregister", "alice"]), 1)
        XCTAssertEqual(try asNobody(["key", "sign", "alice", "--key-handle", key.keyHandle, "--challenge", "aGk="]), 1)
        // nobody may not weaken its own liveness either (only an admin may).
        XCTAssertEqual(try asNobody(["auth", "policy", "set", "nobody", "face", "--no-liveness"]), 1)
        // Nothing changed.
        XCTAssertTrue((try c.call(Method.pinVerify, PINVerifyParams(user: "alice", pin: "9753")) as PINResult).ok)
        let policy: PolicyResult = try c.call(Method.authPolicyGet, UserParams(user: "alice"))
        XCTAssertEqual(policy.factors, ["face", "finger", "pin"])
        let keys: KeyListResult = try c.call(Method.keyList, UserParams(user: "alice"))
        XCTAssertEqual(keys.keys.map(\.keyHandle), [key.keyHandle])
        XCTAssertEqual(keys.keys.first?.counter, 0)
    }

    // MARK: With real faces

    func requireModels() throws -> String {
        let models = repositoryRoot + "/models"
        guard FileManager.default.fileExists(atPath: models + "/dlib_face_recognition_resnet_model_v1.dat") else {
            throw missing("models not installed: run scripts/setup.sh")
        }
        return models
    }

    /// face,pin: the enrolled face passes by face; an impostor fails the face and passes by PIN;
    /// five impostor attempts lock biometrics (5001, retry_after_s), and a restart keeps the lock.
    func testFaceThenPINAndAPersistentLockout() throws {
        let models = try requireModels()
        let cameras = ["replay:\(try photos("Tony_Blair", [18, 32, 48, 53]))?fps=10&loop=true",
                       "replay:\(try photos("Tony_Blair", [64]))?fps=10&loop=true",
                       "replay:\(try photos("Colin_Powell", [40]))?fps=10&loop=true"]
        var d = try daemon(["--models", models, "--set", "lockout_seconds=600"], cameras: cameras)
        var c = try d.client()
        let _: FaceEnrollResult = try c.call(Method.faceEnroll, FaceEnrollParams(user: "tony", camera: "replay0", frames: 3, countdownS: 0,
                                                                                 qualityThreshold: 30, timeoutMs: 60000))
        let _: PINResult = try c.call(Method.pinSet, PINSetParams(user: "tony", pin: "24680"))
        // Still photos cannot blink: this test is about factors, so an admin turns liveness off.
        let policy: PolicyResult = try c.call(Method.authPolicySet, PolicySetParams(user: "tony", factors: ["face", "pin"], requireLiveness: false))
        XCTAssertEqual(policy.factors, ["face", "pin"])

        var events: [String] = []
        let byFace: AuthenticateResult = try c.call(Method.authAuthenticate, AuthenticateParams(user: "tony", pin: "24680", camera: "replay1"),
                                                    onEvent: { events.append($0["type"]?.stringValue ?? "") })
        XCTAssertTrue(byFace.ok)
        XCTAssertEqual(byFace.factor, "face")
        XCTAssertEqual(events.first, "auth.factor")
        XCTAssertTrue(events.contains("face.frame"))

        let byPIN: AuthenticateResult = try c.call(Method.authAuthenticate, AuthenticateParams(user: "tony", pin: "24680", camera: "replay2"))
        XCTAssertTrue(byPIN.ok, "\(byPIN)")
        XCTAssertEqual(byPIN.factor, "pin")
        XCTAssertEqual(byPIN.tried.map(\.factor), ["face"])
        XCTAssertEqual(byPIN.tried.first?.reason, "no_match")
        // Without a PIN the impostor simply fails (a result, not an error).
        let failed: AuthenticateResult = try c.call(Method.authAuthenticate, AuthenticateParams(user: "tony", camera: "replay2"))
        XCTAssertFalse(failed.ok)
        XCTAssertEqual(failed.skipped.map(\.reason), ["no_pin_given"])

        // Count from here: four more impostor verifies make five in a row.
        for _ in 0..<4 {
            let r: FaceVerifyResult = try c.call(Method.faceVerify, FaceVerifyParams(user: "tony", camera: "replay2", mode: .image,
                                                                                      qualityThreshold: 30, timeoutMs: 20000))
            XCTAssertFalse(r.match)
        }
        let sixth = rpcError { let _: FaceVerifyResult = try c.call(Method.faceVerify, FaceVerifyParams(user: "tony", camera: "replay1", mode: .image)) }
        XCTAssertEqual(sixth?.code, 5001)
        XCTAssertEqual(sixth?.reason, "locked_out")
        XCTAssertGreaterThan(sixth?.data?["retry_after_s"]?.intValue ?? 0, 500)
        // auth.authenticate while biometrics are locked: nothing can be tried, the lock is the answer.
        let lockedAuth = rpcError { let _: AuthenticateResult = try c.call(Method.authAuthenticate, AuthenticateParams(user: "tony", factors: ["face"], camera: "replay1")) }
        XCTAssertEqual(lockedAuth?.code, 5001)
        XCTAssertNotNil(lockedAuth?.data?["retry_after_s"]?.intValue)
        // Restart: the lock is still there.
        d.stop()
        d.removeFiles = false
        let root = d.root
        d = try daemon(["--models", models, "--set", "lockout_seconds=600"], cameras: cameras, root: root)
        d.removeFiles = true
        c = try d.client()
        let afterRestart = rpcError { let _: FaceVerifyResult = try c.call(Method.faceVerify, FaceVerifyParams(user: "tony", camera: "replay1", mode: .image)) }
        XCTAssertEqual(afterRestart?.code, 5001, "a restart keeps the lock")
        let status: AuthStatusResult = try c.call(Method.authStatus, UserParams(user: "tony"))
        XCTAssertTrue(status.lockedOut)
        XCTAssertEqual(status.biometricFailures, 5)
        // A correct PIN unlocks biometrics; the genuine face then passes.
        XCTAssertTrue((try c.call(Method.pinVerify, PINVerifyParams(user: "tony", pin: "24680")) as PINResult).ok)
        let again: FaceVerifyResult = try c.call(Method.faceVerify, FaceVerifyParams(user: "tony", camera: "replay1", mode: .image,
                                                                                      qualityThreshold: 30, timeoutMs: 20000))
        XCTAssertTrue(again.match)
    }

    /// lockout_pin_failures in a row lock biometrics until a correct PIN (20 by default; 3 here).
    func testLockUntilPIN() throws {
        let models = try requireModels()
        let cameras = ["replay:\(try photos("Tony_Blair", [18, 32, 48, 53]))?fps=10&loop=true",
                       "replay:\(try photos("Colin_Powell", [40]))?fps=10&loop=true"]
        let d = try daemon(["--models", models, "--set", "lockout_failures=0", "--set", "lockout_pin_failures=3"], cameras: cameras)
        let c = try d.client()
        let _: FaceEnrollResult = try c.call(Method.faceEnroll, FaceEnrollParams(user: "tony", camera: "replay0", frames: 3, countdownS: 0,
                                                                                 qualityThreshold: 30, timeoutMs: 60000))
        let _: PINResult = try c.call(Method.pinSet, PINSetParams(user: "tony", pin: "11235"))
        for _ in 0..<3 {
            let r: FaceVerifyResult = try c.call(Method.faceVerify, FaceVerifyParams(user: "tony", camera: "replay1", mode: .image,
                                                                                      qualityThreshold: 30, timeoutMs: 20000))
            XCTAssertFalse(r.match)
        }
        let locked = rpcError { let _: FaceVerifyResult = try c.call(Method.faceVerify, FaceVerifyParams(user: "tony", camera: "replay0", mode: .image)) }
        XCTAssertEqual(locked?.code, 5001)
        XCTAssertEqual(locked?.data?["requires_pin"], .bool(true))
        let viaAuth = rpcError { let _: AuthenticateResult = try c.call(Method.authAuthenticate, AuthenticateParams(user: "tony", factors: ["face"], camera: "replay0")) }
        XCTAssertEqual(viaAuth?.code, 5001, "nothing could be tried: the lock is the answer")
        let status: AuthStatusResult = try c.call(Method.authStatus, UserParams(user: "tony"))
        XCTAssertTrue(status.requiresPIN)
        XCTAssertNil(status.retryAfterS)
        let unlocked: AuthenticateResult = try c.call(Method.authAuthenticate, AuthenticateParams(user: "tony", factors: ["pin"], pin: "11235"))
        XCTAssertTrue(unlocked.ok)
        let after: AuthStatusResult = try c.call(Method.authStatus, UserParams(user: "tony"))
        XCTAssertFalse(after.lockedOut)
        XCTAssertEqual(after.biometricFailures, 0)
    }
}

enum SHA256Digest {
    static func of(_ data: Data) -> [UInt8] {
        // The relying party's hash, computed independently of BoundKey.
        let pipe = try? runProgram("/usr/bin/python3", ["-c", "import hashlib,sys;sys.stdout.write(hashlib.sha256(bytes.fromhex(sys.argv[1])).hexdigest())",
                                                        data.map { String(format: "%02x", $0) }.joined()])
        let hex = pipe?.stdout ?? ""
        var bytes: [UInt8] = []
        var i = hex.startIndex
        while i < hex.endIndex, let j = hex.index(i, offsetBy: 2, limitedBy: hex.endIndex) {
            bytes.append(UInt8(hex[i..<j], radix: 16) ?? 0)
            i = j
        }
        return bytes
    }
}
