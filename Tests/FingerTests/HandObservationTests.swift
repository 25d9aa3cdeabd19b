@testable import BiometricFinger
import BiometricProtocol
import CFingerVision
import XCTest

/// Which side of which hand faces the camera, from the landmarks (pure geometry).
final class HandObservationTests: XCTestCase {
    /// An upright open hand seen from the camera; `indexOnRight`: the index base lies right of the
    /// little finger's (a right palm, or the back of a left hand).
    func hand(indexOnRight: Bool, handedness: Double) -> HandObservation {
        var x = [Double](repeating: 500, count: 21), y = [Double](repeating: 0, count: 21)
        let sign = indexOnRight ? 1.0 : -1.0
        y[0] = 800 // wrist
        for (digit, base) in [(1, 0.9), (2, 0.45), (3, 0.0), (4, -0.45), (5, -0.9)] {
            // digit 1 = thumb … 5 = little: bases across the palm, joints up the fingers
            let first = 4 * (digit - 1) + 1
            for j in 0..<4 {
                x[first + j] = 500 + sign * base * 120
                y[first + j] = 600 - Double(j) * 60
            }
        }
        return HandObservation(x: x, y: y, presence: 0.99, handedness: handedness)
    }

    func testARightPalmHasItsIndexOnTheImagesRight() {
        XCTAssertTrue(hand(indexOnRight: true, handedness: 0.9).showsPalm(of: .right))
        XCTAssertFalse(hand(indexOnRight: true, handedness: 0.9).showsPalm(of: .left), "the back of a left hand")
        XCTAssertTrue(hand(indexOnRight: false, handedness: 0.1).showsPalm(of: .left))
        XCTAssertFalse(hand(indexOnRight: false, handedness: 0.1).showsPalm(of: .right), "the back of a right hand")
    }

    func testAConfidentHandednessForTheOtherHandRefusesThePalm() {
        // Index on the right, but the model is sure it sees a left hand: the back of a left hand.
        XCTAssertFalse(hand(indexOnRight: true, handedness: 0.05).showsPalm(of: .right))
        // Unsure either way: the geometry decides.
        XCTAssertTrue(hand(indexOnRight: true, handedness: 0.4).showsPalm(of: .right))
    }

    func testSeedsRunFromTheLastJointToTheTip() {
        let h = hand(indexOnRight: true, handedness: 0.9)
        let seed = h.seed(.index)
        let (tip, joint) = HandObservation.tipAndJoint(.index)
        XCTAssertEqual([tip, joint], [8, 7])
        XCTAssertEqual(Double(seed.tip_x), h.x[8], accuracy: 1e-6)
        XCTAssertEqual(Double(seed.base_y), h.y[7], accuracy: 1e-6)
        XCTAssertEqual(Double(seed.width), 0.9 * 60, accuracy: 1e-3)
        XCTAssertEqual(HandObservation.tipAndJoint(.thumb).tip, 4)
        XCTAssertEqual(HandObservation.tipAndJoint(.little).tip, 20)
    }
}
