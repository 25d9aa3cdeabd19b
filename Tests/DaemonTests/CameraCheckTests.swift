import BiometricClient
import BiometricProtocol
import Foundation
import XCTest

/// camera.check (authctl doctor's camera check) through the socket: a lit camera and one fed
/// black frames, told apart by their brightness.
final class CameraCheckTests: XCTestCase {
    func testALitCameraAndABlackOneAreToldApart() throws {
        let black = "/tmp/bmd-black-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: black, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: black) }
        // A black grey frame (PGM): what an IR camera gives when its emitter is not lit.
        FileManager.default.createFile(atPath: black + "/black.pgm", contents: Data("P5 320 240 255\n".utf8) + Data(count: 320 * 240))
        let daemon = try DaemonProcess(cameras: ["replay:\(lfw)/Aaron_Eckhart?fps=20&loop=true", "replay:\(black)?fps=20&loop=true"])
        let client = try daemon.client()
        let lit: CameraCheckResult = try client.call(Method.cameraCheck, CameraCheckParams(camera: "replay0", frames: 3, warmupFrames: 1))
        XCTAssertEqual(lit.camera, "replay0")
        XCTAssertEqual(lit.brightness.count, 3)
        XCTAssertEqual([lit.width, lit.height], [250, 250])
        XCTAssertFalse(lit.ir)
        XCTAssertTrue(lit.brightness.allSatisfy { $0 > Doctor.darkBrightness }, "\(lit.brightness)")
        let dark: CameraCheckResult = try client.call(Method.cameraCheck, CameraCheckParams(camera: "replay1", frames: 2, warmupFrames: 0))
        XCTAssertTrue(dark.ir, "grey frames")
        XCTAssertEqual(dark.brightness, [0, 0])
        let cameras: [CameraInfo] = try client.call(Method.cameraList)
        let findings = Doctor.camera(try XCTUnwrap(cameras.first { $0.id == "replay1" }), measure: .measured(dark), emitter: nil)
        XCTAssertEqual(findings.map(\.code), [Doctor.Code.cameraDark], "a replay is virtual: dark, no emitter to blame")
        let bad = rpcError { let _: CameraCheckResult = try client.call(Method.cameraCheck, CameraCheckParams(camera: "replay0", frames: 31)) }
        XCTAssertEqual(bad?.code, -32602)
        XCTAssertEqual(bad?.data?["field"], "frames")
        let missing = rpcError { let _: CameraCheckResult = try client.call(Method.cameraCheck, CameraCheckParams(camera: "video99")) }
        XCTAssertNotNil(missing)
    }
}
