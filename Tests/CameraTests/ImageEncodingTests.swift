import BiometricCore
@testable import BiometricCamera
import Foundation
import XCTest

final class ImageEncodingTests: XCTestCase {
    /// A frame with a gradient in its planes (colour when `colour`).
    func frame(width: Int = 64, height: Int = 48, colour: Bool) -> Frame {
        let pool = PixelBufferPool()
        let grey = pool.buffer(count: width * height)
        for i in 0..<width * height { grey.pointer[i] = UInt8(i % 251) }
        var bgr: PixelBuffer?
        if colour {
            let b = pool.buffer(count: width * height * 3)
            for i in 0..<width * height * 3 { b.pointer[i] = UInt8((i * 7) % 256) }
            bgr = b
        }
        return Frame(width: width, height: height, grey: grey, bgr: bgr, timestampNs: 1, sequence: 1, isInfrared: !colour)
    }

    func testPNGOfAFrameDecodesToTheSamePixels() throws {
        for colour in [false, true] {
            let original = frame(colour: colour)
            let png = try original.encoded(as: .png)
            XCTAssertEqual(Array(png.prefix(4)), [0x89, 0x50, 0x4E, 0x47])
            let decoded = try Frame(encoded: png, maxPixels: 0)
            XCTAssertEqual(decoded.width, original.width)
            XCTAssertEqual(decoded.bgr == nil, !colour, "a grey frame is exported grey, a colour frame in colour")
            if let b = decoded.bgr, let o = original.bgr {
                XCTAssertEqual(Array(b.bytes), Array(o.bytes), "PNG is lossless")
            } else {
                XCTAssertEqual(Array(decoded.grey.bytes), Array(original.grey.bytes), "PNG is lossless")
            }
        }
    }

    func testJPEGOfAFrameDecodes() throws {
        let jpeg = try frame(colour: true).encoded(as: .jpeg(quality: 90))
        XCTAssertEqual(Array(jpeg.prefix(2)), [0xFF, 0xD8])
        XCTAssertEqual(try Frame(encoded: jpeg, maxPixels: 0).height, 48)
    }

    func testBadInputThrowsCImagingsMessage() {
        var pixel: UInt8 = 0
        XCTAssertThrowsError(try encodeImage(&pixel, width: 1, height: 1, channels: 2, as: .png)) { error in
            XCTAssertEqual((error as? ImageEncodeError)?.description, "bad image for PNG")
        }
        XCTAssertThrowsError(try encodeImage(&pixel, width: 1, height: 1, channels: 1, as: .jpeg(quality: 0))) { error in
            XCTAssertEqual((error as? ImageEncodeError)?.description, "bad image for JPEG")
        }
    }
}
