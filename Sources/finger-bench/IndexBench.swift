// biometricd-finger-bench print index: 1:N with the pre-selection index (PrintIndex) against the
// exhaustive scan (FingerMatcher.search) in the same run, on FVC2002 DB2_B probes and galleries
// of perturbed replicas.
//
// Protocol: each of the 80 real prints is a probe. Its gallery is the 79 other real prints (7 of
// them its mates) plus N distractors. Distractors are replicas of the real prints, perturbed by
// `synthetic` (rotation ±30°, shift ±40 px, 25 % of minutiae dropped, ±2 px / ±0.1 rad jitter,
// 10 % spurious minutiae added), and only of prints of the other 9 fingers: a replica of the
// probe's own finger would be a mate, not a distractor. Rank-1 is correct when the best reference
// is a real print of the probe's finger.
import BiometricCore
import BiometricFinger
import Dispatch
import Foundation
import Synchronization

private func f(_ v: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", v) }

/// Prints and flushes, so progress shows when the output goes to a file.
private func emit(_ line: String) {
    print(line)
    fflush(nil)
}

/// Resident memory of this process in MB (from /proc/self/statm).
private func residentMB() -> Double {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
          let pages = text.split(separator: " ").dropFirst().first.flatMap({ Double($0) }) else { return 0 }
    return pages * Double(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
}

/// `replicas` perturbed copies of each base template, replica-major (copy r of every base, then
/// copy r + 1), so any prefix mixes all bases. Prepared on every core.
private func distractorPool(_ bases: [FingerTemplate], replicas: Int, matcher: FingerMatcher) -> [PreparedPrint] {
    let total = replicas * bases.count
    let chunk = 2048
    let parts = Mutex<[Int: [PreparedPrint]]>([:])
    DispatchQueue.concurrentPerform(iterations: (total + chunk - 1) / chunk) { part in
        var out: [PreparedPrint] = []
        for i in (part * chunk)..<min(total, (part + 1) * chunk) {
            var rng = SplitMix64(seed: UInt64(i) &* 0x2545_F491_4F6C_DD1D)
            // An empty model is still a valid (never matching) reference.
            out.append(matcher.prepare(synthetic(from: bases[i % bases.count], rng: &rng))
                ?? matcher.prepare(FingerTemplate(sourcePPI: 500, width: 1, height: 1, quality: 0, position: nil, minutiae: []))!)
        }
        parts.withLock { $0[part] = out }
    }
    return parts.withLock { p in p.keys.sorted().flatMap { p[$0]! } }
}

private struct Timings {
    var values: [Double] = []
    mutating func add(_ ms: Double) { values.append(ms) }
    var mean: Double { values.isEmpty ? .nan : values.reduce(0, +) / Double(values.count) }
    func percentile(_ p: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let s = values.sorted()
        return s[min(s.count - 1, Int((p * Double(s.count - 1)).rounded()))]
    }
    var summary: String { "\(f(mean)) (p50 \(f(percentile(0.5))), p95 \(f(percentile(0.95))))" }
}

func runIndexBench(_ arguments: [String]) {
    func option(_ name: String) -> String? {
        guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count else { return nil }
        return arguments[i + 1]
    }
    let sizes = (option("--sizes") ?? "10000,100000").split(separator: ",").compactMap { Int($0) }.sorted()
    let exhaustiveProbes = option("--exhaustive-probes").flatMap { Int($0) } ?? 80
    let threads = ProcessInfo.processInfo.activeProcessorCount
    let matcher = FingerMatcher()

    let images = loadFVC()
    let templates = extractAll(images)
    let real = templates.map { matcher.prepare($0)! }
    let fingers = images.map(\.finger)
    emit("probes: 80 FVC2002 DB2_B prints (10 fingers × 8); threads \(threads); code \(PrintIndex.bytesPerReference) B/reference")

    // Small gallery: each print vs the 79 others (the `print fvc` protocol).
    var exhaustiveSmall = 0, indexedSmall = 0, coarseOnly = 0
    let forced = PrintIndex.Shortlist(fraction: 0, minimum: 8, maximum: 8)
    for i in real.indices {
        let others = real.indices.filter { $0 != i }
        let gallery = others.map { real[$0] }
        func correct(_ hits: [(index: Int, score: Double)]) -> Bool { hits.first.map { fingers[others[$0.index]] == fingers[i] } ?? false }
        if correct(matcher.search(real[i], in: gallery, limit: 1)) { exhaustiveSmall += 1 }
        if correct(PrintIndex(gallery, matcher: matcher).search(real[i], limit: 1)) { indexedSmall += 1 }
        if correct(PrintIndex(gallery, matcher: matcher, shortlist: forced).search(real[i], limit: 1)) { coarseOnly += 1 }
    }
    emit("79 others: rank-1 exhaustive \(exhaustiveSmall)/80, PrintIndex (falls back to exhaustive) \(indexedSmall)/80, "
        + "forced shortlist of 8 (10 %) \(coarseOnly)/80")

    // Distractor pool: enough replicas of every print that any 9 fingers give the largest size.
    let perBase = (sizes.last! + 71) / 72
    let rss0 = residentMB()
    var t0 = printClock()
    let pool = distractorPool(templates, replicas: perBase, matcher: matcher)
    let poolSeconds = printClock() - t0
    let minutiae = pool.prefix(10_000).map(\.template.minutiae.count).reduce(0, +) / min(10_000, pool.count)
    emit("distractor pool: \(pool.count) replicas (\(perBase) of each print), mean \(minutiae) minutiae, prepared in \(f(poolSeconds)) s; "
        + "RSS +\(f(residentMB() - rss0, 0)) MB (\(f((residentMB() - rss0) * 1024 / Double(pool.count), 1)) KB/reference, mostly cylinders)")

    let sweep = [0.0025, 0.005, 0.01, 0.02]
    for size in sizes {
        let n = size + 79
        let k = PrintIndex.Shortlist.standard.size(for: n)
        var exhaustiveOK = 0, indexedOK = 0, same = 0, exhaustiveRuns = 0
        var missed: [String] = [] // probes whose rank-1 is wrong, and by which search
        var tExhaustive = Timings(), tIndexed = Timings(), tCoarse = Timings(), tFull = Timings(), tBuild = Timings()
        // Per penetration: rank-1 through that shortlist, best-scoring mate kept, any mate kept.
        var sweepRank = [Int](repeating: 0, count: sweep.count), sweepBest = sweepRank, sweepAny = sweepRank
        for i in real.indices {
            let finger = fingers[i]
            let others = real.indices.filter { $0 != i }
            var gallery = others.map { real[$0] }
            gallery.reserveCapacity(n)
            for (j, replica) in pool.enumerated() where fingers[j % 80] != finger {
                gallery.append(replica)
                if gallery.count == n { break }
            }
            func isMate(_ index: Int) -> Bool { index < others.count && fingers[others[index]] == finger }
            let probe = real[i]
            t0 = printClock()
            let index = PrintIndex(gallery, matcher: matcher)
            tBuild.add((printClock() - t0) * 1000)

            t0 = printClock()
            let indexed = index.search(probe, limit: 1, threads: threads)
            tIndexed.add((printClock() - t0) * 1000)
            if let best = indexed.first, isMate(best.index) { indexedOK += 1 }
            // The two stages of the same search, timed apart.
            t0 = printClock()
            let shortlist = index.candidates(for: probe, count: k, threads: threads)
            tCoarse.add((printClock() - t0) * 1000)
            t0 = printClock()
            _ = matcher.search(probe, in: shortlist.map { gallery[$0] }, limit: 1, threads: threads)
            tFull.add((printClock() - t0) * 1000)

            // Penetration sweep: shortlists are nested, so the largest one's full scores serve all.
            let mates = others.indices.filter(isMate)
            let bestMate = mates.max { matcher.similarity(probe, gallery[$0]) < matcher.similarity(probe, gallery[$1]) }!
            let lists = sweep.map { index.candidates(for: probe, count: Int(($0 * Double(n)).rounded(.up)), threads: threads) }
            let full = Dictionary(uniqueKeysWithValues: lists.last!.map { ($0, matcher.similarity(probe, gallery[$0])) })
            for (s, list) in lists.enumerated() {
                let winner = list.max { full[$0]! != full[$1]! ? full[$0]! < full[$1]! : $0 > $1 }!
                if isMate(winner) { sweepRank[s] += 1 }
                if list.contains(bestMate) { sweepBest[s] += 1 }
                if list.contains(where: isMate) { sweepAny[s] += 1 }
            }

            if i < exhaustiveProbes {
                t0 = printClock()
                let exhaustive = matcher.search(probe, in: gallery, limit: 1, threads: threads)
                tExhaustive.add((printClock() - t0) * 1000)
                exhaustiveRuns += 1
                if let best = exhaustive.first, isMate(best.index) { exhaustiveOK += 1 }
                if indexed.first?.index == exhaustive.first?.index { same += 1 }
                let (e, x) = (exhaustive.first.map { isMate($0.index) } ?? false, indexed.first.map { isMate($0.index) } ?? false)
                if !e || !x { missed.append("\(finger)_\(images[i].impression) (\(e ? "" : "exhaustive ")\(x ? "" : "pre-selected"))") }
            }
        }
        emit("")
        emit("gallery \(n) (79 real + \(size) distractors), standard shortlist \(k) = penetration \(f(100 * Double(k) / Double(n), 2)) %")
        emit("  rank-1: exhaustive \(exhaustiveOK)/\(exhaustiveRuns), pre-selected \(indexedOK)/80; same best reference as exhaustive \(same)/\(exhaustiveRuns)")
        emit("  rank-1 misses: \(missed.isEmpty ? "none" : missed.joined(separator: ", "))")
        emit("  ms/probe on \(threads) threads, mean (p50, p95):")
        emit("    pre-selected total \(tIndexed.summary) = coarse \(tCoarse.summary) + full on shortlist \(tFull.summary)")
        emit("    exhaustive (baseline) \(tExhaustive.summary) over \(exhaustiveRuns) probes → \(f(tExhaustive.mean / tIndexed.mean))× the pre-selected time")
        emit("    (building the index from prepared prints: \(tBuild.summary) ms; the daemon does it once per gallery change)")
        emit("  penetration | shortlist | rank-1 | best-scoring mate kept | any mate kept")
        for (s, p) in sweep.enumerated() {
            emit("  \(f(100 * p, 2)) % | \(Int((p * Double(n)).rounded(.up))) | \(sweepRank[s])/80 | \(sweepBest[s])/80 | \(sweepAny[s])/80")
        }
    }
}
