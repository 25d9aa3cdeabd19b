import BiometricClient
import BiometricProtocol
import XCTest

/// `authctl doctor`'s findings as pure functions of fake inputs: each branch, its stable code,
/// its severity, and the exit status the worst one gives.
final class DoctorTests: XCTestCase {
    typealias D = Doctor

    private func status(version: String = "0.1.0", store: StoreStatus? = StoreStatus(state: "open", key: "credential", protection: "tpm2"),
                        missing: [String] = [], corrupt: [String] = []) -> DaemonStatus {
        DaemonStatus(version: version, uptimeS: 1, pid: 42, cameras: [], models: ModelStatus(loaded: ["a", "b"], missing: missing, corrupt: corrupt,
                                                                                               folders: ["/usr/share/biometricd/models"]),
                     users: 0, activeSessions: 0, clients: 1, socketActivated: true, privileged: true, store: store)
    }

    private func codes(_ findings: [D.Finding]) -> [String] { findings.map(\.code) }

    private func camera(_ id: String = "video0", ir: Bool = false, virtual: Bool = false) -> CameraInfo {
        CameraInfo(id: id, path: "/dev/\(id)", name: "Cam", driver: "uvcvideo", bus: "usb-1", formats: [], ir: ir, busy: false,
                   virtual: virtual)
    }

    private func check(_ brightness: [Double], ir: Bool = false) -> D.CameraMeasure {
        .measured(CameraCheckResult(camera: "video0", width: 640, height: 360, ir: ir, brightness: brightness, durationMs: 400))
    }

    func testTheDaemon() {
        let down = D.daemon(status: nil, reason: "connection refused", clientVersion: "0.1.0")
        XCTAssertEqual(codes(down), [D.Code.daemonUnreachable])
        XCTAssertEqual(down[0].severity, .error)
        XCTAssertNotNil(down[0].fix)
        XCTAssertEqual(codes(D.daemon(status: status(), reason: nil, clientVersion: "0.1.0")), [D.Code.daemonOK])
        XCTAssertEqual(codes(D.daemon(status: status(version: "0.0.9"), reason: nil, clientVersion: "0.1.0")), [D.Code.daemonVersion])
        let refused = D.daemon(status: status(store: StoreStatus(state: "key_unsealable", message: "the TPM changed")), reason: nil,
                               clientVersion: "0.1.0")
        XCTAssertEqual(codes(refused), [D.Code.daemonOK, D.Code.storeRefused])
        XCTAssertTrue(refused[1].message.contains("the TPM changed"))
        XCTAssertEqual(codes(D.withoutDaemon()), [D.Code.modelsNotChecked, D.Code.cameraNotChecked, D.Code.keyNotChecked])
    }

    func testModelsAndKey() {
        XCTAssertEqual(codes(D.models(status().models)), [D.Code.modelsOK])
        XCTAssertEqual(codes(D.models(status(missing: ["shape_predictor_68_face_landmarks.dat"]).models)), [D.Code.modelsMissing])
        XCTAssertEqual(codes(D.models(status(missing: ["x"], corrupt: ["y"]).models)), [D.Code.modelsMissing, D.Code.modelsCorrupt])
        XCTAssertEqual(D.key(StoreStatus(state: "open", protection: "tpm2")).map(\.severity), [.ok])
        XCTAssertEqual(D.key(StoreStatus(state: "open", protection: "host")).map(\.severity), [.ok])
        XCTAssertEqual(codes(D.key(StoreStatus(state: "open", protection: "file"))), [D.Code.keyUnsealed])
        XCTAssertEqual(codes(D.key(StoreStatus(state: "open", protection: "credential"))), [D.Code.keyUnsealed])
        XCTAssertEqual(codes(D.key(nil)), [D.Code.keyNotChecked])
        XCTAssertEqual(codes(D.key(StoreStatus(state: "key_missing"))), [D.Code.keyNotChecked])
    }

    /// A dark IR frame means the emitter is not lit: the fix names the probe when no entry is
    /// known, `authctl camera ir` when one is but did not light it.
    func testCamerasAndTheirBrightness() {
        XCTAssertEqual(codes(D.camerasPresent([])), [D.Code.camerasNone])
        XCTAssertEqual(codes(D.camerasPresent([camera()])), [])
        XCTAssertEqual(codes(D.camera(camera(), measure: check([80, 82, 81]), emitter: nil)), [D.Code.cameraOK])
        let darkIR = D.camera(camera("video2", ir: true), measure: check([3, 4, 2], ir: true), emitter: nil)
        XCTAssertEqual(codes(darkIR), [D.Code.cameraDarkIR])
        XCTAssertEqual(darkIR[0].severity, .error)
        XCTAssertEqual(darkIR[0].subject, "video2")
        XCTAssertTrue(darkIR[0].fix?.contains("authctl camera ir --probe video2") == true, darkIR[0].fix ?? "")
        XCTAssertTrue(darkIR[0].fix?.contains("/etc/biometricd/ir-emitters.d/") == true)
        let entry = IREntryInfo(device: "04f2:b6d9", interface: 2, name: "Chicony IR", source: "howdy #19", origin: "/usr/share/biometricd/ir-emitters.conf",
                                writes: [])
        let withEntry = CameraIRInfo(camera: "video2", path: "/dev/video2", ir: true, usbDevice: "04f2:b6d9", usbInterface: 2, entry: entry,
                                     applications: 1, last: nil)
        let darkWithEntry = D.camera(camera("video2", ir: true), measure: check([3, 4, 2], ir: true), emitter: withEntry)
        XCTAssertTrue(darkWithEntry[0].fix?.hasPrefix("authctl camera ir video2") == true, darkWithEntry[0].fix ?? "")
        // The grey frames say IR even when the node's formats did not.
        XCTAssertEqual(codes(D.camera(camera(), measure: check([1], ir: true), emitter: nil)), [D.Code.cameraDarkIR])
        XCTAssertEqual(codes(D.camera(camera(), measure: check([5, 6]), emitter: nil)), [D.Code.cameraDark])
        XCTAssertEqual(D.camera(camera(), measure: check([5, 6]), emitter: nil)[0].severity, .warning)
        let virtual = D.camera(camera("video9", ir: true, virtual: true), measure: check([0, 0], ir: true), emitter: nil)
        XCTAssertEqual(codes(virtual), [D.Code.cameraDark], "a virtual camera has no emitter to light")
        // Exactly at the limit is lit; just under is dark.
        XCTAssertEqual(codes(D.camera(camera(ir: true), measure: check([D.darkBrightness], ir: true), emitter: nil)), [D.Code.cameraOK])
        XCTAssertEqual(codes(D.camera(camera(ir: true), measure: check([D.darkBrightness - 0.1], ir: true), emitter: nil)), [D.Code.cameraDarkIR])
        XCTAssertEqual(codes(D.camera(camera(), measure: .denied, emitter: nil)), [D.Code.cameraNotChecked])
        XCTAssertEqual(D.camera(camera(), measure: .denied, emitter: nil)[0].severity, .notChecked)
        XCTAssertEqual(codes(D.camera(camera(), measure: .busy("in use"), emitter: nil)), [D.Code.cameraBusy])
        XCTAssertEqual(codes(D.camera(camera(), measure: .failed("VIDIOC_STREAMON: EIO"), emitter: nil)), [D.Code.cameraNoFrames])
        let failedApply = IRApplicationInfo(outcome: "failed", message: "UVC_SET_CUR: EIO", durationMs: 1, secondsAgo: 3, writes: [])
        var failedEmitter = withEntry
        failedEmitter.last = failedApply
        XCTAssertEqual(codes(D.camera(camera("video2", ir: true), measure: check([90], ir: true), emitter: failedEmitter)),
                       [D.Code.emitterFailed, D.Code.cameraOK])
    }

    func testThePermissionsTheUdevRuleGives() {
        let good = D.NodeAccess(path: "/dev/video0", group: "video", mode: 0o20660, aclGroups: ["biometricd"])
        XCTAssertEqual(codes(D.permissions(nodes: [good], ruleInstalled: true, daemonInVideo: true)), [D.Code.nodeOK])
        let rootOnly = D.NodeAccess(path: "/dev/video2", group: "root", mode: 0o20600, aclGroups: [])
        let found = D.permissions(nodes: [good, rootOnly], ruleInstalled: true, daemonInVideo: true)
        XCTAssertEqual(codes(found), [D.Code.nodeAccess])
        XCTAssertEqual(found[0].subject, "/dev/video2")
        XCTAssertTrue(found[0].message.contains("0600"), found[0].message)
        XCTAssertTrue(found[0].fix?.contains("udevadm trigger") == true)
        // The ACL entry alone is enough; without it a daemon out of `video` cannot open the node.
        let aclOnly = D.NodeAccess(path: "/dev/video0", group: "root", mode: 0o20600, aclGroups: ["biometricd"])
        XCTAssertEqual(codes(D.permissions(nodes: [aclOnly], ruleInstalled: true, daemonInVideo: false)), [])
        let noACL = D.NodeAccess(path: "/dev/video0", group: "video", mode: 0o20660, aclGroups: [])
        XCTAssertEqual(codes(D.permissions(nodes: [noACL], ruleInstalled: true, daemonInVideo: false)), [D.Code.nodeAccess, D.Code.nodeAccess])
        XCTAssertEqual(codes(D.permissions(nodes: [good], ruleInstalled: false, daemonInVideo: nil)), [D.Code.udevRuleMissing])
        XCTAssertEqual(codes(D.permissions(nodes: nil, ruleInstalled: true, daemonInVideo: true)), [D.Code.nodeNotChecked])
    }

    func testThePAMStack() {
        let enabled = """
        # here are the per-package modules (the "Primary" block)
        auth\t[success=end default=ignore]\tpam_biometricd.so
        auth\t[success=1 default=ignore]\tpam_unix.so nullok
        """
        XCTAssertEqual(codes(D.pam(files: ["/etc/pam.d/common-auth": enabled], profileInstalled: true, moduleInstalled: true)), [D.Code.pamOK])
        XCTAssertEqual(codes(D.pam(files: ["/etc/pam.d/common-auth": enabled], profileInstalled: true, moduleInstalled: false)),
                       [D.Code.pamModuleMissing])
        let plain = "auth [success=1 default=ignore] pam_unix.so nullok\n# auth sufficient pam_biometricd.so\n"
        XCTAssertEqual(codes(D.pam(files: ["/etc/pam.d/common-auth": plain], profileInstalled: true, moduleInstalled: true)), [D.Code.pamNotEnabled])
        XCTAssertEqual(codes(D.pam(files: ["/etc/pam.d/common-auth": plain], profileInstalled: false, moduleInstalled: false)),
                       [D.Code.pamProfileMissing, D.Code.pamNotEnabled])
        let required = "auth required pam_biometricd.so\n"
        XCTAssertEqual(codes(D.pam(files: ["/etc/pam.d/sudo": required], profileInstalled: true, moduleInstalled: true)), [D.Code.pamRequired])
        let after = "auth [success=1 default=ignore] pam_unix.so nullok\nauth sufficient pam_biometricd.so\n"
        XCTAssertEqual(codes(D.pam(files: ["/etc/pam.d/sudo": after], profileInstalled: true, moduleInstalled: true)), [D.Code.pamAfterUnix])
        XCTAssertEqual(codes(D.pam(files: ["/etc/pam.d/common-auth": nil], profileInstalled: true, moduleInstalled: true)), [D.Code.pamNotChecked])
        // A line of another type (account, session) naming the module does not count as the auth stack.
        XCTAssertEqual(codes(D.pam(files: ["/etc/pam.d/x": "session optional pam_biometricd.so\n"], profileInstalled: true, moduleInstalled: true)),
                       [D.Code.pamNotEnabled])
    }

    /// Issue 36: includes resolved as libpam does, and for each desktop found whether it reaches
    /// the module, with the one-line fix; the keyring for the logins.
    func testTheDesktop() {
        let files = [
            "common-auth": "auth [success=2 default=ignore] pam_biometricd.so\nauth [success=1 default=ignore] pam_unix.so nullok\n"
                + "auth requisite pam_deny.so\nauth required pam_permit.so\nauth optional pam_biometricd.so after_password\n",
            "login": "auth optional pam_faildelay.so delay=3000000\n@include common-auth\nauth optional pam_group.so\nsession required pam_limits.so\n",
            "greetd": "@include login\n-auth optional pam_gnome_keyring.so\n-session optional pam_gnome_keyring.so auto_start\n",
            "swaylock": "auth include login\n",
            "sub": "auth substack login\n",
            "loop": "@include loop\n",
            "plain": "auth required pam_unix.so\n",
        ]
        let greetd = D.resolveAuth("greetd", files: files)
        XCTAssertEqual(greetd?.first, "auth optional pam_faildelay.so delay=3000000")
        XCTAssertEqual(greetd?.filter { $0.contains("pam_biometricd.so") }.count, 2)
        XCTAssertEqual(greetd?.last, "-auth optional pam_gnome_keyring.so")
        XCTAssertEqual(D.resolveAuth("swaylock", files: files)?.count, 7)
        XCTAssertEqual(D.resolveAuth("sub", files: files)?.count, 7)
        XCTAssertEqual(D.resolveAuth("loop", files: files), [], "an include loop ends")
        XCTAssertNil(D.resolveAuth("absent", files: files))

        var facts = D.DesktopFacts(installed: [.greetd, .swaylock, .console, .sudo], displayManager: .greetd, session: "sway",
                                   stacks: ["greetd": greetd, "swaylock": D.resolveAuth("swaylock", files: files),
                                            "login": D.resolveAuth("login", files: files), "sudo": D.resolveAuth("plain", files: files)],
                                   keyringSealed: true)
        var found = D.desktop(facts)
        XCTAssertEqual(codes(found), [D.Code.desktopFound, D.Code.desktopWired, D.Code.desktopWired, D.Code.desktopWired,
                                      D.Code.desktopNotWired, D.Code.keyringReady])
        XCTAssertTrue(found[0].message.contains("greetd (display manager)") && found[0].message.contains("session: sway"))
        XCTAssertEqual(found[4].subject, "sudo")
        XCTAssertEqual(found[4].fix, "sudo pam-auth-update --enable biometricd (puts it in common-auth, which sudo includes)")
        XCTAssertTrue(found[2].message.contains("Enter on an empty password"), "swaylock: what the module does there")

        facts.keyringSealed = false
        found = D.desktop(facts)
        XCTAssertEqual(found.last?.code, D.Code.keyringNotSet)
        XCTAssertEqual(found.last?.severity, .warning)
        XCTAssertEqual(found.last?.fix, "authctl keyring enable (asks your password once; the TPM seals it)")
        facts.tpm = false
        XCTAssertEqual(D.desktop(facts).last?.code, D.Code.keyringNoTPM)
        facts.keyringSealed = nil
        XCTAssertEqual(D.desktop(facts).last?.severity, .notChecked)
        // a login whose stack has no keyring module says nothing of the keyring
        facts.installed = [.console]
        facts.stacks = ["login": D.resolveAuth("login", files: files)]
        XCTAssertEqual(codes(D.desktop(facts)), [D.Code.desktopNone, D.Code.desktopWired])
        // an unreadable stack
        facts.installed = [.sddm]
        facts.stacks = ["sddm": [String]?.none]
        XCTAssertEqual(codes(D.desktop(facts)), [D.Code.desktopFound, D.Code.desktopNotChecked])
        XCTAssertEqual(codes(D.desktop(D.DesktopFacts(installed: [], stacks: [:]))), [D.Code.desktopNone])
        // a face-only service run beside a password one: `required` is right there
        XCTAssertFalse(codes(D.pam(files: ["/etc/pam.d/kde-face": "auth required pam_biometricd.so\naccount required pam_permit.so\n"],
                                   profileInstalled: true, moduleInstalled: true)).contains(D.Code.pamRequired))
    }

    func testTheLid() {
        XCTAssertEqual(codes(D.lid(states: [])), [])
        XCTAssertEqual(codes(D.lid(states: ["state:      open\n"])), [])
        XCTAssertEqual(codes(D.lid(states: ["state:      closed\n"])), [D.Code.lidClosed])
    }

    /// 0 when all is checked and fine; the worst finding decides otherwise; 3 (as every authctl
    /// command) when the daemon is down.
    func testTheExitStatusIsTheWorstFindings() {
        let ok = D.Finding("x.ok", .ok, "fine")
        XCTAssertEqual(D.exitStatus([]), 0)
        XCTAssertEqual(D.exitStatus([ok]), 0)
        XCTAssertEqual(D.exitStatus([ok, D.Finding("a", .notChecked, "")]), 10)
        XCTAssertEqual(D.exitStatus([D.Finding("a", .notChecked, ""), D.Finding("b", .warning, "")]), 11)
        XCTAssertEqual(D.exitStatus([D.Finding("b", .warning, ""), D.Finding("c", .error, ""), ok]), 12)
        XCTAssertEqual(D.exitStatus(D.daemon(status: nil, reason: nil, clientVersion: "1") + D.withoutDaemon()), 3)
        XCTAssertEqual(D.Severity.allCases.sorted(), [.ok, .notChecked, .warning, .error])
    }

    /// Every code is distinct, and every finding that is not fine comes with a fix (or says it
    /// was not checked and why).
    func testEveryProblemHasAFix() {
        let all = D.daemon(status: nil, reason: nil, clientVersion: "1")
            + D.daemon(status: status(version: "0", store: StoreStatus(state: "key_missing")), reason: nil, clientVersion: "1")
            + D.models(status(missing: ["x"], corrupt: ["y"]).models) + D.key(StoreStatus(state: "open", protection: "file"))
            + D.camerasPresent([]) + D.camera(camera(ir: true), measure: check([0], ir: true), emitter: nil)
            + D.camera(camera(), measure: check([0]), emitter: nil) + D.camera(camera(), measure: .failed("x"), emitter: nil)
            + D.camera(camera(), measure: .busy("x"), emitter: nil)
            + D.permissions(nodes: [D.NodeAccess(path: "/dev/video0", group: "root", mode: 0o600, aclGroups: [])], ruleInstalled: false,
                            daemonInVideo: false)
            + D.pam(files: ["/etc/pam.d/sudo": "auth [success=1] pam_unix.so\nauth required pam_biometricd.so\n"], profileInstalled: false,
                    moduleInstalled: false)
            + D.pam(files: [:], profileInstalled: true, moduleInstalled: true) + D.lid(states: ["closed"])
        for f in all where f.severity >= .warning {
            XCTAssertFalse(f.fix?.isEmpty ?? true, "\(f.code) has no fix")
            XCTAssertFalse(f.fix?.contains("\n") ?? false, "\(f.code): the fix is one line")
        }
        let codesSeen = Set(all.map(\.code))
        for code in [D.Code.daemonUnreachable, D.Code.daemonVersion, D.Code.storeRefused, D.Code.modelsMissing, D.Code.modelsCorrupt,
                     D.Code.keyUnsealed, D.Code.camerasNone, D.Code.cameraDarkIR, D.Code.cameraDark, D.Code.cameraNoFrames, D.Code.cameraBusy,
                     D.Code.nodeAccess, D.Code.udevRuleMissing, D.Code.pamRequired, D.Code.pamAfterUnix, D.Code.pamModuleMissing,
                     D.Code.pamProfileMissing, D.Code.pamNotEnabled, D.Code.lidClosed] {
            XCTAssertTrue(codesSeen.contains(code), "\(code) is reachable")
        }
    }
}
