import Foundation

/// Where a video node sits on USB, read from sysfs: the device (VID:PID, its sysfs path, which
/// identifies one physical camera module) and the interface the node is bound to.
public struct USBLocation: Sendable, Equatable {
    public var device: USBDeviceID
    /// bInterfaceNumber of the interface uvcvideo bound the node to (its VideoControl interface).
    public var interface: Int
    /// The USB device's resolved sysfs path (e.g. /sys/devices/pci0000:00/…/usb1/1-6): two nodes
    /// with the same path are sensors of one physical module (RGB + IR).
    public var devicePath: String
}

/// Reading video nodes' USB identity from sysfs. `root` is "/sys" except in tests, which build a
/// small tree of the same shape.
public enum SysfsVideo {
    /// `/sys/class/video4linux/videoN/device` → the USB interface (holds bInterfaceNumber) → its
    /// parent, the USB device (holds idVendor, idProduct). Nil for a node not on USB (vivid,
    /// v4l2loopback, a platform camera) or when sysfs is not readable.
    public static func usbLocation(ofNode node: String, root: String = "/sys") -> USBLocation? {
        let name = URL(fileURLWithPath: node).lastPathComponent
        let link = "\(root)/class/video4linux/\(name)/device"
        let interfacePath = URL(fileURLWithPath: link).resolvingSymlinksInPath().path
        guard interfacePath != link,
              let interfaceText = read(interfacePath + "/bInterfaceNumber"),
              let interface = Int(interfaceText, radix: 16)
        else { return nil }
        let devicePath = URL(fileURLWithPath: interfacePath).deletingLastPathComponent().path
        guard let v = read(devicePath + "/idVendor").flatMap({ UInt16($0, radix: 16) }),
              let p = read(devicePath + "/idProduct").flatMap({ UInt16($0, radix: 16) })
        else { return nil }
        return USBLocation(device: USBDeviceID(vendor: v, product: p), interface: interface, devicePath: devicePath)
    }

    /// Whether the node's camera can be unplugged: its USB port says `removable` (the laptop's own
    /// camera sits on a `fixed` port, or one that says `unknown`). Nil when the node is not on USB
    /// (a platform or MIPI camera: built in; vivid, v4l2loopback) or sysfs cannot be read. A
    /// closed lid hides every camera that is not known to be removable (issue 36).
    public static func isRemovable(node: String, root: String = "/sys") -> Bool? {
        guard let location = usbLocation(ofNode: node, root: root) else { return nil }
        return read(location.devicePath + "/removable").map { $0 == "removable" }
    }

    /// The kernel's name for a node (`name` in sysfs), when there is one.
    public static func name(ofNode node: String, root: String = "/sys") -> String? {
        read("\(root)/class/video4linux/\(URL(fileURLWithPath: node).lastPathComponent)/name")
    }

    static func read(_ path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }
}
