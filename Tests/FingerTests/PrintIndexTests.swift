import XCTest
@testable import BiometricFinger
import TestRequirements

/// The 1:N pre-selection (`PrintIndex`) on FVC2002 DB2_B: the coarse stage keeps true mates in
/// its shortlist, also for a rotated and shifted probe; small galleries and ties behave exactly
/// like the exhaustive search. No timings (those are `biometricd-finger-bench print index`).
final class PrintIndexTests: XCTestCase {
    /// The 80 FVC prints (finger 101…110 × impression 1…8), prepared once for all tests.
    nonisolated(unsafe) static var cached: [(finger: Int, print: PreparedPrint)]?

    func fvcPrints() throws -> [(finger: Int, print: PreparedPrint)] {
        if let cached = Self.cached { return cached }
        guard FileManager.default.fileExists(atPath: PrintTests.fvcDir) else { throw missing("no FVC2002 data at \(PrintTests.fvcDir)") }
        let extractor = FingerprintExtractor(), matcher = FingerMatcher()
        var out: [(finger: Int, print: PreparedPrint)] = []
        for finger in 101...110 {
            for impression in 1...8 {
                let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(PrintTests.fvcDir)/\(finger)_\(impression).tif")))
                let template = try extractor.extract(try FingerprintExtractor.decodeImage(bytes, ppi: 569))
                out.append((finger, try XCTUnwrap(matcher.prepare(template))))
            }
        }
        Self.cached = out
        return out
    }

    /// The template turned by `degrees` about its centre and shifted, on a canvas large enough to
    /// keep every minutia inside.
    func moved(_ t: FingerTemplate, degrees: Double, dx: Double, dy: Double) -> FingerTemplate {
        let a = degrees * .pi / 180, (c, s) = (cos(a), sin(a))
        let (cx, cy) = (Double(t.width) / 2, Double(t.height) / 2), side = 2 * max(t.width, t.height)
        let minutiae = t.minutiae.map { m in
            let (x, y) = (m.x - cx, m.y - cy)
            // Counter-clockwise on screen (y down), as minutia angles are measured.
            return Minutia(x: Double(side) / 2 + x * c + y * s + dx, y: Double(side) / 2 - x * s + y * c + dy,
                           angle: m.angle + a, kind: m.kind, quality: m.quality)
        }
        return FingerTemplate(sourcePPI: t.sourcePPI, width: side, height: side, quality: t.quality, position: nil, minutiae: minutiae)
    }

    /// Each print against the 79 others with a shortlist of 8 (10 %): a mate of the probe's finger
    /// must be among the 8, for the print as captured and turned by 120° and shifted.
    func testShortlistKeepsMatesOfRotatedShiftedProbes() throws {
        let prints = try fvcPrints()
        let matcher = FingerMatcher()
        let eight = PrintIndex.Shortlist(fraction: 0, minimum: 8, maximum: 8)
        var kept = 0, keptMoved = 0, bestKept = 0
        for i in prints.indices {
            let others = prints.indices.filter { $0 != i }
            let index = PrintIndex(others.map { prints[$0].print }, matcher: matcher, shortlist: eight)
            let probe = prints[i].print
            let turned = try XCTUnwrap(matcher.prepare(moved(probe.template, degrees: 120, dx: 37, dy: -21)))
            func hasMate(_ shortlist: [Int]) -> Bool { shortlist.contains { prints[others[$0]].finger == prints[i].finger } }
            let shortlist = index.candidates(for: probe, count: 8)
            XCTAssertEqual(shortlist.count, 8)
            XCTAssertEqual(shortlist, shortlist.sorted(), "candidates come in gallery order")
            if hasMate(shortlist) { kept += 1 }
            if hasMate(index.candidates(for: turned, count: 8)) { keptMoved += 1 }
            // With the shortlist the best reference is still a mate (the exhaustive search finds one for all 80).
            if let best = index.search(turned, limit: 1).first, prints[others[best.index]].finger == prints[i].finger { bestKept += 1 }
        }
        // Measured: 80, 80 and 79 of 80.
        XCTAssertGreaterThanOrEqual(kept, 78, "a mate in the coarse shortlist")
        XCTAssertGreaterThanOrEqual(keptMoved, 78, "a mate in the coarse shortlist, probe rotated and shifted")
        XCTAssertGreaterThanOrEqual(bestKept, 76, "rank-1 through the shortlist, probe rotated and shifted")
    }

    /// The code does not depend on where the print lies or how it is turned: a rigidly moved copy
    /// keeps nearly all of its bits (only quantisation edges differ; measured 92–99 %).
    func testCodeIsRotationAndTranslationInvariant() throws {
        let prints = try fvcPrints()
        let matcher = FingerMatcher()
        for i in stride(from: 0, to: 80, by: 9) {
            let original = prints[i].print
            let turned = try XCTUnwrap(matcher.prepare(moved(original.template, degrees: -75, dx: -40, dy: 55)))
            let set = original.code.map(\.nonzeroBitCount).reduce(0, +)
            let shared = zip(original.code, turned.code).map { ($0 & $1).nonzeroBitCount }.reduce(0, +)
            XCTAssertGreaterThan(set, 50, "print \(i) has a code")
            XCTAssertGreaterThanOrEqual(Double(shared), 0.8 * Double(set), "print \(i): \(shared) of \(set) bits kept")
        }
    }

    /// A gallery no larger than the shortlist is searched exhaustively: the same references and
    /// scores as `FingerMatcher.search`.
    func testSmallGalleryEqualsExhaustiveSearch() throws {
        let prints = try fvcPrints()
        let matcher = FingerMatcher()
        let gallery = prints.dropFirst().map(\.print)
        let index = PrintIndex(gallery, matcher: matcher)
        XCTAssertGreaterThanOrEqual(PrintIndex.Shortlist.standard.size(for: gallery.count), gallery.count)
        for probe in [0, 9, 33, 77].map({ prints[$0].print }) {
            let exhaustive = matcher.search(probe, in: gallery, limit: 10)
            let indexed = index.search(probe, limit: 10, threads: 2)
            XCTAssertEqual(indexed.map(\.index), exhaustive.map(\.index))
            XCTAssertEqual(indexed.map(\.score), exhaustive.map(\.score))
        }
        XCTAssertTrue(PrintIndex([], matcher: matcher).search(prints[0].print).isEmpty)
    }

    /// The shortlist is the same however many threads score it, ties (here: identical copies)
    /// included, and a shortlisted search returns the exhaustive search's best references when
    /// they are in the shortlist.
    func testShortlistIndependentOfThreadsAndTies() throws {
        let prints = try fvcPrints()
        let matcher = FingerMatcher()
        let big = Array(repeating: prints.map(\.print), count: 60).flatMap { $0 } // 4,800 references
        let index = PrintIndex(big, matcher: matcher, shortlist: .init(fraction: 0, minimum: 100, maximum: 100))
        let probe = prints[12].print
        let serial = index.candidates(for: probe, count: 100, threads: 1)
        XCTAssertEqual(serial, index.candidates(for: probe, count: 100, threads: 3))
        XCTAssertEqual(serial.count, 100)
        // The 60 copies of the probe itself score highest, then copies of the next-best prints;
        // equal scores keep the lowest positions.
        XCTAssertEqual(serial.filter { $0 % 80 == 12 }.count, 60)
        let hits = index.search(probe, limit: 5, threads: 2)
        XCTAssertEqual(hits.map { $0.index % 80 }, Array(repeating: 12, count: 5))
        XCTAssertEqual(hits.map(\.index), matcher.search(probe, in: big, limit: 5, threads: 2).map(\.index))
    }
}
