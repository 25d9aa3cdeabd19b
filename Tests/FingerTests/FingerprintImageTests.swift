import XCTest
@testable import BiometricFinger

final class FingerprintImageTests: XCTestCase {
    func testRefusesBadGeometry() {
        XCTAssertThrowsError(try FingerprintImage(width: 10, height: 300, pixels: [], ppi: 500)) {
            XCTAssertEqual($0 as? FingerprintImage.Invalid, .size(width: 10, height: 300))
        }
        XCTAssertThrowsError(try FingerprintImage(width: 100, height: 100, pixels: [UInt8](repeating: 0, count: 100 * 100), ppi: 100)) {
            XCTAssertEqual($0 as? FingerprintImage.Invalid, .resolution(100))
        }
        XCTAssertThrowsError(try FingerprintImage(width: 100, height: 100, pixels: [UInt8](repeating: 0, count: 99), ppi: 500)) {
            XCTAssertEqual($0 as? FingerprintImage.Invalid, .bufferLength(expected: 10_000, got: 99))
        }
        XCTAssertNoThrow(try FingerprintImage(width: 100, height: 100, pixels: [UInt8](repeating: 0, count: 100 * 100), ppi: 569))
    }
}
