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
