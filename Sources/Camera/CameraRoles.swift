import Foundation

/// What a camera is for the sessions that pick one: IR or colour, real or virtual, and which
/// other node belongs to the same physical module (Howdy #40, #354, #91, #641: the RGB node
/// picked where the IR one was meant).
public struct CameraRoles: Sendable, Equatable {
    /// IR frames: only grey formats (GREY/Y8/Y16), or a node the IR emitter table knows.
    public var isInfrared: Bool
    /// vivid, v4l2loopback, replay: no sensor behind it.
    public var isVirtual: Bool
    /// The physical device: `usb <vid:pid> <port path>` for USB cameras, nil otherwise.
    public var physicalDevice: String?
    /// The id of the other-role node of the same physical device (the IR node of an RGB camera,
    /// the RGB node of an IR one), when sysfs shows one or a `camera_pair=` line names it.
    public var sibling: String?

    /// A driver whose nodes have no sensor behind them.
    public static func isVirtualDriver(_ driver: String) -> Bool { virtualDrivers.contains(driver) }
}

/// Which camera a modality uses when a call names none (`face_camera=`, `finger_camera=`).
public enum CameraChoice: Sendable, Equatable, CustomStringConvertible {
    /// The first free camera of that kind (`ir` or `rgb`).
    case infrared
    case colour
    /// A camera id, path or spec.
    case named(String)

    /// `ir`, `rgb`, or a camera id/path/spec.
    public init(parsing text: String) {
        switch text.lowercased() {
        case "ir": self = .infrared
        case "rgb": self = .colour
        default: self = .named(text)
        }
    }

    public var description: String {
        switch self {
        case .infrared: "ir"
        case .colour: "rgb"
        case .named(let n): n
        }
    }
}

/// The modality a session captures for.
public enum CameraPurpose: String, Sendable {
    case face, finger

    /// With nothing configured: face prefers an IR node (lit by its emitter, it sees in the dark
    /// and a photo on a screen shows nothing), finger a colour one (finding fingers needs skin colour).
    var defaultChoice: CameraChoice { self == .face ? .infrared : .colour }
}

/// Drivers whose nodes have no sensor behind them (QUERYCAP driver names).
let virtualDrivers: Set<String> = ["vivid", "v4l2 loopback", "v4l2loopback", "replay"]

extension CameraRegistry {
    /// The roles of `device` among the cameras present now.
    public func roles(of device: any CameraDevice) -> CameraRoles {
        roles(of: device, among: devices)
    }

    /// The same, with the list of cameras already in hand (one sysfs view for a whole listing).
    public func roles(of device: any CameraDevice, among all: [any CameraDevice]) -> CameraRoles {
        let d = device.description
        let ir = isInfrared(device)
        let virtual = device is ReplayDevice || virtualDrivers.contains(d.driver)
        // A configured pair names the sibling whether or not it is on USB (none while it is absent).
        let configured = configuredPair(of: device)
        let paired = configured.flatMap { pair, isIR in
            all.first { $0.id != device.id && Self.matches($0, isIR ? pair.colour : pair.infrared) }?.id
        }
        guard let usb = d.usb else { return CameraRoles(isInfrared: ir, isVirtual: virtual, physicalDevice: nil, sibling: paired) }
        let port = URL(fileURLWithPath: usb.devicePath).lastPathComponent
        let sibling = all.first { other in
            // A node a pair line names has its sibling from that line only (siblings stay mutual).
            other.id != device.id && other.description.usb?.devicePath == usb.devicePath && isInfrared(other) != ir
                && configuredPair(of: other) == nil
        }
        return CameraRoles(isInfrared: ir, isVirtual: virtual, physicalDevice: "usb \(usb.device) \(port)",
                           sibling: configured != nil ? paired : sibling?.id)
    }

    /// The configured role first (`camera_pair=`: the admin knows the module), else grey-only
    /// formats, or a node the emitter table has an entry for (its VID:PID and interface are an
    /// IR sensor's even when it also offers a colour-looking format such as YUYV).
    func isInfrared(_ device: any CameraDevice) -> Bool {
        if let (_, isIR) = configuredPair(of: device) { return isIR }
        return device.description.isInfrared || emitters.entry(for: device.description.usb) != nil
    }

    /// The `camera_pair=` line naming `device`, and whether it names it as the IR node.
    func configuredPair(of device: any CameraDevice) -> (CameraPair, Bool)? {
        for pair in pairs {
            if Self.matches(device, pair.infrared) { return (pair, true) }
            if Self.matches(device, pair.colour) { return (pair, false) }
        }
        return nil
    }

    /// The camera `purpose` uses when the call names none: the configured choice, else the
    /// purpose's default kind; a free camera first, of that kind first, then any free one
    /// (a kind that is absent is a preference, not a requirement). A configured name must exist.
    /// Whether the camera a `purpose` session would lease now (`camera` or the modality's choice)
    /// is in the laptop's lid: any camera whose USB port is not `removable` (a replay camera is
    /// not). Nil when no camera would be found.
    public func inLid(_ camera: String?, for purpose: CameraPurpose) -> Bool? {
        guard let device = try? find(camera, for: purpose, choice: choices[purpose]) else { return nil }
        guard let v4l2 = device as? V4L2Device else { return false }
        return SysfsVideo.isRemovable(node: v4l2.node) != true
    }

    public func find(_ name: String?, for purpose: CameraPurpose, choice: CameraChoice?) throws(CameraError) -> any CameraDevice {
        if let name { return try find(name) }
        let wanted = choice ?? purpose.defaultChoice
        if case .named(let n) = wanted { return try find(n) }
        let all = devices
        let kind = all.filter { isInfrared($0) == (wanted == .infrared) }
        if let d = kind.first(where: { !isBusy($0.id) }) ?? all.first(where: { !isBusy($0.id) }) ?? kind.first { return d }
        return try find(nil)
    }
}
