// biometricd-finger-bench print: accuracy, calibration and speed of the print side on FVC2002 DB2_B.
//   sets [--set NAME]    the four shared FVC B sets, each at its ppi, all cross-finger impostor pairs
//   errors [--set NAME]  the genuine pairs each set loses at FMR ≤ 0.1 %, and its highest impostors
//   fvc                  FVC protocol (280 genuine, 45 impostor) and all pairs (280 / 2,880): EER, FNMR at
//                        FMR 1 % and 0.1 %, ZeroFMR, beside NIST NBIS (mindtct + bozorth3) on the same images
//   speed                extraction ms/image, 1:1 matches/s on one core, 1:N over 10k synthetic templates
//   index                1:N with the pre-selection index (PrintIndex) vs the exhaustive scan, over
//                        galleries of perturbed replicas (IndexBench.swift)
//   calibrate [--write]  impostor similarity → FAR knots (writes Sources/Finger/Print/FingerCalibration.swift)
// Run from the repository root after `swift build -c release --product biometricd-finger-bench`.
import BiometricCamera
import BiometricCore
import BiometricFinger
import CImaging
import Dispatch
import Foundation

private let printRepo = FileManager.default.currentDirectoryPath
let fvcDir = printRepo + "/../shared/data/fingers/fvc2002_db2_b/images"

/// A shared FVC "B" set: 10 fingers (101…110) × 8 impressions, read at the ppi its SOURCE.txt
/// states (the only per-image input the extractor takes). NBIS EERs (mindtct + bozorth3, all
/// cross-finger impostor pairs, same images) are from issue 26.
struct FVCSet: Sendable {
    let name: String
    let directory: String
    let ppi: Int
    let nbisEER: Double

    static let db2b = FVCSet(name: "FVC2002 DB2_B", directory: fvcDir, ppi: 569, nbisEER: 2.58)
    static let all: [FVCSet] = [
        db2b,
        FVCSet(name: "FVC2002 DB1_B", directory: printRepo + "/../shared/data/fingers/fvc_b_sets/fvc2002/DB1_B", ppi: 500, nbisEER: 4.17),
        FVCSet(name: "FVC2002 DB4_B", directory: printRepo + "/../shared/data/fingers/fvc_b_sets/fvc2002/DB4_B", ppi: 500, nbisEER: 5.19),
        FVCSet(name: "FVC2004 DB1_B", directory: printRepo + "/../shared/data/fingers/fvc_b_sets/fvc2004/DB1_B", ppi: 500, nbisEER: 10.59),
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

func extractAll(_ images: [FVCImage]) -> [FingerTemplate] {
    let extractor = FingerprintExtractor(minimumMinutiae: 0)
    return images.map { img in
        do { return try extractor.extract(img.image) } catch {
            print("\(img.finger)_\(img.impression): \(error)")
            return FingerTemplate(sourcePPI: img.image.ppi, width: 1, height: 1, quality: 0, position: nil, minutiae: [])
        }
    }
}

/// Similarities of every ordered pair i < j (probe i, reference j).
private func pairSimilarities(_ templates: [FingerTemplate], matcher: FingerMatcher) -> [[Double]] {
    let prepared = templates.map { matcher.prepare($0)! }
    let n = prepared.count
    var s = [[Double]](repeating: [Double](repeating: 0, count: n), count: n)
    for i in 0..<n { for j in (i + 1)..<n { s[i][j] = matcher.similarity(prepared[i], prepared[j]) } }
    return s
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
    let genAbove = parts.genuine.filter { matcher.calibration.score($0) >= threshold }.count
    let impAbove = parts.allImpostor.filter { matcher.calibration.score($0) >= threshold }.count
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
    let templates = extractAll(images)
    let extractMs = (printClock() - t0) * 1000 / Double(images.count)
    let refused = images.filter { (try? FingerprintExtractor().extract($0.image)) == nil }.count
    let counts = templates.map(\.minutiae.count).sorted()
    let s = pairSimilarities(templates, matcher: matcher)
    let parts = split(images, s)
    var worst = (score: -1.0, similarity: 0.0, pair: "")
    var imp48 = 0, imp60 = 0
    for i in images.indices {
        for j in (i + 1)..<images.count where images[i].finger != images[j].finger {
            let score = matcher.calibration.score(s[i][j])
            if score >= 48 { imp48 += 1 }
            if score >= 60 { imp60 += 1 }
            if s[i][j] > worst.similarity || worst.score < 0 {
                worst = (score, s[i][j], "\(images[i].finger)_\(images[i].impression) vs \(images[j].finger)_\(images[j].impression)")
            }
        }
    }
    let gen48 = parts.genuine.filter { matcher.calibration.score($0) >= 48 }.count
    let prepared = templates.map { matcher.prepare($0)! }
    var rankOne = 0
    for i in prepared.indices {
        let gallery = prepared.indices.filter { $0 != i }
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
    print("set            | ppi | EER (NBIS)        | FMR100  | FMR1000 | ZeroFMR | max impostor score (similarity, pair) | imp ≥48 / ≥60 | gen ≥48 | refused | rank-1 | ms/img | minutiae")
    for set in FVCSet.chosen(arguments) {
        guard FileManager.default.fileExists(atPath: set.directory) else {
            print("\(set.name): not found at \(set.directory)")
            continue
        }
        let r = measure(set, matcher: matcher)
        results.append(r)
        print("\(set.name) | \(set.ppi) | \(pct(r.rates.eer)) (\(f(set.nbisEER)) %) | \(pct(r.rates.fnmr1)) | \(pct(r.rates.fnmr01)) | \(pct(r.rates.zeroFMR)) | \(f(r.maxImpostor.score, 1)) (\(f(r.maxImpostor.similarity, 4)), \(r.maxImpostor.pair)) | \(r.impostorsAtOrAbove.t48) / \(r.impostorsAtOrAbove.t60) | \(r.genuineAtOrAbove48)/\(r.genuineCount) | \(r.refused) | \(r.rankOne)/80 | \(f(r.extractMs, 0)) | \(r.minutiae.min)/\(r.minutiae.median)/\(r.minutiae.max)")
    }
    guard !results.isEmpty else { exit(1) }
    let mean = results.map(\.rates.eer).reduce(0, +) / Double(results.count)
    let nbis = results.map(\.set.nbisEER).reduce(0, +) / Double(results.count)
    print("mean EER over \(results.count) sets: \(pct(mean)) (NBIS \(f(nbis)) %); worst FMR1000 \(pct(results.map(\.rates.fnmr01).max()!)); impostors ≥ 60: \(results.map(\.impostorsAtOrAbove.t60).reduce(0, +))")
    print("(EER, FMR100 = FNMR at FMR ≤ 1 %, FMR1000 = FNMR at FMR ≤ 0.1 %, over 280 genuine and 2,880 impostor pairs; refused = images the default extractor turns away, still matched here with all their minutiae)")
}

/// `print errors [--set NAME]`: the comparisons behind each set's FMR1000 — every genuine pair
/// below the FMR ≤ 0.1 % threshold and the impostors at or above it, with what each comparison
/// rests on (minutiae, minutiae with a cylinder, consistent pairs summed) and whether the daemon's
/// default extractor would refuse either print (fewer than its minimum minutiae). For finding out
/// why pairs fail (extraction, overlap, alignment) before changing the matcher.
private func runErrors(_ arguments: [String]) {
    let matcher = FingerMatcher()
    let minimum = FingerprintExtractor.defaultMinimumMinutiae
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
            let score: String = f(matcher.calibration.score(c.similarity), 1)
            let parts = "minutiae \(c.minutiae[0])/\(c.minutiae[1]) | cylinders \(c.cylinders[0])/\(c.cylinders[1]) | pairs \(c.pairs)"
            let note = refused.isEmpty ? "" : " | refused by the daemon: " + refused.joined(separator: ", ")
            return "  " + names + " | similarity " + f(c.similarity, 4) + " | score " + score + " | " + parts + note
        }
        print("\(set.name): FMR1000 \(f(rates.fnmr01 * 100)) % — \(failing.count) of \(genuine.count) genuine pairs below similarity \(f(t, 4)) (score \(f(matcher.calibration.score(t), 1))), \(above.count) of \(impostor.count) impostors at or above it")
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
                          position: nil, minutiae: out, orientationField: field)
}

private func runSpeed() {
    let images = loadFVC()
    let extractor = FingerprintExtractor(minimumMinutiae: 0)
    _ = try? extractor.extract(images[0].image) // warm-up (Gabor bank)
    var t0 = printClock()
    var templates: [FingerTemplate] = []
    for img in images { if let t = try? extractor.extract(img.image) { templates.append(t) } }
    print("extraction: \(f((printClock() - t0) * 1000 / Double(images.count), 1)) ms/image (569 ppi 296×560 → 500 ppi, one core; NBIS mindtct 72 ms)")
    let matcher = FingerMatcher()
    t0 = printClock()
    let prepared = templates.map { matcher.prepare($0)! }
    print("prepare (cylinders): \(f((printClock() - t0) * 1000 / Double(templates.count), 2)) ms/template")
    t0 = printClock()
    var n = 0
    var sink = 0.0
    for a in prepared { for b in prepared where a !== b { sink += matcher.similarity(a, b); n += 1 } }
    let dt = printClock() - t0
    print("1:1: \(f(Double(n) / dt, 0)) matches/s on one core (\(f(dt * 1e6 / Double(n), 1)) µs/match, \(n) matches)")
    t0 = printClock()
    var rng = SystemRandomNumberGenerator()
    let gallery = (0..<10_000).map { i in matcher.prepare(synthetic(from: templates[i % templates.count], rng: &rng))! }
    print("1:N gallery: 10,000 synthetic templates built in \(f(printClock() - t0, 1)) s (mean \(gallery.map(\.template.minutiae.count).reduce(0, +) / gallery.count) minutiae)")
    let probes = Array(prepared.prefix(8))
    t0 = printClock()
    for p in probes { sink += matcher.search(p, in: gallery, limit: 5).first?.score ?? 0 }
    let one = (printClock() - t0) * 1000 / Double(probes.count)
    let cores = ProcessInfo.processInfo.activeProcessorCount
    t0 = printClock()
    for p in probes { sink += matcher.search(p, in: gallery, limit: 5, threads: cores).first?.score ?? 0 }
    let all = (printClock() - t0) * 1000 / Double(probes.count)
    print("1:N over 10,000: \(f(one, 0)) ms/query on one core, \(f(all, 0)) ms/query on \(cores) cores")
    if sink.isNaN { print("") }
}

// MARK: calibration

private func runCalibrate(write: Bool) {
    // Every cross-finger pair of every shared set (each at its own ppi): a user's sensor is
    // unknown, so the calibration must hold across sensors, not on the one it was tuned on.
    let matcher = FingerMatcher()
    var perSet: [[Double]] = []
    var genuine: [[Double]] = []
    for set in FVCSet.all {
        let images = loadFVC(set)
        let parts = split(images, pairSimilarities(extractAll(images), matcher: matcher))
        perSet.append(parts.allImpostor.sorted(by: >))
        genuine.append(parts.genuine)
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
    var text = """
    import BiometricCore

    /// The fingerprint score calibration (SPEC §4), measured on the impostor pairs of four FVC
    /// "B" sets from four sensors (FVC2002 DB1_B, DB2_B, DB4_B, FVC2004 DB1_B, each at its ppi).
    /// GENERATED by `biometricd-finger-bench print calibrate --write` — do not edit by hand; see
    /// Docs/finger-print.md. \(impostor.count) impostor pairs (all cross-finger pairs, 4 × 80 images); knots
    /// below FAR \(String(format: "%.1e", pow(10, lastEmpirical))) come from the fitted tail
    /// log10 FAR = \(f(intercept, 3)) + \(f(slope, 2))·similarity (least squares on the top 10 % of
    /// impostors, raised from \(f(fitted, 3)) so that no observed impostor of any one set lies above the line).
    public enum FingerCalibration {
        public static let fvcB = FARCalibration(.similarity, knots: knots, source: "FVC2002 DB1_B/DB2_B/DB4_B + FVC2004 DB1_B, \(impostor.count) impostor pairs")
        static let knots: [FARCalibration.Knot] = [

    """
    for (s, l) in knots { text += "        .init(\(String(format: "%.5f", s)), \(String(format: "%.3f", l))),\n" }
    text += "    ]\n}\n"
    let path = printRepo + "/Sources/Finger/Print/FingerCalibration.swift"
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
    case "calibrate": runCalibrate(write: arguments.contains("--write"))
    case "index": runIndexBench(Array(arguments.dropFirst()))
    default:
        print("usage: biometricd-finger-bench print fvc | sets [--set NAME,…] | errors [--set NAME,…] | dump FILE [--set NAME,…] | speed | index [--sizes 10000,100000] [--exhaustive-probes N] | calibrate [--write]")
        exit(2)
    }
}
