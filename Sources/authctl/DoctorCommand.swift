import ArgumentParser
import BiometricClient
import BiometricProtocol
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `authctl doctor`: gathers what the checks of `Doctor` need — the daemon's answers, the camera
/// nodes, the PAM files, the lid — and prints each finding with its fix. Runs as any user: what
/// it cannot read or may not ask is reported as not checked, with how to check it.
struct DoctorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Say what is wrong and what to do: daemon, models, cameras, permissions, PAM, key, lid, the desktop.",
        discussion: "Exit status: 0 all checked and fine, 3 daemon unreachable, 10 some checks could not be made (run with sudo), 11 warnings, 12 errors.")

    @OptionGroup var options: GlobalOptions
    @Option(help: "Frames measured per camera (1-30).") var frames: Int = 5

    func run() throws {
        let findings = gather()
        if options.json {
            let items: [JSONValue] = findings.map { f in
                .object(["code": .string(f.code), "severity": .string(f.severity.label), "subject": f.subject.map(JSONValue.string) ?? .null,
                         "message": .string(f.message), "fix": f.fix.map(JSONValue.string) ?? .null])
            }
            let status = Doctor.exitStatus(findings)
            let data = try JSONCoding.encoder.encode(JSONValue.object(["findings": .array(items), "exit_status": .int(Int64(status))]))
            print(String(decoding: data, as: UTF8.self))
        } else {
            for f in findings {
                let mark = switch f.severity {
                case .ok: "ok   "
                case .notChecked: "skip "
                case .warning: "WARN "
                case .error: "ERROR"
                }
                print("\(mark) \(f.code)\(f.subject.map { " [\($0)]" } ?? ""): \(f.message)")
                if let fix = f.fix, f.severity != .ok { print("      fix: \(fix)") }
            }
        }
        let status = Doctor.exitStatus(findings)
        if status != 0 { throw ExitCode(status) }
    }

    func gather() -> [Doctor.Finding] {
        var findings: [Doctor.Finding] = []
        var client: BiometricClient?
        var status: DaemonStatus?
        var reason: String?
        do {
            let c = try options.connect()
            status = try c.call(Method.daemonStatus)
            client = c
        } catch {
            reason = "\(error)"
        }
        findings += Doctor.daemon(status: status, reason: reason, clientVersion: AuthCtl.configuration.version ?? "")
        var cameras: [CameraInfo]?
        if let client, let status {
            findings += Doctor.models(status.models)
            findings += Doctor.key(status.store)
            cameras = try? client.call(Method.cameraList)
            if let cameras {
                findings += Doctor.camerasPresent(cameras)
                let ir: CameraIRResult? = try? client.call(Method.cameraIR, CameraIRParams())
                for camera in cameras {
                    let emitter = ir?.cameras.first { $0.camera == camera.id }
                    findings += Doctor.camera(camera, measure: measure(client, camera), emitter: emitter)
                }
            }
        } else {
            findings += Doctor.withoutDaemon()
        }
        findings += Doctor.permissions(nodes: nodes(cameras), ruleInstalled: Self.udevRules.contains(where: exists),
                                       daemonInVideo: daemonInVideo())
        findings += Doctor.pam(files: pamFiles(), profileInstalled: exists("/usr/share/pam-configs/biometricd"),
                               moduleInstalled: Self.pamModules().contains(where: exists))
        findings += Doctor.lid(states: lidStates())
        findings += Doctor.desktop(desktopFacts())
        return findings
    }

    // MARK: The desktop (issue 36)

    /// The program that shows each desktop is installed.
    static func programs(_ desktop: Doctor.Desktop) -> [String] {
        switch desktop {
        case .gdm: ["/usr/sbin/gdm3", "/usr/sbin/gdm"]
        case .sddm: ["/usr/bin/sddm"]
        case .lightdm: ["/usr/sbin/lightdm"]
        case .greetd: ["/usr/sbin/greetd", "/usr/bin/greetd"]
        case .kscreenlocker: ["/usr/libexec/kscreenlocker_greet", "/usr/lib/x86_64-linux-gnu/libexec/kscreenlocker_greet",
                              "/usr/lib/aarch64-linux-gnu/libexec/kscreenlocker_greet", "/usr/lib/libexec/kscreenlocker_greet"]
        case .swaylock: ["/usr/bin/swaylock"]
        case .hyprlock: ["/usr/bin/hyprlock"]
        case .console: ["/usr/bin/login", "/bin/login"]
        case .sudo: ["/usr/bin/sudo"]
        case .polkit: ["/usr/lib/polkit-1/polkit-agent-helper-1", "/usr/libexec/polkit-agent-helper-1"]
        }
    }

    func desktopFacts() -> Doctor.DesktopFacts {
        let installed = Doctor.Desktop.allCases.filter { Self.programs($0).contains(where: exists) }
        // The PAM files, the administrator's /etc/pam.d before the vendor's /usr/lib/pam.d.
        var files: [String: String] = [:]
        for dir in ["/usr/lib/pam.d", "/etc/pam.d"] {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] {
                if let text = try? String(contentsOfFile: "\(dir)/\(name)", encoding: .utf8) { files[name] = text }
            }
        }
        var stacks: [String: [String]?] = [:]
        for desktop in installed {
            // A service without a file of its own gets libpam's "other" (KDE's "kde" on Debian 12).
            let service = files[desktop.service] != nil ? desktop.service : "other"
            stacks[desktop.service] = Doctor.resolveAuth(service, files: files)
        }
        var dm: Doctor.Desktop?
        if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/etc/systemd/system/display-manager.service") {
            let unit = (target as NSString).lastPathComponent
            dm = [("gdm", Doctor.Desktop.gdm), ("sddm", .sddm), ("lightdm", .lightdm), ("greetd", .greetd)]
                .first { unit.hasPrefix($0.0) }?.1
        }
        // The keyring: asked of the root helper for the caller (under sudo: the user who ran it).
        var sealed: Bool?
        if installed.contains(where: \.isLogin) {
            let user = getuid() == 0 ? ProcessInfo.processInfo.environment["SUDO_USER"] : (try? KeyringCommand.callerName())
            if let user, !user.isEmpty, user != "root",
               let line = try? JSONSerialization.data(withJSONObject: ["op": "keyring.status", "user": user]),
               let reply = try? PasswordHelper.exchange(path: KeyringCommand.helperPath, line: line, quiet: true),
               reply["ok"] as? Bool == true {
                sealed = reply["sealed"] as? Bool
            }
        }
        return Doctor.DesktopFacts(installed: installed, displayManager: dm,
                                   session: ProcessInfo.processInfo.environment["XDG_CURRENT_DESKTOP"], stacks: stacks,
                                   keyringSealed: sealed, tpm: exists("/dev/tpmrm0"))
    }

    /// camera.check on one camera, its refusals read as what they mean for the doctor.
    func measure(_ client: BiometricClient, _ camera: CameraInfo) -> Doctor.CameraMeasure {
        do {
            let result: CameraCheckResult = try client.call(Method.cameraCheck, CameraCheckParams(camera: camera.id, frames: frames))
            return .measured(result)
        } catch ClientError.rpc(let e) {
            switch e.errorReason {
            case .permissionDenied?: return .denied
            case .busy?: return .busy(e.message)
            default:
                if e.code == -32601 { return .failed("the daemon has no camera.check (an older version): restart it after the upgrade") }
                return .failed(e.message)
            }
        } catch {
            return .failed("\(error)")
        }
    }

    // MARK: What the files say

    static let udevRules = ["/usr/lib/udev/rules.d/70-biometricd.rules", "/lib/udev/rules.d/70-biometricd.rules",
                            "/etc/udev/rules.d/70-biometricd.rules"]

    static func pamModules() -> [String] {
        var dirs = ["/lib/security", "/usr/lib/security", "/lib64/security"]
        for base in ["/lib", "/usr/lib"] {
            for sub in (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? [] where sub.hasSuffix("-linux-gnu") {
                dirs.append("\(base)/\(sub)/security")
            }
        }
        return dirs.map { $0 + "/pam_biometricd.so" }
    }

    func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// The camera nodes to check: the daemon's V4L2 cameras, or every /dev/video* without it.
    func nodes(_ cameras: [CameraInfo]?) -> [Doctor.NodeAccess]? {
        let paths: [String]
        if let cameras {
            paths = cameras.map(\.path).filter { $0.hasPrefix("/dev/") }
        } else {
            guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/dev") else { return nil }
            paths = entries.filter { $0.hasPrefix("video") }.sorted().map { "/dev/" + $0 }
        }
        var result: [Doctor.NodeAccess] = []
        for path in paths {
            var st = stat()
            guard stat(path, &st) == 0 else { continue }
            let group = getgrgid(st.st_gid).flatMap { $0.pointee.gr_name.map { String(cString: $0) } }
            result.append(Doctor.NodeAccess(path: path, group: group, mode: UInt32(st.st_mode), aclGroups: aclGroups(path)))
        }
        return result
    }

    /// Groups with a read+write entry in the node's POSIX ACL (the `system.posix_acl_access`
    /// xattr: a 4-byte version, then 8-byte entries tag/perm/id), [] when it has none, nil when
    /// it cannot be read.
    func aclGroups(_ path: String) -> [String]? {
        var buffer = [UInt8](repeating: 0, count: 1024)
        let n = readXattr(path, "system.posix_acl_access", &buffer, buffer.count)
        if n < 0 { return errno == ENODATA || errno == ENOTSUP ? [] : nil }
        guard n >= 4 else { return [] }
        var groups: [String] = []
        var i = 4
        while i + 8 <= n {
            let tag = UInt16(buffer[i]) | UInt16(buffer[i + 1]) << 8
            let perm = UInt16(buffer[i + 2]) | UInt16(buffer[i + 3]) << 8
            let id = UInt32(buffer[i + 4]) | UInt32(buffer[i + 5]) << 8 | UInt32(buffer[i + 6]) << 16 | UInt32(buffer[i + 7]) << 24
            if tag == 0x08, perm & 6 == 6, let g = getgrgid(id), let name = g.pointee.gr_name {  // ACL_GROUP
                groups.append(String(cString: name))
            }
            i += 8
        }
        return groups
    }

    /// Whether the `biometricd` user is in `video` (nil: no such user on this machine).
    func daemonInVideo() -> Bool? {
        guard let user = getpwnam("biometricd") else { return nil }
        guard let video = getgrnam("video") else { return false }
        if user.pointee.pw_gid == video.pointee.gr_gid { return true }
        var member = video.pointee.gr_mem
        while let m = member?.pointee {
            if String(cString: m) == "biometricd" { return true }
            member = member?.advanced(by: 1)
        }
        return false
    }

    /// common-auth always (nil when unreadable), and every other file of /etc/pam.d that names
    /// the module.
    func pamFiles() -> [String: String?] {
        var files: [String: String?] = [:]
        let dir = "/etc/pam.d"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir) else { return [dir + "/common-auth": nil] }
        for name in names.sorted() {
            let path = dir + "/" + name
            let text = try? String(contentsOfFile: path, encoding: .utf8)
            if name == "common-auth" || text?.contains("pam_biometricd") == true || (text == nil && access(path, R_OK) != 0) {
                files[path] = text
            }
        }
        return files
    }

    func lidStates() -> [String] {
        let dir = "/proc/acpi/button/lid"
        return ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).compactMap {
            try? String(contentsOfFile: "\(dir)/\($0)/state", encoding: .utf8)
        }
    }
}

/// getxattr(2) from libc: <sys/xattr.h> is not in Glibc's Swift module.
@_silgen_name("getxattr")
private func readXattr(_ path: UnsafePointer<CChar>, _ name: UnsafePointer<CChar>, _ value: UnsafeMutableRawPointer?, _ size: Int) -> Int
