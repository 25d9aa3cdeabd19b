@testable import BiometricAuth
import BiometricStore
import Crypto
import Foundation
import XCTest

final class PINTests: XCTestCase {
    /// Cheap parameters for the logic tests; the standard ones are measured in the bench.
    let fast = PINHasher(parameters: Argon2Parameters(iterations: 1, memoryKiB: 64, parallelism: 1))

    func testHashVerifiesOnlyTheSamePIN() throws {
        let stored = try fast.hash("482913")
        XCTAssertTrue(stored.hasPrefix("$argon2id$v=19$m=64,t=1,p=1$"), stored)
        XCTAssertFalse(stored.contains("482913"))
        XCTAssertTrue(try PINHasher.verify("482913", against: stored))
        XCTAssertFalse(try PINHasher.verify("482914", against: stored))
        XCTAssertFalse(try PINHasher.verify("48291", against: stored))
        XCTAssertFalse(try PINHasher.verify("", against: stored))
        // A fresh salt each time: the same PIN never gives the same record.
        XCTAssertNotEqual(stored, try fast.hash("482913"))
    }

    func testParametersTravelWithTheHash() throws {
        let stored = try fast.hash("1234")
        XCTAssertEqual(try PINHasher.parameters(of: stored), fast.parameters)
        // The standard parameters still verify a hash made with the old ones.
        XCTAssertTrue(try PINHasher.verify("1234", against: stored))
    }

    func testMalformedHashesAreRefusedNotCrashed() {
        for bad in ["", "$argon2i$v=19$m=64,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA", "$argon2id$v=19$m=99999999999,t=1,p=1$c2FsdHNhbHQ$aGFzaA",
                    "$argon2id$v=19$m=64,t=1,p=1$$", "$argon2id$v=19$m=64,t=0,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA", "plain-text-pin"] {
            XCTAssertThrowsError(try PINHasher.verify("1234", against: bad), bad)
        }
    }

    func testRules() {
        let rules = PINRules()
        XCTAssertNil(rules.check("1234"))
        XCTAssertEqual(rules.check("123"), .tooShort(min: 4))
        XCTAssertEqual(rules.check("12a4"), .notDigits)
        XCTAssertEqual(rules.check("１２３４"), .notDigits)  // full-width digits are not ASCII digits
        XCTAssertEqual(rules.check(" 1234"), .notDigits)
        XCTAssertEqual(rules.check(String(repeating: "1", count: 65)), .tooLong(max: 64))
        // ≤ 0 means 4; a maximum below the minimum puts both back to the defaults (Acceptto).
        XCTAssertEqual(PINRules(minLength: 0, maxLength: 0), PINRules(minLength: 4, maxLength: 0))
        XCTAssertEqual(PINRules(minLength: 8, maxLength: 6), PINRules(minLength: 4, maxLength: 0))
        let six = PINRules(minLength: 6, maxLength: 8)
        XCTAssertEqual(six.check("12345"), .tooShort(min: 6))
        XCTAssertEqual(six.check("123456789"), .tooLong(max: 8))
        XCTAssertNil(six.check("12345678"))
    }

    func testConstantTimeEqual() {
        XCTAssertTrue(constantTimeEqual([1, 2, 3], [1, 2, 3]))
        XCTAssertFalse(constantTimeEqual([1, 2, 3], [1, 2, 4]))
        XCTAssertFalse(constantTimeEqual([1, 2, 3], [1, 2]))
    }
}

final class LockoutTests: XCTestCase {
    let rules = LockoutRules(failuresToLock: 5, lockSeconds: 30, failuresToRequirePIN: 20)

    func testFiveFailuresLockForThirtySeconds() {
        var state = LockoutState()
        for _ in 0..<4 { state.recordFailure(now: 1000, rules: rules) }
        XCTAssertEqual(state.status(now: 1000, rules: rules), .open)
        state.recordFailure(now: 1000, rules: rules)
        XCTAssertEqual(state.status(now: 1000, rules: rules), .lockedFor(seconds: 30))
        XCTAssertEqual(state.status(now: 1002.5, rules: rules), .lockedFor(seconds: 28))
        XCTAssertEqual(state.status(now: 1030, rules: rules), .open)
        // A clock set back cannot stretch the lock.
        XCTAssertEqual(state.status(now: 0, rules: rules), .lockedFor(seconds: 30))
    }

    func testTwentyFailuresLockUntilPINAndSuccessResets() {
        var state = LockoutState()
        var now = 0.0
        for i in 1...20 {
            now += 31
            state.recordFailure(now: now, rules: rules)
            if i < 20 { XCTAssertNotEqual(state.status(now: now + 31, rules: rules), .lockedUntilPIN) }
        }
        XCTAssertEqual(state.status(now: now + 1_000_000, rules: rules), .lockedUntilPIN)
        state.recordSuccess()
        XCTAssertEqual(state, LockoutState())
    }

    func testPINRetries() {
        var pin = PINState(hash: "h")
        XCTAssertEqual(pin.retriesLeft(maxRetries: 3), 3)
        pin.failures = 3
        XCTAssertTrue(pin.isLocked(maxRetries: 3))
        XCTAssertFalse(pin.isLocked(maxRetries: 0))
        XCTAssertNil(pin.retriesLeft(maxRetries: -1))
    }
}

final class PolicyTests: XCTestCase {
    func testModesAndOverride() {
        XCTAssertEqual(AuthPolicy().mode, nil)
        XCTAssertEqual(AuthPolicy(factors: [.face, .finger]).mode, .biometric)
        XCTAssertEqual(AuthPolicy(factors: [.pin]).mode, .password)
        XCTAssertEqual(AuthPolicy(factors: []).mode, AuthPolicy.Mode.none)
        // The presets are the wire's auth.policy.set modes (one type): each is recognised back.
        XCTAssertEqual(AuthPolicy.Mode.allCases.map(\.rawValue), ["none", "biometric", "password"])
        for mode in AuthPolicy.Mode.allCases { XCTAssertEqual(AuthPolicy(factors: mode.factors).mode, mode) }
        let policy = AuthPolicy(factors: [.face, .pin])
        let (run, missing) = policy.plan(override: [.finger, .pin, .face])
        XCTAssertEqual(run, [.pin, .face])
        XCTAssertEqual(missing, [.finger])
        XCTAssertEqual(policy.plan(override: nil).run, [.face, .pin])
    }
}

final class BoundKeyTests: XCTestCase {
    func testSignatureVerifiesWithThePublicKeyAndCarriesTheCounter() throws {
        let key = BoundKey.generate()
        let challenge = Data("nonce-1234".utf8)
        let sig = try BoundKey.sign(privateKey: key.privateKey, appID: "https://example.com", challenge: challenge,
                                    userVerified: true, counter: 7)
        XCTAssertEqual(sig.authenticatorData.count, 37)
        XCTAssertEqual(sig.authenticatorData.prefix(32), Data(SHA256.hash(data: Data("https://example.com".utf8))))
        XCTAssertEqual(sig.authenticatorData[32], 0x05)  // user present + user verified
        XCTAssertEqual(Array(sig.authenticatorData.suffix(4)), [0, 0, 0, 7])
        XCTAssertTrue(BoundKey.verify(publicKeyPEM: key.publicKeyPEM, authenticatorData: sig.authenticatorData, challenge: challenge, der: sig.der))
        XCTAssertFalse(BoundKey.verify(publicKeyPEM: key.publicKeyPEM, authenticatorData: sig.authenticatorData,
                                       challenge: Data("other".utf8), der: sig.der))
        let other = BoundKey.generate()
        XCTAssertFalse(BoundKey.verify(publicKeyPEM: other.publicKeyPEM, authenticatorData: sig.authenticatorData, challenge: challenge, der: sig.der))
    }
}

final class AuthStoreTests: XCTestCase {
    var directory = ""

    override func setUp() {
        directory = NSTemporaryDirectory() + "auth-store-\(UUID().uuidString.prefix(8))"
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    func testPINLockoutKeysAndCascade() throws {
        let storeKey = SymmetricKey(size: .bits256)
        let store = try Store(directory: directory, key: storeKey)
        let hash = try PINHasher(parameters: Argon2Parameters(iterations: 1, memoryKiB: 64, parallelism: 1)).hash("2468")
        try store.pins.set(user: "alice", hash: hash)
        XCTAssertEqual(try store.users.named("alice")?.pinSet, true)
        XCTAssertEqual(try store.pins.recordAttempt(user: "alice", success: false).failures, 1)
        XCTAssertEqual(try store.pins.recordAttempt(user: "alice", success: false).failures, 2)
        let rules = LockoutRules()
        for _ in 0..<5 { try store.lockouts.update(user: "alice") { $0.recordFailure(now: 100, rules: rules) } }
        XCTAssertEqual(try store.lockouts.get(user: "alice").failures, 5)
        // A right PIN clears both counts.
        XCTAssertEqual(try store.pins.recordAttempt(user: "alice", success: true).failures, 0)
        XCTAssertEqual(try store.lockouts.get(user: "alice"), LockoutState())

        let key = BoundKey.generate()
        _ = try store.keys.add(user: "alice", appID: "app", aaid: "4e4e#4005", handle: key.handle, publicKeyPEM: key.publicKeyPEM,
                             privateKey: key.privateKey)
        XCTAssertEqual(try store.keys.nextSignature(handle: key.handle).counter, 1)
        let second = try store.keys.nextSignature(handle: key.handle)
        XCTAssertEqual(second.counter, 2)
        XCTAssertEqual(second.privateKey, key.privateKey)
        // The private key is sealed: its bytes are nowhere in the database files.
        for suffix in ["", "-wal"] {
            let bytes = (try? Data(contentsOf: URL(fileURLWithPath: store.path + suffix))) ?? Data()
            XCTAssertNil(bytes.range(of: key.privateKey), "private key in clear in \(suffix)")
        }
        // Reopened (a restart): the counter goes on from where it was.
        let reopened = try Store(directory: directory, key: storeKey)
        XCTAssertEqual(try reopened.keys.nextSignature(handle: key.handle).counter, 3)
        // Deleting the user deletes PIN, lockout, policy and keys.
        _ = try reopened.users.delete(named: "alice")
        XCTAssertNil(try reopened.pins.get(user: "alice"))
        XCTAssertNil(try reopened.keys.get(handle: key.handle))
        XCTAssertNil(try reopened.policies.get(user: "alice"))
    }
}

/// What a caller may ask of a decision (issue 20): each branch of CallerLimits.
final class CallerLimitsTests: XCTestCase {
    func testNonAdminsMayRaiseButNotLowerTheThreshold() {
        let limits = CallerLimits(faceThreshold: 48, fingerThreshold: 40)
        XCTAssertEqual(limits.threshold(.face, asked: nil, isAdmin: false), .use(48), "no ask: the configured one")
        XCTAssertEqual(limits.threshold(.face, asked: 60, isAdmin: false), .use(60))
        XCTAssertEqual(limits.threshold(.face, asked: 48, isAdmin: false), .use(48))
        XCTAssertEqual(limits.threshold(.face, asked: 0, isAdmin: false), .belowFloor(asked: 0, floor: 48))
        XCTAssertEqual(limits.threshold(.face, asked: 47.9, isAdmin: false), .belowFloor(asked: 47.9, floor: 48))
        XCTAssertEqual(limits.threshold(.finger, asked: 30, isAdmin: false), .belowFloor(asked: 30, floor: 40))
        XCTAssertEqual(limits.threshold(.finger, asked: nil, isAdmin: true), .use(40))
        XCTAssertEqual(limits.threshold(.face, asked: 0, isAdmin: true), .use(0), "an administrator may (tests, imports)")
        // An administrator's floor in biometricd.conf is what everyone gets by default.
        XCTAssertEqual(CallerLimits(faceThreshold: 60).threshold(.face, asked: 55, isAdmin: false), .belowFloor(asked: 55, floor: 60))
    }

    func testOnlyAdminsMaySkipLiveness() {
        let limits = CallerLimits()
        let image = CaptureAsk(modality: .face, faceLiveness: [])
        XCTAssertEqual(limits.judge(image, isAdmin: false), .refused(.init(knob: .liveness, asked: "none", floor: "passive")))
        XCTAssertEqual(limits.judge(CaptureAsk(modality: .face), isAdmin: false), .atFloor)
        XCTAssertEqual(limits.judge(image, isAdmin: true), .weakened([.liveness]), "an admin may, and the run then grants nothing")
        XCTAssertEqual(limits.judge(image, isAdmin: false, livenessRequired: false), .atFloor,
                       "a user whose policy (set by an admin) needs no liveness loosens nothing")
    }

    func testOnlyAdminsMayVerifyAgainstTheirOwnTemplates() {
        let limits = CallerLimits()
        XCTAssertEqual(limits.callerReferences(isAdmin: false), .adminRequired)
        XCTAssertEqual(limits.callerReferences(isAdmin: true), .allowed)
    }
}

/// The multi-factor runner (issue 20): every branch on scripted factor results, no daemon.
final class FactorRunnerTests: XCTestCase {
    typealias R = FactorRunner.Result

    private func run(_ policy: [Factor], override: [Factor]? = nil, enrolled: Set<Factor>, pin: Bool = false,
                     remainingMs: Int = 30_000, results: [Factor: R]) async throws -> (FactorRunner.Run, [Factor]) {
        var started: [Factor] = []
        var asked: [Factor] = []
        let runner = FactorRunner(policy: AuthPolicy(factors: policy), override: override)
        let run = try await runner.run(FactorRunner.User(enrolled: enrolled, pinGiven: pin), remainingMs: { remainingMs },
                                       starting: { f, _, _ in started.append(f) },
                                       attempt: { f, _ in asked.append(f); return results[f] ?? .error(.other, code: -1, reason: "unscripted", message: "") })
        XCTAssertEqual(started, asked, "progress is announced for exactly the factors tried")
        return (run, asked)
    }

    func testTheFirstPassingFactorWinsInPolicyOrder() async throws {
        let (r, asked) = try await run([.face, .finger, .pin], enrolled: [.face, .finger, .pin], pin: true,
                                       results: [.face: .failed(message: "no", score: 20, retriesLeft: nil), .finger: .passed(score: 70)])
        XCTAssertEqual(r.outcome, .passed(.finger, score: 70))
        XCTAssertEqual(asked, [.face, .finger], "the PIN is not asked once a factor passed")
        XCTAssertEqual(r.tried.map(\.reason), ["no_match"])
    }

    func testEachWayAFactorFailsFallsThrough() async throws {
        let (r, asked) = try await run([.face, .finger, .pin], enrolled: [.face, .finger, .pin], pin: true, results: [
            .face: .error(.presentationAttack, code: 3004, reason: "spoof_detected", message: "screen"),
            .finger: .error(.other, code: 2002, reason: "camera_error", message: "lost"),
            .pin: .failed(message: "wrong PIN", score: nil, retriesLeft: 2),
        ])
        XCTAssertEqual(asked, [.face, .finger, .pin])
        XCTAssertEqual(r.outcome, .failed)
        XCTAssertEqual(r.tried.map(\.code), [3004, 2002, 0])
        XCTAssertEqual(r.tried.map(\.kind), [.presentationAttack, .other, .noMatch], "typed kinds beside the wire words")
        XCTAssertEqual(r.tried.last?.retriesLeft, 2)
    }

    func testNotEnrolledNoPINGivenAndNoTimeLeftAreSkipped() async throws {
        let (r, asked) = try await run([.face, .finger, .pin], enrolled: [.finger, .pin], pin: false, remainingMs: 500, results: [:])
        XCTAssertEqual(asked, [])
        XCTAssertEqual(r.skipped.map(\.reason), [.notEnrolled, .noTimeLeft, .noPINGiven])
        XCTAssertEqual(r.outcome, .failed, "something could have run: a negative result, not an error")
    }

    func testOverrideOutsideThePolicyIsReported() async throws {
        let (r, asked) = try await run([.face], override: [.pin, .face], enrolled: [.face, .pin], pin: true,
                                       results: [.face: .passed(score: 55)])
        XCTAssertEqual(asked, [.face])
        XCTAssertEqual(r.skipped, [FactorRunner.Skip(factor: .pin, reason: .notInPolicy)])
        XCTAssertEqual(r.outcome, .passed(.face, score: 55))
    }

    func testAllLockedIsLockedOutWithTheRetry() async throws {
        let (r, _) = try await run([.face, .finger], enrolled: [.face, .finger], results: [
            .face: .lockedOut(retryAfterS: 25), .finger: .lockedOut(retryAfterS: 25),
        ])
        XCTAssertEqual(r.outcome, .lockedOut(retryAfterS: 25))
        XCTAssertFalse(r.pinFallback)
    }

    /// KOBIL's temporary switch: biometrics locked, a PIN set and given, policy `biometric`: the PIN stands in.
    func testThePINStandsInWhenBiometricsAreLocked() async throws {
        let (r, asked) = try await run([.face, .finger], enrolled: [.face, .finger, .pin], pin: true, results: [
            .face: .lockedOut(retryAfterS: nil), .finger: .lockedOut(retryAfterS: nil), .pin: .passed(score: nil),
        ])
        XCTAssertTrue(r.pinFallback)
        XCTAssertEqual(asked, [.face, .finger, .pin])
        XCTAssertEqual(r.outcome, .passed(.pin, score: nil))
        // A wrong PIN there is a plain failure, counted by the PIN's own rules.
        let (wrong, _) = try await run([.face], enrolled: [.face, .pin], pin: true, results: [
            .face: .lockedOut(retryAfterS: 30), .pin: .failed(message: "wrong PIN", score: nil, retriesLeft: 1),
        ])
        XCTAssertEqual(wrong.outcome, .failed)
        // Not without a PIN given, and not when biometrics merely failed.
        let (noPIN, askedNoPIN) = try await run([.face], enrolled: [.face, .pin], pin: false, results: [.face: .lockedOut(retryAfterS: 30)])
        XCTAssertEqual(askedNoPIN, [.face])
        XCTAssertEqual(noPIN.outcome, .lockedOut(retryAfterS: 30))
        let (failed, askedFailed) = try await run([.face], enrolled: [.face, .pin], pin: true,
                                                  results: [.face: .failed(message: "no", score: 10, retriesLeft: nil)])
        XCTAssertEqual(askedFailed, [.face], "a policy without the PIN keeps it out unless biometrics are locked")
        XCTAssertEqual(failed.outcome, .failed)
    }

    func testPINLockedIsSkipped() async throws {
        let (r, _) = try await run([.pin], enrolled: [.pin], pin: true, results: [.pin: .pinLocked])
        XCTAssertEqual(r.skipped.map(\.reason), [.pinLocked])
        XCTAssertEqual(r.outcome, .failed)
    }

    func testEmptyPolicyAndNothingEnrolled() async throws {
        let (empty, _) = try await run([], enrolled: [.face], results: [:])
        XCTAssertEqual(empty.outcome, .noFactorInPolicy)
        let (none, _) = try await run([.face, .finger], enrolled: [.pin], results: [:])
        XCTAssertEqual(none.outcome, .nothingEnrolled)
    }

    func testCancellationEndsTheRun() async throws {
        let runner = FactorRunner(policy: AuthPolicy(factors: [.face, .pin]), override: nil)
        do {
            _ = try await runner.run(FactorRunner.User(enrolled: [.face, .pin], pinGiven: true), remainingMs: { 10_000 },
                                     starting: { _, _, _ in }, attempt: { _, _ in throw CancellationError() })
            XCTFail("cancellation must end the run")
        } catch is CancellationError {}
    }
}

/// What the lockout counts, from a verdict (issue 20: never read back from an encoded error).
final class AttemptVerdictTests: XCTestCase {
    func testLockoutEffects() {
        XCTAssertEqual(AttemptVerdict.matched.lockoutEffect, .reset)
        XCTAssertEqual(AttemptVerdict.noMatch.lockoutEffect, .countFailure)
        XCTAssertEqual(AttemptVerdict.presentationAttack.lockoutEffect, .countFailure)
        for reason: AttemptVerdict.NotJudged in [.canceled, .cameraError, .nobodyInView, .poorQuality, .error] {
            XCTAssertEqual(AttemptVerdict.notJudged(reason).lockoutEffect, .none)
        }
    }
}
