import XCTest
@testable import BiometricFinger
import TestRequirements

/// The camera comparison's scale search (FingerMatcher.ScaleSearch): a camera print's size comes
/// from its ridges and can be ~10 % off, so it is compared at five sizes, and the best score pays
/// for the five tries. On FVC2002 DB1_B (500 ppi, classical extractor: the fast one).
final class ScaleSearchTests: XCTestCase {
    static let set = ScoreMeaningTests.sets[1]

    func template(_ finger: Int, _ impression: Int, _ extractor: FingerprintExtractor = FingerprintExtractor()) throws -> FingerTemplate {
        let path = "\(Self.set.directory)/\(finger)_\(impression).tif"
        guard FileManager.default.fileExists(atPath: path) else { throw missing("no FVC data at \(path)") }
        return try extractor.extract(try FingerprintExtractor.decodeImage([UInt8](Data(contentsOf: URL(fileURLWithPath: path))), ppi: Self.set.ppi))
    }

    func testAScaledTemplateIsTheSamePrintLarger() throws {
        let t = try template(101, 1)
        let big = t.scaled(by: 1.1)
        XCTAssertEqual(big.width, Int((Double(t.width) * 1.1).rounded()))
        XCTAssertEqual(big.height, Int((Double(t.height) * 1.1).rounded()))
        XCTAssertEqual(big.minutiae.count, t.minutiae.count)
        for (a, b) in zip(t.minutiae, big.minutiae) {
            XCTAssertEqual(b.x, a.x * 1.1, accuracy: 0.13) // stored in quarter pixels
            XCTAssertEqual(b.y, a.y * 1.1, accuracy: 0.13)
            XCTAssertEqual(b.angle, a.angle, accuracy: 1e-3)
            XCTAssertEqual(b.kind, a.kind)
        }
        let field = try XCTUnwrap(t.orientationField), bigField = try XCTUnwrap(big.orientationField, "the field is kept, resampled")
        XCTAssertTrue(bigField.fits(printWidth: big.width, height: big.height))
        XCTAssertEqual(Double(bigField.usableCells) / Double(field.usableCells), 1.21, accuracy: 0.12, "the print's area grows by 1.1²")
        XCTAssertEqual(try FingerTemplate(decoding: big.encoded()), big, "a scaled template is a valid template")
        XCTAssertEqual(t.scaled(by: 1), t)
    }

    func testThePenaltyIsTheSearchsNumberOfTries() {
        let search = FingerMatcher.ScaleSearch.for(.fromRidges)
        XCTAssertEqual(search.factors.count, 5)
        XCTAssertTrue(search.factors.contains(1), "the print's own size is one of them")
        XCTAssertEqual(search.penalty, 12 * log10(5), accuracy: 1e-9)
        XCTAssertEqual(search.adjusted(100), 91.6)
        XCTAssertEqual(search.adjusted(5), 0, "never below 0")
        XCTAssertEqual(FingerMatcher.ScaleSearch.for(.known), .none, "an exact scale is compared once")
        XCTAssertEqual(FingerMatcher.ScaleSearch.none.adjusted(47.3), 47.3, "and pays nothing")
    }

    /// A probe a quarter too small: at its own size it falls below the threshold; the search
    /// finds it (its ×1.12 brings it within the ~15 % the matcher tolerates on contact prints),
    /// and its score is the best size's less the penalty, never more.
    func testAProbeOfTheWrongSizeIsFoundAndPaysForTheSearch() throws {
        let matcher = FingerMatcher()
        for finger in [102, 106] {
            let reference = try XCTUnwrap(matcher.prepare(try template(finger, 1)))
            let probe = try template(finger, 2).scaled(by: 0.75)
            let once = matcher.score(probe: probe, reference: reference, search: .none)
            let searched = matcher.score(probe: probe, reference: reference, search: .for(.fromRidges))
            XCTAssertLessThan(once, 48, "\(finger): at its own size")
            XCTAssertGreaterThanOrEqual(searched, 48, "\(finger): found by the search")
            let best = FingerMatcher.ScaleSearch.ridgeScaled.factors.map {
                matcher.score(probe: probe.scaled(by: $0), reference: reference.template)
            }.max()!
            XCTAssertEqual(searched, FingerMatcher.ScaleSearch.ridgeScaled.adjusted(best), "\(finger)")
        }
    }

    /// Every impostor pair of the set, searched: none reaches the threshold, and the penalty more
    /// than pays for the tries — fewer impostors reach 24 (FAR 1 %) with the search than at one
    /// size (measured: the five tries multiply the impostor tail by 2.5–2.9, the penalty
    /// assumes 5).
    func testTheSearchDoesNotFattenTheImpostorTail() throws {
        let matcher = FingerMatcher()
        var prints: [(finger: Int, template: FingerTemplate, prepared: PreparedPrint)] = []
        for finger in 101...110 {
            for impression in [1, 3, 5, 7] {
                guard let t = try? template(finger, impression) else { continue } // refused, as the daemon would
                prints.append((finger, t, try XCTUnwrap(matcher.prepare(t))))
            }
        }
        var once: [Double] = [], searched: [Double] = []
        for a in prints {
            for b in prints where b.finger != a.finger {
                once.append(matcher.score(b.prepared, a.prepared))
                searched.append(matcher.score(probe: b.template, reference: a.prepared, search: .for(.fromRidges)))
            }
        }
        XCTAssertLessThan(searched.max() ?? 100, 48, "no impostor reaches the threshold")
        let tail = (once: once.filter { $0 >= 24 }.count, searched: searched.filter { $0 >= 24 }.count)
        XCTAssertLessThanOrEqual(tail.searched, tail.once, "impostors at 24 or more: \(tail)")
    }
}
