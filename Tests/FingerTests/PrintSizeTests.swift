import CFingerVision
import Foundation
import XCTest
@testable import BiometricFinger
import TestRequirements

/// A camera print's 500-ppi size is set twice: from the frame's ridge measure when the fingertip
/// is cut out (coarse: whole frequency bins of 32-px blocks), then from the print's own ridges
/// measured finely over the whole print (`FingerCapture.sizedByItsRidges`), so that two photos of
/// one finger come out the same size.
final class PrintSizeTests: XCTestCase {
    /// Parallel ridges of one period and direction (cosine, mid-grey ± 80).
    func grating(period: Double, degrees: Double, width: Int, height: Int) -> [UInt8] {
        let a = degrees * .pi / 180, c = cos(a), s = sin(a)
        var pixels = [UInt8](repeating: 0, count: width * height)
        for y in 0..<height {
            for x in 0..<width {
                let t = (Double(x) * c + Double(y) * s) / period
                pixels[y * width + x] = UInt8(128 + 80 * cos(2 * .pi * t))
            }
        }
        return pixels
    }

    func finePeriod(_ pixels: [UInt8], _ mask: [UInt8]?, _ width: Int, _ height: Int) -> (Float, cvis_status) {
        var status = CVIS_OK
        let p = cvis_print_ridge_period(pixels, mask, Int32(width), Int32(height), &status)
        return (p, status)
    }

    func testTheFineMeasureReadsAGratingsPeriodToAFewPercent() {
        for period in [6.0, 8.83, 11.0, 14.0] {
            for degrees in [0.0, 33.0, 77.0, 90.0, 140.0] {
                let (p, status) = finePeriod(grating(period: period, degrees: degrees, width: 300, height: 340), nil, 300, 340)
                XCTAssertEqual(status, CVIS_OK)
                XCTAssertEqual(Double(p), period, accuracy: period * 0.02, "period \(period) at \(degrees)°")
            }
        }
    }

    func testTheFineMeasureOnlyReadsTheFinger() {
        // Left half ridges of period 8, right half of period 12; the mask keeps the right half.
        let w = 320, h = 320
        let left = grating(period: 8, degrees: 20, width: w, height: h), right = grating(period: 12, degrees: 20, width: w, height: h)
        var pixels = left, mask = [UInt8](repeating: 0, count: w * h)
        for y in 0..<h {
            for x in w / 2..<w {
                pixels[y * w + x] = right[y * w + x]
                mask[y * w + x] = 255
            }
        }
        XCTAssertEqual(Double(finePeriod(pixels, mask, w, h).0), 12, accuracy: 0.24)
        // Nothing measurable: flat, or too few tiles inside the mask. Bad sizes are refused.
        XCTAssertEqual(finePeriod([UInt8](repeating: 128, count: w * h), nil, w, h).0, 0)
        XCTAssertEqual(finePeriod(pixels, [UInt8](repeating: 0, count: w * h), w, h).0, 0)
        let (bad, status) = finePeriod([UInt8](repeating: 128, count: 40 * 40), nil, 40, 40)
        XCTAssertEqual(bad, -1)
        XCTAssertEqual(status, CVIS_ERR_ARGUMENT)
    }

    /// A real print cut out 13 % too small or 15 % too large (how far the frame's measure was
    /// off on two photos of one phone fingerphoto set's finger) comes back to one size, and the
    /// two then match at that size; as cut out they do not.
    func testAPrintCutOutAtTheWrongSizeComesBackToItsFingersSize() throws {
        let set = ScoreMeaningTests.sets[1]
        let path = "\(set.directory)/103_1.tif"
        guard FileManager.default.fileExists(atPath: path) else { throw missing("no FVC data at \(path)") }
        let original = try FingerprintExtractor.decodeImage([UInt8](Data(contentsOf: URL(fileURLWithPath: path))), ppi: set.ppi)
        let everywhere = [UInt8](repeating: 255, count: original.width * original.height)
        let own = finePeriod(original.pixels, everywhere, original.width, original.height).0
        XCTAssertGreaterThan(own, 7)
        XCTAssertLessThan(own, 11)
        var cutOut: [FingerprintImage] = [], sized: [FingerprintImage] = []
        for factor in [0.87, 1.15] {
            let w = Int((Double(original.width) * factor).rounded()), h = Int((Double(original.height) * factor).rounded())
            var pixels = [UInt8](repeating: 0, count: w * h)
            XCTAssertEqual(cvis_print_resample(original.pixels, Int32(original.width), Int32(original.height), &pixels, Int32(w), Int32(h)), CVIS_OK)
            cutOut.append(try FingerprintImage(width: w, height: h, pixels: pixels, ppi: 500))
            let print = try FingerCapture.sizedByItsRidges(width: w, height: h, pixels: pixels, mask: [UInt8](repeating: 255, count: w * h))
            let expected = Double(original.width) * Double(FingerCapture.printFinePeriod / own)
            XCTAssertEqual(Double(print.width), expected, accuracy: expected * 0.03, "cut out at ×\(factor)")
            XCTAssertEqual(Double(finePeriod(print.pixels, nil, print.width, print.height).0), Double(FingerCapture.printFinePeriod),
                           accuracy: 0.03 * Double(FingerCapture.printFinePeriod))
            sized.append(print)
        }
        let extractor = FingerprintExtractor(), matcher = FingerMatcher()
        func score(_ a: FingerprintImage, _ b: FingerprintImage) throws -> Double {
            let reference = try XCTUnwrap(matcher.prepare(try extractor.extract(b)))
            return matcher.score(probe: try extractor.extract(a), reference: reference, search: .none)
        }
        XCTAssertLessThan(try score(cutOut[0], cutOut[1]), 48, "32 % apart in size")
        XCTAssertGreaterThanOrEqual(try score(sized[0], sized[1]), 48, "sized by their ridges")
    }

    func testAPrintWithoutMeasurableRidgesKeepsItsSize() throws {
        let flat = [UInt8](repeating: 200, count: 300 * 320)
        let print = try FingerCapture.sizedByItsRidges(width: 300, height: 320, pixels: flat, mask: [UInt8](repeating: 255, count: 300 * 320))
        XCTAssertEqual(print.width, 300)
        XCTAssertEqual(print.height, 320)
        XCTAssertEqual(print.pixels, flat)
        // Ridges already at the 500-ppi period: kept as made (no resampling blur for nothing).
        let right = grating(period: Double(FingerCapture.printFinePeriod), degrees: 50, width: 300, height: 320)
        XCTAssertEqual(try FingerCapture.sizedByItsRidges(width: 300, height: 320, pixels: right,
                                                         mask: [UInt8](repeating: 255, count: 300 * 320)).pixels, right)
    }
}
