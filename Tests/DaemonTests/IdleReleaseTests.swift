@testable import BiometricDaemon
import Synchronization
import XCTest

/// The idle release the finger service frees its learned networks with: once per quiet spell,
/// however many calls end, and again after new work.
final class IdleReleaseTests: XCTestCase {
    func testOneReleaseForABurstOfWorkAndAnotherAfterNewWork() {
        let release = IdleRelease(after: 2)
        let count = Mutex(0)
        let first = expectation(description: "released after the burst")
        for _ in 0..<50 {
            release.workEnded {
                if count.withLock({ $0 += 1; return $0 }) == 1 { first.fulfill() }
            }
        }
        wait(for: [first], timeout: 30)
        let second = expectation(description: "released after new work")
        release.workEnded {
            if count.withLock({ $0 += 1; return $0 }) == 2 { second.fulfill() }
        }
        wait(for: [second], timeout: 30)
        XCTAssertEqual(count.withLock { $0 }, 2, "one release per quiet spell, not one per call")
    }
}
