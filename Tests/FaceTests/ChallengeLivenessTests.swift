@testable import BiometricFace
import XCTest

final class ChallengeLivenessTests: XCTestCase {
    let ms: UInt64 = 1_000_000
    func pose(_ yaw: Double, _ pitch: Double = 0) -> HeadPose { HeadPose(yaw: yaw, pitch: pitch, roll: 0) }

    /// Feeds (yaw, pitch) samples 100 ms apart from a rest pose of yaw 4°.
    func run(_ sequence: [ChallengeLiveness.Action], _ samples: [(Double, Double)], timeoutMs: Int = 5000) -> ChallengeLiveness.State {
        var c = ChallengeLiveness(sequence: sequence, stepTimeoutMs: timeoutMs)
        c.start(rest: pose(4), at: 0)
        var state = c.state
        // Each sample held for three frames (moves are judged on the median of the last three).
        for (i, s) in samples.enumerated() {
            for k in 0..<3 { state = c.observe(pose(s.0, s.1), at: UInt64(i * 3 + k + 1) * 33 * ms) }
        }
        return state
    }

    func testTheAskedMovesPass() {
        XCTAssertEqual(run([.turnLeft, .turnRight], [(4, 0), (10, 0), (17, 0), (9, 0), (3, 0), (-5, 0), (-9, 0)]), .passed)
        XCTAssertEqual(run([.lookUp], [(4, 2), (4, 9), (4, 16)]), .passed)
        // A nod: down past the threshold, then back.
        XCTAssertEqual(run([.nod], [(4, -5), (4, -14), (4, -20), (4, -4)]), .passed)
        XCTAssertEqual(run([.nod], [(4, -5), (4, -14), (4, -20)]), .step(.nod, index: 0), "down but not back yet")
    }

    func testAMoveTheOtherWayFailsAtOnce() {
        guard case .failed = run([.turnLeft], [(4, 0), (-3, 0), (-9, 0)]) else { return XCTFail("a right turn when left was asked") }
        guard case .failed = run([.lookUp], [(4, 0), (4, -13)]) else { return XCTFail("down when up was asked") }
        // Coming back from the previous move is not a wrong move: the step arms only near rest.
        XCTAssertEqual(run([.turnLeft, .turnRight], [(17, 0), (20, 0), (12, 0), (5, 0), (-10, 0)]), .passed)
    }

    func testASingleFrameFlipOfThePoseSolverIsIgnored() {
        var c = ChallengeLiveness(sequence: [.turnLeft], stepTimeoutMs: 5000)
        c.start(rest: pose(4), at: 0)
        for (i, yaw) in [4.0, 4, -20, 5, 4, 30, 5, 4].enumerated() { _ = c.observe(pose(yaw), at: UInt64(i + 1) * 33 * ms) }
        XCTAssertEqual(c.state, .step(.turnLeft, index: 0))
    }

    func testEachMoveHasATimeLimit() {
        guard case .failed(let why) = run([.turnLeft], Array(repeating: (5, 0), count: 25), timeoutMs: 2000) else {
            return XCTFail("no move within the limit")
        }
        XCTAssertTrue(why.contains("2000 ms"), why)
    }

    func testRandomSequencesUseEveryMoveAndNeverRepeatAMove() {
        var seen = Set<ChallengeLiveness.Action>()
        for _ in 0..<200 {
            let s = ChallengeLiveness.random(steps: 3)
            XCTAssertEqual(s.count, 3)
            XCTAssertNotEqual(s[0], s[1])
            XCTAssertNotEqual(s[1], s[2])
            seen.formUnion(s)
        }
        XCTAssertEqual(seen, Set(ChallengeLiveness.Action.allCases))
    }
}
