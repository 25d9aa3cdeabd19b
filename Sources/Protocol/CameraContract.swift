/// camera.ir and camera.ir.probe: what is known about each camera's IR emitter, what was applied,
/// and the admin's read-back-safe probe (Docs/ir-emitters.md). Additions to SPEC §4.
extension Method {
    public static let cameraIR = "camera.ir"
    public static let cameraIRProbe = "camera.ir.probe"
}

public struct CameraIRParams: RPCParams, Encodable {
    public static let fields = wireNames(CodingKeys.self)
    enum CodingKeys: String, CodingKey, CaseIterable { case camera }
    /// Camera id, path or spec; every camera when absent.
    public var camera: String?
    public init(camera: String? = nil) { self.camera = camera }
}

/// One UVC extension-unit write: unit, selector, payload as hex bytes ("01 03 03 00").
public struct UVCWriteInfo: Codable, Sendable, Equatable {
    public var unit: Int
    public var selector: Int
    public var payload: String
    /// After an application: applied, read_back_differs, refused, failed, not_attempted.
    public var status: String?
    public var readBack: String?
    public var message: String?

    enum CodingKeys: String, CodingKey {
        case unit, selector, payload, status, message
        case readBack = "read_back"
    }

    public init(unit: Int, selector: Int, payload: String, status: String? = nil, readBack: String? = nil, message: String? = nil) {
        self.unit = unit
        self.selector = selector
        self.payload = payload
        self.status = status
        self.readBack = readBack
        self.message = message
    }
}

/// A table entry: the device it is for and where its values come from.
public struct IREntryInfo: Codable, Sendable, Equatable {
    /// "04f2:b6d9".
    public var device: String
    public var interface: Int?
    public var name: String
    public var source: String
    /// file:line of the entry (the packaged table or an admin's drop-in).
    public var origin: String
    public var writes: [UVCWriteInfo]

    public init(device: String, interface: Int?, name: String, source: String, origin: String, writes: [UVCWriteInfo]) {
        self.device = device
        self.interface = interface
        self.name = name
        self.source = source
        self.origin = origin
        self.writes = writes
    }
}

/// The last application of the entry, at the start of the camera's last stream.
public struct IRApplicationInfo: Codable, Sendable, Equatable {
    /// applied | read_back_differs | refused | failed.
    public var outcome: String
    public var message: String
    public var durationMs: Double
    public var secondsAgo: Double
    public var writes: [UVCWriteInfo]

    enum CodingKeys: String, CodingKey {
        case outcome, message, writes
        case durationMs = "duration_ms"
        case secondsAgo = "seconds_ago"
    }

    public init(outcome: String, message: String, durationMs: Double, secondsAgo: Double, writes: [UVCWriteInfo]) {
        self.outcome = outcome
        self.message = message
        self.durationMs = durationMs
        self.secondsAgo = secondsAgo
        self.writes = writes
    }
}

public struct CameraIRInfo: Codable, Sendable, Equatable {
    public var camera: String
    public var path: String
    /// Gives only grey/IR formats.
    public var ir: Bool
    /// "04f2:b6d9" when the node is on USB.
    public var usbDevice: String?
    public var usbInterface: Int?
    /// The table's entry for this camera, if any.
    public var entry: IREntryInfo?
    /// Applications since the daemon started (one per stream start, re-plugs included).
    public var applications: Int
    public var last: IRApplicationInfo?

    enum CodingKeys: String, CodingKey {
        case camera, path, ir, entry, applications, last
        case usbDevice = "usb_device"
        case usbInterface = "usb_interface"
    }

    public init(camera: String, path: String, ir: Bool, usbDevice: String?, usbInterface: Int?, entry: IREntryInfo?, applications: Int,
                last: IRApplicationInfo?) {
        self.camera = camera
        self.path = path
        self.ir = ir
        self.usbDevice = usbDevice
        self.usbInterface = usbInterface
        self.entry = entry
        self.applications = applications
        self.last = last
    }
}

public struct CameraIRResult: Codable, Sendable, Equatable {
    public var cameras: [CameraIRInfo]
    /// The table files read, in order.
    public var tableFiles: [String]
    /// Table files skipped, as "file:line: message".
    public var tableErrors: [String]

    enum CodingKeys: String, CodingKey {
        case cameras
        case tableFiles = "table_files"
        case tableErrors = "table_errors"
    }

    public init(cameras: [CameraIRInfo], tableFiles: [String], tableErrors: [String]) {
        self.cameras = cameras
        self.tableFiles = tableFiles
        self.tableErrors = tableErrors
    }
}

public struct CameraIRProbeParams: RPCParams, Encodable {
    public static let fields = wireNames(CodingKeys.self)
    enum CodingKeys: String, CodingKey, CaseIterable { case camera, trial }
    /// Camera id, path or spec (required: a probe is about one camera).
    public var camera: String
    /// Also write each candidate's GET_MAX once, measure frames, and restore the original [false].
    public var trial: Bool?

    public init(camera: String, trial: Bool? = nil) {
        self.camera = camera
        self.trial = trial
    }

    public func validate() throws(RPCError) {
        guard !camera.isEmpty, camera.utf8.count <= 4096 else {
            throw .invalidParams(field: "camera", "'camera' must be a camera id, path or spec")
        }
    }
}

/// One declared extension-unit control and what its read requests answered.
public struct ProbedControlInfo: Codable, Sendable, Equatable {
    public var unit: Int
    public var selector: Int
    public var guid: String
    public var info: Int?
    public var length: Int?
    public var cur: String?
    public var min: String?
    public var max: String?
    public var def: String?
    public var res: String?
    public var error: String?

    public init(unit: Int, selector: Int, guid: String, info: Int?, length: Int?, cur: String?, min: String?, max: String?, def: String?,
                res: String?, error: String?) {
        self.unit = unit
        self.selector = selector
        self.guid = guid
        self.info = info
        self.length = length
        self.cur = cur
        self.min = min
        self.max = max
        self.def = def
        self.res = res
        self.error = error
    }
}

public struct ProbeTrialInfo: Codable, Sendable, Equatable {
    public var unit: Int
    public var selector: Int
    public var original: String
    public var written: String
    public var readBack: String?
    public var brightnessBefore: Double?
    public var brightnessDuring: Double?
    public var restored: Bool
    public var message: String
    /// The drop-in line to keep the setting when it lit the emitter.
    public var suggestion: String

    enum CodingKeys: String, CodingKey {
        case unit, selector, original, written, restored, message, suggestion
        case readBack = "read_back"
        case brightnessBefore = "brightness_before"
        case brightnessDuring = "brightness_during"
    }

    public init(unit: Int, selector: Int, original: String, written: String, readBack: String?, brightnessBefore: Double?,
                brightnessDuring: Double?, restored: Bool, message: String, suggestion: String) {
        self.unit = unit
        self.selector = selector
        self.original = original
        self.written = written
        self.readBack = readBack
        self.brightnessBefore = brightnessBefore
        self.brightnessDuring = brightnessDuring
        self.restored = restored
        self.message = message
        self.suggestion = suggestion
    }
}

public struct CameraIRProbeResult: Codable, Sendable, Equatable {
    public var camera: String
    public var usbDevice: String?
    public var usbInterface: Int?
    public var controls: [ProbedControlInfo]
    public var trials: [ProbeTrialInfo]
    /// What the probe found, in one line.
    public var summary: String

    enum CodingKeys: String, CodingKey {
        case camera, controls, trials, summary
        case usbDevice = "usb_device"
        case usbInterface = "usb_interface"
    }

    public init(camera: String, usbDevice: String?, usbInterface: Int?, controls: [ProbedControlInfo], trials: [ProbeTrialInfo],
                summary: String) {
        self.camera = camera
        self.usbDevice = usbDevice
        self.usbInterface = usbInterface
        self.controls = controls
        self.trials = trials
        self.summary = summary
    }
}

// MARK: - camera.check (issue 25: authctl doctor)

extension Method {
    /// Opens a camera, takes a few frames and reports how bright they are, without any image:
    /// `authctl doctor`'s camera check (a dark IR frame means the emitter is not lit).
    public static let cameraCheck = "camera.check"
}

public struct CameraCheckParams: RPCParams, Encodable {
    public static let fields = wireNames(CodingKeys.self)
    /// Camera id, path or spec.
    public var camera: String
    /// Frames measured.
    public var frames: Int?
    public static let frames = Setting(CodingKeys.frames, 1...30, default: 5)
    /// Frames dropped first (auto-exposure and the emitter settle).
    public var warmupFrames: Int?
    public static let warmupFrames = Setting(CodingKeys.warmupFrames, 0...60, default: 5)
    public var timeoutMs: Int?
    public static let timeoutMs = Setting(CodingKeys.timeoutMs, 100...30000, default: 5000)

    enum CodingKeys: String, CodingKey, CaseIterable {
        case camera, frames
        case warmupFrames = "warmup_frames"
        case timeoutMs = "timeout_ms"
    }

    public init(camera: String, frames: Int? = nil, warmupFrames: Int? = nil, timeoutMs: Int? = nil) {
        self.camera = camera
        self.frames = frames
        self.warmupFrames = warmupFrames
        self.timeoutMs = timeoutMs
    }

    public func validate() throws(RPCError) {
        try Self.frames.check(frames)
        try Self.warmupFrames.check(warmupFrames)
        try Self.timeoutMs.check(timeoutMs)
    }
}

public struct CameraCheckResult: Codable, Sendable, Equatable {
    public var camera: String
    public var width: Int
    public var height: Int
    /// The frames were grey (an IR camera).
    public var ir: Bool
    /// Mean grey level (0–255) of each measured frame, in order.
    public var brightness: [Double]
    /// Milliseconds from opening the camera to the last measured frame.
    public var durationMs: Int

    enum CodingKeys: String, CodingKey {
        case camera, width, height, ir, brightness
        case durationMs = "duration_ms"
    }

    public init(camera: String, width: Int, height: Int, ir: Bool, brightness: [Double], durationMs: Int) {
        self.camera = camera
        self.width = width
        self.height = height
        self.ir = ir
        self.brightness = brightness
        self.durationMs = durationMs
    }
}
