// lfw-views: which averaged chip views (mirror, fixed jitters) help on LFW. The raw descriptor of
// every view of every image is computed once and cached; any subset is then evaluated in seconds.
import BiometricCamera
import BiometricFace
import COpenBLAS
import Foundation

/// Raw descriptors: `views` × 128 floats per image, in `files` order.
struct ViewDescriptors {
    let files: [String]
    let views: Int
    var data: [Float]

    func embedding(_ file: Int, _ subset: [Int]) -> [Float] {
        var sum = [Float](repeating: 0, count: 128)
        for v in subset { for j in 0..<128 { sum[j] += data[(file * views + v) * 128 + j] } }
        let norm = sum.map { $0 * $0 }.reduce(0, +).squareRoot()
        return norm > 0 ? sum.map { $0 / norm } : sum
    }
}

func computeViews(_ files: [String], views: Int, models: FaceModels, alignment: Int32 = 0, tag: String = "",
                  cache useCache: Bool = true) -> ViewDescriptors {
    let cache = repo + "/.build/lfw-views-\(views)\(tag).bin"
    if useCache, let blob = FileManager.default.contents(atPath: cache), blob.count == files.count * views * 128 * 4 {
        print("descriptors from \(cache)")
        return ViewDescriptors(files: files, views: views, data: blob.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) })
    }
    final class Store: @unchecked Sendable {
        var data: [Float]
        var misses = 0
        let lock = NSLock()
        init(_ n: Int) { data = [Float](repeating: 0, count: n) }
    }
    let store = Store(files.count * views * 128)
    let (seconds, threads) = forEachLFWImage(files) { i, image in
        _ = try? models.withEngine { engine in
            let found = try engine.detect(image, minSize: 30)
            let central = FaceBox(x: 68, y: 68, width: 114, height: 124)
            let box = centralDetection(found)?.box
            let landmarks = try engine.landmarks(image, box: box ?? central)
            let d = try engine.descriptors(image, landmarks: landmarks, alignment: alignment, views: views)
            store.lock.lock()
            if box == nil { store.misses += 1 }
            store.data.replaceSubrange((i * views * 128)..<((i + 1) * views * 128), with: d)
            store.lock.unlock()
        }
    }
    print("embedded \(views) views of \(files.count) images in \(fmt(seconds, 0)) s (\(fmt(seconds / Double(files.count) * 1000, 1)) ms/image wall, \(threads) threads); detector missed \(store.misses) (central box used)")
    if useCache { _ = store.data.withUnsafeBufferPointer { FileManager.default.createFile(atPath: cache, contents: Data(buffer: $0)) } }
    return ViewDescriptors(files: files, views: views, data: store.data)
}

/// 10-fold accuracy (threshold from 9 folds) and TAR at FAR 1e-3/1e-4/1e-5 over all cross-identity
/// pairs, with side A of every pair embedded from `a` and side B from `b`.
/// The distance histogram (bins of 2 / `bins`) of all impostor pairs (for the calibration).
struct PairHistograms {
    let impostor: [Int]
    let bins: Int
}

/// Every pair i < j of `n` unit embeddings, row i of `a` against row j of `b` (`dim` floats each),
/// binned by distance (0–2 in `bins` bins; dot products by blocks of 512 rows through BLAS), a
/// pair genuine when `ids` agree; and the TAR (%) at FAR 1e-3, 1e-4 and 1e-5 read off the bins.
struct CrossPairs {
    let bins: Int
    private(set) var impostor: [Int]
    private(set) var genuine: [Int]
    private(set) var tars: [Double] = []

    init(a: [Float], b: [Float], dim: Int, ids: [String], bins: Int = 4000) {
        let n = ids.count
        self.bins = bins
        impostor = [Int](repeating: 0, count: bins + 1)
        genuine = impostor
        let block = 512
        var dots = [Float](repeating: 0, count: block * n)
        var i0 = 0
        while i0 < n {
            let rows = min(block, n - i0)
            a.withUnsafeBufferPointer { pa in
                b.withUnsafeBufferPointer { pb in
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Int32(rows), Int32(n), Int32(dim), 1,
                                pa.baseAddress! + i0 * dim, Int32(dim), pb.baseAddress, Int32(dim), 0, &dots, Int32(n))
                }
            }
            for r in 0..<rows {
                let i = i0 + r
                for j in (i + 1)..<n {
                    let dd = Double(max(0, 2 - 2 * dots[r * n + j])).squareRoot()
                    let bin = min(bins, Int(dd / 2 * Double(bins)))
                    if ids[i] == ids[j] { genuine[bin] += 1 } else { impostor[bin] += 1 }
                }
            }
            i0 += rows
        }
        let it = impostor.reduce(0, +), gt = genuine.reduce(0, +)
        for far in [1e-3, 1e-4, 1e-5] {
            var ci = 0, cg = 0, best = 0
            for b in 0...bins {
                ci += impostor[b]; cg += genuine[b]
                if Double(ci) / Double(it) <= far { best = cg } else { break }
            }
            tars.append(Double(best) / Double(gt) * 100)
        }
    }

    var summary: String {
        "all pairs (\(genuine.reduce(0, +)) genuine, \(impostor.reduce(0, +)) impostor): TAR \(tars.map { fmt($0, 2) }.joined(separator: " / ")) % at FAR 1e-3/1e-4/1e-5"
    }
}

@discardableResult
func evaluateViews(_ d: ViewDescriptors, folds: [[Pair]], a: [Int], b: [Int], label: String) -> PairHistograms {
    let n = d.files.count
    var ma = [Float](repeating: 0, count: n * 128), mb = ma
    for i in 0..<n {
        ma.replaceSubrange((i * 128)..<((i + 1) * 128), with: d.embedding(i, a))
        mb.replaceSubrange((i * 128)..<((i + 1) * 128), with: d.embedding(i, b))
    }
    let index = Dictionary(uniqueKeysWithValues: d.files.enumerated().map { ($1, $0) })
    func distance(_ i: Int, _ j: Int) -> Double {
        var s: Float = 0
        for k in 0..<128 { let x = ma[i * 128 + k] - mb[j * 128 + k]; s += x * x }
        return Double(s.squareRoot())
    }
    let scored = folds.map { $0.map { p in (distance(index[p.a]!, index[p.b]!), p.same) } }
    var accuracies: [Double] = []
    for k in 0..<scored.count {
        let train = scored.enumerated().filter { $0.offset != k }.flatMap(\.element)
        var bestT = 0.6, bestAcc = 0.0
        for t in stride(from: 0.3, through: 0.9, by: 0.0025) {
            let acc = Double(train.filter { ($0.0 < t) == $0.1 }.count) / Double(train.count)
            if acc > bestAcc { bestAcc = acc; bestT = t }
        }
        accuracies.append(Double(scored[k].filter { ($0.0 < bestT) == $0.1 }.count) / Double(scored[k].count))
    }
    let mean = accuracies.reduce(0, +) / Double(accuracies.count)
    let std = (accuracies.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(accuracies.count)).squareRoot()

    let ids = d.files.map { String($0.split(separator: "/")[0]) }
    let all = CrossPairs(a: ma, b: mb, dim: 128, ids: ids)
    say("\(label): LFW 10-fold \(fmt(mean * 100, 2)) % ± \(fmt(std * 100, 2)) (folds: \(accuracies.map { fmt($0 * 100, 1) }.joined(separator: " "))); \(all.summary)")
    return PairHistograms(impostor: all.impostor, bins: all.bins)
}

func runLFWViews(count: Int) {
    let folds = lfwPairs()
    let files = Array(Set(folds.flatMap { $0.flatMap { [$0.a, $0.b] } })).sorted()
    let alignment = arguments.firstIndex(of: "--alignment").flatMap { Int32(arguments[$0 + 1]) } ?? 0
    let hog = arguments.contains("--hog")
    let tag = (alignment == 0 ? "" : "-a\(alignment)") + (hog ? "-hog" : "")
    let d = computeViews(files, views: count, models: loadModels(yunet: !hog), alignment: alignment, tag: tag)
    if arguments.contains("--cache-only") { return }
    let jitters = Array(2..<count)
    if arguments.contains("--errors") { listErrors(d, folds: folds, subset: [0, 1]); return }
    evaluateViews(d, folds: folds, a: [0], b: [0], label: "chip")
    evaluateViews(d, folds: folds, a: [0, 1], b: [0, 1], label: "chip+mirror")
    for k in [2, 4, 6, 8, 12, 16, 24, 32, 40] where k <= jitters.count {
        evaluateViews(d, folds: folds, a: Array(jitters.prefix(k)), b: Array(jitters.prefix(k)), label: "\(k) jitters")
        evaluateViews(d, folds: folds, a: [0, 1] + jitters.prefix(k), b: [0, 1] + jitters.prefix(k), label: "chip+mirror+\(k) jitters")
        evaluateViews(d, folds: folds, a: [0, 1] + jitters.prefix(k), b: [0, 1], label: "asym: chip+mirror+\(k) jitters vs chip+mirror")
    }
}

/// Unbuffered line (progress survives a pipe).
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

/// The pairs a subset gets wrong at the all-folds best threshold (for looking at them).
func listErrors(_ d: ViewDescriptors, folds: [[Pair]], subset: [Int]) {
    let index = Dictionary(uniqueKeysWithValues: d.files.enumerated().map { ($1, $0) })
    let all = folds.flatMap { $0 }
    let scored = all.map { p -> (Double, Pair) in
        let a = d.embedding(index[p.a]!, subset), b = d.embedding(index[p.b]!, subset)
        return (Double(zip(a, b).map { ($0 - $1) * ($0 - $1) }.reduce(0, +).squareRoot()), p)
    }
    var bestT = 0.6, bestAcc = 0.0
    for t in stride(from: 0.3, through: 0.9, by: 0.0025) {
        let acc = Double(scored.filter { ($0.0 < t) == $0.1.same }.count) / Double(scored.count)
        if acc > bestAcc { bestAcc = acc; bestT = t }
    }
    say("threshold \(fmt(bestT, 4)): \(scored.filter { ($0.0 < bestT) != $0.1.same }.count) errors")
    for (dist, p) in scored.sorted(by: { $0.0 < $1.0 }) where (dist < bestT) != p.same {
        say("\(p.same ? "genuine" : "impostor") \(fmt(dist, 4)) \(p.a) \(p.b)")
    }
}
