@testable import BiometricDaemon
import BiometricProtocol
import XCTest

/// When a session's preview is due: on a grid of 1/fps of frame time.
final class PreviewScheduleTests: XCTestCase {
    /// Frames at `frameFps` for `seconds`, with `jitterNs` of lateness on every other frame:
    /// how many previews are taken.
    private func previews(fps: Int, frameFps: Double, seconds: Double, jitterNs: UInt64 = 0) -> Int {
        var schedule = PreviewSchedule(PreviewRequest(fps: fps))
        var taken = 0
        let start: UInt64 = 5_000_000_000
        for i in 0..<Int(frameFps * seconds) {
            let now = start + UInt64(Double(i) / frameFps * 1e9) + (i % 2 == 1 ? jitterNs : 0)
            if schedule.isDue(at: now) {
                schedule.taken(at: now)
                taken += 1
            }
        }
        return taken
    }

    func testTheRateIsTheAskedOneWhateverTheFrameRate() {
        XCTAssertEqual(previews(fps: 5, frameFps: 30, seconds: 10), 50)
        XCTAssertEqual(previews(fps: 5, frameFps: 30, seconds: 10, jitterNs: 9_000_000), 50)
        // 7 does not divide 30: still 7 a second on average, not the 6 a "since the last one" rule gives.
        XCTAssertEqual(previews(fps: 7, frameFps: 30, seconds: 10), 70, accuracy: 1)
        XCTAssertEqual(previews(fps: 15, frameFps: 30, seconds: 4), 60)
        // A camera slower than the preview: every frame, never a burst.
        XCTAssertEqual(previews(fps: 15, frameFps: 10, seconds: 3), 30)
    }

    func testAfterAStallItRestartsFromNowInsteadOfBursting() {
        var schedule = PreviewSchedule(PreviewRequest(fps: 5))
        XCTAssertTrue(schedule.isDue(at: 0))
        schedule.taken(at: 0)
        XCTAssertFalse(schedule.isDue(at: 199_999_999))
        XCTAssertTrue(schedule.isDue(at: 3_000_000_000))
        schedule.taken(at: 3_000_000_000)
        XCTAssertFalse(schedule.isDue(at: 3_100_000_000), "no catch-up burst after 3 s without frames")
        XCTAssertTrue(schedule.isDue(at: 3_200_000_000))
        XCTAssertEqual(schedule.width, 320)
    }
}
