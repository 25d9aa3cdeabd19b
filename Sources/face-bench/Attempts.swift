// attempts: the FAR of one verify ATTEMPT (SPEC §4), not of one frame. An impostor attempt is an
// enrolled LFW photo of person A (a stored template, as enrolment makes it: chip, mirror, six
// jitters) against a sequence of live probes (chip, mirror) of other photos of one other person B,
// decided by the session's own rule (`FaceAttemptRule`, the code FaceVerification runs). A genuine
// attempt is the same with other photos of A. The calibration of the rule is fitted here
// (--write: Sources/Face/FaceAttemptCalibration.swift) and checked on the other half of the
// people (two halves by name, alternating), in both directions.
import BiometricCore
import BiometricFace
import COpenBLAS
import Foundation

/// The per-comparison SPEC score (FaceCalibration.lfw, what FaceVerification.score gives one
/// frame) of every (template image, probe image) pair, × 10 (scores are rounded to 0.1).
struct FrameScoreTable {
    let n: Int
    var tenths: [UInt16]
    @inline(__always) func score(_ template: Int, _ probe: Int) -> Double { Double(tenths[template * n + probe]) / 10 }
}

func frameScoreTable(_ d: ViewDescriptors, second raw: [Float]? = nil) -> FrameScoreTable {
    let n = d.files.count
    // Per image: the stored template (dlib 8 views; second chip + mirror) and the live probe (dlib
    // chip + mirror; second chip), as FaceTemplates, and the vectors whose distance is scored.
    func pair(_ i: Int) -> (template: FaceTemplate, probe: FaceTemplate) {
        guard let raw else {
            return (FaceTemplate(embedding: d.embedding(i, Array(0..<8)), quality: 80), FaceTemplate(embedding: d.embedding(i, [0, 1]), quality: 80))
        }
        let chip = Array(raw[(i * 256)..<(i * 256 + 128)]), mirror = Array(raw[(i * 256 + 128)..<(i * 256 + 256)])
        return (FaceTemplate(embedding: d.embedding(i, Array(0..<8)), second: zip(chip, mirror).map { $0 + $1 }, quality: 80),
                FaceTemplate(embedding: d.embedding(i, [0, 1]), second: chip, quality: 80))
    }
    let dim = raw == nil ? 128 : 256
    let pairs = (0..<n).map(pair)
    let t = pairs.flatMap { raw == nil ? $0.template.embedding : $0.template.fusedVector! }
    let p = pairs.flatMap { raw == nil ? $0.probe.embedding : $0.probe.fusedVector! }
    let templates = t, probes = p
    final class Table: @unchecked Sendable {
        var tenths: [UInt16]
        init(_ n: Int) { tenths = [UInt16](repeating: 0, count: n * n) }
    }
    let table = Table(n)
    let block = 256
    let blocks = (n + block - 1) / block
    let calibration = raw == nil ? FaceCalibration.lfw : FaceFusion.calibration
    let start = now()
    DispatchQueue.concurrentPerform(iterations: blocks) { bi in
        let i0 = bi * block, rows = min(block, n - i0)
        var dots = [Float](repeating: 0, count: rows * n)
        templates.withUnsafeBufferPointer { pt in
            probes.withUnsafeBufferPointer { pp in
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Int32(rows), Int32(n), Int32(dim), 1,
                            pt.baseAddress! + i0 * dim, Int32(dim), pp.baseAddress, Int32(dim), 0, &dots, Int32(n))
            }
        }
        table.tenths.withUnsafeMutableBufferPointer { out in
            for r in 0..<rows {
                for j in 0..<n {
                    let distance = Double(max(0, 2 - 2 * dots[r * n + j])).squareRoot()
                    out[(i0 + r) * n + j] = UInt16((calibration.score(distance) * 10).rounded())
                }
            }
        }
    }
    let result = FrameScoreTable(n: n, tenths: table.tenths)
    // The table must be what the session computes for a frame: FaceVerification.score on templates.
    var rng = SplitMix64(seed: 1)
    var off = 0, worst = 0.0
    for _ in 0..<20000 {
        let t = Int.random(in: 0..<n, using: &rng), p = Int.random(in: 0..<n, using: &rng)
        let session = FaceVerification.score(pairs[p].probe, against: [pairs[t].template], calibration: FaceCalibration.lfw)
        let diff = abs(session - result.score(t, p))
        if diff > 0 { off += 1; worst = max(worst, diff) }
    }
    say("per-frame scores of \(n)×\(n) template/probe pairs in \(fmt(now() - start, 1)) s; against FaceVerification.score on 20000 random pairs: \(off) differ (at most \(fmt(worst, 1)) points, float rounding at a 0.1 step)")
    return result
}

/// A sequence of probe images of one person: what one attempt shows, frame by frame.
struct ProbeSequence {
    let person: Int
    let images: [Int]
}

/// Up to `cap` sequences per person: `distinct` different photos (random subsets) shown
/// cyclically for `length` frames (distinct 1: one photo held for every frame). `exclude` removes
/// an image from the pool (a genuine attempt's enrolled photo).
func probeSequences(_ people: [[Int]], length: Int, distinct: Int, cap: Int, seed: UInt64) -> [ProbeSequence] {
    var rng = SplitMix64(seed: seed)
    var out: [ProbeSequence] = []
    for (person, images) in people.enumerated() where images.count >= distinct {
        var seen = Set<[Int]>()
        for _ in 0..<(cap * 4) where seen.count < cap {
            let subset = Array(images.shuffled(using: &rng).prefix(distinct))
            guard seen.insert(subset.sorted()).inserted else { continue }
            out.append(ProbeSequence(person: person, images: (0..<length).map { subset[$0 % distinct] }))
        }
    }
    return out
}

/// How the frames of an attempt turn into a histogram bin (and the number of bins).
struct AttemptStatistic: Sendable {
    let name: String
    let bins: Int
    let bin: @Sendable ([Double]) -> Int
    /// The SPEC score an attempt in this bin gets.
    let score: @Sendable (Int) -> Double

    /// The session's rule: the first `rule.frames` frames fused (`FaceAttemptRule.fused`), scored
    /// by `rule.calibration` — exactly `FaceAttemptRule.score(frameScores:)`, binned exactly
    /// (a mean of k scores on a 0.1 grid is a multiple of 0.1/k).
    static func fused(_ rule: FaceAttemptRule, name: String) -> AttemptStatistic {
        let k = rule.frames
        return AttemptStatistic(name: name, bins: 1000 * k + 1,
                                bin: { Int((FaceAttemptRule.fused($0.prefix(k)) * 1000 * Double(k)).rounded()) },
                                score: { rule.calibration.score(Double($0) / Double(1000 * k)) })
    }

    /// The rule this replaces: best frame of the first `frames` (any frame over the threshold matched).
    static func best(of frames: Int) -> AttemptStatistic {
        AttemptStatistic(name: "best of \(frames) frames (before)", bins: 1001,
                         bin: { Int(($0.prefix(frames).max()! * 10).rounded()) }, score: { Double($0) / 10 })
    }
}

/// Histogram of `statistic` over attempts: every template image × every sequence (impostor:
/// of another person; genuine: of the same person, never containing the template image).
func attemptHistogram(_ table: FrameScoreTable, templates: [Int], personOf: [Int], sequences: [ProbeSequence],
                      genuine: Bool, _ statistic: AttemptStatistic) -> [Int]
{
    final class Sum: @unchecked Sendable {
        var hist: [Int]
        let lock = NSLock()
        init(_ n: Int) { hist = [Int](repeating: 0, count: n) }
    }
    let sum = Sum(statistic.bins)
    let threads = ProcessInfo.processInfo.activeProcessorCount
    let byPerson = Dictionary(grouping: sequences.indices, by: { sequences[$0].person })
    DispatchQueue.concurrentPerform(iterations: threads) { part in
        var hist = [Int](repeating: 0, count: statistic.bins)
        var frames = [Double](repeating: 0, count: sequences.first?.images.count ?? 0)
        var ti = part
        while ti < templates.count {
            defer { ti += threads }
            let t = templates[ti]
            let mine: [Int] = genuine ? (byPerson[personOf[t]] ?? []) : []
            let candidates = genuine ? mine : Array(sequences.indices)
            for s in candidates {
                let seq = sequences[s]
                if genuine ? seq.images.contains(t) : seq.person == personOf[t] { continue }
                for (k, image) in seq.images.enumerated() { frames[k] = table.score(t, image) }
                hist[statistic.bin(frames)] += 1
            }
        }
        sum.lock.lock()
        for b in 0..<hist.count { sum.hist[b] += hist[b] }
        sum.lock.unlock()
    }
    return sum.hist
}

/// Fraction of attempts scoring at least `threshold`, with the count.
func rate(_ hist: [Int], _ statistic: AttemptStatistic, atLeast threshold: Double) -> (Double, Int, Int) {
    let total = hist.reduce(0, +)
    var hits = 0
    for b in 0..<hist.count where hist[b] > 0 && statistic.score(b) >= threshold { hits += hist[b] }
    return (total > 0 ? Double(hits) / Double(total) : 0, hits, total)
}

/// Tail of the per-attempt FAR: a straight line in log10 FAR against the attempt score, fitted
/// where there are >= 30 matches and FAR <= 1e-2 (scores from 24 up), read at `threshold`.
func tailFAR(_ hist: [Int], _ statistic: AttemptStatistic, at threshold: Double) -> (far: Double, fit: String)? {
    var points: [(Double, Double)] = []
    for t in stride(from: 24.0, through: 90, by: 1) {
        let (far, hits, _) = rate(hist, statistic, atLeast: t)
        if hits >= 30 && far <= 1e-2 { points.append((t, log10(far))) }
    }
    guard points.count >= 3 else { return nil }
    let n = Double(points.count)
    let mx = points.map(\.0).reduce(0, +) / n, my = points.map(\.1).reduce(0, +) / n
    let slope = points.map { ($0.0 - mx) * ($0.1 - my) }.reduce(0, +) / points.map { ($0.0 - mx) * ($0.0 - mx) }.reduce(0, +)
    let intercept = my - slope * mx
    return (pow(10, intercept + slope * threshold),
            "log10 FAR = \(fmt(intercept, 3)) \(slope < 0 ? "−" : "+") \(fmt(abs(slope), 4))·score over scores \(Int(points.first!.0))–\(Int(points.last!.0))")
}

/// The rule's calibration from impostor attempts: fused value → log10 per-attempt FAR, the upper
/// envelope of (a) the per-comparison promise, −score/12 (one photo held for every frame scores
/// what that photo scores), and (b) the measured FAR of each kind of sequence (1…k different
/// photos), empirical where >= 30 attempts reach the value, beyond that a straight line in log10
/// FAR fitted over FAR 1e-5…1e-2 (and never above the last empirical point).
func fitAttemptCalibration(_ hists: [[Int]], frames k: Int) -> (FARCalibration, [String]) {
    let bins = 1000 * k + 1
    var notes: [String] = []
    var curves: [[Double]] = []
    for (m, hist) in hists.enumerated() {
        let total = Double(hist.reduce(0, +))
        var ge = [Int](repeating: 0, count: bins + 1)
        for b in stride(from: bins - 1, through: 0, by: -1) { ge[b] = ge[b + 1] + hist[b] }
        var curve = [Double](repeating: 0, count: bins)
        var fit: [(Double, Double)] = []
        var lastReliable = 0
        for b in 0..<bins where ge[b] >= 30 {
            curve[b] = log10(Double(ge[b]) / total)
            lastReliable = b
            if curve[b] <= -2, curve[b] >= -5 { fit.append((Double(b), curve[b])) }
        }
        let nf = Double(fit.count)
        let mx = fit.map(\.0).reduce(0, +) / nf, my = fit.map(\.1).reduce(0, +) / nf
        let slope = fit.map { ($0.0 - mx) * ($0.1 - my) }.reduce(0, +) / fit.map { ($0.0 - mx) * ($0.0 - mx) }.reduce(0, +)
        let intercept = my - slope * mx
        // Too few points for a line: the last empirical FAR holds (no lower) beyond it.
        let line = fit.count >= 3 && slope < 0
        for b in (lastReliable + 1)..<bins { curve[b] = line ? min(curve[lastReliable], intercept + slope * Double(b)) : curve[lastReliable] }
        // In SPEC points of the fused (mean) score: log10 FAR = a + s·mean.
        notes.append("\(m + 1) different photo(s): \(Int(total)) attempts, empirical to mean score \(fmt(Double(lastReliable) / Double(10 * k), 1)), tail log10 FAR = \(fmt(intercept, 3)) \(slope < 0 ? "−" : "+") \(fmt(abs(slope * Double(10 * k)), 4))·mean (fit over \(fit.count) bins, FAR 1e-5…1e-2)")
        curves.append(curve)
    }
    var knots: [FARCalibration.Knot] = []
    for step in 0...200 {
        let f = Double(step) / 200  // mean score in steps of 0.5
        let b = min(bins - 1, Int((f * 1000 * Double(k)).rounded()))
        let envelope = min(0, max(-100 * f / 12, curves.map { $0[b] }.max()!))
        knots.append(.init(f, (envelope * 1000).rounded() / 1000 + 0))  // + 0: no "-0.000"
    }
    // Non-increasing in the fused value (a closer attempt is never more common).
    for i in 1..<knots.count where knots[i].log10FAR > knots[i - 1].log10FAR { knots[i].log10FAR = knots[i - 1].log10FAR }
    return (FARCalibration(.similarity, knots: knots, source: "LFW impostor attempts"), notes)
}

func runAttempts() {
    say("$ biometricd-face-bench " + arguments.joined(separator: " "))
    let k = arguments.firstIndex(of: "--frames").flatMap { Int(arguments[$0 + 1]) } ?? FaceCalibration.attemptFrames
    let cap = arguments.firstIndex(of: "--cap").flatMap { Int(arguments[$0 + 1]) } ?? 8
    let folds = lfwPairs()
    let files = Array(Set(folds.flatMap { $0.flatMap { [$0.a, $0.b] } })).sorted()
    let d = computeViews(files, views: 8, models: loadModels())
    let names = files.map { String($0.split(separator: "/")[0]) }
    let personNames = Array(Set(names)).sorted()
    let personIndex = Dictionary(uniqueKeysWithValues: personNames.enumerated().map { ($1, $0) })
    let personOf = names.map { personIndex[$0]! }
    var people = [[Int]](repeating: [], count: personNames.count)
    for (i, p) in personOf.enumerated() { people[p].append(i) }
    if let i = arguments.firstIndex(of: "--pair"), arguments.count > i + 2 {
        return runPair(d, enrolled: arguments[i + 1], impostor: arguments[i + 2], frames: k)
    }
    // --fused: per-frame scores of the two networks fused (v2 templates, FaceFusion.calibration).
    let fusedMode = arguments.contains("--fused")
    let table = frameScoreTable(d, second: fusedMode ? computeSecond(files) : nil)
    if fusedMode { say("fused scores: dlib share \(FaceFusion.dlibShare), per comparison FaceFusion.calibration") }
    say("LFW: \(files.count) images of \(personNames.count) people; \(people.filter { $0.count >= k }.count) with >= \(k) photos, \(people.filter { $0.count >= k + 1 }.count) with >= \(k + 1); attempt = first \(k) judged frames; up to \(cap) sequences per person and kind")

    /// People of one half (alternating by sorted name), or everyone.
    func subset(_ half: Int?) -> [[Int]] {
        people.enumerated().map { half == nil || $0.offset % 2 == half! ? $0.element : [] }
    }
    func templates(_ half: Int?) -> [Int] { (0..<files.count).filter { half == nil || personOf[$0] % 2 == half! } }
    func impostorHists(_ half: Int?, length: Int, kinds: [Int], _ statistic: AttemptStatistic) -> [[Int]] {
        kinds.map { m in
            attemptHistogram(table, templates: templates(half), personOf: personOf,
                             sequences: probeSequences(subset(half), length: length, distinct: m, cap: cap, seed: UInt64(100 * m + length)),
                             genuine: false, statistic)
        }
    }
    let thresholds: [Double] = [24, 36, 48, 60]
    func report(_ label: String, _ hist: [Int], _ statistic: AttemptStatistic) {
        var cells: [String] = []
        for t in thresholds {
            let (far, hits, total) = rate(hist, statistic, atLeast: t)
            var cell = "\(Int(t)): \(String(format: "%.2e", far)) (\(hits)/\(total))"
            if t >= 48, let tail = tailFAR(hist, statistic, at: t) { cell += " tail \(String(format: "%.1e", tail.far))" }
            cells.append(cell)
        }
        say("  \(label) [\(statistic.name)]  " + cells.joined(separator: "  "))
    }

    // Before: any of the frames over the threshold (best of N), sequences of N different photos.
    say("\nBEFORE — impostor attempts, best frame of N different photos of one other person (all people); stated FAR: 24 → 1e-2, 36 → 1e-3, 48 → 1e-4, 60 → 1e-5")
    for n in [1, 3, 5, 10] {
        report("N = \(n)", impostorHists(nil, length: n, kinds: [n], .best(of: n))[0], .best(of: n))
    }

    // The rule's calibration, fitted on one half, checked on the other; then on everyone (shipped).
    let kinds = Array(1...k)
    var shipped: FARCalibration?
    for (fitHalf, testHalf) in [(0, 1), (1, 0), (nil, nil) as (Int?, Int?)] {
        let raw = AttemptStatistic.fused(FaceAttemptRule(frames: k, calibration: FaceCalibration.attempt), name: "raw")
        let (calibration, notes) = fitAttemptCalibration(impostorHists(fitHalf, length: k, kinds: kinds, raw), frames: k)
        let rule = FaceAttemptRule(frames: k, calibration: calibration)
        if let fitHalf, let testHalf {
            say("\nAFTER — rule fitted on half \(fitHalf) of the people, impostor attempts of half \(testHalf) (held out):")
            for note in notes { say("  fit: " + note) }
            let statistic = AttemptStatistic.fused(rule, name: "mean of \(k) frames, calibrated")
            let hists = impostorHists(testHalf, length: k, kinds: kinds, statistic)
            for m in kinds { report("\(m) different photo(s) over \(k) frames", hists[m - 1], statistic) }
            let identity = FARCalibration(.similarity, knots: [.init(0, 0), .init(1, -100.0 / 12)], source: "identity")
            let uncalibrated = AttemptStatistic.fused(FaceAttemptRule(frames: k, calibration: identity), name: "mean of \(k) frames, uncalibrated: score = mean")
            report("\(k) different photos over \(k) frames", impostorHists(testHalf, length: k, kinds: [k], uncalibrated)[0], uncalibrated)
        } else {
            say("\nshipped calibration: fitted on all people")
            for note in notes { say("  fit: " + note) }
            for score in [24.0, 36, 48, 60, 72] {
                let f = stride(from: 0.0, through: 1.0, by: 0.0005).first { calibration.score($0) >= score } ?? 1
                say("  attempt score \(Int(score)) at mean frame score \(fmt(f * 100, 1))")
            }
            shipped = calibration
        }
    }

    // Genuine attempts: another K (or 5) photos of the enrolled person, before and after.
    say("\nGENUINE — the enrolled photo of A against other photos of A (all people):")
    let rule = FaceAttemptRule(frames: k, calibration: shipped!)
    let after = AttemptStatistic.fused(rule, name: "mean of \(k) frames, calibrated (after)")
    let longest = max(5, k)
    let genuine = probeSequences(people.map { $0.count > longest ? $0 : [] }, length: longest, distinct: longest, cap: cap, seed: 7)
    let gTemplates = (0..<files.count).filter { people[personOf[$0]].count > longest }
    say("  \(gTemplates.count) templates of \(people.filter { $0.count > longest }.count) people with > \(longest) photos, sequences of \(longest) different other photos")
    for statistic in [AttemptStatistic.best(of: 1), .best(of: 5), after] {
        let hist = attemptHistogram(table, templates: gTemplates, personOf: personOf, sequences: genuine, genuine: true, statistic)
        say("  TAR [\(statistic.name)] " + [24.0, 36, 48].map { t in
            let (r, hits, total) = rate(hist, statistic, atLeast: t)
            return "\(Int(t)): \(fmt(r * 100, 2)) % (\(hits)/\(total))"
        }.joined(separator: "  "))
    }
    // Frames the old rule needed to match (it stopped at the first frame over the threshold).
    for t in [24.0, 36, 48] {
        var used = [Int](repeating: 0, count: 6)
        for tpl in gTemplates {
            for seq in genuine where seq.person == personOf[tpl] && !seq.images.contains(tpl) {
                if let first = seq.images.prefix(5).firstIndex(where: { table.score(tpl, $0) >= t }) { used[first + 1] += 1 }
            }
        }
        let matched = used.reduce(0, +)
        say("  before, threshold \(Int(t)): genuine matches by the frame they needed (1…5): \(used[1...].map(String.init).joined(separator: " ")); mean \(fmt(Double(used.enumerated().map { $0.offset * $0.element }.reduce(0, +)) / Double(max(1, matched)), 2)); after: always \(k)")
    }

    if arguments.contains("--write"), fusedMode, let calibration = shipped {
        let swift = """
            import BiometricCore

            /// The per-attempt score calibration of fused (v2) verification: `FaceAttemptRule` on
            /// per-frame scores of the fused distance (`FaceFusion.calibration`).
            /// GENERATED by `biometricd-face-bench attempts --frames \(k) --fused --points \(shippedSecondPoints) --write` — do not edit
            /// by hand; see Docs/face.md "Per-attempt FAR" and "Two networks, one score". Fitted like
            /// FaceAttemptCalibration.swift, on LFW impostor attempts scored with both networks.
            extension FaceFusion {
                public static let attempt = FARCalibration(.similarity, knots: attemptKnots, source: "LFW fused impostor attempts of \(k) frames")
                static let attemptKnots: [FARCalibration.Knot] = [
            \(calibration.knots.map { "        .init(\(fmt($0.value, 3)), \(fmt($0.log10FAR, 3))),"}.joined(separator: "\n"))
                ]
            }

            """
        try! swift.write(toFile: repo + "/Sources/Face/FaceFusionAttemptCalibration.swift", atomically: true, encoding: .utf8)
        say("wrote Sources/Face/FaceFusionAttemptCalibration.swift (\(calibration.knots.count) knots, \(k) frames)")
    } else if arguments.contains("--write"), let calibration = shipped {
        let swift = """
            import BiometricCore

            /// The per-attempt score calibration (SPEC §4: a threshold states the FAR of one attempt),
            /// for `FaceAttemptRule`: fused value (mean per-frame score / 100) → log10 per-attempt FAR.
            /// GENERATED by `biometricd-face-bench attempts --frames \(k) --write` — do not edit by hand;
            /// see Docs/face.md "Per-attempt FAR". Fitted on LFW impostor attempts (every enrolled photo
            /// against sequences of \(k) frames of 1…\(k) different photos of each other person): the upper
            /// envelope of their FAR and of the per-comparison calibration's, −score/12.
            extension FaceCalibration {
                /// How many judged frames one attempt fuses.
                public static let attemptFrames = \(k)
                public static let attempt = FARCalibration(.similarity, knots: attemptKnots, source: "LFW impostor attempts of \(k) frames")
                static let attemptKnots: [FARCalibration.Knot] = [
            \(calibration.knots.map { "        .init(\(fmt($0.value, 3)), \(fmt($0.log10FAR, 3))),"}.joined(separator: "\n"))
                ]
            }

            """
        try! swift.write(toFile: repo + "/Sources/Face/FaceAttemptCalibration.swift", atomically: true, encoding: .utf8)
        say("wrote Sources/Face/FaceAttemptCalibration.swift (\(calibration.knots.count) knots, \(k) frames)")
    }
}

/// One enrolled person against every sequence of `frames` different photos of one impostor (the
/// review's case: Colin Powell's photos against Tony Blair's template). The template is what an
/// enrolment of three frames of A's first three photos makes (jittered, fused).
func runPair(_ d: ViewDescriptors, enrolled a: String, impostor b: String, frames k: Int) {
    let photosA = d.files.indices.filter { d.files[$0].hasPrefix(a + "/") }
    let photosB = d.files.indices.filter { d.files[$0].hasPrefix(b + "/") }
    guard photosA.count >= 3, photosB.count >= k else { return say("need 3 photos of \(a) and \(k) of \(b) in the LFW set") }
    let template = FaceTemplate.fused(photosA.prefix(3).map { FaceTemplate(embedding: d.embedding($0, Array(0..<8)), quality: 80) })!
    let probes = photosB.map { FaceTemplate(embedding: d.embedding($0, [0, 1]), quality: 80) }
    let perPhoto = probes.map { FaceVerification.score($0, against: [template], calibration: FaceCalibration.lfw) }
    say("\(a) enrolled from \(photosA.prefix(3).map { d.files[$0] }.joined(separator: ", "))")
    say("\(b): \(probes.count) photos score \(perPhoto.map { fmt($0, 1) }.joined(separator: " ")) per comparison (the replaced rule matched on the best frame: \(fmt(perPhoto.max()!, 1)))")
    var scores: [Double] = []
    func choose(_ from: ArraySlice<Int>, _ n: Int) -> [[Int]] {
        guard n > 0 else { return [[]] }
        guard let first = from.first else { return [] }
        return choose(from.dropFirst(), n - 1).map { [first] + $0 } + choose(from.dropFirst(), n)
    }
    for subset in choose(Array(probes.indices)[...], k) {
        scores.append(FaceAttemptRule.standard.score(frameScores: subset.map { perPhoto[$0] })!)
    }
    scores.sort()
    say("every attempt of \(k) different photos (\(scores.count)), FaceAttemptRule.standard: max \(fmt(scores.last!, 1)), median \(fmt(scores[scores.count / 2], 1))")
}
