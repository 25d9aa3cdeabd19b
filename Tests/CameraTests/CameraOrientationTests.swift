import BiometricCore
@testable import BiometricCamera
import Foundation
import XCTest

/// rotate= / mirror= per camera: parsed from the spec, applied by one OpenCV pass per plane.
final class CameraOrientationTests: XCTestCase {
    func testSpecsCarryTheOrientation() throws {
        XCTAssertEqual(try CameraSpec(parsing: "v4l2:/dev/video2?rotate=90&mirror=true"),
                       .v4l2(path: "/dev/video2", orientation: CameraOrientation(rotate: 90, mirror: true)))
        XCTAssertEqual(try CameraSpec(parsing: "v4l2:/dev/video2?rotate=90&mirror=true").description, "v4l2:/dev/video2?rotate=90&mirror=true")
        XCTAssertEqual(try CameraSpec(parsing: "v4l2:/dev/video0").description, "v4l2:/dev/video0", "upright specs read as before")
        XCTAssertEqual(try CameraSpec(parsing: "replay:/x?fps=5&rotate=270").orientation, CameraOrientation(rotate: 270, mirror: false))
        XCTAssertEqual(try CameraSpec(parsing: "replay:/x?fps=5&rotate=180").description, "replay:/x?fps=5&loop=false&rotate=180")
        for bad in ["v4l2:/dev/video0?rotate=45", "v4l2:/dev/video0?mirror=yes", "v4l2:/dev/video0?fps=5", "replay:/x?rotate=-90"] {
            XCTAssertThrowsError(try CameraSpec(parsing: bad), bad)
        }
    }

    /// A 3x2 frame with distinct pixels: where each one lands says the turn is right.
    func testRotationAndMirrorMovePixelsWhereAnUprightCameraWouldSeeThem() throws {
        let pool = PixelBufferPool()
        // 1 2 3
        // 4 5 6
        let grey = pool.buffer(count: 6)
        for i in 0..<6 { grey.pointer[i] = UInt8(i + 1) }
        let bgr = pool.buffer(count: 18)
        for i in 0..<18 { bgr.pointer[i] = UInt8(i / 3 + 1) * 10 + UInt8(i % 3) }
        let frame = Frame(width: 3, height: 2, grey: grey, bgr: bgr, timestampNs: 7, sequence: 3, isInfrared: false)
        /// The grey plane's bytes, copied while the turned frame is alive.
        func turned(_ rotate: Int, _ mirror: Bool) throws -> [UInt8] {
            let f = try XCTUnwrap(orient(frame, CameraOrientation(rotate: rotate, mirror: mirror), greyPool: PixelBufferPool(), bgrPool: PixelBufferPool()))
            return withExtendedLifetime(f) { Array(f.grey.bytes) }
        }
        let r90 = try XCTUnwrap(orient(frame, CameraOrientation(rotate: 90, mirror: false), greyPool: PixelBufferPool(), bgrPool: PixelBufferPool()))
        XCTAssertEqual([r90.width, r90.height], [2, 3])
        XCTAssertEqual(Array(r90.grey.bytes), [4, 1, 5, 2, 6, 3], "clockwise: the left column becomes the top row")
        XCTAssertEqual(Array(r90.bgr!.bytes.prefix(3)), [40, 41, 42], "the colour plane turns with it")
        XCTAssertEqual(try turned(180, false), [6, 5, 4, 3, 2, 1])
        XCTAssertEqual(try turned(270, false), [3, 6, 2, 5, 1, 4])
        XCTAssertEqual(try turned(0, true), [3, 2, 1, 6, 5, 4])
        XCTAssertEqual(try turned(90, true), [1, 4, 2, 5, 3, 6], "rotate, then mirror")
        XCTAssertEqual(r90.timestampNs, 7)
        XCTAssertEqual(r90.sequence, 3)
    }

    /// The cost of turning a 640x480 colour frame (grey + BGR planes), per frame.
    func testCostPerFrame() throws {
        let pool = PixelBufferPool()
        let frame = Frame(width: 640, height: 480, grey: pool.buffer(count: 640 * 480), bgr: pool.buffer(count: 640 * 480 * 3),
                          timestampNs: 0, sequence: 0, isInfrared: false)
        let greyPool = PixelBufferPool(), bgrPool = PixelBufferPool()
        // (Its cost is a benchmark's business, not a test's: no wall-clock assertion here.)
        for rotate in [90, 180] {
            for _ in 0..<20 { XCTAssertNotNil(orient(frame, CameraOrientation(rotate: rotate, mirror: false), greyPool: greyPool, bgrPool: bgrPool)) }
        }
        XCTAssertGreaterThan(greyPool.idleCount, 0, "planes come back to the source's pool: no allocation per frame")
    }
}
