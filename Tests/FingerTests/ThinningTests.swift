import BiometricCore
import CFingerVision
import CImaging
import CVisionReference
import Foundation
import XCTest
import TestRequirements

/// Print extraction thins ridge maps with CFingerVision's own Guo-Hall thinning since the daemon
/// stopped linking OpenCV-contrib's ximgproc (which links imgcodecs and, through it, GDAL and ~130
/// libraries). Every FVC number was measured with ximgproc's: the skeletons must be the same.
final class ThinningTests: XCTestCase {
    func thinned(_ pixels: [UInt8], _ width: Int, _ height: Int) -> (ours: [UInt8], opencv: [UInt8]) {
        var ours = [UInt8](repeating: 7, count: width * height), reference = ours
        XCTAssertEqual(cvis_thinning(pixels, Int32(width), Int32(height), &ours), CVIS_OK)
        XCTAssertEqual(cvref_thinning(pixels, Int32(width), Int32(height), &reference), 0)
        return (ours, reference)
    }

    /// Real prints binarised at a few levels (dark ridges set), the way extraction hands ridge maps
    /// over, and their inverses: the same skeleton pixel for pixel.
    func testRidgeMapsOfRealPrintsThinAsXimgprocThinsThem() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path + "/../shared/data/fingers/fvc2002_db2_b/images"
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasSuffix(".tif") }.sorted()
        guard !names.isEmpty else { throw missing("../shared/data is not beside the repository") }
        var compared = 0
        for name in names.enumerated().filter({ $0.offset % 8 == 0 }).map(\.element) {
            var status = CVIS_OK
            guard let image = cvis_image_read(folder + "/" + name, 0, &status) else { return XCTFail(name) }
            let w = Int(cvis_image_width(image)), h = Int(cvis_image_height(image))
            var grey = [UInt8](repeating: 0, count: w * h)
            _ = cvis_image_copy(image, &grey, nil)
            cvis_image_free(image)
            for level in [90, 140] {
                for invert in [false, true] {
                    let ridges = grey.map { ($0 < level) != invert ? UInt8(255) : 0 }
                    let (ours, opencv) = thinned(ridges, w, h)
                    XCTAssertEqual(ours, opencv, "\(name) at \(level)\(invert ? ", inverted" : "")")
                    compared += 1
                }
            }
        }
        XCTAssertGreaterThanOrEqual(compared, 40)
    }

    /// Noise, blobs, lines touching the border, tiny images: values >= 128 count as set, as in
    /// ximgproc (which divides by 255 with rounding).
    func testSyntheticImagesIncludingBordersAndGreyLevels() {
        var rng = SplitMix64(seed: 11)
        for (w, h) in [(1, 1), (2, 5), (3, 3), (17, 9), (64, 48), (200, 3)] {
            for density in [10, 50, 90] {
                let pixels = (0..<(w * h)).map { _ in rng.next() % 100 < UInt64(density) ? UInt8(100 + rng.next() % 156) : UInt8(rng.next() % 140) }
                let (ours, opencv) = thinned(pixels, w, h)
                XCTAssertEqual(ours, opencv, "\(w)x\(h) at \(density) %")
            }
        }
    }

    func testBadArgumentsAreRefused() {
        var out = [UInt8](repeating: 0, count: 4)
        XCTAssertEqual(cvis_thinning(nil, 2, 2, &out), CVIS_ERR_ARGUMENT)
        XCTAssertEqual(cvis_thinning([0, 0, 0, 0], 0, 2, &out), CVIS_ERR_ARGUMENT)
    }
}

