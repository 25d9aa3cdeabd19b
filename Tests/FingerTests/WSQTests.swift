import Foundation
import BiometricCore
import XCTest
@testable import BiometricFinger
import TestRequirements

/// The WSQ codec (issue 26 item 3): the transform and subband geometry on their own, then files
/// checked against an independent decoder and encoder — NIST's NBIS through the PyPI `wsq`
/// Pillow plugin (scripts/setup.sh installs it) — then quality on FVC prints (PSNR, bit rate,
/// minutiae found again, match score original vs decoded), then hostile input.
final class WSQTests: XCTestCase {
    static let shared = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("../shared/data/fingers").standardized.path
    static let sets: [(name: String, directory: String, ppi: Int)] = [
        ("FVC2002 DB2_B", shared + "/fvc2002_db2_b/images", 569),
        ("FVC2002 DB1_B", shared + "/fvc_b_sets/fvc2002/DB1_B", 500),
        ("FVC2002 DB4_B", shared + "/fvc_b_sets/fvc2002/DB4_B", 500),
        ("FVC2004 DB1_B", shared + "/fvc_b_sets/fvc2004/DB1_B", 500),
    ]

    static func path(_ set: Int, _ finger: Int, _ impression: Int) -> String {
        "\(sets[set].directory)/\(finger)_\(impression).tif"
    }

    func fvc(_ set: Int, _ finger: Int, _ impression: Int) throws -> FingerprintImage {
        let path = Self.path(set, finger, impression)
        guard FileManager.default.fileExists(atPath: path) else { throw missing("no FVC data at \(path)") }
        return try FingerprintExtractor.decodeImage([UInt8](Data(contentsOf: URL(fileURLWithPath: path))), ppi: Self.sets[set].ppi)
    }

    // MARK: Transform and geometry

    func testSubbandsTileTheImage() {
        for (w, h) in [(64, 64), (65, 77), (388, 374), (300, 301), (640, 480), (257, 511)] {
            let trees = WSQTrees(width: w, height: h)
            var cover = [Int](repeating: 0, count: w * h)
            for r in trees.quant {
                XCTAssertGreaterThan(r.width, 0, "\(w)x\(h)")
                XCTAssertGreaterThan(r.height, 0, "\(w)x\(h)")
                for y in r.y..<(r.y + r.height) { for x in r.x..<(r.x + r.width) { cover[y * w + x] += 1 } }
            }
            XCTAssertTrue(cover.allSatisfy { $0 == 1 }, "\(w)x\(h): the 64 subbands must tile the image once")
        }
    }

    func testTransformAloneReconstructsExactly() {
        var rng = SplitMix64(seed: 7)
        for (w, h) in [(64, 64), (65, 77), (300, 301), (257, 130)] {
            let original = (0..<(w * h)).map { _ in Double(rng.next() % 256) - 128 }
            var data = original
            let trees = WSQTrees(width: w, height: h)
            let t = WSQTransform(filters: .standard)
            t.decompose(&data, width: w, trees: trees)
            XCTAssertNotEqual(data, original)
            t.reconstruct(&data, width: w, trees: trees)
            let err = zip(data, original).map { abs($0 - $1) }.max() ?? 1
            XCTAssertLessThan(err, 1e-9, "\(w)x\(h)")
        }
    }

    func testHuffmanTablesArePrefixCodesWithoutAllOnes() {
        var rng = SplitMix64(seed: 3)
        for _ in 0..<50 {
            var f = [Int](repeating: 0, count: 256)
            for _ in 0..<Int(rng.next() % 200 + 1) { f[Int(rng.next() % 255) + 1] += Int(rng.next() % 100_000) + 1 }
            let t = WSQHuffman.table(frequencies: f)
            XCTAssertNotNil(WSQHuffman.Codes(t), "\(t)")
            XCTAssertEqual(Set(t.values).count, f.filter { $0 > 0 }.count)
        }
        // Skewed enough to need the 16-bit limit.
        let fib = (0..<40).reduce(into: [1, 1]) { a, _ in a.append(a[a.count - 1] + a[a.count - 2]) }
        var f = [Int](repeating: 0, count: 256)
        for i in 0..<40 { f[i + 1] = fib[i] }
        let t = WSQHuffman.table(frequencies: f)
        XCTAssertNotNil(WSQHuffman.Codes(t))
        XCTAssertEqual(t.bits.count, 16)
    }

    // MARK: Against NBIS (PyPI wsq)

    /// Runs python3 with the `wsq` Pillow plugin. Skips when the package is absent, except in CI
    /// (.ci/run sets BIOMETRICD_TESTS_REQUIRE_ALL after scripts/setup.sh installed it), where it fails.
    func python(_ script: String, _ args: [String]) throws -> Data {
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        probe.arguments = ["python3", "-c", "import wsq, PIL"]
        probe.standardError = FileHandle.nullDevice
        try probe.run()
        probe.waitUntilExit()
        if probe.terminationStatus != 0 {
            let message = "the PyPI package wsq (NBIS's WSQ as a Pillow plugin) is not installed: run scripts/setup.sh or 'python3 -m pip install wsq'"
            throw missing(message)
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", script] + args
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        let errors = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw NSError(domain: "python", code: Int(p.terminationStatus),
                          userInfo: [NSLocalizedDescriptionKey: String(decoding: errors, as: UTF8.self)])
        }
        return data
    }

    /// NBIS decodes a WSQ file: raw grey pixels.
    static let nbisDecode = "import sys, wsq\nfrom PIL import Image\nim = Image.open(sys.argv[1])\nsys.stdout.buffer.write(im.convert('L').tobytes())"
    /// NBIS encodes an image file (r 0.75, its default) to WSQ.
    static let nbisEncode = "import sys, wsq\nfrom PIL import Image\nImage.open(sys.argv[1]).convert('L').save(sys.argv[2])"

    func temporary(_ name: String) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("wsq-\(ProcessInfo.processInfo.processIdentifier)-\(name)")
    }

    static func psnr(_ a: [UInt8], _ b: [UInt8]) -> Double {
        let mse = zip(a, b).reduce(0.0) { $0 + pow(Double($1.0) - Double($1.1), 2) } / Double(a.count)
        return mse == 0 ? .infinity : 10 * log10(255 * 255 / mse)
    }

    func testOurFilesDecodeWithNBIS() throws {
        for (set, finger) in [(0, 101), (1, 104), (2, 107), (3, 110)] {
            let image = try fvc(set, finger, 2)
            let file = try image.wsqEncoded()
            let url = temporary("ours-\(set).wsq")
            try Data(file).write(to: url)
            defer { try? FileManager.default.removeItem(at: url) }
            let nbis = [UInt8](try python(Self.nbisDecode, [url.path]))
            XCTAssertEqual(nbis.count, image.width * image.height, Self.sets[set].name)
            let ours = try WSQ.decode(file)
            XCTAssertEqual(ours.ppi, Self.sets[set].ppi)
            // Same file, two decoders: they may differ by float rounding only.
            let diff = zip(nbis, ours.pixels).map { abs(Int($0) - Int($1)) }
            XCTAssertLessThanOrEqual(diff.max() ?? 99, 1, Self.sets[set].name)
            XCTAssertGreaterThan(Self.psnr(image.pixels, nbis), 30, Self.sets[set].name)
        }
    }

    func testNBISFilesDecodeWithOurs() throws {
        for (set, finger) in [(0, 102), (1, 105), (2, 108), (3, 109)] {
            let image = try fvc(set, finger, 3)
            let url = temporary("nbis-\(set).wsq")
            _ = try python(Self.nbisEncode, [Self.path(set, finger, 3), url.path])
            defer { try? FileManager.default.removeItem(at: url) }
            let file = [UInt8](try Data(contentsOf: url))
            let nbis = [UInt8](try python(Self.nbisDecode, [url.path]))
            let ours = try WSQ.decode(file)
            XCTAssertEqual(ours.width, image.width)
            XCTAssertEqual(ours.height, image.height)
            let diff = zip(nbis, ours.pixels).map { abs(Int($0) - Int($1)) }
            XCTAssertLessThanOrEqual(diff.max() ?? 99, 1, Self.sets[set].name)
            XCTAssertGreaterThan(Self.psnr(image.pixels, ours.pixels), 30, Self.sets[set].name)
            // Our encoder at the same setting spends the same bits (the same quantiser).
            let size = Double(try image.wsqEncoded().count)
            XCTAssertEqual(size / Double(file.count), 1, accuracy: 0.03, "\(Self.sets[set].name): ours \(size), NBIS \(file.count) bytes")
            // And through the upload path finger.extract uses.
            let upload = try FingerprintExtractor.decodeImage(file, ppi: Self.sets[set].ppi)
            XCTAssertEqual(upload.pixels, ours.pixels)
        }
    }

    // MARK: Quality on FVC prints

    /// Minutiae of the original found again in the decoded print (same kind not required: WSQ
    /// may turn an ending into a bifurcation): within 0.3 mm and 30°.
    static func agreement(_ a: FingerTemplate, _ b: FingerTemplate, ppi: Int) -> Double {
        guard !a.minutiae.isEmpty else { return 0 }
        let radius = 0.3 * Double(ppi) / 25.4
        var used = Set<Int>()
        var found = 0
        for m in a.minutiae {
            var best: (Int, Double)?
            for (j, n) in b.minutiae.enumerated() where !used.contains(j) {
                let d = hypot(m.x - n.x, m.y - n.y)
                var da = abs(m.angle - n.angle).truncatingRemainder(dividingBy: 2 * .pi)
                if da > .pi { da = 2 * .pi - da }
                if d <= radius, da <= .pi / 6, d < (best?.1 ?? .infinity) { best = (j, d) }
            }
            if let best { used.insert(best.0); found += 1 }
        }
        return Double(found) / Double(a.minutiae.count)
    }

    /// The figures in Docs/finger-print.md: per set, 10 prints (impression 1 of every finger).
    /// `swift test --filter WSQTests.testQualityOnFVC` prints them.
    func testQualityOnFVC() throws {
        let extractor = FingerprintExtractor(minimumMinutiae: 0)
        let matcher = FingerMatcher()
        for set in Self.sets.indices {
            var bpp: [Double] = [], psnr: [Double] = [], agree: [Double] = [], scores: [Double] = []
            for finger in 101...110 {
                let image = try fvc(set, finger, 1)
                let file = try image.wsqEncoded()
                let decoded = try WSQ.decode(file)
                let back = try FingerprintImage(width: decoded.width, height: decoded.height, pixels: decoded.pixels, ppi: image.ppi)
                bpp.append(Double(file.count * 8) / Double(image.pixels.count))
                psnr.append(Self.psnr(image.pixels, decoded.pixels))
                let a = try extractor.extract(image), b = try extractor.extract(back)
                agree.append(Self.agreement(a, b, ppi: 500))
                scores.append(matcher.score(probe: b, reference: a))
            }
            func mean(_ v: [Double]) -> Double { v.reduce(0, +) / Double(v.count) }
            print(String(format: "WSQ %@: %.3f bpp (%.1f:1), PSNR %.1f dB (min %.1f), minutiae found again %.0f %% (min %.0f %%), score decoded vs original mean %.0f min %.0f",
                         Self.sets[set].name, mean(bpp), 8 / mean(bpp), mean(psnr), psnr.min()!, 100 * mean(agree), 100 * agree.min()!,
                         mean(scores), scores.min()!))
            XCTAssertLessThan(mean(bpp), 1.0, Self.sets[set].name)
            // r = 0.75 is the rate of the print area: FVC2004's wide blank margins cost ~nothing.
            XCTAssertGreaterThan(mean(bpp), 0.2, Self.sets[set].name)
            XCTAssertGreaterThan(psnr.min()!, 28, Self.sets[set].name)
            XCTAssertGreaterThan(mean(agree), 0.6, Self.sets[set].name)
            XCTAssertGreaterThanOrEqual(scores.min()!, 48, "\(Self.sets[set].name): a decoded print must still match its original")
        }
    }

    // MARK: Hostile input

    func testTruncatedAndCorruptFilesGiveTypedErrors() throws {
        let image = try fvc(1, 101, 1)
        let file = try image.wsqEncoded()
        XCTAssertNoThrow(try WSQ.decode(file))
        // Every truncation point in the headers, then a stride through the coded blocks.
        let firstBlock = try XCTUnwrap(Self.find(file, 0xFFA3))
        var cut = 0
        while cut < file.count {
            XCTAssertThrowsError(try WSQ.decode(file[0..<cut]), "cut at \(cut)") { error in
                XCTAssertTrue(error is WSQ.Error)
            }
            cut += cut < firstBlock + 8 ? 1 : 211
        }
        // Random byte changes: an error or an image of the frame's size, never a trap.
        var rng = SplitMix64(seed: 26)
        var refused = 0
        for _ in 0..<60 {
            var bad = file
            for _ in 0..<Int(rng.next() % 4 + 1) {
                let at = Int(rng.next() % UInt64(bad.count))
                bad[at] = UInt8(truncatingIfNeeded: rng.next())
            }
            do {
                let out = try WSQ.decode(bad)
                XCTAssertEqual(out.pixels.count, out.width * out.height)
            } catch { refused += 1 }
        }
        XCTAssertGreaterThan(refused, 0)
        // One-bit changes in the tables must be caught or harmless too.
        for i in stride(from: 2, to: firstBlock, by: 7) {
            var bad = file
            bad[i] ^= UInt8(1 << (i % 8))
            _ = try? WSQ.decode(bad)
        }
    }

    func testRefusals() throws {
        let image = try fvc(1, 101, 1)
        let file = try image.wsqEncoded()
        XCTAssertThrowsError(try WSQ.decode([0xFF, 0xD8, 0xFF])) { XCTAssertEqual($0 as? WSQ.Error, .notWSQ) }
        XCTAssertThrowsError(try WSQ.decode([UInt8]())) { XCTAssertEqual($0 as? WSQ.Error, .notWSQ) }
        XCTAssertThrowsError(try WSQ.decode(file + [UInt8](repeating: 0, count: WSQ.maxBytes))) {
            XCTAssertEqual($0 as? WSQ.Error, .tooLarge(bytes: file.count + WSQ.maxBytes))
        }
        // Frame size: rewrite the SOF's height/width.
        let sof = try XCTUnwrap(Self.find(file, 0xFFA2))
        for (w, h) in [(10, 10), (5000, 300), (2048, 2049)] {
            var bad = file
            bad[sof + 6] = UInt8(h >> 8); bad[sof + 7] = UInt8(h & 0xFF)
            bad[sof + 8] = UInt8(w >> 8); bad[sof + 9] = UInt8(w & 0xFF)
            XCTAssertThrowsError(try WSQ.decode(bad)) { XCTAssertEqual($0 as? WSQ.Error, .dimensions(width: w, height: h)) }
        }
        // An unknown marker where a table should be.
        var marker = file
        let dtt = try XCTUnwrap(Self.find(file, 0xFFA4))
        marker[dtt + 1] = 0xB0
        XCTAssertThrowsError(try WSQ.decode(marker)) { XCTAssertEqual($0 as? WSQ.Error, .unexpectedMarker(0xFFB0)) }
        // A Huffman table whose counts promise more codes than a length allows.
        var huffman = file
        let dht = try XCTUnwrap(Self.find(file, 0xFFA6))
        huffman[dht + 5] = 3 // three 1-bit codes
        XCTAssertThrowsError(try WSQ.decode(huffman)) { error in
            guard case .badTable = error as? WSQ.Error else { return XCTFail("\(error)") }
        }
        // Through the upload path: a typed FingerprintError carrying the WSQ error.
        XCTAssertThrowsError(try FingerprintExtractor.decodeImage(Array(file.prefix(500)), ppi: 500)) {
            XCTAssertEqual($0 as? FingerprintError, .wsq(.truncated))
        }
        // Encoder limits.
        XCTAssertThrowsError(try WSQ.encode(pixels: [UInt8](repeating: 0, count: 100), width: 10, height: 10, ppi: 500))
    }

    /// Offset of the first segment with `marker`, walking the segments from SOI up to the first
    /// block's coded data (a byte search could hit the pattern inside a table).
    static func find(_ bytes: [UInt8], _ marker: UInt16) -> Int? {
        var i = 2
        while i + 4 <= bytes.count {
            let m = UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1])
            if m == marker { return i }
            if m == 0xFFA3 { return nil }
            i += 2 + (Int(bytes[i + 2]) << 8 | Int(bytes[i + 3]))
        }
        return nil
    }
}
