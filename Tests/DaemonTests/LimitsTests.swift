@testable import BiometricDaemon
import BiometricClient
import BiometricProtocol
import BiometricStore
import Foundation
import Synchronization
import XCTest
import TestRequirements

/// The per-uid shares, the fair order of expensive work and the storage quotas (SPEC §4 "Limits"):
/// each decision branch on values, then the caps seen through a real daemon's socket.
final class LimitsTests: XCTestCase {
    private func rules() -> ShareRules {
        var r = ShareRules()
        r.connectionsPerUser = 2
        r.connectionsAdmin = 3
        r.connectionsTotal = 16
        r.callsPerConnection = 2
        r.callsPerUser = 3
        r.bufferedBytesPerUser = 100
        return r
    }

    func testConnectionsPerUserAndTheAdminReserve() {
        var ledger = ShareLedger(rules: rules())
        XCTAssertEqual(ledger.admitConnection(uid: 65534, isAdmin: false), .admitted)
        XCTAssertEqual(ledger.admitConnection(uid: 65534, isAdmin: false), .admitted)
        XCTAssertEqual(ledger.admitConnection(uid: 65534, isAdmin: false), .refused(.connectionsPerUser, max: 2))
        // Another uid is not affected by nobody's cap.
        XCTAssertEqual(ledger.admitConnection(uid: 1000, isAdmin: false), .admitted)
        // Released connections can be used again.
        ledger.releaseConnection(uid: 65534, isAdmin: false)
        XCTAssertEqual(ledger.admitConnection(uid: 65534, isAdmin: false), .admitted)
        XCTAssertEqual(ledger.connections, 3)

        // Many uids together stop short of the total; the reserve stays for admins.
        var many = ShareLedger(rules: rules())
        var refusedAt: Int?
        for uid in UInt32(2000)..<2100 where refusedAt == nil {
            if case .refused(let limit, _) = many.admitConnection(uid: uid, isAdmin: false) {
                XCTAssertEqual(limit, .connectionsTotal)
                refusedAt = Int(uid - 2000)
            }
        }
        XCTAssertEqual(refusedAt, 16 - rules().adminReserve)
        XCTAssertEqual(many.admitConnection(uid: 0, isAdmin: true), .admitted, "root still gets in")
        XCTAssertEqual(many.admitConnection(uid: 0, isAdmin: true), .admitted)
        XCTAssertEqual(many.admitConnection(uid: 0, isAdmin: true), .admitted)
        XCTAssertEqual(many.admitConnection(uid: 0, isAdmin: true), .refused(.connectionsPerUser, max: 3))
    }

    func testCallsPerConnectionAndPerUser() {
        var ledger = ShareLedger(rules: rules())
        XCTAssertEqual(ledger.admitCall(uid: 7, isAdmin: false, onConnection: 0), .admitted)
        XCTAssertEqual(ledger.admitCall(uid: 7, isAdmin: false, onConnection: 2), .refused(.callsPerConnection, max: 2))
        XCTAssertEqual(ledger.admitCall(uid: 7, isAdmin: false, onConnection: 1), .admitted)
        XCTAssertEqual(ledger.admitCall(uid: 7, isAdmin: false, onConnection: 0), .admitted)
        XCTAssertEqual(ledger.admitCall(uid: 7, isAdmin: false, onConnection: 0), .refused(.callsPerUser, max: 3))
        XCTAssertEqual(ledger.admitCall(uid: 8, isAdmin: false, onConnection: 0), .admitted, "another uid has its own share")
        ledger.releaseCall(uid: 7)
        XCTAssertEqual(ledger.admitCall(uid: 7, isAdmin: false, onConnection: 0), .admitted)
        // Admins get four times the share, not an unlimited one.
        XCTAssertEqual(ledger.admitCall(uid: 0, isAdmin: true, onConnection: 8), .refused(.callsPerConnection, max: 8))
    }

    func testBufferedBytesAreBookedAndGivenBack() {
        var ledger = ShareLedger(rules: rules())
        XCTAssertEqual(ledger.chargeBytes(uid: 5, isAdmin: false, delta: 60), .admitted)
        XCTAssertEqual(ledger.chargeBytes(uid: 5, isAdmin: false, delta: 50), .refused(.bufferedBytesPerUser, max: 100))
        XCTAssertEqual(ledger.held[5]?.bufferedBytes, 60, "a refused charge books nothing")
        XCTAssertEqual(ledger.chargeBytes(uid: 5, isAdmin: false, delta: -60), .admitted)
        XCTAssertNil(ledger.held[5], "a uid holding nothing is forgotten")
    }

    func testARefusalIsErrorLimitReachedNamingTheLimit() throws {
        let error = try XCTUnwrap(Admission.refused(.callsPerUser, max: 64).error)
        XCTAssertEqual(error.code, 1009)
        XCTAssertEqual(error.reason, "limit_reached")
        XCTAssertEqual(error.data?["limit"], "calls_per_user")
        XCTAssertEqual(error.data?["max"], 64)
        XCTAssertNil(Admission.admitted.error)
    }

    func testFairOrderServesANewcomerBeforeAFlood() {
        var order = FairOrder(width: 1, maxQueuedPerOwner: 4)
        XCTAssertEqual(order.arrive(owner: 65534, ticket: 1), .run)
        for t in 2...5 { XCTAssertEqual(order.arrive(owner: 65534, ticket: t), .wait) }
        XCTAssertEqual(order.arrive(owner: 65534, ticket: 6), .refused, "at most 4 waiting per uid")
        XCTAssertEqual(order.arrive(owner: 0, ticket: 7), .wait)
        // The job in flight ends: root, who arrived last, goes next, then the flood.
        XCTAssertEqual(order.finished(owner: 65534)?.ticket, 7)
        XCTAssertEqual(order.finished(owner: 0)?.ticket, 2)
        // A waiting ticket that gives up is gone; one already handed out cannot leave.
        XCTAssertTrue(order.leave(owner: 65534, ticket: 4))
        XCTAssertFalse(order.leave(owner: 65534, ticket: 2))
        XCTAssertEqual(order.finished(owner: 65534)?.ticket, 3)
        XCTAssertEqual(order.finished(owner: 65534)?.ticket, 5)
        XCTAssertNil(order.finished(owner: 65534))
        XCTAssertEqual(order.running, 0)
    }

    func testFairOrderAlternatesBetweenTwoFloods() {
        var order = FairOrder(width: 1, maxQueuedPerOwner: 16)
        XCTAssertEqual(order.arrive(owner: 1, ticket: 0), .run)
        for t in 1...4 { _ = order.arrive(owner: 1, ticket: t) }
        for t in 11...14 { _ = order.arrive(owner: 2, ticket: t) }
        var current: UInt32 = 1
        var served: [UInt32] = []
        while let next = order.finished(owner: current) {
            served.append(next.owner)
            current = next.owner
        }
        XCTAssertEqual(served, [2, 1, 2, 1, 2, 1, 2, 1])
    }

    /// Two slots, one per uid (the PIN queue): a flood holds one slot, never both, and another
    /// uid's job starts at once in the other.
    func testAFloodHoldsOneSlotOfTwo() {
        var order = FairOrder(width: 2, maxQueuedPerOwner: 8, maxRunningPerOwner: 1)
        XCTAssertEqual(order.arrive(owner: 65534, ticket: 1), .run)
        XCTAssertEqual(order.arrive(owner: 65534, ticket: 2), .wait, "a second slot is free, but not for the same uid")
        XCTAssertEqual(order.arrive(owner: 0, ticket: 3), .run, "another uid does not wait behind the flood")
        XCTAssertEqual(order.runningBy, [65534: 1, 0: 1])
        XCTAssertNil(order.finished(owner: 0), "nobody's next job still waits for nobody's slot")
        XCTAssertEqual(order.arrive(owner: 1000, ticket: 4), .run)
        XCTAssertEqual(order.finished(owner: 65534)?.ticket, 2)
    }

    /// The queue itself, on real tasks: one uid floods a width-1 queue; another uid's job runs
    /// right after the job in flight. Order of completion is asserted, not times.
    func testFairQueueLetsAnotherUidThroughAFlood() async throws {
        let queue = FairQueue(label: "test", width: 1, maxQueuedPerOwner: 64)
        final class Log: Sendable { let entries = Mutex<[String]>([]) }
        let log = Log()
        let gate = DispatchSemaphore(value: 0)
        // The first flood job holds the only slot until the others are queued.
        let first = Task { try await queue.run(owner: 65534) { gate.wait(); log.entries.withLock { $0.append("flood") } } }
        try await waitUntil("queue.running > 0") { queue.running > 0 }
        var flood: [Task<Void, any Error>] = []
        for _ in 0..<10 { flood.append(Task { try await queue.run(owner: 65534) { log.entries.withLock { $0.append("flood") } } }) }
        try await waitUntil("queue.queued >= 10") { queue.queued >= 10 }
        let root = Task { try await queue.run(owner: 0) { log.entries.withLock { $0.append("root") } } }
        try await waitUntil("queue.queued >= 11") { queue.queued >= 11 }
        gate.signal()
        try await root.value
        try await first.value
        for t in flood { try await t.value }
        let order = log.entries.withLock { $0 }
        XCTAssertEqual(order.count, 12)
        XCTAssertEqual(order.firstIndex(of: "root"), 1, "root ran right after the job in flight: \(order)")
    }

    func testFairQueueRefusesBeyondTheUidsQueueAndForgetsCanceledWaiters() async throws {
        let queue = FairQueue(label: "test", width: 1, maxQueuedPerOwner: 2)
        let gate = DispatchSemaphore(value: 0)
        let busy = Task { try await queue.run(owner: 1) { gate.wait() } }
        try await waitUntil("queue.running > 0") { queue.running > 0 }
        // A waiter canceled while waiting leaves the queue at once.
        let canceled = Task { try await queue.run(owner: 1) {} }
        try await waitUntil("queue.queued >= 1") { queue.queued >= 1 }
        canceled.cancel()
        do {
            try await canceled.value
            XCTFail("a canceled waiter must not run")
        } catch is CancellationError {}
        XCTAssertEqual(queue.queued, 0)
        // Two fit in the uid's queue, the third is refused with 1009 queue_per_user.
        let a = Task { try await queue.run(owner: 1) {} }
        let b = Task { try await queue.run(owner: 1) {} }
        try await waitUntil("queue.queued >= 2") { queue.queued >= 2 }
        do {
            try await queue.run(owner: 1) {}
            XCTFail("a third waiting job of the same uid must be refused")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, 1009)
            XCTAssertEqual(error.data?["limit"], "queue_per_user")
        }
        // Another uid still gets a place.
        let other = Task { try await queue.run(owner: 2) {} }
        try await waitUntil("queue.queued >= 3") { queue.queued >= 3 }
        gate.signal()
        try await busy.value
        try await a.value
        try await b.value
        try await other.value
    }

    func testUserLocksSerialiseOneUserAndForgetIdleOnes() {
        let locks = UserLocks()
        final class Counter: @unchecked Sendable { var inside = 0, most = 0; let m = NSLock() }
        let counter = Counter()
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            locks.withLock("alice") {
                counter.m.lock(); counter.inside += 1; counter.most = max(counter.most, counter.inside); counter.m.unlock()
                usleep(2000)
                counter.m.lock(); counter.inside -= 1; counter.m.unlock()
            }
        }
        XCTAssertEqual(counter.most, 1, "never two at once for the same user")
        XCTAssertEqual(locks.count, 0, "no lock kept for a user nobody waits for")
    }

    func testQuotasHoldOrdinaryUsersAndExemptAdmins() throws {
        var quotas = StorageQuotas()
        quotas.keys = 2
        XCTAssertNil(quotas.quota(.keys, isAdmin: true))
        XCTAssertEqual(quotas.quota(.keys, isAdmin: false), Quota(name: "keys", max: 2))
        XCTAssertEqual(quotas.templates(.finger, isAdmin: false)?.name, "finger_templates")

        // In the store: a batch that would pass the quota stores nothing.
        let dir = "/tmp/bmd-quota-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try Store(directory: dir, key: try TemplateKey.load(stateDirectory: dir, credentialsDirectory: nil))
        let quota = Quota(name: "face_templates", max: 3)
        let two = (0..<2).map { _ in NewTemplate(quality: 50, payload: Data(repeating: 1, count: 16)) }
        XCTAssertEqual(try store.templates.add(user: "bob", modality: .face, two, quota: quota).count, 2)
        XCTAssertThrowsError(try store.templates.add(user: "bob", modality: .face, two, quota: quota)) { error in
            XCTAssertEqual(error as? StoreError, .quotaExceeded("face_templates", max: 3, have: 2))
            XCTAssertEqual(RPCError.from(error).code, 1010)
            XCTAssertEqual(RPCError.from(error).data?["quota"], "face_templates")
        }
        XCTAssertEqual(try store.templates.list(user: "bob", modality: .face).count, 2, "nothing of the refused batch was stored")
        // Other modality, other quota.
        XCTAssertNoThrow(try store.templates.add(user: "bob", modality: .finger, two, quota: quota))
        // Keys: the third is refused, the first two stay.
        let keyQuota = Quota(name: "keys", max: 2)
        for app in ["https://a", "https://b"] {
            _ = try store.keys.add(user: "bob", appID: app, aaid: "4e4e#4005", handle: UUID().uuidString, publicKeyPEM: "pem",
                                 privateKey: Data(repeating: 3, count: 32), quota: keyQuota)
        }
        // Re-registering the same (app, aaid) replaces, so it fits.
        XCTAssertNoThrow(try store.keys.add(user: "bob", appID: "https://a", aaid: "4e4e#4005", handle: UUID().uuidString,
                                          publicKeyPEM: "pem", privateKey: Data(repeating: 3, count: 32), quota: keyQuota))
        XCTAssertThrowsError(try store.keys.add(user: "bob", appID: "https://c", aaid: "4e4e#4005", handle: UUID().uuidString,
                                              publicKeyPEM: "pem", privateKey: Data(repeating: 3, count: 32), quota: keyQuota))
        XCTAssertEqual(try store.keys.list(user: "bob").map(\.appID).sorted(), ["https://a", "https://b"])
    }

    // MARK: Through the socket

    /// A uid over its connection cap gets one 1009 line and a closed socket; its other
    /// connections, and other uids, are served. (The test runs as the daemon's own uid, an admin:
    /// the admin cap is set low for it. Real unprivileged uids: Tests/abuse.)
    func testAConnectionOverTheCapIsRefusedAtOnceAndTheOthersServed() throws {
        let daemon = try DaemonProcess(cameras: [], extraArguments: ["--set", "max_connections_admin=3", "--set", "modalities=finger"])
        defer { daemon.stop() }
        // The harness's readiness probe may still be counted: wait until this is the only client.
        let first = try daemon.client()
        for _ in 0..<250 where try first.call(Method.daemonStatus, as: DaemonStatus.self).clients > 1 { usleep(20_000) }
        var held = try [first] + (0..<2).map { _ in try daemon.client() }
        for c in held { XCTAssertNoThrow(try c.call(Method.daemonStatus, as: DaemonStatus.self)) }
        let extra = try daemon.client()
        XCTAssertTrue(extra.waitReadable(milliseconds: 5000), "the refusal comes without being asked")
        let refusal = try extra.readMessage()
        XCTAssertEqual(refusal["error"]?["code"], 1009)
        XCTAssertEqual(refusal["error"]?["data"]?["limit"], "connections_per_user")
        XCTAssertTrue(extra.waitReadable(milliseconds: 5000))
        XCTAssertThrowsError(try extra.readLine(), "then the connection is closed")
        // The ones held still answer; closing one makes room for a new one.
        XCTAssertNoThrow(try held[0].call(Method.daemonStatus, as: DaemonStatus.self))
        held.removeLast()  // closes it
        var admitted: DaemonStatus?
        for _ in 0..<100 where admitted == nil {
            usleep(20_000)
            admitted = try? daemon.client().call(Method.daemonStatus, as: DaemonStatus.self)
        }
        XCTAssertNotNil(admitted, "a closed connection gives its place back")
        XCTAssertEqual(held.count, 2)
    }

    /// More unparsed input than the uid's share: 1009 buffered_bytes_per_user, then closed.
    func testUnparsedInputOverTheShareIsRefused() throws {
        let daemon = try DaemonProcess(cameras: [], extraArguments: [
            "--set", "max_buffered_bytes_per_user=2097152", "--set", "modalities=finger"])
        defer { daemon.stop() }
        // Admins get 4× the share (8 MiB here): nine connections each hold ~1 MiB without a newline.
        var refused: JSONValue?
        var clients: [BiometricClient] = []
        let chunk = Data(repeating: UInt8(ascii: " "), count: 1_000_000)
        for _ in 0..<9 where refused == nil {
            let c = try daemon.client()
            // A connection refused while sending fails the send (EPIPE); its refusal is still read.
            try? c.send(chunk)
            clients.append(c)
            if c.waitReadable(milliseconds: 300) { refused = try? c.readMessage() }
        }
        for c in clients where refused == nil {
            if c.waitReadable(milliseconds: 200) { refused = try? c.readMessage() }
        }
        XCTAssertEqual(refused?["error"]?["code"], 1009, "\(String(describing: refused))")
        XCTAssertEqual(refused?["error"]?["data"]?["limit"], "buffered_bytes_per_user")
        XCTAssertNoThrow(try daemon.client().call(Method.daemonStatus, as: DaemonStatus.self), "the daemon still serves")
    }
}
