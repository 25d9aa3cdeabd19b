@testable import BiometricFinger
import Foundation
import XCTest

final class PrintExportTests: XCTestCase {
    func print() throws -> FingerprintImage {
        let width = 96, height = 128
        var pixels = [UInt8](repeating: 255, count: width * height)
        for y in 0..<height { for x in 0..<width where (x + y / 3) % 9 < 4 { pixels[y * width + x] = 40 } }
        return try FingerprintImage(width: width, height: height, pixels: pixels, ppi: 500)
    }

    func testPNGExportIsLossless() throws {
        let image = try print()
        let png = try image.encoded(as: .png)
        XCTAssertEqual(Array(png.prefix(4)), [0x89, 0x50, 0x4E, 0x47])
        let decoded = try FingerprintExtractor.decodeImage([UInt8](png), ppi: 500)
        XCTAssertEqual(decoded.pixels, image.pixels)
    }

    func testJPEGExportIsQuality95() throws {
        let image = try print()
        let jpeg = try image.encoded(as: .jpeg)
        XCTAssertEqual(Array(jpeg.prefix(2)), [0xFF, 0xD8])
        XCTAssertEqual(FingerprintImage.jpegQuality, 95)
        let decoded = try FingerprintExtractor.decodeImage([UInt8](jpeg), ppi: 500)
        XCTAssertEqual(decoded.width, image.width)
        XCTAssertEqual(decoded.height, image.height)
    }
}
