import BiometricCamera
import BiometricClient
import BiometricDaemon
import BiometricProtocol
import Foundation
import XCTest

/// camera.ir and camera.ir.probe through the real daemon (replay cameras: no USB, no entry).
final class CameraIRTests: XCTestCase {
    func testReplayCamerasHaveNoEntryAndTheProbeRefusesThem() throws {
        let daemon = try DaemonProcess(cameras: ["replay:\(lfw)/Aaron_Eckhart?fps=5"])
        let result: CameraIRResult = try daemon.client().call(Method.cameraIR)
        XCTAssertEqual(result.cameras.map(\.camera), ["replay0"])
        let replay = try XCTUnwrap(result.cameras.first)
        XCTAssertNil(replay.usbDevice)
        XCTAssertNil(replay.entry)
        XCTAssertEqual(replay.applications, 0)
        XCTAssertNil(replay.last)

        let one: CameraIRResult = try daemon.client().call(Method.cameraIR, CameraIRParams(camera: "replay0"))
        XCTAssertEqual(one.cameras.count, 1)
        let missing = rpcError { let _: CameraIRResult = try daemon.client().call(Method.cameraIR, CameraIRParams(camera: "/dev/video99")) }
        XCTAssertEqual(missing?.code, 2001)

        // The test runs as root (an admin): the probe is allowed, and says a replay has no units.
        let probe = rpcError { let _: CameraIRProbeResult = try daemon.client().call(Method.cameraIRProbe, CameraIRProbeParams(camera: "replay0")) }
        XCTAssertEqual(probe?.code, -32602)
        XCTAssertTrue(probe?.message.contains("not a V4L2 camera") ?? false, probe?.message ?? "")
    }
}

/// camera.list's role fields (SPEC §4 additions) on replay cameras.
final class CameraRoleListTests: XCTestCase {
    func testReplayCamerasAreVirtualWithoutDeviceOrSibling() throws {
        let daemon = try DaemonProcess(cameras: ["replay:\(lfw)/Aaron_Eckhart?fps=5"])
        let raw = try RawConnection(daemon.socket)
        raw.send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"camera.list\"}\n")
        guard case .array(let list)? = raw.read()?["result"], let camera = list.first else { return XCTFail("camera.list gave no array") }
        XCTAssertEqual(camera["virtual"], true)
        XCTAssertEqual(camera["ir"], false)
        XCTAssertNil(camera["sibling"], "no sibling: the field is absent")
        XCTAssertEqual(camera["id"], "replay0")
    }
}

/// face_camera= / finger_camera= as the config file gives them.
final class CameraChoiceConfigTests: XCTestCase {
    func testRolesAndNamesAreParsedPerModality() throws {
        var c = DaemonConfiguration()
        try c.apply(key: "face_camera", value: "IR", appendLists: false)
        try c.apply(key: "finger_camera", value: "/dev/v4l/by-id/usb-Logitech-video-index0", appendLists: false)
        XCTAssertEqual(c.cameraChoices[.face], .infrared)
        XCTAssertEqual(c.cameraChoices[.finger], .named("/dev/v4l/by-id/usb-Logitech-video-index0"))
        try c.apply(key: "finger_camera", value: "rgb", appendLists: false)
        XCTAssertEqual(c.cameraChoices[.finger], .colour)
        XCTAssertThrowsError(try c.apply(key: "face_camera", value: "", appendLists: false)) { error in
            XCTAssertTrue((error as? ConfigError)?.description.contains("face_camera") ?? false, "\(error)")
        }
        XCTAssertTrue(DaemonConfiguration.keys.contains("face_camera") && DaemonConfiguration.keys.contains("finger_camera"))
    }

    /// camera_pair= repeats (one pair per line); a malformed line or a camera in two pairs stops
    /// the start with the file, line and key.
    func testCameraPairsRepeatAndABadOneIsRefusedWithFileAndLine() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pair-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("biometricd.conf").path
        try "camera_pair = rgb=/dev/video0 ir=/dev/video2\ncamera_pair = ir=/dev/video6 rgb=/dev/video4\n".write(toFile: file, atomically: true, encoding: .utf8)
        var c = DaemonConfiguration()
        try c.load(file: file)
        XCTAssertEqual(c.cameraPairs, [CameraPair(colour: "/dev/video0", infrared: "/dev/video2"), CameraPair(colour: "/dev/video4", infrared: "/dev/video6")])
        for (text, reason) in [("camera_pair = /dev/video0:/dev/video2\n", "is not rgb=<camera> or ir=<camera>"),
                               ("camera_pair = rgb=/dev/video0 ir=/dev/video2\ncamera_pair = rgb=/dev/video2 ir=/dev/video4\n", "already in another pair")] {
            try text.write(toFile: file, atomically: true, encoding: .utf8)
            var bad = DaemonConfiguration()
            XCTAssertThrowsError(try bad.load(file: file)) { error in
                let e = error as? ConfigError
                XCTAssertEqual(e?.key, "camera_pair")
                XCTAssertEqual(e?.line, text.split(separator: "\n").count)
                XCTAssertTrue(e?.description.contains(reason) ?? false, "\(error)")
            }
        }
        XCTAssertTrue(DaemonConfiguration.keys.contains("camera_pair"))
    }
}
