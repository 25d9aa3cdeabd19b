import BiometricAuth
import BiometricCamera
import BiometricFace
import BiometricFinger
import BiometricProtocol
import Foundation
import Logging

/// Everything the daemon is told at start, from `/etc/biometricd/biometricd.conf` and flags
/// (flags win). Each key is validated; an error names the file, line and key.
public struct DaemonConfiguration: Sendable, Equatable {
    public static let defaultConfigPath = "/etc/biometricd/biometricd.conf"
    public static let defaultSocketPath = "/run/biometricd/biometricd.sock"
    public static let defaultStateDirectory = "/var/lib/biometricd"
    public static let defaultModelDirectories = ["/usr/share/biometricd/models", "/var/lib/biometricd/models"]

    public var socketPath = defaultSocketPath
    public var stateDirectory = defaultStateDirectory
    public var modelDirectories = defaultModelDirectories
    public var cameras: [CameraSpec] = []
    public var logLevel: Logger.Level = .info
    public var adminGroup = "biometric-admin"
    public var loginGroup = "biometric-login"
    /// Per-camera finger distance optics (camera id or device path → calibration); cameras not
    /// listed use a 70° field of view (Docs/finger-camera.md).
    public var fingerOptics: [String: DistanceCalibration] = [:]
    /// The camera of each modality when a call names none (`face_camera=`, `finger_camera=`:
    /// `ir`, `rgb`, or a camera id, path or spec). Absent: face prefers an IR node, finger a
    /// colour one (CameraRoles.swift); a call's `camera` still overrides.
    public var cameraChoices: [CameraPurpose: CameraChoice] = [:]
    /// RGB/IR pairs sysfs cannot show (`camera_pair = rgb=<camera> ir=<camera>`, one per line):
    /// the IR node's role and each node's sibling in camera.list, and so the face default.
    public var cameraPairs: [CameraPair] = []
    /// Threads of the frame-analysis pool.
    public var analysisThreads = max(1, ProcessInfo.processInfo.activeProcessorCount)
    /// The modalities this machine uses [face, finger]. A modality left out loads nothing (the
    /// face models are ~110 MB) and its capture methods answer not_initialized.
    public var faceEnabled = true
    public var fingerEnabled = true
    /// Biometric lockout (SPEC §4): failures that lock for `lockSeconds`, failures that lock until a PIN.
    public var lockout = LockoutRules()
    /// Wrong PINs in a row before pin_locked; ≤ 0 = unlimited.
    public var pinMaxRetries = 3
    public var pinRules = PINRules()
    /// Matching thresholds: the default of every verify/identify, and the floor below which a
    /// caller who is not an admin may not go (SPEC §4).
    public var callerLimits = CallerLimits()
    /// The face liveness mode of every verify and identify that names none — PAM's included
    /// (auth.authenticate asks for none) [passive]. Without the anti-spoofing models a passive
    /// default falls back to blink (a call that names passive gets not_initialized).
    /// It is also the floor of a caller's `liveness_mode`: a caller who is not an admin may name
    /// another mode only if it runs every check of this one (`CallerLimits.faceLiveness`).
    public var faceLivenessMode = LivenessMode.default {
        didSet { callerLimits.faceLiveness = faceLivenessMode.checks }
    }
    /// What a biometric run on a virtual capture device (v4l2loopback, vivid, replay) may do, for
    /// face and finger alike (`refuse_virtual_cameras`; `face_liveness_refuse_virtual` is its old
    /// name): `pam` (every login path refuses one; face.verify and finger.verify may run on one but
    /// their match proves nothing), `yes` (every verification refuses one) or `no` [pam]. A test
    /// daemon's replay cameras are trusted (`VirtualCameraRule`).
    public var refuseVirtualCameras = VirtualCameraPolicy.default
    /// The second face network (`face_second_network`): `auto` loads mobilefacenet_arcface_cv46.onnx
    /// from the model folders when installed, `off` never, or a path to that file; either way its
    /// sha256 must be the pinned one. Loaded, enrolment writes v2 templates and verify fuses both
    /// networks for them; absent, everything runs on dlib alone (v1). Docs/face.md.
    public var faceSecondNetwork = SecondNetworkChoice.auto
    /// Per-uid shares: connections, calls, buffered input, queued expensive work (Limits/).
    public var shares = ShareRules()
    /// Templates and keys one user may store; admins are exempt.
    public var quotas = StorageQuotas()
    /// Largest uploaded image decoded (face.extract/match, finger.extract/match), in pixels,
    /// read from the image's header before anything is decoded.
    public var maxImagePixels = 4096 * 4096
    /// Test hook: hold every auth reply this long after its outcome is stored (so a test can
    /// kill the daemon in between). Refused by a production instance (see `isProductionInstance`).
    public var testHoldRepliesMs = 0
    /// Test hook: every challenge asks for this sequence instead of a random one. Refused by a
    /// production instance, so a real daemon can never be made predictable.
    public var testChallengeSequence: [ChallengeLiveness.Action]?
    /// The FIDO2 authenticator (`fido = yes`): a USB-HID security key through /dev/uhid while the
    /// daemon runs [no: a new HID device is an opt-in, not a side effect of installing].
    public var fidoEnabled = false
    /// `fido_user`: a kiosk's one FIDO user; absent, the user of the active session on seat0.
    public var fidoUser: String?
    /// `fido_uv_timeout`: seconds one FIDO user verification (a face or finger capture with
    /// liveness) may take before the authenticator answers USER_ACTION_TIMEOUT [30]. A production
    /// knob for slow hardware (CTAP clients wait with keepalives); the ceiling is the face
    /// session's own, so the whole window reaches the capture.
    public var fidoUVTimeoutSeconds = Self.fidoUVTimeoutDefault
    public static let fidoUVTimeoutDefault = 30
    public static let fidoUVTimeoutRange = 5...(FaceCaptureOptions.timeoutMs.range.upperBound / 1000)
    /// Test hook: the FIDO device's HID reports over this Unix socket instead of uhid (turns the
    /// authenticator on). Refused by a production instance (`FIDOTransportChoice`).
    public var testFIDOSocket: String?

    public init() {}

    /// The keys of the config file, each with its check. `camera`, `models` and `camera_pair` may repeat.
    public static let keys = ["socket", "state_dir", "models", "camera", "log_level", "admin_group", "login_group",
                              "analysis_threads", "finger_optics", "face_camera", "finger_camera", "camera_pair", "lockout_failures", "lockout_seconds", "lockout_pin_failures",
                              "pin_max_retries", "pin_min_length", "pin_max_length", "test_hold_replies_ms",
                              "test_challenge_sequence", "modalities",
                              "max_connections_per_user", "max_connections_admin", "max_calls_per_connection",
                              "max_calls_per_user", "max_buffered_bytes_per_user", "max_queued_per_user",
                              "max_face_templates_per_user", "max_finger_templates_per_user", "max_keys_per_user",
                              "max_image_pixels", "face_matching_threshold", "finger_matching_threshold",
                              "face_liveness_mode", "refuse_virtual_cameras", "face_second_network", "fido", "fido_user", "fido_uv_timeout", "test_fido_socket"]

    /// Applies one `key = value` setting. `repeated` tells whether the list keys append.
    public mutating func apply(key: String, value: String, appendLists: Bool) throws(ConfigError) {
        func path(_ v: String) throws(ConfigError) -> String {
            guard v.hasPrefix("/") || v.hasPrefix("."), !v.contains("\0") else {
                throw ConfigError(key: key, message: "must be a path (absolute, or relative starting with '.'), got '\(v)'")
            }
            return v
        }
        func integer(_ range: ClosedRange<Int>, _ note: String) throws(ConfigError) -> Int {
            guard let n = Int(value), range.contains(n) else {
                throw ConfigError(key: key, message: "must be a whole number from \(range.lowerBound) to \(range.upperBound)\(note.isEmpty ? "" : " (\(note))"), got '\(value)'")
            }
            return n
        }
        switch key {
        case "socket":
            socketPath = try path(value)
            guard socketPath.utf8.count < 108 else {
                throw ConfigError(key: key, message: "socket path is longer than the 107 bytes a Unix socket allows")
            }
        case "state_dir": stateDirectory = try path(value)
        case "models":
            let p = try path(value)
            modelDirectories = appendLists ? modelDirectories + [p] : [p]
        case "camera":
            do {
                let spec = try CameraSpec(parsing: value)
                cameras = appendLists ? cameras + [spec] : [spec]
            } catch {
                throw ConfigError(key: key, message: error.description)
            }
        case "log_level":
            guard let level = Logger.Level(rawValue: value.lowercased()) else {
                throw ConfigError(key: key, message: "must be one of trace, debug, info, notice, warning, error, critical; got '\(value)'")
            }
            logLevel = level
        case "admin_group", "login_group":
            guard !value.isEmpty, value.count <= 32, value.allSatisfy({ $0.isLetter || $0.isNumber || "-_.".contains($0) }) else {
                throw ConfigError(key: key, message: "must be a group name (letters, digits, - _ .), got '\(value)'")
            }
            if key == "admin_group" { adminGroup = value } else { loginGroup = value }
        case "modalities":
            let names = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            guard !names.isEmpty, names.allSatisfy({ $0 == "face" || $0 == "finger" }) else {
                throw ConfigError(key: key, message: "a comma-separated list of face, finger; got '\(value)'")
            }
            faceEnabled = names.contains("face")
            fingerEnabled = names.contains("finger")
        case "analysis_threads":
            guard let n = Int(value), (1...64).contains(n) else {
                throw ConfigError(key: key, message: "must be a whole number from 1 to 64, got '\(value)'")
            }
            analysisThreads = n
        case "finger_optics":
            let (camera, optics) = try Self.parseFingerOptics(value)
            fingerOptics[camera] = optics
        case "face_camera", "finger_camera":
            guard !value.isEmpty, value.utf8.count <= 4096, !value.contains("\0") else {
                throw ConfigError(key: key, message: "must be ir, rgb, or a camera id, path or spec; got '\(value)'")
            }
            cameraChoices[key == "face_camera" ? .face : .finger] = CameraChoice(parsing: value)
        case "camera_pair":
            do {
                let pairs = (appendLists ? cameraPairs : []) + [try CameraPair(parsing: value)]
                try CameraPair.validate(pairs)
                cameraPairs = pairs
            } catch {
                throw ConfigError(key: key, message: error.description)
            }
        case "lockout_failures": lockout.failuresToLock = try integer(0...1000, "0 disables the timed lock")
        case "lockout_seconds": lockout.lockSeconds = try integer(1...86400, "")
        case "lockout_pin_failures": lockout.failuresToRequirePIN = try integer(0...10000, "0 disables the lock until PIN")
        case "pin_max_retries": pinMaxRetries = try integer(-1...1000, "0 or less = unlimited")
        case "pin_min_length": pinRules = PINRules(minLength: try integer(-1...64, "0 or less = 4"), maxLength: pinRules.maxLength)
        case "pin_max_length": pinRules = PINRules(minLength: pinRules.minLength, maxLength: try integer(0...64, "0 = no limit"))
        case "max_connections_per_user": shares.connectionsPerUser = try integer(1...4096, "")
        case "max_connections_admin": shares.connectionsAdmin = try integer(1...65536, "")
        case "max_calls_per_connection": shares.callsPerConnection = try integer(1...1024, "")
        case "max_calls_per_user": shares.callsPerUser = try integer(1...65536, "")
        case "max_buffered_bytes_per_user": shares.bufferedBytesPerUser = try integer((2 << 20)...(1 << 30), "at least 2 MiB: one line may be 1 MiB")
        case "max_queued_per_user": shares.queuedPerUser = try integer(1...4096, "")
        case "max_face_templates_per_user": quotas.faceTemplates = try integer(1...100_000, "")
        case "max_finger_templates_per_user": quotas.fingerTemplates = try integer(1...100_000, "")
        case "max_keys_per_user": quotas.keys = try integer(1...100_000, "")
        case "face_matching_threshold":
            callerLimits.faceThreshold = Double(try integer(0...72, "the SPEC scale: 48 = FAR 1e-4 per attempt"))
        case "finger_matching_threshold":
            callerLimits.fingerThreshold = Double(try integer(0...100, "the SPEC scale: 48 = FAR 1e-4"))
        case "face_liveness_mode":
            guard let mode = LivenessMode(rawValue: value) else {
                throw ConfigError(key: key, message: "must be one of \(LivenessMode.wireNames.joined(separator: ", ")); got '\(value)'")
            }
            faceLivenessMode = mode
        case "refuse_virtual_cameras", "face_liveness_refuse_virtual":
            guard let policy = VirtualCameraPolicy(rawValue: value) else {
                throw ConfigError(key: key, message: "must be one of \(VirtualCameraPolicy.wireNames.joined(separator: ", ")); got '\(value)'")
            }
            refuseVirtualCameras = policy
        case "face_second_network":
            switch value {
            case "auto": faceSecondNetwork = .auto
            case "off": faceSecondNetwork = .off
            default:
                guard value.hasPrefix("/") || value.hasPrefix(".") else {
                    throw ConfigError(key: key, message: "must be auto, off or a path to \(FaceModels.recognizerName), got '\(value)'")
                }
                faceSecondNetwork = .path(try path(value))
            }
        case "fido":
            switch value.lowercased() {
            case "yes", "true", "on", "1": fidoEnabled = true
            case "no", "false", "off", "0": fidoEnabled = false
            default: throw ConfigError(key: key, message: "must be yes or no, got '\(value)'")
            }
        case "fido_user":
            guard !value.isEmpty, value.count <= 256, !value.contains("\0"), !value.contains(where: \.isWhitespace) else {
                throw ConfigError(key: key, message: "must be a user name, got '\(value)'")
            }
            fidoUser = value
        case "fido_uv_timeout":
            fidoUVTimeoutSeconds = try integer(Self.fidoUVTimeoutRange, "seconds one FIDO user verification may take")
        case "test_fido_socket":
            testFIDOSocket = try path(value)
            guard value.utf8.count < 108 else {
                throw ConfigError(key: key, message: "socket path is longer than the 107 bytes a Unix socket allows")
            }
        case "max_image_pixels": maxImagePixels = try integer(65536...(64 << 20), "")
        case "test_hold_replies_ms": testHoldRepliesMs = try integer(0...60000, "test hook; refused by a production instance")
        case "test_challenge_sequence":
            let moves = value.split(separator: ",").map { ChallengeLiveness.Action(rawValue: $0.trimmingCharacters(in: .whitespaces)) }
            guard (1...4).contains(moves.count), !moves.contains(nil) else {
                throw ConfigError(key: key, message: "must be 1-4 of turn_left, turn_right, look_up, nod, comma-separated; got '\(value)'")
            }
            testChallengeSequence = moves.compactMap { $0 }
        default:
            throw ConfigError(key: key, message: "unknown key; known keys: \(Self.keys.joined(separator: ", "))")
        }
    }

    /// `<camera id or path> hfov=<degrees> [min_focus_mm=<mm>]` or `<camera> finger_px=<min>-<max>`.
    static func parseFingerOptics(_ value: String) throws(ConfigError) -> (String, DistanceCalibration) {
        let usage = "expected '<camera> hfov=<20-170> [min_focus_mm=<10-2000>]' or '<camera> finger_px=<min>-<max>', got '\(value)'"
        let words = value.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        guard words.count >= 2 else { throw ConfigError(key: "finger_optics", message: usage) }
        var hfov = 70.0, focus = 70.0
        var pixels: ClosedRange<Double>?
        for word in words.dropFirst() {
            let pair = word.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { throw ConfigError(key: "finger_optics", message: usage) }
            switch pair[0] {
            case "hfov":
                guard let v = Double(pair[1]), (20...170).contains(v) else { throw ConfigError(key: "finger_optics", message: usage) }
                hfov = v
            case "min_focus_mm":
                guard let v = Double(pair[1]), (10...2000).contains(v) else { throw ConfigError(key: "finger_optics", message: usage) }
                focus = v
            case "finger_px":
                let bounds = pair[1].split(separator: "-").compactMap { Double($0) }
                guard bounds.count == 2, bounds[0] >= 8, bounds[0] < bounds[1], bounds[1] <= 4000 else {
                    throw ConfigError(key: "finger_optics", message: usage)
                }
                pixels = bounds[0]...bounds[1]
            default:
                throw ConfigError(key: "finger_optics", message: usage)
            }
        }
        let optics = pixels.map { DistanceCalibration(optimalFingerWidthPixels: $0) }
            ?? DistanceCalibration(horizontalFOVDegrees: hfov, minimumFocusMM: focus)
        return (words[0], optics)
    }

    /// Reads a config file. Lines: `key = value`, `#` comments, blank lines. List keys repeat.
    public mutating func load(file path: String) throws(ConfigError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigError(file: path, message: "cannot be read (missing, or permission denied)")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigError(file: path, message: "is not UTF-8 text")
        }
        var seenLists: Set<String> = []
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let eq = line.firstIndex(of: "=") else {
                throw ConfigError(file: path, line: number + 1, message: "expected 'key = value', got '\(line)'")
            }
            let key = line[..<eq].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            let isList = key == "camera" || key == "models" || key == "camera_pair"
            do {
                try apply(key: key, value: value, appendLists: isList && seenLists.contains(key))
            } catch var error {
                error.file = path
                error.line = number + 1
                throw error
            }
            if isList { seenLists.insert(key) }
        }
    }

    public var privileged: Bool { geteuid() == 0 }

    /// Root, the system paths, or started by systemd: test hooks that make the daemon predictable
    /// (held replies, fixed challenge sequences) are refused here, whatever the config says.
    /// The test hooks set, by name (refused together with a production instance).
    public var testHooks: [String] {
        (testHoldRepliesMs > 0 ? ["test_hold_replies_ms"] : []) + (testChallengeSequence != nil ? ["test_challenge_sequence"] : [])
    }

    public var isProductionInstance: Bool {
        let env = ProcessInfo.processInfo.environment
        return privileged || socketPath == Self.defaultSocketPath || stateDirectory == Self.defaultStateDirectory
            || env["LISTEN_FDS"] != nil || env["NOTIFY_SOCKET"] != nil || env["INVOCATION_ID"] != nil
    }
}

public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    public var file: String?
    public var line: Int?
    public var key: String?
    public var message: String

    public init(file: String? = nil, line: Int? = nil, key: String? = nil, message: String) {
        self.file = file
        self.line = line
        self.key = key
        self.message = message
    }

    public var description: String {
        var where_ = ""
        if let file { where_ += file + (line.map { ":\($0)" } ?? "") + ": " }
        if let key { where_ += "'\(key)' " }
        return where_ + message
    }
}

/// `face_second_network`: where the second face network comes from (Docs/face.md "Two networks,
/// one score").
public enum SecondNetworkChoice: Sendable, Equatable {
    /// The model folders, when the file is installed there.
    case auto
    /// Never: dlib alone, v1 templates.
    case off
    /// This file (still checked against the pinned sha256).
    case path(String)
}
