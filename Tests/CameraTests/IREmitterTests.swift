import BiometricCore
@testable import BiometricCamera
import Foundation
import Logging
import Synchronization
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The packaged table, share/ir-emitters.conf at the repository root.
let packagedTable = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("share/ir-emitters.conf").path

/// A UVC camera's extension units as the driver would answer them, recording every request.
/// Its "emitter" is lit while control `onUnit`/`onSelector` holds `onPayload`.
final class FakeUVCDevice: UVCControlChannel, Sendable {
    struct Control {
        var info: UInt8 = 0x03  // GET and SET supported
        var cur: [UInt8]
    }
    struct Request: Equatable {
        var unit: UInt8
        var selector: UInt8
        var request: UVCRequest
        var bytes: [UInt8]
    }
    private struct State {
        var controls: [UInt16: Control]
        var log: [Request] = []
        var firstSetNs: UInt64?
    }
    private let state: Mutex<State>
    let on: UVCWrite?

    init(controls: [(unit: UInt8, selector: UInt8, control: Control)], on: UVCWrite? = nil) {
        state = Mutex(State(controls: Dictionary(uniqueKeysWithValues: controls.map { (UInt16($0.unit) << 8 | UInt16($0.selector), $0.control) })))
        self.on = on
    }

    func query(unit: UInt8, selector: UInt8, request: UVCRequest, buffer: inout [UInt8]) -> Int32 {
        let key = UInt16(unit) << 8 | UInt16(selector)
        let sent = buffer
        return state.withLock { s -> Int32 in
            s.log.append(Request(unit: unit, selector: selector, request: request, bytes: request == .setCur ? sent : []))
            guard var c = s.controls[key] else { return ENOENT }  // uvcvideo: no such unit or selector
            switch request {
            case .getInfo:
                guard buffer.count == 1 else { return ENOBUFS }
                buffer[0] = c.info
            case .getLen:
                guard buffer.count == 2 else { return ENOBUFS }
                buffer = [UInt8(c.cur.count & 0xFF), UInt8(c.cur.count >> 8)]
            case .getCur:
                guard c.info & 0x01 != 0 else { return EIO }
                guard buffer.count == c.cur.count else { return ENOBUFS }
                buffer = c.cur
            case .setCur:
                guard c.info & 0x02 != 0 else { return EIO }
                guard sent.count == c.cur.count else { return ENOBUFS }
                c.cur = sent
                s.controls[key] = c
                if s.firstSetNs == nil { s.firstSetNs = monotonicNanoseconds() }
            default:
                guard buffer.count == c.cur.count else { return ENOBUFS }
            }
            return 0
        }
    }

    var log: [Request] { state.withLock { $0.log } }
    var sets: [Request] { log.filter { $0.request == .setCur } }
    var isLit: Bool {
        guard let on else { return false }
        return state.withLock { $0.controls[UInt16(on.unit) << 8 | UInt16(on.selector)]?.cur == on.payload }
    }
    func reset(_ unit: UInt8, _ selector: UInt8, to bytes: [UInt8]) {
        state.withLock { $0.controls[UInt16(unit) << 8 | UInt16(selector)]?.cur = bytes }
    }
}

let zenbook = USBLocation(device: USBDeviceID(vendor: 0x04f2, product: 0xb6d9), interface: 2, devicePath: "/sys/devices/fake/1-6")

func entry(_ writes: [UVCWrite], device: USBDeviceID = zenbook.device) -> IREmitterEntry {
    IREmitterEntry(device: device, interface: nil, name: "test", source: "test", writes: writes, disabled: false, origin: "test:1")
}

final class IREmitterTableTests: XCTestCase {
    func testThePackagedTableParsesAndEveryEntryNamesItsSource() throws {
        let text = try String(contentsOfFile: packagedTable, encoding: .utf8)
        var table = IREmitterTable()
        try table.add(text: text, file: packagedTable)
        XCTAssertEqual(table.entries.count, 8)
        for e in table.entries {
            XCTAssertTrue(e.source.contains("https://github.com/"), "\(e.key): \(e.source)")
            XCTAssertFalse(e.writes.isEmpty, e.key)
        }
        let zen = try XCTUnwrap(table.entry(for: USBDeviceID(vendor: 0x04f2, product: 0xb6d9), interface: 2))
        XCTAssertEqual(zen.writes, [UVCWrite(unit: 14, selector: 6, payload: [1, 3, 3, 0, 0, 0, 0, 0, 0])])
        let chicony = try XCTUnwrap(table.entry(for: USBDeviceID(vendor: 0x04f2, product: 0xb67c), interface: 0))
        XCTAssertEqual(chicony.writes, [UVCWrite(unit: 0x0e, selector: 0x0e, payload: [0x02, 0x19])])
        XCTAssertNil(table.entry(for: USBDeviceID(vendor: 0x046d, product: 0x0825), interface: 0), "a webcam without an entry")
    }

    func testErrorsNameTheFileAndLine() {
        let cases: [(String, Int, String)] = [
            ("[04f2:b6d9]\nname = x\nwrite = unit=14 selector=6 payload=01\n", 1, "no 'source ='"),
            ("# c\n\n[04f2-b6d9]\n", 3, "4 hex digits"),
            ("[04f2:b6d9]\nsource = s\nwrite = unit=14 selector=6 payload=1 3\n", 3, "two hex digits"),
            ("[04f2:b6d9]\nsource = s\nwrite = unit=0 selector=6 payload=01\n", 3, "unit=<1-255>"),
            ("[04f2:b6d9]\nsource = s\nwrite = unit=14 selector=6\n", 3, "payload="),
            ("[04f2:b6d9]\nsource = s\ncolour = red\n", 3, "unknown key 'colour'"),
            ("source = s\n", 1, "before any '[vid:pid]' header"),
            ("[04f2:b6d9]\nsource = s\n", 1, "no 'write ='"),
            ("[04f2:b6d9]\nsource = s\nwrite = unit=1 selector=1 payload=01\n[04f2:b6d9]\nsource = t\nwrite = unit=1 selector=1 payload=01\n", 4,
             "already defined at line 1"),
            ("[04f2:b6d9 iface=2]\n", 1, "unknown header option"),
            ("[04f2:b6d9]\nsource = s\nwrite = unit=1 selector=1 payload=" + String(repeating: "00 ", count: 65) + "\n", 3, "at most 64"),
        ]
        for (text, line, message) in cases {
            XCTAssertThrowsError(try IREmitterTable.parse(text, file: "/etc/biometricd/ir-emitters.d/local.conf")) { error in
                guard let e = error as? IREmitterTableError else { return XCTFail("\(error)") }
                XCTAssertEqual(e.line, line, text)
                XCTAssertTrue(e.description.hasPrefix("/etc/biometricd/ir-emitters.d/local.conf:\(line): "), e.description)
                XCTAssertTrue(e.message.contains(message), "\(e.message) should say \(message)")
            }
        }
    }

    func testHexUnitsInterfacesAndColonPayloads() throws {
        let entries = try IREmitterTable.parse("""
            [04F2:B6D9 interface=2]
            source = local measurement
            write = unit=0x0e selector=0x06 payload=0x01:0x03:0x03
            """, file: "f")
        XCTAssertEqual(entries.first?.interface, 2)
        XCTAssertEqual(entries.first?.writes, [UVCWrite(unit: 14, selector: 6, payload: [1, 3, 3])])
        XCTAssertEqual(entries.first?.origin, "f:1")
    }

    func testDropInsOverrideDisableAndABrokenFileIsSkippedAlone() throws {
        let dir = NSTemporaryDirectory() + "ir-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "[04f2:b6d9]\nsource = my own capture\nwrite = unit=7 selector=6 payload=01 03 02 00 00 00 00 00 00\n[04f2:b67c]\nsource = off here\ndisabled = yes\n"
            .write(toFile: dir + "/10-local.conf", atomically: true, encoding: .utf8)
        try "[1234:5678]\nwrite = nonsense\n".write(toFile: dir + "/20-broken.conf", atomically: true, encoding: .utf8)
        try "not a table".write(toFile: dir + "/README", atomically: true, encoding: .utf8)
        let (table, errors) = IREmitterTable.load(packaged: packagedTable, dropIns: dir)
        XCTAssertEqual(errors.map(\.file), [dir + "/20-broken.conf"])
        XCTAssertEqual(errors.first?.line, 2)
        XCTAssertEqual(table.files, [packagedTable, dir + "/10-local.conf"])
        let zen = try XCTUnwrap(table.entry(for: zenbook.device, interface: 2))
        XCTAssertEqual(zen.writes.first?.unit, 7, "the admin's entry replaces the packaged one")
        XCTAssertEqual(zen.origin, dir + "/10-local.conf:1")
        XCTAssertNil(table.entry(for: USBDeviceID(vendor: 0x04f2, product: 0xb67c), interface: 0), "disabled")
        XCTAssertNotNil(table.entry(for: USBDeviceID(vendor: 0x174f, product: 0x2454), interface: 0), "the rest stays")
    }

    func testAnInterfaceEntryWinsOverTheWholeDevice() throws {
        let entries = try IREmitterTable.parse("""
            [04f2:b6d9]
            source = s
            write = unit=1 selector=1 payload=01
            [04f2:b6d9 interface=2]
            source = s
            write = unit=2 selector=2 payload=02
            """, file: "f")
        let table = IREmitterTable(entries: entries)
        XCTAssertEqual(table.entry(for: zenbook.device, interface: 2)?.writes.first?.unit, 2)
        XCTAssertEqual(table.entry(for: zenbook.device, interface: 0)?.writes.first?.unit, 1)
    }
}

final class IREmitterApplyTests: XCTestCase {
    func testWritesAreCheckedThenAppliedInOrderAndReadBack() {
        let fake = FakeUVCDevice(controls: [(14, 6, .init(cur: [1, 3, 1, 0, 0, 0, 0, 0, 0])), (10, 9, .init(cur: [0, 0, 0, 0]))])
        let writes = [UVCWrite(unit: 14, selector: 6, payload: [1, 3, 3, 0, 0, 0, 0, 0, 0]), UVCWrite(unit: 10, selector: 9, payload: [1, 0, 0, 0])]
        let report = IREmitterApplier.apply(entry(writes), over: fake)
        XCTAssertEqual(report.outcome, .applied, report.message)
        XCTAssertEqual(report.writes.map(\.status), [.applied, .applied])
        XCTAssertEqual(fake.log.map { "\($0.request) \($0.unit)/\($0.selector)" }, [
            "GET_INFO 14/6", "GET_LEN 14/6", "GET_INFO 10/9", "GET_LEN 10/9",
            "SET_CUR 14/6", "GET_CUR 14/6", "SET_CUR 10/9", "GET_CUR 10/9",
        ])
        XCTAssertEqual(fake.sets.map(\.bytes), writes.map(\.payload))
    }

    func testASizeMismatchIsRefusedBeforeAnySetCur() {
        // The second write's size is wrong: the first must not be written either.
        let fake = FakeUVCDevice(controls: [(14, 6, .init(cur: [1, 3, 1, 0, 0, 0, 0, 0, 0])), (10, 9, .init(cur: [0, 0]))])
        let report = IREmitterApplier.apply(entry([UVCWrite(unit: 14, selector: 6, payload: [1, 3, 3, 0, 0, 0, 0, 0, 0]),
                                                   UVCWrite(unit: 10, selector: 9, payload: [1, 0, 0, 0])]), over: fake)
        XCTAssertEqual(report.outcome, .refused)
        XCTAssertTrue(report.message.contains("2 bytes") && report.message.contains("payload 4"), report.message)
        XCTAssertEqual(report.writes.map(\.status), [.notAttempted, .refused])
        XCTAssertTrue(fake.sets.isEmpty, "no SET_CUR after a size mismatch")
    }

    func testAMissingControlOrAReadOnlyOneIsRefusedWithoutAWrite() {
        let missing = FakeUVCDevice(controls: [])
        let r1 = IREmitterApplier.apply(entry([UVCWrite(unit: 14, selector: 6, payload: [1])]), over: missing)
        XCTAssertEqual(r1.outcome, .refused)
        XCTAssertTrue(r1.message.contains("no such control"), r1.message)
        XCTAssertTrue(missing.sets.isEmpty)

        let readOnly = FakeUVCDevice(controls: [(14, 6, .init(info: 0x01, cur: [0]))])
        let r2 = IREmitterApplier.apply(entry([UVCWrite(unit: 14, selector: 6, payload: [1])]), over: readOnly)
        XCTAssertEqual(r2.outcome, .refused)
        XCTAssertTrue(r2.message.contains("does not accept SET_CUR"), r2.message)
        XCTAssertTrue(readOnly.sets.isEmpty)
    }

    func testAReadBackThatDiffersIsReported() {
        // A firmware that answers GET_CUR with a mode of its own, not the bytes just set.
        final class Stubborn: UVCControlChannel {
            let inner = FakeUVCDevice(controls: [(14, 6, .init(cur: [0, 0]))])
            func query(unit: UInt8, selector: UInt8, request: UVCRequest, buffer: inout [UInt8]) -> Int32 {
                let r = inner.query(unit: unit, selector: selector, request: request, buffer: &buffer)
                if request == .getCur { buffer = [9, 9] }
                return r
            }
        }
        let report = IREmitterApplier.apply(entry([UVCWrite(unit: 14, selector: 6, payload: [2, 0x19])]), over: Stubborn())
        XCTAssertEqual(report.outcome, .readBackDiffers)
        XCTAssertEqual(report.writes.first?.readBack, [9, 9])
    }
}

final class IREmitterControllerTests: XCTestCase {
    let on = UVCWrite(unit: 14, selector: 6, payload: [1, 3, 3, 0, 0, 0, 0, 0, 0])

    func controller() throws -> IREmitterController {
        var table = IREmitterTable()
        try table.add(text: try String(contentsOfFile: packagedTable, encoding: .utf8), file: packagedTable)
        return IREmitterController(table: table, logger: Logger(label: "test"))
    }

    func testEveryStreamStartAppliesTheEntryAgainSoARePlugGetsItToo() throws {
        let emitters = try controller()
        let fake = FakeUVCDevice(controls: [(14, 6, .init(cur: [1, 3, 1, 0, 0, 0, 0, 0, 0]))], on: on)
        XCTAssertEqual(emitters.streamStarting(cameraID: "cam", location: zenbook, channel: fake)?.outcome, .applied)
        XCTAssertTrue(fake.isLit)
        // Unplugged: the module powers down and forgets the control.
        emitters.cameraRemoved("cam")
        fake.reset(14, 6, to: [1, 3, 1, 0, 0, 0, 0, 0, 0])
        XCTAssertFalse(fake.isLit)
        XCTAssertEqual(emitters.streamStarting(cameraID: "cam", location: zenbook, channel: fake)?.outcome, .applied)
        XCTAssertTrue(fake.isLit, "applied again after the re-plug")
        XCTAssertEqual(fake.sets.count, 2)
        XCTAssertEqual(emitters.state(of: "cam")?.applications, 2)
        XCTAssertEqual(emitters.state(of: "cam")?.last?.entry.device, zenbook.device)
    }

    func testACameraWithoutAnEntryGetsNoRequestAtAll() throws {
        let emitters = try controller()
        let fake = FakeUVCDevice(controls: [(14, 6, .init(cur: [1, 3, 1, 0, 0, 0, 0, 0, 0]))], on: on)
        let logitech = USBLocation(device: USBDeviceID(vendor: 0x046d, product: 0x0825), interface: 0, devicePath: "/x")
        XCTAssertNil(emitters.streamStarting(cameraID: "webcam", location: logitech, channel: fake))
        XCTAssertNil(emitters.streamStarting(cameraID: "vivid", location: nil, channel: fake), "not on USB (vivid, loopback)")
        XCTAssertTrue(fake.log.isEmpty, "not even a GET_INFO")
        XCTAssertNil(emitters.state(of: "webcam"))
    }

    /// The fake camera's frames turn bright only once the entry's SET_CUR has landed: the very
    /// first frame of every stream is lit, so the entry is applied before streaming.
    func testTheFirstFrameIsLit() async throws {
        let emitters = try controller()
        for _ in 0..<20 {
            let fake = FakeUVCDevice(controls: [(14, 6, .init(cur: [1, 3, 1, 0, 0, 0, 0, 0, 0]))], on: on)
            let device = FakeIRCamera(emitters: emitters, channel: fake, location: zenbook)
            let capture = try CaptureStream(device: device, request: CaptureRequest(), queueCapacity: 3)
            let frame = try await capture.frames.next()
            await capture.stop()
            XCTAssertGreaterThan(meanBrightness(frame), 100, "the very first frame is lit: the entry was applied before streaming")
        }
        // Without the entry the same camera stays dark.
        let dark = FakeUVCDevice(controls: [(14, 6, .init(cur: [1, 3, 1, 0, 0, 0, 0, 0, 0]))], on: on)
        let unknown = USBLocation(device: USBDeviceID(vendor: 0x1234, product: 0x5678), interface: 0, devicePath: "/x")
        let capture = try CaptureStream(device: FakeIRCamera(emitters: emitters, channel: dark, location: unknown),
                                         request: CaptureRequest(), queueCapacity: 3)
        for _ in 0..<5 {
            let frame = try await capture.frames.next()
            XCTAssertLessThan(meanBrightness(frame), 20)
        }
        await capture.stop()
    }

    func meanBrightness(_ frame: Frame) -> Double {
        Double(frame.grey.bytes.reduce(0) { $0 + Int($1) }) / Double(frame.grey.count)
    }
}

/// An IR camera whose frames are dark until its fake emitter is lit; it applies its entry the
/// way V4L2Stream does, through the controller, as the stream opens.
struct FakeIRCamera: CameraDevice {
    let id = "fake-ir"
    let spec = CameraSpec.v4l2(path: "/dev/fake-ir")
    let description: CameraDescription
    let emitters: IREmitterController
    let channel: FakeUVCDevice

    init(emitters: IREmitterController, channel: FakeUVCDevice, location: USBLocation) {
        self.emitters = emitters
        self.channel = channel
        description = CameraDescription(id: "fake-ir", path: "/dev/fake-ir", name: "Fake IR", driver: "uvcvideo", bus: "usb-fake",
                                        formats: [.init(fourcc: "GREY", width: 640, height: 480, fps: 30)], isInfrared: true, usb: location)
    }

    func open(_ request: CaptureRequest) throws(CameraError) -> FrameSource {
        emitters.streamStarting(cameraID: id, location: description.usb, channel: channel)
        return Source(channel: channel)
    }

    final class Source: FrameSource {
        let channel: FakeUVCDevice
        let pool = PixelBufferPool()
        var sequence: UInt64 = 0
        init(channel: FakeUVCDevice) { self.channel = channel }
        func nextFrame(timeoutMs: Int) throws(CameraError) -> Frame {
            if sequence > 0 { usleep(1000) }
            sequence += 1
            let grey = pool.buffer(count: 640 * 480)
            grey.pointer.initialize(repeating: channel.isLit ? 160 : 4, count: grey.count)
            return Frame(width: 640, height: 480, grey: grey, bgr: nil, timestampNs: monotonicNanoseconds(), sequence: sequence, isInfrared: true)
        }
        func close() {}
    }
}

final class SysfsVideoTests: XCTestCase {
    /// A sysfs tree of the real shape: videoN/device → the USB interface → the USB device.
    func testReadsVendorProductAndInterfaceThroughTheDeviceLink() throws {
        let root = NSTemporaryDirectory() + "sysfs-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let usb = root + "/devices/pci0000:00/0000:00:14.0/usb1/1-6"
        let fm = FileManager.default
        for (iface, video) in [("1-6:1.0", "video0"), ("1-6:1.2", "video2")] {
            try fm.createDirectory(atPath: usb + "/" + iface, withIntermediateDirectories: true)
            try String(format: "%02x\n", iface == "1-6:1.0" ? 0 : 2).write(toFile: usb + "/\(iface)/bInterfaceNumber", atomically: true, encoding: .utf8)
            try fm.createDirectory(atPath: root + "/class/video4linux/" + video, withIntermediateDirectories: true)
            try fm.createSymbolicLink(atPath: root + "/class/video4linux/\(video)/device",
                                      withDestinationPath: "../../../devices/pci0000:00/0000:00:14.0/usb1/1-6/\(iface)")
        }
        try "04f2\n".write(toFile: usb + "/idVendor", atomically: true, encoding: .utf8)
        try "b6d9\n".write(toFile: usb + "/idProduct", atomically: true, encoding: .utf8)
        try fm.createDirectory(atPath: root + "/class/video4linux/video9", withIntermediateDirectories: true)  // vivid: no device link

        let ir = try XCTUnwrap(SysfsVideo.usbLocation(ofNode: "/dev/video2", root: root))
        XCTAssertEqual(ir.device, USBDeviceID(vendor: 0x04f2, product: 0xb6d9))
        XCTAssertEqual(ir.interface, 2)
        XCTAssertEqual(ir.device.description, "04f2:b6d9")
        let rgb = try XCTUnwrap(SysfsVideo.usbLocation(ofNode: "/dev/video0", root: root))
        XCTAssertEqual(rgb.interface, 0)
        XCTAssertEqual(rgb.devicePath, ir.devicePath, "two sensors of one module")
        XCTAssertNil(SysfsVideo.usbLocation(ofNode: "/dev/video9", root: root))
        XCTAssertNil(SysfsVideo.usbLocation(ofNode: "/dev/video7", root: root))

        // Issue 36: a closed lid hides every camera not known to be removable.
        XCTAssertNil(SysfsVideo.isRemovable(node: "/dev/video0", root: root), "no removable attribute: not known")
        try "fixed\n".write(toFile: usb + "/removable", atomically: true, encoding: .utf8)
        XCTAssertEqual(SysfsVideo.isRemovable(node: "/dev/video0", root: root), false, "the laptop's own camera")
        try "removable\n".write(toFile: usb + "/removable", atomically: true, encoding: .utf8)
        XCTAssertEqual(SysfsVideo.isRemovable(node: "/dev/video2", root: root), true, "a USB camera plugged into a port")
        try "unknown\n".write(toFile: usb + "/removable", atomically: true, encoding: .utf8)
        XCTAssertEqual(SysfsVideo.isRemovable(node: "/dev/video0", root: root), false)
        XCTAssertNil(SysfsVideo.isRemovable(node: "/dev/video9", root: root), "not on USB (vivid, a MIPI camera)")
    }
}

final class IREmitterProbeTests: XCTestCase {
    /// The Microsoft camera-control GUID as stored in a descriptor (first three fields little-endian).
    let msxuBytes: [UInt8] = [0xdc, 0x95, 0x3f, 0x0f, 0x32, 0x26, 0x4e, 0x4c, 0x92, 0xc9, 0xa0, 0x47, 0x82, 0xf4, 0x3b, 0xc8]

    func descriptors() -> [UInt8] {
        let device: [UInt8] = [18, 0x01] + [UInt8](repeating: 0, count: 16)
        func interface(_ n: UInt8, videoControl: Bool) -> [UInt8] { [9, 0x04, n, 0, 1, 0x0e, videoControl ? 0x01 : 0x02, 0, 0] }
        func xu(_ unit: UInt8, guid: [UInt8], controls: [UInt8]) -> [UInt8] {
            let body: [UInt8] = [0x24, 0x06, unit] + guid + [UInt8(controls.count * 8), 1, 1, UInt8(controls.count)] + controls + [0]
            return [UInt8(body.count + 1)] + body
        }
        let other = [UInt8](repeating: 0x11, count: 16)
        return device
            + interface(0, videoControl: true) + xu(4, guid: other, controls: [0x01])           // RGB: no MSXU
            + interface(1, videoControl: false)
            + interface(2, videoControl: true) + xu(8, guid: msxuBytes, controls: [0x06])       // selectors 2, 3
            + xu(14, guid: msxuBytes, controls: [0x26])                                         // selectors 2, 3, 6
    }

    func testExtensionUnitsComeFromTheDescriptorsOfTheNodesInterface() {
        let units = IREmitterProbe.extensionUnits(descriptors: descriptors(), interface: 2)
        XCTAssertEqual(units.map(\.unit), [8, 14])
        XCTAssertEqual(units.last?.selectors, [2, 3, 6])
        XCTAssertEqual(units.last?.guid, IREmitterProbe.microsoftXU)
        XCTAssertEqual(IREmitterProbe.extensionUnits(descriptors: descriptors(), interface: 0).map(\.unit), [4])
        XCTAssertEqual(IREmitterProbe.extensionUnits(descriptors: Array(descriptors().prefix(40)), interface: nil).count, 0,
                       "a truncated dump gives nothing rather than garbage")
    }

    func testReadingWritesNothingAndATrialRestoresTheOriginal() async {
        let off: [UInt8] = [1, 3, 1, 0, 0, 0, 0, 0, 0]
        let fake = FakeUVCDevice(controls: [
            (8, 2, .init(cur: [0, 0])), (8, 3, .init(cur: [5])),
            (14, 2, .init(cur: [0, 0])), (14, 3, .init(info: 0x01, cur: [7])), (14, 6, .init(cur: off)),
        ], on: UVCWrite(unit: 14, selector: 6, payload: off))
        let units = IREmitterProbe.extensionUnits(descriptors: descriptors(), interface: 2)
        let controls = IREmitterProbe.read(units: units, over: fake)
        XCTAssertEqual(controls.count, 5)
        XCTAssertTrue(fake.sets.isEmpty, "reading is GET_* only")
        XCTAssertEqual(controls.first { $0.unit == 14 && $0.selector == 6 }?.cur, off)
        // The fake answers GET_MAX with a buffer as passed (zeros) for non-CUR reads: give the
        // candidate its own maximum the way a camera reports it.
        var candidates = IREmitterProbe.candidates(controls.map { c in
            var c = c
            if c.unit == 14 && c.selector == 6 { c.max = [1, 3, 3, 0, 0, 0, 0, 0, 0] }
            return c
        })
        XCTAssertEqual(candidates.map(\.unit), [14], "only selector 6 of the Microsoft unit")
        let trial = await IREmitterProbe.trial(candidates.removeFirst(), over: fake) { 42 }
        XCTAssertTrue(trial.restored, trial.message)
        XCTAssertEqual(trial.readBack, [1, 3, 3, 0, 0, 0, 0, 0, 0])
        XCTAssertEqual(trial.brightnessDuring, 42)
        XCTAssertEqual(fake.sets.map(\.bytes), [[1, 3, 3, 0, 0, 0, 0, 0, 0], off], "GET_MAX, then the original back")
        XCTAssertTrue(fake.isLit, "the control holds its original value again")
        let order = fake.log.suffix(4).map { "\($0.request)" }
        XCTAssertEqual(order, ["SET_CUR", "GET_CUR", "SET_CUR", "GET_CUR"])
    }
}
