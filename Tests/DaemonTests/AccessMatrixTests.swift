import BiometricAuth
@testable import BiometricDaemon
import BiometricProtocol
import Foundation
import Logging
import XCTest

/// Every method of the daemon declares its access rule where it is registered; this is the
/// whole table, checked against SPEC §3/§4 and issue 20. A method added without a row here, or
/// a rule changed, fails: the matrix is what a reviewer reads.
final class AccessMatrixTests: XCTestCase {
    static let expected: [String: AccessRule] = [
        "daemon.status": .anyone, "session.cancel": .anyone, "camera.list": .anyone, "camera.watch": .anyone,
        "camera.snapshot": .admin, "camera.ir": .anyone, "camera.ir.probe": .admin, "camera.check": .admin,
        "user.list": .admin, "user.get": .selfOrAdmin, "user.delete": .selfReverifiedOrAdmin,
        "face.enroll": .selfReverifiedOrAdmin, "face.verify": .selfOrAdmin, "face.identify": .adminOrLogin,
        "face.list": .selfOrAdmin, "face.remove": .selfReverifiedOrAdmin,
        "face.add": .admin, "face.export": .admin, "face.set": .admin, "face.reset": .admin,
        "face.extract": .admin, "face.match": .admin,
        "finger.capture": .admin, "finger.enroll": .selfReverifiedOrAdmin, "finger.verify": .selfOrAdmin,
        "finger.identify": .adminOrLogin, "finger.extract": .admin, "finger.match": .admin,
        "finger.list": .selfOrAdmin, "finger.remove": .selfReverifiedOrAdmin, "finger.add": .admin, "finger.export": .admin,
        "pin.set": .selfReverifiedOrAdmin, "pin.verify": .selfOrAdmin, "pin.reset": .admin,
        "auth.policy.get": .selfOrAdmin, "auth.policy.set": .selfReverifiedOrAdmin, "auth.status": .selfOrAdmin,
        "auth.authenticate": .selfOrAdminOrStepUp, "auth.password.begin": .selfOrAdmin, "auth.password.proven": .root, "auth.lockout.clear": .admin,
        "key.register": .selfReverifiedOrAdmin, "key.list": .selfOrAdmin, "key.deregister": .selfReverifiedOrAdmin, "key.sign": .selfOrAdmin,
    ]

    /// What each method requires beyond its access rule and what its success grants (issue 33,
    /// item 1); every method not listed requires nothing and grants nothing.
    static let expectedSecurity: [String: (Requirements, Grants)] = [
        "face.verify": (.liveCapture(.face, camera: .trustedToGrant), .authentication),
        "finger.verify": (.liveCapture(.finger, camera: .trustedToGrant), .authentication),
        "face.identify": (.liveCapture(.face, camera: .trusted), .lockoutReset),
        "finger.identify": (.liveCapture(.finger, camera: .trusted), .lockoutReset),
        "auth.authenticate": (.loginCapture, .authentication),
        "key.sign": (.loginCapture, .lockoutReset),
        "pin.verify": (.nothing, .reverification),
    ]

    func testEveryMethodDeclaresWhatItRequiresAndGrants() throws {
        let table = try Self.table()
        for method in table.methods {
            let declared = table.declarations[method]!
            let (requires, grants) = Self.expectedSecurity[method] ?? (.nothing, .none)
            XCTAssertEqual(declared.requires, requires, "\(method) requires")
            XCTAssertEqual(declared.grants, grants, "\(method) grants \(declared.grants)")
            // A change to a user's factors needs a fresh authentication; nothing that grants one
            // may itself need one (or nobody could ever start).
            if declared.requiresFreshAuthentication { XCTAssertFalse(declared.grants.contains(.reverification), method) }
        }
        // Every method that grants anything proves it on a trusted camera or with the PIN.
        for (method, declared) in table.declarations where !declared.grants.isEmpty {
            XCTAssertTrue(declared.requires.camera != .any || method == "pin.verify", "\(method) grants on any camera")
        }
    }

    /// Each method whose rule names a user acts on the call's own `user` param: the extractor
    /// declared with the rule is checked on real params of every such method.
    func testEveryUserRuleReadsTheCallsOwnUser() throws {
        let table = try Self.table()
        let template = Data([0x42, 0x4d, 0x46, 0x54]).base64EncodedString()
        let extra: [String: [String: JSONValue]] = [
            "pin.set": ["pin": "1234"], "pin.verify": ["pin": "1234"],
            "key.register": ["app_id": "https://example.com", "aaid": "FFFF#0001"],
            "key.sign": ["key_handle": "abc", "challenge": "AAAA"],
            "auth.password.proven": ["nonce": "n"], "face.add": ["template": .string(template)],
            "finger.add": ["template": .string(template)],
        ]
        var checked = 0
        for method in table.methods {
            guard let rule = table.rules[method], [.selfOrAdmin, .selfReverifiedOrAdmin, .selfOrAdminOrStepUp].contains(rule) else { continue }
            var params: [String: JSONValue] = ["user": "zed"]
            params.merge(extra[method] ?? [:]) { $1 }
            let extractor = try XCTUnwrap(table.userOf[method], "\(method): a self rule without a user extractor")
            XCTAssertEqual(try extractor(.object(params)), "zed", method)
            checked += 1
        }
        XCTAssertGreaterThan(checked, 20)
    }

    static func table() throws -> MethodTable {
        let root = "/tmp/bmd-matrix-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        var configuration = DaemonConfiguration()
        configuration.socketPath = root + "/s"
        configuration.stateDirectory = root + "/state"
        configuration.modelDirectories = [root + "/no-models"]
        configuration.cameras = [try .init(parsing: "replay:\(lfw)/Aaron_Eckhart?fps=5")]
        let daemon = try Daemon(configuration: configuration, logger: Logger(label: "test"))
        return daemon.methodTable
    }

    func testEveryMethodDeclaresTheExpectedRule() throws {
        let table = try Self.table()
        XCTAssertEqual(Set(table.methods), Set(table.rules.keys), "every handler has a rule")
        for method in table.methods {
            XCTAssertEqual(table.rules[method], Self.expected[method], "\(method): declared \(table.rules[method].map(\.rawValue) ?? "none")")
        }
        XCTAssertEqual(Set(table.methods), Set(Self.expected.keys), "the matrix lists exactly the daemon's methods")
    }

    /// The decision itself, per rule and caller.
    func testDecisions() {
        let policy = AccessPolicy(adminGroup: "biometric-admin", loginGroup: "biometric-login", daemonUID: 0)
        let alice = Peer(pid: 1, uid: 1000, gid: 1000, userName: "alice", isAdmin: false, isLogin: false)
        let greeter = Peer(pid: 1, uid: 115, gid: 115, userName: "gdm", isAdmin: false, isLogin: true)
        let admin = Peer(pid: 1, uid: 0, gid: 0, userName: "root", isAdmin: true, isLogin: false)
        let adminGroupMember = Peer(pid: 1, uid: 1001, gid: 1001, userName: "ops", isAdmin: true, isLogin: false)
        XCTAssertEqual(policy.decide(.selfReverifiedOrAdmin, peer: alice, user: "alice", fresh: false), .reverificationNeeded)
        XCTAssertEqual(policy.decide(.selfReverifiedOrAdmin, peer: alice, user: "alice", fresh: true), .allowed)
        XCTAssertEqual(policy.decide(.selfReverifiedOrAdmin, peer: alice, user: "bob", fresh: true), .denied, "fresh as alice is not bob")
        XCTAssertEqual(policy.decide(.selfReverifiedOrAdmin, peer: admin, user: "bob", fresh: false), .allowed)
        XCTAssertEqual(policy.decide(.selfOrAdmin, peer: alice, user: "alice", fresh: false), .allowed)
        XCTAssertEqual(policy.decide(.selfOrAdmin, peer: alice, user: nil, fresh: false), .denied, "no user named: admin only")
        XCTAssertEqual(policy.decide(.adminOrLogin, peer: greeter, user: nil, fresh: false), .allowed)
        XCTAssertEqual(policy.decide(.adminOrLogin, peer: alice, user: nil, fresh: false), .denied)
        XCTAssertEqual(policy.decide(.root, peer: adminGroupMember, user: nil, fresh: false), .denied, "root means uid 0")
        XCTAssertEqual(policy.decide(.root, peer: admin, user: nil, fresh: false), .allowed)
        XCTAssertEqual(policy.decide(.admin, peer: greeter, user: nil, fresh: false), .denied)
        XCTAssertEqual(policy.decide(.anyone, peer: greeter, user: nil, fresh: false), .allowed)
    }
}
