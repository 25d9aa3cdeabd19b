import BiometricCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One extension unit of a UVC camera, as its USB descriptors declare it.
public struct UVCExtensionUnit: Sendable, Equatable {
    public var interface: Int
    public var unit: UInt8
    /// guidExtensionCode, as 8-4-4-4-12 lowercase hex (the GUID's mixed-endian text form).
    public var guid: String
    /// Selectors the unit declares in bmControls (bit n → selector n + 1).
    public var selectors: [UInt8]
}

/// The opt-in probe of `camera.ir.probe` (admin): what a camera's extension units hold, read
/// without writing, and on request one bounded trial per candidate that restores what it found.
///
/// It is deliberately not a search. It asks only about the controls the camera's own descriptors
/// declare (no unit or selector is guessed), every control is read (GET_INFO, GET_LEN, GET_CUR,
/// GET_MIN, GET_MAX, GET_DEF, GET_RES) before anything is written, and a trial writes only the
/// control's own GET_MAX to selector 6 of the Microsoft camera-control unit (the control every
/// Windows Hello entry in the table uses), then writes back the value GET_CUR gave and checks it.
/// linux-enable-ir-emitter warns that its brute force over every control may damage a camera's
/// firmware; this probe never writes a value the camera did not itself report.
public enum IREmitterProbe {
    /// The Microsoft camera-control extension unit (MSXU) GUID, as the descriptors of Windows Hello
    /// IR cameras declare it (linux-enable-ir-emitter issue #301; Visage 30c9-0120.toml).
    public static let microsoftXU = "0f3f95dc-2632-4c4e-92c9-a04782f43bc8"
    /// The selector of that unit every published entry writes.
    public static let irSelector: UInt8 = 6
    /// Larger controls are listed but not read (a probe reads small state, not firmware tables).
    static let maxRead = 64

    /// The extension units of VideoControl interface `interface` in a raw USB descriptor dump
    /// (sysfs `descriptors`: the device descriptor then each configuration's descriptors).
    public static func extensionUnits(descriptors: [UInt8], interface wanted: Int?) -> [UVCExtensionUnit] {
        var units: [UVCExtensionUnit] = []
        var i = 0
        var currentInterface = -1
        var isVideoControl = false
        while i + 2 <= descriptors.count {
            let length = Int(descriptors[i])
            guard length >= 2, i + length <= descriptors.count else { break }
            let d = descriptors[i..<(i + length)].map { $0 }
            switch d[1] {
            case 0x04 where length >= 9:  // INTERFACE
                currentInterface = Int(d[2])
                isVideoControl = d[5] == 0x0e && d[6] == 0x01  // CC_VIDEO, SC_VIDEOCONTROL
            case 0x24 where isVideoControl && length >= 24 && d[2] == 0x06:  // CS_INTERFACE, VC_EXTENSION_UNIT
                let pins = Int(d[21])
                let sizeAt = 22 + pins
                guard sizeAt < length else { break }
                let controlSize = Int(d[sizeAt])
                guard sizeAt + 1 + controlSize <= length else { break }
                var selectors: [UInt8] = []
                for byte in 0..<controlSize {
                    for bit in 0..<8 where d[sizeAt + 1 + byte] & (1 << bit) != 0 {
                        selectors.append(UInt8(byte * 8 + bit + 1))
                    }
                }
                if wanted == nil || wanted == currentInterface {
                    units.append(UVCExtensionUnit(interface: currentInterface, unit: d[3], guid: guidText(Array(d[4..<20])), selectors: selectors))
                }
            default:
                break
            }
            i += length
        }
        return units
    }

    /// USB GUIDs are stored little-endian in their first three fields.
    static func guidText(_ b: [UInt8]) -> String {
        let hex = { (bytes: [UInt8]) in bytes.map { String(format: "%02x", $0) }.joined() }
        return [hex(b[0..<4].reversed()), hex(b[4..<6].reversed()), hex(b[6..<8].reversed()), hex(Array(b[8..<10])), hex(Array(b[10..<16]))]
            .joined(separator: "-")
    }

    /// What one control answered to the read requests.
    public struct Control: Sendable, Equatable {
        public var unit: UInt8
        public var selector: UInt8
        public var guid: String
        public var info: UInt8?
        public var length: Int?
        public var cur: [UInt8]?
        public var min: [UInt8]?
        public var max: [UInt8]?
        public var def: [UInt8]?
        public var res: [UInt8]?
        /// The first request that failed, and why.
        public var error: String?

        public var canGet: Bool { (info ?? 0) & 0x01 != 0 }
        public var canSet: Bool { (info ?? 0) & 0x02 != 0 }
    }

    /// Reads every declared control: no request here changes anything.
    public static func read(units: [UVCExtensionUnit], over channel: some UVCControlChannel) -> [Control] {
        var controls: [Control] = []
        for u in units {
            for s in u.selectors {
                var c = Control(unit: u.unit, selector: s, guid: u.guid)
                var info: [UInt8] = [0]
                var e = channel.query(unit: u.unit, selector: s, request: .getInfo, buffer: &info)
                guard e == 0 else {
                    c.error = "GET_INFO: \(IREmitterApplier.errnoText(e))"
                    controls.append(c)
                    continue
                }
                c.info = info[0]
                var len: [UInt8] = [0, 0]
                e = channel.query(unit: u.unit, selector: s, request: .getLen, buffer: &len)
                guard e == 0 else {
                    c.error = "GET_LEN: \(IREmitterApplier.errnoText(e))"
                    controls.append(c)
                    continue
                }
                let size = Int(len[0]) | Int(len[1]) << 8
                c.length = size
                if c.canGet && size > 0 && size <= maxRead {
                    for request in [UVCRequest.getCur, .getMin, .getMax, .getDef, .getRes] {
                        var buffer = [UInt8](repeating: 0, count: size)
                        let r = channel.query(unit: u.unit, selector: s, request: request, buffer: &buffer)
                        let value: [UInt8]? = r == 0 ? buffer : nil
                        switch request {
                        case .getCur: c.cur = value
                        case .getMin: c.min = value
                        case .getMax: c.max = value
                        case .getDef: c.def = value
                        default: c.res = value
                        }
                        if r != 0 && c.error == nil && request == .getCur { c.error = "GET_CUR: \(IREmitterApplier.errnoText(r))" }
                    }
                }
                controls.append(c)
            }
        }
        return controls
    }

    /// The controls a trial may touch: selector 6 of the Microsoft unit, readable and writable,
    /// with a current value and a different maximum (nothing to try otherwise).
    public static func candidates(_ controls: [Control]) -> [Control] {
        controls.filter {
            $0.guid == microsoftXU && $0.selector == irSelector && $0.canGet && $0.canSet
                && $0.cur != nil && $0.max != nil && $0.cur != $0.max && $0.max?.count == $0.length
        }
    }

    /// One trial's account: what was written, what was read back, and that the original is back.
    public struct Trial: Sendable, Equatable {
        public var unit: UInt8
        public var selector: UInt8
        public var original: [UInt8]
        public var written: [UInt8]
        public var readBack: [UInt8]?
        /// Mean grey level of frames before, while and after (nil when not measured).
        public var brightnessBefore: Double?
        public var brightnessDuring: Double?
        public var restored: Bool
        public var message: String
        /// The entry to put in /etc/biometricd/ir-emitters.d when the frames got brighter.
        public var suggestedWrite: UVCWrite { UVCWrite(unit: unit, selector: selector, payload: written) }
    }

    /// Writes the candidate's GET_MAX, reads it back, calls `during` (the caller measures frames
    /// there), then writes the original back and checks it with GET_CUR.
    public static func trial(_ c: Control, over channel: some UVCControlChannel, during: () async -> Double?) async -> Trial {
        let original = c.cur ?? []
        var t = Trial(unit: c.unit, selector: c.selector, original: original, written: c.max ?? [], restored: false, message: "")
        var payload = t.written
        let e = channel.query(unit: c.unit, selector: c.selector, request: .setCur, buffer: &payload)
        guard e == 0 else {
            t.restored = true  // nothing was changed
            t.message = "SET_CUR of GET_MAX failed (\(IREmitterApplier.errnoText(e))); nothing changed"
            return t
        }
        var back = [UInt8](repeating: 0, count: original.count)
        if channel.query(unit: c.unit, selector: c.selector, request: .getCur, buffer: &back) == 0 { t.readBack = back }
        t.brightnessDuring = await during()
        var restore = original
        let r = channel.query(unit: c.unit, selector: c.selector, request: .setCur, buffer: &restore)
        var check = [UInt8](repeating: 0, count: original.count)
        let g = channel.query(unit: c.unit, selector: c.selector, request: .getCur, buffer: &check)
        t.restored = r == 0 && g == 0 && check == original
        t.message = t.restored
            ? "wrote GET_MAX, read back, restored the original value"
            : "wrote GET_MAX but could not restore the original (\(r != 0 ? "SET_CUR: " + IREmitterApplier.errnoText(r) : "GET_CUR answers another value")): unplug the camera or reboot to reset it"
        return t
    }
}

/// A control channel on its own descriptor, for the probe (a stream's descriptor belongs to its
/// capture thread). Closed when released.
final class OwnedControlChannel: UVCControlChannel {
    let fd: Int32
    init(node: String) throws(CameraError) {
        let fd = open(node, O_RDWR | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw .openFailed(node, reason: String(cString: strerror(errno))) }
        self.fd = fd
    }
    func query(unit: UInt8, selector: UInt8, request: UVCRequest, buffer: inout [UInt8]) -> Int32 {
        DescriptorControlChannel(fd: fd).query(unit: unit, selector: selector, request: request, buffer: &buffer)
    }
    deinit { close(fd) }
}

extension V4L2Device {
    /// The extension units of this node's VideoControl interface, from the USB device's
    /// descriptors in sysfs (readable without opening the camera). Empty when not on USB.
    public func extensionUnits(sysfsRoot: String = "/sys") -> [UVCExtensionUnit] {
        guard let usb = description.usb,
              let data = FileManager.default.contents(atPath: usb.devicePath + "/descriptors")
        else { return [] }
        return IREmitterProbe.extensionUnits(descriptors: [UInt8](data), interface: usb.interface)
    }

    /// Reads every declared extension-unit control of this node, then (with `trial`) tries each
    /// candidate once, calling `measure` for the mean brightness of frames while it is set.
    public func probeEmitter(trial: Bool, measure: () async -> Double?) async throws(CameraError)
        -> (units: [UVCExtensionUnit], controls: [IREmitterProbe.Control], trials: [IREmitterProbe.Trial])
    {
        let units = extensionUnits()
        guard !units.isEmpty else { return (units, [], []) }
        let channel = try OwnedControlChannel(node: node)
        let controls = IREmitterProbe.read(units: units, over: channel)
        guard trial else { return (units, controls, []) }
        var trials: [IREmitterProbe.Trial] = []
        for c in IREmitterProbe.candidates(controls) {
            trials.append(await IREmitterProbe.trial(c, over: channel, during: measure))
        }
        return (units, controls, trials)
    }
}

extension Frame {
    /// Mean grey level 0–255 over every 4th pixel of every 4th row: enough to tell a dark IR frame
    /// (emitter off) from a lit one, at 1/16 of the reads.
    public var meanBrightness: Double {
        var sum = 0
        var n = 0
        let p = grey.pointer
        for y in stride(from: 0, to: height, by: 4) {
            for x in stride(from: 0, to: width, by: 4) {
                sum += Int(p[y * width + x])
                n += 1
            }
        }
        return n == 0 ? 0 : Double(sum) / Double(n)
    }
}
