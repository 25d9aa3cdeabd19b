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

    /// Uploaded images are sized from their header before any pixel is decoded; a format whose
    /// header is not read (JPEG 2000, EXR, GIF...) is refused, not decoded and measured afterwards.
    func testImageBombsAreRefusedFromTheHeader() {
        func refusal(_ bytes: [UInt8]) -> String? {
            do {
                _ = try Frame(encoded: Data(bytes), maxPixels: 4096 * 4096)
                return nil
            } catch {
                return error.description
            }
        }
        // A lossless WebP declaring 16383 × 16384 (14-bit sizes minus one in the VP8L header).
        var webp: [UInt8] = Array("RIFF".utf8) + [0x20, 0, 0, 0] + Array("WEBPVP8L".utf8) + [0x14, 0, 0, 0, 0x2F]
        webp += [0xFE, 0xFF, 0xFF, 0x0F] + [UInt8](repeating: 0, count: 16)
        XCTAssertEqual(refusal(webp)?.contains("16383x16384, larger than allowed"), true, refusal(webp) ?? "decoded")
        // A PNG whose IHDR says 30000 × 30000.
        var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + Array("IHDR".utf8)
        png += [0, 0, 0x75, 0x30, 0, 0, 0x75, 0x30, 8, 0, 0, 0, 0, 0, 0, 0, 0]
        XCTAssertEqual(refusal(png)?.contains("30000x30000, larger than allowed"), true, refusal(png) ?? "decoded")
        // A binary PGM that claims 30000 × 30000.
        XCTAssertEqual(refusal(Array("P5 30000 30000 255\n".utf8) + [0, 0, 0])?.contains("larger than allowed"), true)
        // A JPEG whose SOF0 says 20000 × 20000.
        let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x11, 0x08, 0x4E, 0x20, 0x4E, 0x20, 0x03] + [UInt8](repeating: 0, count: 12)
        XCTAssertEqual(refusal(jpeg)?.contains("20000x20000"), true, refusal(jpeg) ?? "decoded")
        // Unknown bytes are not handed to any decoder.
        XCTAssertEqual(refusal(Array("GIF89a".utf8) + [UInt8](repeating: 1, count: 40))?.contains("format not accepted"), true)
    }
}
