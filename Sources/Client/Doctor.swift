import BiometricProtocol

/// `authctl doctor` (issue 25): what is wrong and what to do. Each check here is a pure function
/// of what was read (daemon replies, file contents, stat results), so every branch is unit tested
/// with fake inputs; authctl only gathers them (DoctorCommand).
public enum Doctor {
    /// How bad a finding is. The exit status of `authctl doctor` is the worst one's
    /// (`exitStatus`); `Comparable` in that order.
    public enum Severity: Int, Comparable, Sendable, CaseIterable {
        /// Checked and fine.
        case ok = 0
        /// Could not be checked as this user (or here): said, with how to check it.
        case notChecked = 1
        /// Works, but should be fixed (or will fail in some cases).
        case warning = 2
        /// Face or finger sign-in will not work until it is fixed.
        case error = 3

        public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }

        public var label: String {
            switch self {
            case .ok: "ok"
            case .notChecked: "not checked"
            case .warning: "warning"
            case .error: "error"
            }
        }
    }

    /// One thing found: a stable code (scripts match on it; Docs/authctl.1 lists them), what it
    /// is about (a camera, a file), what was seen, and the one-line fix.
    public struct Finding: Equatable, Sendable {
        public var code: String
        public var severity: Severity
        public var subject: String?
        public var message: String
        public var fix: String?

        public init(_ code: String, _ severity: Severity, subject: String? = nil, _ message: String, fix: String? = nil) {
            self.code = code
            self.severity = severity
            self.subject = subject
            self.message = message
            self.fix = fix
        }
    }

    /// Exit status: 0 everything checked and fine; 3 the daemon cannot be reached (as every
    /// authctl command); else by the worst finding: 10 some checks could not be made, 11 a
    /// warning, 12 an error.
    public static func exitStatus(_ findings: [Finding]) -> Int32 {
        if findings.contains(where: { $0.code == Code.daemonUnreachable }) { return 3 }
        switch findings.map(\.severity).max() ?? .ok {
        case .ok: return 0
        case .notChecked: return 10
        case .warning: return 11
        case .error: return 12
        }
    }

    /// The stable codes.
    public enum Code {
        public static let daemonOK = "daemon.ok"
        public static let daemonUnreachable = "daemon.unreachable"
        public static let daemonVersion = "daemon.version_mismatch"
        public static let storeRefused = "store.refused"
        public static let modelsOK = "models.ok"
        public static let modelsMissing = "models.missing"
        public static let modelsCorrupt = "models.corrupt"
        public static let modelsNotChecked = "models.not_checked"
        public static let camerasNone = "camera.none"
        public static let cameraOK = "camera.ok"
        public static let cameraNotChecked = "camera.not_checked"
        public static let cameraBusy = "camera.busy"
        public static let cameraNoFrames = "camera.no_frames"
        public static let cameraDarkIR = "camera.dark_ir"
        public static let cameraDark = "camera.dark"
        public static let emitterFailed = "camera.ir_emitter_failed"
        public static let nodeOK = "permissions.ok"
        public static let nodeAccess = "permissions.node"
        public static let udevRuleMissing = "permissions.udev_rule_missing"
        public static let nodeNotChecked = "permissions.not_checked"
        public static let pamOK = "pam.ok"
        public static let pamNotEnabled = "pam.not_enabled"
        public static let pamRequired = "pam.required"
        public static let pamAfterUnix = "pam.after_unix"
        public static let pamModuleMissing = "pam.module_missing"
        public static let pamProfileMissing = "pam.profile_missing"
        public static let pamNotChecked = "pam.not_checked"
        public static let keyOK = "key.ok"
        public static let keyUnsealed = "key.unsealed"
        public static let keyNotChecked = "key.not_checked"
        public static let lidClosed = "lid.closed"
        public static let desktopFound = "desktop.found"
        public static let desktopNone = "desktop.none"
        public static let desktopWired = "desktop.wired"
        public static let desktopNotWired = "desktop.not_wired"
        public static let desktopNotChecked = "desktop.not_checked"
        public static let keyringReady = "desktop.keyring_ready"
        public static let keyringNotSet = "desktop.keyring_not_set"
        public static let keyringNoTPM = "desktop.keyring_no_tpm"
    }

    // MARK: - The daemon

    /// `status` nil: the daemon could not be reached (`reason` says why).
    public static func daemon(status: DaemonStatus?, reason: String?, clientVersion: String) -> [Finding] {
        guard let status else {
            return [Finding(Code.daemonUnreachable, .error, "the daemon does not answer: \(reason ?? "no reply")",
                            fix: "sudo systemctl enable --now biometricd.socket (and see: journalctl -u biometricd)")]
        }
        var found: [Finding] = []
        if status.version != clientVersion {
            found.append(Finding(Code.daemonVersion, .warning,
                                 "the daemon runs version \(status.version), authctl is \(clientVersion)",
                                 fix: "sudo systemctl restart biometricd (an upgrade left the old daemon running), or install matching packages"))
        } else {
            found.append(Finding(Code.daemonOK, .ok, "the daemon answers: version \(status.version), pid \(status.pid)"))
        }
        if let store = status.store, store.state != "open" {
            found.append(Finding(Code.storeRefused, .error, "the template store is not open: \(store.state)"
                                 + (store.message.map { " (\($0))" } ?? ""),
                                 fix: "see Docs/install.md (the template key); journalctl -u biometricd-key -u biometricd"))
        }
        return found
    }

    /// What only the daemon can tell, when it does not answer.
    public static func withoutDaemon() -> [Finding] {
        [Finding(Code.modelsNotChecked, .notChecked, "models not checked: the daemon does not answer"),
         Finding(Code.cameraNotChecked, .notChecked, "cameras not checked: the daemon does not answer"),
         Finding(Code.keyNotChecked, .notChecked, "the key's protection not checked: the daemon does not answer")]
    }

    public static func models(_ m: ModelStatus) -> [Finding] {
        var found: [Finding] = []
        if !m.missing.isEmpty {
            found.append(Finding(Code.modelsMissing, .error, "model files missing: \(m.missing.joined(separator: ", ")) (searched \(m.folders.joined(separator: ", ")))",
                                 fix: "sudo apt install biometricd-models (from a checkout: scripts/setup.sh), then sudo systemctl restart biometricd"))
        }
        if !m.corrupt.isEmpty {
            found.append(Finding(Code.modelsCorrupt, .error, "model files with a wrong checksum (refused): \(m.corrupt.joined(separator: ", "))",
                                 fix: "sudo apt install --reinstall biometricd-models, then sudo systemctl restart biometricd"))
        }
        if found.isEmpty {
            found.append(Finding(Code.modelsOK, .ok, "\(m.loaded.count) model files present and verified"))
        }
        return found
    }

    /// daemon.status `store.protection`.
    public static func key(_ store: StoreStatus?) -> [Finding] {
        guard let store, store.state == "open", let protection = store.protection else {
            return [Finding(Code.keyNotChecked, .notChecked, "the key's protection is not known (the store is not open, or an older daemon)")]
        }
        switch protection {
        case "tpm2":
            return [Finding(Code.keyOK, .ok, "the template key is sealed by the TPM 2.0 and the host key")]
        case "host":
            return [Finding(Code.keyOK, .ok, "the template key is sealed by systemd's host key (no TPM 2.0 found)")]
        default:
            return [Finding(Code.keyUnsealed, .warning, "the template key is not sealed (\(protection)): a copy of the disk opens the templates",
                            fix: "install the package's biometricd-key.service (Docs/install.md) so the key is sealed by the TPM or host key")]
        }
    }

    // MARK: - Cameras

    /// A frame's mean grey level below this (0–255) is dark: an IR camera whose emitter is off
    /// gives GREY frames of 0–10 (sensor noise), and black in limited-range YUV (what most UVC
    /// cameras send) reads 16 — measured through vivid in the HIL `doctor-dark` scenario; a
    /// lit face is well above 40 (118 in the same scenario).
    public static let darkBrightness = 25.0

    /// What measuring a camera's frames gave.
    public enum CameraMeasure: Equatable, Sendable {
        case measured(CameraCheckResult)
        /// camera.check refused: not an administrator.
        case denied
        case busy(String)
        /// Opening, streaming or the frames failed (the daemon's message).
        case failed(String)
    }

    public static func camerasPresent(_ cameras: [CameraInfo]) -> [Finding] {
        cameras.isEmpty ? [Finding(Code.camerasNone, .error, "the daemon sees no camera",
                                   fix: "plug in a camera; check it with v4l2-ctl --list-devices, and the daemon's camera= lines in /etc/biometricd/biometricd.conf")]
            : []
    }

    /// One camera: its frames, and (IR) what the emitter entry's last application did.
    public static func camera(_ info: CameraInfo, measure: CameraMeasure, emitter: CameraIRInfo?) -> [Finding] {
        var found: [Finding] = []
        let id = info.id
        if let last = emitter?.last, last.outcome != "applied" {
            found.append(Finding(Code.emitterFailed, .warning, subject: id,
                                 "the IR emitter entry was not applied at the last stream start (\(last.outcome): \(last.message))",
                                 fix: "authctl camera ir \(id); fix or remove the entry in /etc/biometricd/ir-emitters.d/"))
        }
        switch measure {
        case .denied:
            found.append(Finding(Code.cameraNotChecked, .notChecked, subject: id,
                                 "frames not checked: camera.check needs an administrator", fix: "sudo authctl doctor"))
        case .busy(let message):
            found.append(Finding(Code.cameraBusy, .warning, subject: id, "in use, not checked: \(message)",
                                 fix: "run authctl doctor again when no session or other program uses \(info.path)"))
        case .failed(let message):
            found.append(Finding(Code.cameraNoFrames, .error, subject: id, "gives no frames: \(message)",
                                 fix: "check \(info.path) with v4l2-ctl -d \(info.path) --stream-mmap --stream-count=5, and the kernel log (dmesg)"))
        case .measured(let check):
            let mean = check.brightness.isEmpty ? 0 : check.brightness.reduce(0, +) / Double(check.brightness.count)
            let level = "mean brightness \(Int(mean.rounded()))/255 over \(check.brightness.count) frames at \(check.width)x\(check.height)"
            if mean >= darkBrightness {
                found.append(Finding(Code.cameraOK, .ok, subject: id, "opens and gives frames, \(level)"))
            } else if info.virtual == true {
                found.append(Finding(Code.cameraDark, .warning, subject: id, "frames are dark (\(level)); a virtual camera: its source is dark",
                                     fix: "check what feeds \(info.path) (vivid pattern, v4l2loopback writer, replay files)"))
            } else if check.ir || info.ir {
                let hasEntry = emitter?.entry != nil
                found.append(Finding(Code.cameraDarkIR, .error, subject: id,
                                     "IR frames are dark (\(level)): the IR emitter is not lit",
                                     fix: hasEntry
                                        ? "authctl camera ir \(id) shows why the emitter entry did not light it; correct it in /etc/biometricd/ir-emitters.d/local.conf"
                                        : "no emitter entry for this camera: sudo authctl camera ir --probe \(id), then add its suggestion to /etc/biometricd/ir-emitters.d/local.conf"))
            } else {
                found.append(Finding(Code.cameraDark, .warning, subject: id, "frames are dark (\(level))",
                                     fix: "open the privacy shutter or lens cover, or add light in front of the camera"))
            }
        }
        return found
    }

    // MARK: - Permissions the udev rule gives

    /// A camera node as stat(2) and its ACL show it.
    public struct NodeAccess: Equatable, Sendable {
        public var path: String
        public var group: String?
        public var mode: UInt32
        /// Groups with an ACL entry granting read and write; nil when the ACL could not be read.
        public var aclGroups: [String]?

        public init(path: String, group: String?, mode: UInt32, aclGroups: [String]?) {
            self.path = path
            self.group = group
            self.mode = mode
            self.aclGroups = aclGroups
        }
    }

    /// udev/70-biometricd.rules gives each capture node group `video`, mode 0660, and (where
    /// setfacl exists) an ACL entry for group `biometricd`; the daemon's user is in `video`.
    /// `nodes` nil: /dev could not be read. `daemonInVideo` nil: no biometricd user here.
    public static func permissions(nodes: [NodeAccess]?, ruleInstalled: Bool, daemonInVideo: Bool?) -> [Finding] {
        var found: [Finding] = []
        let rule = "/usr/lib/udev/rules.d/70-biometricd.rules"
        if !ruleInstalled {
            found.append(Finding(Code.udevRuleMissing, .warning, "the udev rule 70-biometricd.rules is not installed",
                                 fix: "install the biometricd package (or copy udev/70-biometricd.rules to /etc/udev/rules.d/), then sudo udevadm trigger -s video4linux"))
        }
        guard let nodes else {
            return found + [Finding(Code.nodeNotChecked, .notChecked, "the camera nodes could not be read")]
        }
        var bad = 0
        for node in nodes {
            let groupRW = node.mode & 0o060 == 0o060
            let acl = node.aclGroups?.contains("biometricd") ?? false
            let daemonGets = (node.group == "video" && groupRW && daemonInVideo != false) || acl
            if !daemonGets {
                bad += 1
                let mode = String(node.mode & 0o777, radix: 8)
                found.append(Finding(Code.nodeAccess, .error, subject: node.path,
                                     "group \(node.group ?? "?"), mode 0\(mode)\(acl ? "" : ", no ACL entry for biometricd"): the daemon cannot open it",
                                     fix: "sudo udevadm trigger -s video4linux (the rule \(rule) sets group video, mode 0660)"))
            }
        }
        if daemonInVideo == false, nodes.contains(where: { !($0.aclGroups?.contains("biometricd") ?? false) }) {
            found.append(Finding(Code.nodeAccess, .warning, "the biometricd user is not in the video group",
                                 fix: "sudo systemd-sysusers (the package's sysusers.d adds it), or: sudo usermod -aG video biometricd"))
        }
        if bad == 0 && ruleInstalled && daemonInVideo != false {
            found.append(Finding(Code.nodeOK, .ok, "\(nodes.count) camera node\(nodes.count == 1 ? "" : "s") with the rule's access"))
        }
        return found
    }

    // MARK: - PAM

    /// The PAM files read: path → contents, nil when unreadable.
    public static func pam(files: [String: String?], profileInstalled: Bool, moduleInstalled: Bool) -> [Finding] {
        var found: [Finding] = []
        if !profileInstalled {
            found.append(Finding(Code.pamProfileMissing, .warning, "/usr/share/pam-configs/biometricd is missing: pam-auth-update cannot enable it",
                                 fix: "install the biometricd package"))
        }
        let unreadable = files.filter { $0.value == nil }.keys.sorted()
        var lines: [(file: String, line: String)] = []
        for (path, text) in files.sorted(by: { $0.key < $1.key }) {
            guard let text else { continue }
            var unixSeen = false
            for raw in text.split(separator: "\n") {
                let line = raw.trimmingCharacters(in: .whitespaces)
                if line.hasPrefix("#") || line.isEmpty { continue }
                let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
                guard words.first == "auth" || words.first == "-auth" else { continue }
                if line.contains("pam_unix.so") { unixSeen = true }
                guard line.contains("pam_biometricd.so") else { continue }
                lines.append((path, line))
                let control = words.count > 1 ? words[1] : ""
                // A face-only service run beside a password service (kde-face, gdm-face): there
                // `required` is right (its failure blocks nothing; the password is the other service's).
                let faceOnly = path.hasSuffix("-face") && !text.contains("pam_unix.so")
                if (control == "required" || control == "requisite") && !faceOnly {
                    found.append(Finding(Code.pamRequired, .error, subject: path, "'\(line)': a failed face or finger locks the user out",
                                         fix: "use 'auth sufficient pam_biometricd.so' (or sudo pam-auth-update --enable biometricd)"))
                }
                if unixSeen {
                    found.append(Finding(Code.pamAfterUnix, .warning, subject: path, "pam_biometricd comes after pam_unix: the password is asked first",
                                         fix: "move the pam_biometricd line above pam_unix (sudo pam-auth-update --enable biometricd does)"))
                }
            }
        }
        if lines.isEmpty {
            if !unreadable.isEmpty {
                found.append(Finding(Code.pamNotChecked, .notChecked, "cannot read \(unreadable.joined(separator: ", "))", fix: "sudo authctl doctor"))
            } else {
                found.append(Finding(Code.pamNotEnabled, .warning, "no PAM stack uses pam_biometricd: face and finger do not sign anyone in",
                                     fix: "sudo pam-auth-update --enable biometricd"))
            }
        } else {
            if !moduleInstalled {
                found.append(Finding(Code.pamModuleMissing, .error, "PAM uses pam_biometricd.so but the module is not installed",
                                     fix: "install the libpam-biometricd package (or Docs/pam.md: Build and install)"))
            }
            if !found.contains(where: { $0.code.hasPrefix("pam.") && $0.severity >= .warning }) {
                let where_ = Set(lines.map(\.file)).sorted().joined(separator: ", ")
                found.append(Finding(Code.pamOK, .ok, "pam_biometricd in \(where_)"))
            }
        }
        return found
    }

    // MARK: - The desktop (issue 36)

    /// A login screen, lock screen or elevation path the doctor knows, with the PAM services it
    /// runs and what the module does there (Docs/pam.md "Per service").
    public enum Desktop: String, CaseIterable, Sendable {
        case gdm, sddm, lightdm, greetd, kscreenlocker, swaylock, hyprlock, console, sudo, polkit

        public var label: String {
            switch self {
            case .gdm: "GDM"
            case .sddm: "SDDM"
            case .lightdm: "LightDM"
            case .greetd: "greetd"
            case .kscreenlocker: "KDE's lock screen"
            case .swaylock: "swaylock"
            case .hyprlock: "hyprlock"
            case .console: "the console login"
            case .sudo: "sudo"
            case .polkit: "polkit (pkexec, the desktop's password dialogs)"
            }
        }

        /// The PAM service whose stack must reach pam_biometricd.
        public var service: String {
            switch self {
            case .gdm: "gdm-password"
            case .sddm: "sddm"
            case .lightdm: "lightdm"
            case .greetd: "greetd"
            case .kscreenlocker: "kde"
            case .swaylock: "swaylock"
            case .hyprlock: "hyprlock"
            case .console: "login"
            case .sudo: "sudo"
            case .polkit: "polkit-1"
            }
        }

        /// What a face login looks like there, when wired (the module's table).
        public var behaviour: String {
            switch self {
            case .gdm: "the password field comes at once; Enter on it empty uses the face (GDM runs one conversation; a face service beside it, gdm-face, needs a GNOME Shell extension)"
            case .sddm: "leave the password empty and press Enter for the face; a typed password goes straight to the password check"
            case .lightdm: "the camera at once, the password after it"
            case .greetd: "the camera at once, the password after it"
            case .kscreenlocker: "Enter on the empty password field uses the face; with Plasma's Face authenticator, the kde-face service needs the face to arrive after the lock"
            case .swaylock: "Enter on an empty password uses the face"
            case .hyprlock: "Enter on an empty password uses the face"
            case .console: "the camera at once, with the password prompt open beside it"
            case .sudo: "Enter on the password prompt starts the camera (an act of intent); the password prompt stays open beside it"
            case .polkit: "Enter on the empty password field starts the camera (an act of intent)"
            }
        }

        /// Whether it is a login (a root login process whose stack can open the keyring).
        public var isLogin: Bool { [.gdm, .sddm, .lightdm, .greetd, .console].contains(self) }
    }

    /// What `authctl doctor` found of the desktop.
    public struct DesktopFacts: Equatable, Sendable {
        /// Installed (their programs found), in `Desktop.allCases` order.
        public var installed: [Desktop]
        /// The display manager systemd starts (display-manager.service), when known.
        public var displayManager: Desktop?
        /// The caller's $XDG_CURRENT_DESKTOP.
        public var session: String?
        /// Each installed desktop's service: its auth lines, includes resolved (`resolveAuth`);
        /// nil when its files could not be read.
        public var stacks: [String: [String]?]
        /// The caller's sealed keyring password: true, false, nil unknown (the helper not reached).
        public var keyringSealed: Bool?
        /// A TPM 2.0 resource manager (/dev/tpmrm0): needed to seal the keyring password.
        public var tpm: Bool

        public init(installed: [Desktop], displayManager: Desktop? = nil, session: String? = nil, stacks: [String: [String]?],
                    keyringSealed: Bool? = nil, tpm: Bool = true) {
            self.installed = installed
            self.displayManager = displayManager
            self.session = session
            self.stacks = stacks
            self.keyringSealed = keyringSealed
            self.tpm = tpm
        }
    }

    /// A service's auth lines, its includes resolved as libpam does: `@include F`, `auth include F`
    /// and `auth substack F` read F's auth lines (depth-limited); `files` maps a service name to
    /// its file's text, the administrator's /etc/pam.d one taking the place of /usr/lib/pam.d's
    /// (the caller decides). Nil when the service has no readable file.
    public static func resolveAuth(_ service: String, files: [String: String], depth: Int = 0) -> [String]? {
        guard depth < 8, let text = files[service] else { return nil }
        var lines: [String] = []
        for raw in text.split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            if words.first == "@include", words.count > 1 {
                lines += resolveAuth(words[1], files: files, depth: depth + 1) ?? []
                continue
            }
            guard let type = words.first, type == "auth" || type == "-auth" else { continue }
            if words.count > 2, words[1] == "include" || words[1] == "substack" {
                lines += resolveAuth(words[2], files: files, depth: depth + 1) ?? []
                continue
            }
            lines.append(line)
        }
        return lines
    }

    /// Which login screens, lock screens and elevation paths are found, and for each whether its
    /// stack reaches pam_biometricd (and so what it does), with the one-line fix when not; for
    /// the logins, whether a face login opens the keyring.
    public static func desktop(_ facts: DesktopFacts) -> [Finding] {
        let graphical = facts.installed.filter { ![.console, .sudo].contains($0) }
        var found: [Finding] = []
        if graphical.isEmpty {
            found.append(Finding(Code.desktopNone, .ok, "no login screen, lock screen or polkit found: the console login and sudo only"))
        } else {
            var names = graphical.map { $0 == facts.displayManager ? "\($0.label) (display manager)" : $0.label }
            if let session = facts.session, !session.isEmpty { names.append("session: \(session)") }
            found.append(Finding(Code.desktopFound, .ok, "found \(names.joined(separator: ", "))"))
        }
        var keyringStacks = false
        for desktop in facts.installed {
            let service = desktop.service
            guard let entry = facts.stacks[service], let lines = entry else {
                found.append(Finding(Code.desktopNotChecked, .notChecked, subject: service,
                                     "\(desktop.label): /etc/pam.d/\(service) could not be read", fix: "sudo authctl doctor"))
                continue
            }
            guard let at = lines.firstIndex(where: { $0.contains("pam_biometricd.so") && !$0.contains("after_password") }) else {
                found.append(Finding(Code.desktopNotWired, .warning, subject: service,
                                     "\(desktop.label) does not use pam_biometricd (service \(service)): the password only",
                                     fix: "sudo pam-auth-update --enable biometricd (puts it in common-auth, which \(service) includes)"))
                continue
            }
            found.append(Finding(Code.desktopWired, .ok, subject: service, "\(desktop.label): \(desktop.behaviour)"))
            if desktop.isLogin, lines[(at + 1)...].contains(where: { $0.contains("pam_gnome_keyring.so") || $0.contains("pam_kwallet5.so") }) {
                keyringStacks = true
            }
        }
        if keyringStacks {
            switch facts.keyringSealed {
            case true?:
                found.append(Finding(Code.keyringReady, .ok, "a face or finger login opens the login keyring (your password is sealed by the TPM)"))
            case false? where !facts.tpm:
                found.append(Finding(Code.keyringNoTPM, .warning, "after a face login the keyring asks for your password: sealing it needs a TPM 2.0, and this machine has none",
                                     fix: "log in with the password when you need the keyring (a password sealed without a TPM could be read from a copy of the disk)"))
            case false?:
                found.append(Finding(Code.keyringNotSet, .warning, "after a face login the keyring asks for your password",
                                     fix: "authctl keyring enable (asks your password once; the TPM seals it)"))
            case nil:
                found.append(Finding(Code.keyringNotSet, .notChecked, "whether a face login opens the keyring is not known (the password helper did not answer)",
                                     fix: "authctl keyring status"))
            }
        }
        return found
    }

    // MARK: - The lid

    /// The contents of /proc/acpi/button/lid/*/state ("state:      closed").
    public static func lid(states: [String]) -> [Finding] {
        guard states.contains(where: { $0.contains("closed") }) else { return [] }
        return [Finding(Code.lidClosed, .warning, "the laptop lid is closed: its built-in camera sees nothing",
                        fix: "open the lid, or name an external camera: face_camera= in /etc/biometricd/biometricd.conf")]
    }
}
