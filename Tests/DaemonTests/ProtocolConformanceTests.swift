import BiometricClient
import BiometricProtocol
import CImaging
import Foundation
import XCTest

/// The wire protocol of SPEC §3, against a running daemon.
final class ProtocolConformanceTests: XCTestCase {
    var daemon: DaemonProcess!

    override func setUpWithError() throws {
        daemon = try DaemonProcess(cameras: ["replay:\(lfw)/Aaron_Eckhart?fps=20&loop=true"])
    }

    override func tearDown() {
        daemon = nil
    }

    func testStatus() throws {
        let status: DaemonStatus = try daemon.client().call(Method.daemonStatus)
        XCTAssertEqual(status.version, "0.1.0")
        XCTAssertEqual(status.cameras, ["replay0"])
        XCTAssertEqual(status.models.missing.sorted(),
                       ["dlib_face_recognition_resnet_model_v1.dat", "landmarks_68_pfld.onnx", "shape_predictor_5_face_landmarks.dat"],
                       "the daemon names the models it lacks")
        XCTAssertEqual(status.users, 0)
        XCTAssertEqual(status.activeSessions, 0)
        XCTAssertGreaterThanOrEqual(status.clients, 1)
    }

    /// `modalities` leaves a modality out: nothing of it is loaded, its calls say why, the rest works.
    func testAModalityLeftOutAnswersNotInitialized() throws {
        let faceOnly = try DaemonProcess(cameras: ["replay:\(lfw)/Aaron_Eckhart?fps=20&loop=true"], extraArguments: ["--set", "modalities=face"])
        let e = rpcError { let _: FingerCaptureResult = try faceOnly.client().call(Method.fingerCapture, FingerCaptureRequest(camera: "replay0")) }
        XCTAssertEqual(e?.code, 1008)
        XCTAssertEqual(e?.data?["modality"], "finger")
        let fingerOnly = try DaemonProcess(cameras: ["replay:\(lfw)/Aaron_Eckhart?fps=20&loop=true"], extraArguments: ["--set", "modalities=finger"])
        let f = rpcError { let _: FaceVerifyResult = try fingerOnly.client().call(Method.faceVerify, FaceVerifyParams(user: "ann", camera: "replay0")) }
        XCTAssertEqual(f?.code, 1008)
        XCTAssertEqual(f?.data?["modality"], "face")
        let status: DaemonStatus = try fingerOnly.client().call(Method.daemonStatus)
        XCTAssertEqual(status.cameras, ["replay0"], "the daemon itself works")
        XCTAssertThrowsError(try DaemonProcess(cameras: [], extraArguments: ["--set", "modalities=iris"]), "an unknown modality is refused at start")
    }

    func testTheFaceGalleryIsReportedOnceLoaded() throws {
        var status: DaemonStatus = try daemon.client().call(Method.daemonStatus)
        for _ in 0..<50 where status.faceGallery?.state != "ready" {
            usleep(100_000)
            status = try daemon.client().call(Method.daemonStatus)
        }
        XCTAssertEqual(status.faceGallery, GalleryStatus(state: "ready", templates: 0, loaded: 0, total: 0, refreshing: false))
    }

    func testEachStandardError() throws {
        let c = try RawConnection(daemon.socket)
        c.send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\n")
        XCTAssertEqual(c.read()?["error"]?["code"], -32700)
        c.send("{\"jsonrpc\":\"2.0\",\"id\":2}\n")
        XCTAssertEqual(c.read()?["error"]?["code"], -32600)
        c.send("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"face.teleport\"}\n")
        let notFound = c.read()
        XCTAssertEqual(notFound?["error"]?["code"], -32601)
        XCTAssertEqual(notFound?["id"], 3)
        c.send("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"user.get\",\"params\":{\"user\":[1]}}\n")
        let invalid = c.read()
        XCTAssertEqual(invalid?["error"]?["code"], -32602)
        XCTAssertEqual(invalid?["error"]?["data"]?["field"], "user")
        c.send(Data([0x7B, 0xC3, 0x28, 0x7D, 0x0A]))  // invalid UTF-8
        XCTAssertEqual(c.read()?["error"]?["code"], -32700)
        // After all that, the same connection still works.
        c.send("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"daemon.status\"}\n")
        XCTAssertEqual(c.read()?["result"]?["cameras"], ["replay0"])
    }

    func testBatchAndNotifications() throws {
        let c = try RawConnection(daemon.socket)
        c.send("""
            [{"jsonrpc":"2.0","id":"a","method":"daemon.status"},{"jsonrpc":"2.0","method":"daemon.status"},\
            {"jsonrpc":"2.0","id":"b","method":"nope"},7]\n
            """)
        let replies = try XCTUnwrap(c.read()?.arrayValue)
        XCTAssertEqual(replies.count, 3, "the notification gets no reply")
        XCTAssertNotNil(replies.first { $0["id"] == "a" }?["result"])
        XCTAssertEqual(replies.first { $0["id"] == "b" }?["error"]?["code"], -32601)
        XCTAssertEqual(replies.first { $0["id"] == .null }?["error"]?["code"], -32600)
        // A lone notification: nothing comes back, the next reply is for the next request.
        c.send("{\"jsonrpc\":\"2.0\",\"method\":\"daemon.status\"}\n{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"camera.list\"}\n")
        XCTAssertEqual(c.read()?["id"], 9)
        c.send("[{\"jsonrpc\":\"2.0\",\"method\":\"daemon.status\"}]\n{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"camera.list\"}\n")
        XCTAssertEqual(c.read()?["id"], 10, "a batch of notifications gets no reply at all")
    }

    func testOversizedLineIsRefusedAndClosed() throws {
        let c = try RawConnection(daemon.socket)
        let other = try daemon.client()
        c.send(Data(repeating: UInt8(ascii: "x"), count: RPCCodec.maxLineBytes + 100))
        let reply = c.read()
        XCTAssertEqual(reply?["error"]?["code"], -32600)
        XCTAssertTrue(c.closedByPeer(), "the connection is closed after an oversized line")
        let status: DaemonStatus = try other.call(Method.daemonStatus)
        XCTAssertEqual(status.cameras, ["replay0"], "other clients are unaffected")
        // A line just under the limit is read (and is merely invalid JSON).
        let d = try RawConnection(daemon.socket)
        d.send(Data(repeating: UInt8(ascii: " "), count: RPCCodec.maxLineBytes - 10) + Data("{]\n".utf8))
        XCTAssertEqual(d.read()?["error"]?["code"], -32700)
    }

    func testSlowAndDeadClientsDoNotBlockOthers() throws {
        // One client sends half a request and stalls; another floods requests and never reads.
        let stalled = try RawConnection(daemon.socket)
        stalled.send("{\"jsonrpc\":\"2.0\",\"id\":1,\"meth")
        let flooder = try RawConnection(daemon.socket)
        let request = String(repeating: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"camera.list\"}\n", count: 2000)
        DispatchQueue.global().async { flooder.send(request) }
        let client = try daemon.client()
        for _ in 0..<20 {
            let status: DaemonStatus = try client.call(Method.daemonStatus)
            XCTAssertEqual(status.cameras, ["replay0"])
        }
    }

    func testUnknownUserAndInvalidName() throws {
        let client = try daemon.client()
        XCTAssertEqual(rpcError { let _: UserRecord = try client.call(Method.userGet, UserParams(user: "ghost")) }?.code, 1002)
        XCTAssertEqual(rpcError { let _: UserRecord = try client.call(Method.userGet, UserParams(user: "bad\u{1}name")) }?.code, 1001)
        XCTAssertEqual(rpcError { let _: DeleteResult = try client.call(Method.userDelete, UserParams(user: "ghost")) }?.code, 1002)
    }

    func testSnapshotIsADecodablePNG() throws {
        let result: SnapshotResult = try daemon.client().call(Method.cameraSnapshot, SnapshotParams(warmupFrames: 1))
        XCTAssertEqual(result.camera, "replay0")
        let png = try XCTUnwrap(Data(base64Encoded: result.image))
        XCTAssertEqual(Array(png.prefix(8)), [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        var status = CVIS_OK
        let image = png.withUnsafeBytes { cvis_image_decode($0.baseAddress!.assumingMemoryBound(to: UInt8.self), $0.count, 0, &status) }
        XCTAssertEqual(status, CVIS_OK)
        defer { cvis_image_free(image) }
        XCTAssertEqual(cvis_image_width(image), 250)
        XCTAssertEqual(cvis_image_height(image), 250)
        XCTAssertEqual(cvis_image_channels(image), 3)
        // Compare with the source photo: a real frame, not a blank one.
        var grey = [UInt8](repeating: 0, count: 250 * 250)
        XCTAssertEqual(cvis_image_copy(image, &grey, nil), CVIS_OK)
        let source = try XCTUnwrap(FileManager.default.contentsOfDirectory(atPath: lfw + "/Aaron_Eckhart").sorted().first)
        let original = cvis_image_read(lfw + "/Aaron_Eckhart/" + source, 0, &status)
        defer { cvis_image_free(original) }
        var expected = [UInt8](repeating: 0, count: 250 * 250)
        XCTAssertEqual(cvis_image_copy(original, &expected, nil), CVIS_OK)
        XCTAssertEqual(grey, expected, "PNG is lossless: the snapshot is the camera frame")
    }

    func testUnknownCamera() throws {
        let e = rpcError { let _: SnapshotResult = try daemon.client().call(Method.cameraSnapshot, SnapshotParams(camera: "v4l2:/dev/video99")) }
        XCTAssertEqual(e?.code, 2001)
        XCTAssertEqual(e?.reason, "no_camera")
        XCTAssertNotNil(e?.hint)
    }

    func testCameraWatchIsCanceledBySessionCancel() throws {
        let c = try RawConnection(daemon.socket)
        c.send("{\"jsonrpc\":\"2.0\",\"id\":\"w\",\"method\":\"camera.watch\"}\n")
        XCTAssertEqual(c.read()?["result"]?["cameras"]?.arrayValue?.count, 1)
        c.send("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session.cancel\",\"params\":{\"request\":\"w\"}}\n")
        XCTAssertEqual(c.read()?["result"]?["canceled"], true)
        c.send("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session.cancel\",\"params\":{\"request\":\"zzz\"}}\n")
        XCTAssertEqual(c.read()?["error"]?["code"], 1002, "unknown request ids are not_found")
        c.send("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"session.cancel\",\"params\":{\"request\":3}}\n")
        XCTAssertEqual(c.read()?["result"]?["canceled"], false, "a finished request is no longer cancelable")
    }

    func testSIGTERMStopsCleanly() throws {
        XCTAssertEqual(daemon.stop(), 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: daemon.socket), "the socket file is removed")
        XCTAssertTrue(daemon.log.contains("stopped"))
    }
}
