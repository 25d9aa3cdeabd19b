import BiometricClient
import BiometricProtocol
import Foundation
import XCTest

/// Camera sessions: one at a time, cancel, disconnect, a camera that ends mid-session.
final class SessionTests: XCTestCase {
    var daemon: DaemonProcess!
    var singleImage = ""

    override func setUpWithError() throws {
        // A folder with one photo, played once: the camera is "lost" after its only frame.
        singleImage = "/tmp/bmd-one-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: singleImage, withIntermediateDirectories: true)
        let photo = try XCTUnwrap(FileManager.default.contentsOfDirectory(atPath: lfw + "/Aaron_Eckhart").first)
        try FileManager.default.copyItem(atPath: lfw + "/Aaron_Eckhart/" + photo, toPath: singleImage + "/only.jpg")
        daemon = try DaemonProcess(cameras: ["replay:\(lfw)/Aaron_Eckhart?fps=4&loop=true", "replay:\(singleImage)?fps=10"])
    }

    override func tearDown() {
        daemon = nil
        try? FileManager.default.removeItem(atPath: singleImage)
    }

    private func busy(_ id: String) throws -> Bool {
        let cameras: [CameraInfo] = try daemon.client().call(Method.cameraList)
        return cameras.first { $0.id == id }?.busy ?? false
    }

    private func waitFor(_ condition: () throws -> Bool, timeout: Double = 5) throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try condition() { return true }
            usleep(20_000)
        }
        return false
    }

    func testSecondSessionGetsBusyAndCancelFreesTheCamera() throws {
        let a = try RawConnection(daemon.socket)
        // 40 warm-up frames at 4 fps: a 10 s session, unless canceled.
        a.send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"camera.snapshot\",\"params\":{\"camera\":\"replay0\",\"warmup_frames\":40,\"timeout_ms\":30000}}\n")
        XCTAssertTrue(try waitFor { try busy("replay0") })
        let status: DaemonStatus = try daemon.client().call(Method.daemonStatus)
        XCTAssertEqual(status.activeSessions, 1)

        let e = rpcError { let _: SnapshotResult = try daemon.client().call(Method.cameraSnapshot, SnapshotParams(camera: "replay0")) }
        XCTAssertEqual(e?.code, 1005)
        XCTAssertEqual(e?.reason, "busy")

        a.send("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session.cancel\",\"params\":{\"request\":1}}\n")
        var replies: [JSONValue] = []
        for _ in 0..<2 { if let r = a.read() { replies.append(r) } }
        XCTAssertEqual(replies.first { $0["id"] == 2 }?["result"]?["canceled"], true)
        XCTAssertEqual(replies.first { $0["id"] == 1 }?["error"]?["code"], 1006)
        XCTAssertEqual(replies.first { $0["id"] == 1 }?["error"]?["data"]?["reason"], "canceled")
        XCTAssertTrue(try waitFor { try !busy("replay0") }, "the camera is released after cancel")
        let snap: SnapshotResult = try daemon.client().call(Method.cameraSnapshot, SnapshotParams(camera: "replay0", warmupFrames: 0))
        XCTAssertEqual(snap.width, 250)
    }

    func testDisconnectCancelsTheSession() throws {
        var a: RawConnection? = try RawConnection(daemon.socket)
        a!.send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"camera.snapshot\",\"params\":{\"camera\":\"replay0\",\"warmup_frames\":40,\"timeout_ms\":30000}}\n")
        XCTAssertTrue(try waitFor { try busy("replay0") })
        a = nil  // the client goes away mid-session
        XCTAssertTrue(try waitFor { try !busy("replay0") }, "closing the connection cancels its calls")
        let status: DaemonStatus = try daemon.client().call(Method.daemonStatus)
        XCTAssertEqual(status.activeSessions, 0)
    }

    func testCameraLostMidSessionIsCameraErrorAndTheDaemonCarriesOn() throws {
        let e = rpcError {
            let _: SnapshotResult = try daemon.client().call(Method.cameraSnapshot, SnapshotParams(camera: "replay1", warmupFrames: 3))
        }
        XCTAssertEqual(e?.code, 2002)
        XCTAssertEqual(e?.reason, "camera_error")
        XCTAssertTrue(e?.message.contains("end of replay") ?? false, e?.message ?? "")
        let status: DaemonStatus = try daemon.client().call(Method.daemonStatus)
        XCTAssertEqual(status.activeSessions, 0)
        XCTAssertFalse(try busy("replay1"))
        // The replay starts over for the next session (like re-opening a device).
        let ok: SnapshotResult = try daemon.client().call(Method.cameraSnapshot, SnapshotParams(camera: "replay1", warmupFrames: 0))
        XCTAssertEqual(ok.camera, "replay1")
    }

    func testSnapshotTimeout() throws {
        let e = rpcError {
            let _: SnapshotResult = try daemon.client().call(
                Method.cameraSnapshot, SnapshotParams(camera: "replay0", warmupFrames: 30, timeoutMs: 300))
        }
        XCTAssertEqual(e?.code, 1007)
        XCTAssertTrue(try waitFor { try !busy("replay0") })
    }
}
