import BiometricCore
@testable import BiometricCamera
import Foundation
import Logging
import XCTest

/// A node as V4L2Device would describe it; never opened here.
struct DescribedNode: CameraDevice {
    let id: String
    let spec: CameraSpec
    let description: CameraDescription

    init(_ id: String, driver: String = "uvcvideo", fourccs: [String], usb: USBLocation?) {
        self.id = id
        spec = .v4l2(path: "/dev/\(id)")
        let infrared = Set(fourccs).isSubset(of: infraredFourccs)
        description = CameraDescription(id: id, path: "/dev/\(id)", name: id, driver: driver, bus: "usb-0000:00:14.0-6",
                                        formats: fourccs.map { .init(fourcc: $0, width: 640, height: 480, fps: 30) },
                                        isInfrared: infrared, usb: usb)
    }

    func open(_ request: CaptureRequest) throws(CameraError) -> FrameSource { throw .openFailed(id, reason: "not a real node") }
}

final class CameraRolesTests: XCTestCase {
    let module = "/sys/devices/pci0000:00/0000:00:14.0/usb1/1-6"
    var rgb: DescribedNode { DescribedNode("video0", fourccs: ["YUYV", "MJPG"], usb: USBLocation(device: zenbook.device, interface: 0, devicePath: module)) }
    var ir: DescribedNode { DescribedNode("video2", fourccs: ["GREY"], usb: USBLocation(device: zenbook.device, interface: 2, devicePath: module)) }
    let vivid = DescribedNode("video4", driver: "vivid", fourccs: ["YUYV"], usb: nil)
    let emitters = IREmitterController(table: IREmitterTable(), logger: Logger(label: "t"))

    func registry(_ devices: [any CameraDevice], choices: [CameraPurpose: CameraChoice] = [:], table: IREmitterTable = IREmitterTable()) -> CameraRegistry {
        CameraRegistry(devices: devices, logger: Logger(label: "t"), emitters: IREmitterController(table: table, logger: Logger(label: "t")),
                       choices: choices)
    }

    func testSiblingsAreTheOtherRoleOfTheSameUSBDevice() {
        let r = registry([rgb, ir, vivid])
        XCTAssertEqual(r.roles(of: rgb), CameraRoles(isInfrared: false, isVirtual: false, physicalDevice: "usb 04f2:b6d9 1-6", sibling: "video2"))
        XCTAssertEqual(r.roles(of: ir), CameraRoles(isInfrared: true, isVirtual: false, physicalDevice: "usb 04f2:b6d9 1-6", sibling: "video0"))
        XCTAssertEqual(r.roles(of: vivid), CameraRoles(isInfrared: false, isVirtual: true, physicalDevice: nil, sibling: nil))
        let other = DescribedNode("video6", fourccs: ["YUYV"], usb: USBLocation(device: USBDeviceID(vendor: 0x046d, product: 0x0825), interface: 0,
                                                                               devicePath: "/sys/devices/pci0000:00/0000:00:14.0/usb1/1-2"))
        XCTAssertNil(registry([rgb, other]).roles(of: other).sibling, "another USB device is no sibling")
    }

    func testANodeTheEmitterTableKnowsIsInfraredWhateverItsFormats() throws {
        // Some IR nodes also list YUYV; the table's entry for their VID:PID and interface says IR.
        let yuyvIR = DescribedNode("video2", fourccs: ["YUYV"], usb: USBLocation(device: zenbook.device, interface: 2, devicePath: module))
        let table = IREmitterTable(entries: try IREmitterTable.parse("[04f2:b6d9 interface=2]\nsource = s\nwrite = unit=14 selector=6 payload=01\n", file: "t"))
        let r = registry([rgb, yuyvIR], table: table)
        XCTAssertTrue(r.roles(of: yuyvIR).isInfrared)
        XCTAssertFalse(r.roles(of: rgb).isInfrared, "interface 0 has no entry")
        XCTAssertEqual(r.roles(of: rgb).sibling, "video2")
    }

    func testFacePrefersTheIRNodeAndFingerTheColourOne() throws {
        let r = registry([rgb, ir])
        XCTAssertEqual(try r.find(nil, for: .face, choice: nil).id, "video2", "IR although listed second")
        XCTAssertEqual(try r.find(nil, for: .finger, choice: nil).id, "video0")
        XCTAssertEqual(try r.find(nil).id, "video0", "without a purpose: the first free camera, as before")
        XCTAssertEqual(try r.find("video0", for: .face, choice: .infrared).id, "video0", "a named camera (camera=) overrides")
        XCTAssertEqual(try r.find(nil, for: .face, choice: .colour).id, "video0", "face_camera=rgb")
        XCTAssertEqual(try r.find(nil, for: .finger, choice: .named("/dev/video2")).id, "video2", "finger_camera=/dev/video2")
        XCTAssertThrowsError(try r.find(nil, for: .face, choice: .named("/dev/video9"))) { error in
            XCTAssertEqual(error as? CameraError, .notFound("/dev/video9"), "a configured camera that is absent is not silently replaced")
        }
        XCTAssertEqual(try registry([rgb, vivid]).find(nil, for: .face, choice: nil).id, "video0", "no IR node: the first free camera")
    }

    func testAnIRNodeInUseLeavesFaceTheNextFreeCamera() throws {
        let r = registry([rgb, ir])
        let lease = try r.acquire(nil, for: .face)
        XCTAssertEqual(lease.device.id, "video2")
        XCTAssertEqual(try r.acquire(nil, for: .face).device.id, "video0", "the IR node is busy: a free camera rather than busy")
        lease.release()
    }
}

/// `camera_pair = rgb=<camera> ir=<camera>`: pairs sysfs cannot show (vivid, platform cameras).
final class CameraPairTests: XCTestCase {
    let emitters = IREmitterController(table: IREmitterTable(), logger: Logger(label: "t"))
    /// Two vivid capture nodes: both offer colour and grey, neither is on USB.
    let colourVivid = DescribedNode("video0", driver: "vivid", fourccs: ["YUYV", "GREY"], usb: nil)
    let greyVivid = DescribedNode("video2", driver: "vivid", fourccs: ["YUYV", "GREY"], usb: nil)

    func registry(_ devices: [any CameraDevice], pairs: [CameraPair]) -> CameraRegistry {
        CameraRegistry(devices: devices, logger: Logger(label: "t"), emitters: emitters, pairs: pairs)
    }

    func testParsesEitherOrderAndAnyCameraName() throws {
        XCTAssertEqual(try CameraPair(parsing: "rgb=/dev/video0 ir=/dev/video2"), CameraPair(colour: "/dev/video0", infrared: "/dev/video2"))
        XCTAssertEqual(try CameraPair(parsing: "  IR=v4l2:/dev/v4l/by-id/usb-x-video-index1\trgb=usb-x-video-index0 "),
                       CameraPair(colour: "usb-x-video-index0", infrared: "v4l2:/dev/v4l/by-id/usb-x-video-index1"))
        XCTAssertEqual(try CameraPair(parsing: "rgb=a ir=b").description, "rgb=a ir=b")
    }

    func testRefusesWhatIsNotOnePairWithAReason() {
        let bad: [(String, String)] = [
            ("", "both rgb=<camera> and ir=<camera> are needed"),
            ("rgb=/dev/video0", "both rgb=<camera> and ir=<camera> are needed"),
            ("/dev/video0 /dev/video2", "'/dev/video0' is not rgb=<camera> or ir=<camera>"),
            ("rgb=/dev/video0 ir=", "'ir=' needs a camera id, path or spec"),
            ("rgb=a ir=b rgb=c", "rgb= is given twice"),
            ("rgb=a ir=b ir=c", "ir= is given twice"),
            ("rgb=a depth=b", "unknown role 'depth' (rgb or ir)"),
            ("rgb=/dev/video0 ir=/dev/video0", "the RGB and the IR camera are the same ('/dev/video0')"),
        ]
        for (text, reason) in bad {
            XCTAssertThrowsError(try CameraPair(parsing: text), text) { error in
                XCTAssertEqual((error as? CameraPairError)?.reason, reason, text)
                XCTAssertTrue("\(error)".contains("got '\(text)'"), "the message quotes the value: \(error)")
            }
        }
        XCTAssertThrowsError(try CameraPair.validate([CameraPair(colour: "a", infrared: "b"), CameraPair(colour: "c", infrared: "a")])) { error in
            XCTAssertEqual((error as? CameraPairError)?.reason, "camera 'a' is already in another pair")
        }
        XCTAssertNoThrow(try CameraPair.validate([CameraPair(colour: "a", infrared: "b"), CameraPair(colour: "c", infrared: "d")]))
    }

    func testThePairGivesTheIRRoleAndTheSiblingsThatSysfsCannot() {
        let none = registry([colourVivid, greyVivid], pairs: [])
        XCTAssertEqual(none.roles(of: greyVivid), CameraRoles(isInfrared: false, isVirtual: true, physicalDevice: nil, sibling: nil),
                       "without the line: not IR (it offers YUYV), no sibling (not on USB)")
        let r = registry([colourVivid, greyVivid], pairs: [CameraPair(colour: "/dev/video0", infrared: "video2")])
        XCTAssertEqual(r.roles(of: greyVivid), CameraRoles(isInfrared: true, isVirtual: true, physicalDevice: nil, sibling: "video0"))
        XCTAssertEqual(r.roles(of: colourVivid), CameraRoles(isInfrared: false, isVirtual: true, physicalDevice: nil, sibling: "video2"))
        // The IR node unplugged: the colour node has no sibling now, and keeps its role.
        let alone = registry([colourVivid], pairs: [CameraPair(colour: "/dev/video0", infrared: "video2")])
        XCTAssertEqual(alone.roles(of: colourVivid), CameraRoles(isInfrared: false, isVirtual: true, physicalDevice: nil, sibling: nil))
    }

    func testTheConfiguredRoleWinsOverTheFormats() {
        // A grey-only node named rgb= is colour; a YUYV node named ir= is IR.
        let grey = DescribedNode("video4", driver: "vivid", fourccs: ["GREY"], usb: nil)
        let r = registry([grey, colourVivid], pairs: [CameraPair(colour: "video4", infrared: "video0")])
        XCTAssertFalse(r.roles(of: grey).isInfrared)
        XCTAssertTrue(r.roles(of: colourVivid).isInfrared)
        // On USB too: the pair replaces the sysfs sibling.
        let module = "/sys/devices/pci0000:00/0000:00:14.0/usb1/1-6"
        let rgb = DescribedNode("video6", fourccs: ["YUYV"], usb: USBLocation(device: zenbook.device, interface: 0, devicePath: module))
        let ir = DescribedNode("video8", fourccs: ["GREY"], usb: USBLocation(device: zenbook.device, interface: 2, devicePath: module))
        let usb = registry([rgb, ir, greyVivid], pairs: [CameraPair(colour: "video6", infrared: "video2")])
        XCTAssertEqual(usb.roles(of: rgb).sibling, "video2")
        XCTAssertEqual(usb.roles(of: rgb).physicalDevice, "usb 04f2:b6d9 1-6")
        XCTAssertEqual(usb.roles(of: ir).sibling, nil, "its sysfs sibling is in a pair line: siblings stay mutual")
    }

    func testFaceDefaultsToTheConfiguredIRNode() throws {
        let r = registry([colourVivid, greyVivid], pairs: [CameraPair(colour: "/dev/video0", infrared: "/dev/video2")])
        XCTAssertEqual(try r.find(nil, for: .face, choice: nil).id, "video2", "IR by configuration, although listed second")
        XCTAssertEqual(try r.find(nil, for: .finger, choice: nil).id, "video0")
        XCTAssertEqual(try r.find(nil, for: .face, choice: .colour).id, "video0", "face_camera=rgb")
        XCTAssertEqual(try registry([colourVivid, greyVivid], pairs: []).find(nil, for: .face, choice: nil).id, "video0",
                       "without the pair neither is IR: the first free camera")
        let lease = try r.acquire(nil, for: .face)
        XCTAssertEqual(lease.device.id, "video2")
        lease.release()
    }
}
