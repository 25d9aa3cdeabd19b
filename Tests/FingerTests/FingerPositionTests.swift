import XCTest
@testable import BiometricFinger

final class FingerPositionTests: XCTestCase {
    func testISOCodesAndNames() {
        XCTAssertEqual(FingerPosition(.right, .thumb).isoCode, 1)
        XCTAssertEqual(FingerPosition(.right, .little).isoCode, 5)
        XCTAssertEqual(FingerPosition(.left, .thumb).isoCode, 6)
        XCTAssertEqual(FingerPosition(.left, .index).isoCode, 7)
        for code in UInt8(1)...10 {
            let position = FingerPosition(isoCode: code)!
            XCTAssertEqual(position.isoCode, code)
            XCTAssertEqual(FingerPosition(name: position.name), position)
        }
        XCTAssertNil(FingerPosition(isoCode: 0))
        XCTAssertNil(FingerPosition(isoCode: 11))
        XCTAssertEqual(FingerPosition(.left, .ring).name, "left_ring")
        XCTAssertNil(FingerPosition(name: "left"))
        XCTAssertNil(FingerPosition(name: "middle_index"))
    }
}
