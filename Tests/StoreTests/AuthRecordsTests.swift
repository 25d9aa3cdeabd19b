import BiometricAuth
@testable import BiometricStore
import Crypto
import Foundation
import XCTest

/// The store's authentication records, each kind on its own (issue 38: the store split by
/// record kind): policies, PINs, lockouts and bound keys. Every one is reached through its own
/// type over the one connection and sealing key; none of them touches another kind's rows
/// except where the SPEC says so (a right PIN clears the biometric lockout).
final class AuthRecordsTests: XCTestCase {
    private var dir = ""
    private var store: Store!

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "auth-records-\(UUID().uuidString)"
        store = try Store(directory: dir, key: SymmetricKey(size: .bits256))
    }

    override func tearDown() {
        store = nil
        try? FileManager.default.removeItem(atPath: dir)
    }

    private func refusal(_ body: () throws(StoreError) -> Void) -> StoreError? {
        do { try body() } catch { return error }
        return nil
    }

    func testPolicies() throws {
        XCTAssertNil(try store.policies.get(user: "ann"), "an unknown user has no policy")
        try store.policies.set(user: "ann", AuthPolicy(factors: [.pin, .face], requireLiveness: false))
        XCTAssertEqual(try store.policies.get(user: "ann"), AuthPolicy(factors: [.pin, .face], requireLiveness: false))
        XCTAssertEqual(try store.users.named("ann")?.policy, ["pin", "face"], "setting a policy creates the user")
        try store.policies.set(user: "ann", AuthPolicy(factors: [], requireLiveness: true))
        XCTAssertEqual(try store.policies.get(user: "ann"), AuthPolicy(factors: [], requireLiveness: true))
    }

    func testPINs() throws {
        XCTAssertNil(try store.pins.get(user: "ann"))
        guard case .notFound = refusal({ () throws(StoreError) in _ = try store.pins.recordAttempt(user: "ann", success: false) }) else {
            return XCTFail("an attempt for an unknown user is refused")
        }
        try store.pins.set(user: "ann", hash: "h1")
        XCTAssertEqual(try store.pins.get(user: "ann"), PINState(hash: "h1"))
        XCTAssertEqual(try store.pins.recordAttempt(user: "ann", success: false).failures, 1)
        XCTAssertEqual(try store.pins.recordAttempt(user: "ann", success: false).failures, 2)
        // a right PIN with outdated parameters: the count clears and the new hash replaces the old
        XCTAssertEqual(try store.pins.recordAttempt(user: "ann", success: true, rehash: "h2"), PINState(hash: "h2"))
        _ = try store.pins.recordAttempt(user: "ann", success: false)
        try store.pins.reset(user: "ann", removePIN: false)
        XCTAssertEqual(try store.pins.get(user: "ann"), PINState(hash: "h2"), "an admin reset clears the count, keeps the PIN")
        try store.pins.reset(user: "ann", removePIN: true)
        XCTAssertNil(try store.pins.get(user: "ann"))
        XCTAssertEqual(try store.users.named("ann")?.pinSet, false)
        // the CTAP form is kept sealed beside the PIN, and a plain set clears it
        try store.pins.set(user: "ann", hash: "h3", ctapHash: "ctap3")
        XCTAssertEqual(try store.pins.ctapHash(user: "ann"), "ctap3")
        try store.pins.set(user: "ann", hash: "h4")
        XCTAssertNil(try store.pins.ctapHash(user: "ann"))
    }

    func testLockoutsPerUserAndPerCamera() throws {
        let rules = LockoutRules()
        XCTAssertEqual(try store.lockouts.get(user: "ann"), LockoutState(), "nobody is locked before a failure")
        guard case .notFound = refusal({ () throws(StoreError) in
            _ = try store.lockouts.update(user: "ann") { $0.recordFailure(now: 0, rules: rules) }
        }) else { return XCTFail("a failure of an unknown user is refused") }
        try store.pins.set(user: "ann", hash: "h")
        for _ in 0..<5 { try store.lockouts.update(user: "ann") { $0.recordFailure(now: 100, rules: rules) } }
        XCTAssertEqual(try store.lockouts.get(user: "ann").failures, 5)
        XCTAssertGreaterThan(try store.lockouts.get(user: "ann").lockedUntil, 100)
        // the camera's count (1:N) is its own: the user's failures are not the camera's
        XCTAssertEqual(try store.lockouts.get(camera: "cam0"), LockoutState())
        for _ in 0..<3 { try store.lockouts.update(camera: "cam0") { $0.recordFailure(now: 100, rules: rules) } }
        XCTAssertEqual(try store.lockouts.get(camera: "cam0").failures, 3)
        XCTAssertEqual(try store.lockouts.get(camera: "cam1"), LockoutState())
        // a right PIN unlocks the user's biometrics (SPEC §4), not a camera
        _ = try store.pins.recordAttempt(user: "ann", success: true)
        XCTAssertEqual(try store.lockouts.get(user: "ann"), LockoutState())
        XCTAssertEqual(try store.lockouts.get(camera: "cam0").failures, 3)
        try store.lockouts.clear(camera: "cam0")
        XCTAssertEqual(try store.lockouts.get(camera: "cam0"), LockoutState())
        XCTAssertFalse(try store.lockouts.clear(user: "nobody-here"))
    }

    func testBoundKeys() throws {
        let a = BoundKey.generate(), b = BoundKey.generate()
        let quota = Quota(name: "keys_per_user", max: 1)
        let record = try store.keys.add(user: "ann", appID: "app", aaid: "4e4e#4005", handle: a.handle, publicKeyPEM: a.publicKeyPEM,
                                        privateKey: a.privateKey, quota: quota)
        XCTAssertEqual(record.counter, 0)
        XCTAssertEqual(try store.keys.list(user: "ann").map(\.handle), [a.handle])
        guard case .quotaExceeded(_, max: 1, have: 1) = refusal({ () throws(StoreError) in
            _ = try store.keys.add(user: "ann", appID: "app2", aaid: "4e4e#4005", handle: b.handle, publicKeyPEM: b.publicKeyPEM,
                                   privateKey: b.privateKey, quota: quota)
        }) else { return XCTFail("a second key past the quota is refused") }
        let signing = try store.keys.nextSignature(handle: a.handle)
        XCTAssertEqual(signing.counter, 1)
        XCTAssertEqual(signing.privateKey, a.privateKey, "the private key opens for signing")
        XCTAssertEqual(try store.keys.get(handle: a.handle)?.counter, 1)
        guard case .notFound = refusal({ () throws(StoreError) in _ = try store.keys.remove(user: "ann", handle: b.handle) }) else {
            return XCTFail("removing a key that is not there says so")
        }
        XCTAssertEqual(try store.keys.remove(user: "ann", handle: nil), 1)
        XCTAssertEqual(try store.keys.list(user: "ann"), [])
    }
}
