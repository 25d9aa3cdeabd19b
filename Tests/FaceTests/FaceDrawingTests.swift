import BiometricCamera
import BiometricCore
@testable import BiometricFace
import Foundation
import XCTest

final class FaceDrawingTests: XCTestCase {
    func frame(colour: Bool) -> Frame {
        let pool = PixelBufferPool()
        let grey = pool.buffer(count: 400 * 300)
        grey.pointer.initialize(repeating: 0, count: 400 * 300)
        var bgr: PixelBuffer?
        if colour {
            let b = pool.buffer(count: 400 * 300 * 3)
            b.pointer.initialize(repeating: 0, count: 400 * 300 * 3)
            bgr = b
        }
        return Frame(width: 400, height: 300, grey: grey, bgr: bgr, timestampNs: 1, sequence: 1, isInfrared: !colour)
    }

    func testDrawsTheBoxAndLandmarksIntoTheColourPlane() {
        var observation = FaceObservation(frameWidth: 400, frameHeight: 300, timestampNs: 1, faceCount: 1, detected: true)
        let colour = frame(colour: true)
        XCTAssertFalse(observation.draw(on: colour), "no face box: nothing to draw")
        XCTAssertTrue(colour.bgr!.bytes.allSatisfy { $0 == 0 })

        observation.box = FaceBox(x: 100, y: 50, width: 200, height: 200)
        XCTAssertTrue(observation.draw(on: colour))
        let boxOnly = colour.bgr!.bytes.filter { $0 != 0 }.count
        XCTAssertGreaterThan(boxOnly, 0)
        XCTAssertTrue(colour.grey.bytes.allSatisfy { $0 == 0 }, "only the colour plane is drawn on")

        observation.landmarks = syntheticLandmarks(x: 100, y: 50, size: 200)
        let withLandmarks = frame(colour: true)
        XCTAssertTrue(observation.draw(on: withLandmarks))
        XCTAssertGreaterThan(withLandmarks.bgr!.bytes.filter { $0 != 0 }.count, boxOnly)

        XCTAssertFalse(observation.draw(on: frame(colour: false)), "an IR frame has no colour plane")
    }
}
