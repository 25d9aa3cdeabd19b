import BiometricCore
import XCTest

/// One calibration type for distances (face) and similarities (finger): the same FAR gives the
/// same score whichever way is closer.
final class FARCalibrationTests: XCTestCase {
    // FAR 1 at 0.8 / 0.2, 1e-2 at 0.6 / 0.4, 1e-4 at 0.4 / 0.6: mirror images.
    let distance = FARCalibration(.distance, knots: [.init(0.4, -4), .init(0.6, -2), .init(0.8, 0)], source: "test")
    let similarity = FARCalibration(.similarity, knots: [.init(0.2, 0), .init(0.4, -2), .init(0.6, -4)], source: "test")

    func testTheSameFARIsTheSameScoreEitherWay() {
        for v in stride(from: 0.0, through: 1.0, by: 0.01) {
            XCTAssertEqual(distance.score(v), similarity.score(1 - v), accuracy: 1e-9, "at \(v)")
        }
        XCTAssertEqual(distance.score(0.6), 24, "FAR 1 % is 24")
        XCTAssertEqual(similarity.score(0.6), 48, "FAR 0.01 % is 48, the default threshold")
    }

    func testTailsAndCaps() {
        // Closer than the closest knot: the closest segment continues (−1 log10 FAR per 0.1).
        XCTAssertEqual(distance.log10FAR(0.3), -5, accuracy: 1e-9)
        XCTAssertEqual(similarity.log10FAR(0.7), -5, accuracy: 1e-9)
        // Farther than every knot: FAR 1, score 0; the tail goes on until the cap at 100.
        XCTAssertEqual(distance.log10FAR(1.5), 0)
        XCTAssertEqual(similarity.score(0), 0)
        XCTAssertEqual(distance.score(0), 96)
        XCTAssertEqual(similarity.score(1), 96)
        XCTAssertEqual(similarity.score(1.5), 100, "capped")
    }

    func testThresholdValuesReachTheirScore() {
        for score in [12.0, 24, 36, 48, 60] {
            let d = distance.value(forScore: score), s = similarity.value(forScore: score)
            XCTAssertEqual(distance.score(d), score, accuracy: 0.1)
            XCTAssertEqual(similarity.score(s), score, accuracy: 0.1)
            XCTAssertEqual(d, 1 - s, accuracy: 1e-9)
            XCTAssertLessThan(distance.score(d + 0.001), score, "the farthest value that still reaches it")
        }
    }
}
