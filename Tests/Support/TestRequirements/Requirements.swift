import Foundation
import XCTest
import TestRequirements

/// What a test needs from its environment (models, `../shared` data, root, built helpers) and did
/// not find.
///
/// On a developer's machine that is a skip with the fix in its message. Where the environment
/// promises everything, a skip would hide a broken set-up, so it is a failure: CI sets
/// `BIOMETRICD_TESTS_REQUIRE_ALL=1` (`.ci/run`).
public func missing(_ what: String) -> any Error {
    requiresAll ? MissingRequirement(description: what) : XCTSkip(what)
}

/// Whether this run promises every requirement (`BIOMETRICD_TESTS_REQUIRE_ALL=1`).
public var requiresAll: Bool { ProcessInfo.processInfo.environment["BIOMETRICD_TESTS_REQUIRE_ALL"] == "1" }

/// A requirement missing where the run promised it: the test fails with this.
public struct MissingRequirement: Error, CustomStringConvertible {
    public let description: String
}

/// Waits until `condition` holds, checking every millisecond; gives up with an error after
/// `limitS` seconds so a broken condition fails the test instead of hanging the suite. The limit is
/// a bound on waiting, not a timing assertion: a loaded machine only waits longer.
public func waitUntil(_ what: String, limitS: Double = 60, _ condition: () -> Bool) async throws {
    let start = DispatchTime.now().uptimeNanoseconds
    while !condition() {
        if Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 > limitS {
            throw ConditionNotReached(description: "\(what): not reached within \(limitS) s")
        }
        try await Task.sleep(nanoseconds: 1_000_000)
    }
}

/// `waitUntil` gave up.
public struct ConditionNotReached: Error, CustomStringConvertible {
    public let description: String
}
