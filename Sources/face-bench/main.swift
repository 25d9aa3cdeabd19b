// biometricd-face-bench: accuracy, calibration and speed of the face pipeline on public data.
//   lfw        LFW View-2 10-fold accuracy, TAR at FAR 1e-3/1e-4/1e-5 over all cross-identity pairs,
//              and the score calibration (writes Sources/Face/FaceCalibration.swift with --write)
//   attempts   the FAR of one verify attempt (sequences of photos of one impostor) under the
//              session's decision rule, before and after, and its calibration (--write:
//              Sources/Face/FaceAttemptCalibration.swift); genuine attempts' TAR
//   stages     per-stage ms at 640x480 on one core
//   preview    the live preview's cost per frame (downscale + JPEG + event) against analyze, same process
//   identify   1:N search time for 10k/100k/1M templates vs the machine's memory bandwidth
//   spoof      the screen-replay cue on a live and a replayed clip
//   blink      per-frame EAR and BlinkLiveness on a real blink clip (25/20/15 fps), and the crop-only
//              EyeState.openness ROC on CEW eye crops (EAR needs a whole face)
//   eyes       eye state in the dark: EAR vs the iris network's eyelid opening on CEW crops, the live
//              clips and darkened copies (γ, noise), under the same blink rule (Eyes.swift)
//   poses CLIP yaw, pitch, roll and EAR of every frame of ../shared/data/video/CLIP (challenge steps)
//   challenge  how often a replay of each clip passes random 2-move challenges (--trace: one run)
//   recapture  face-region re-capture features (moire, high frequencies, saturation, glare) on the
//              live and replayed clips and LFW stills: can a replay with no borders be told apart?
//   passive    the passive detector (MiniFASNet) and frame noise on the clips (whole, cropped 1.15x to
//              the face, grey), a looped still and LFW stills; when PassiveLiveness decides
//   passive-sessions  whole verify sessions in passive mode (--blink: passive+blink) started every
//              0.5 s of each clip, whole, cropped and grey: live, refused by which cue, and when
//   passive-window  how the passive cues separate live faces from attacks as their window (frames
//              read before deciding) shortens, 3…15 frames, sessions every --step frames [5]
//   landmarks  the PFLD network against dlib's 68-point predictor it replaced, on LFW: point
//              distances per region, pose and eye-aspect-ratio differences, ResNet descriptors, cost
//   --dlib68   (any command) run dlib's 68-point predictor instead of the PFLD network
// Run from the repository root after `swift build -c release`:  .build/release/biometricd-face-bench lfw
import BiometricCamera
import BiometricCore
import BiometricFace
import COpenBLAS
import CFaceVision
import CImaging
import Foundation

#if canImport(Glibc)
import Glibc
#endif

let repo = FileManager.default.currentDirectoryPath
let shared = repo + "/../shared/data"
let modelsDir = ProcessInfo.processInfo.environment["BIOMETRICD_MODELS"] ?? repo + "/models"
let arguments = Array(CommandLine.arguments.dropFirst())
/// The 68-point landmark model: the PFLD network the daemon runs, or with `--dlib68` dlib's
/// predictor it replaced (to compare the two in one build).
let landmarkModel = modelsDir + "/" + (arguments.contains("--dlib68") ? FaceModels.dlib68Name : FaceModels.landmarkName)

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}
func fmt(_ v: Double, _ d: Int = 2) -> String { String(format: "%.\(d)f", v) }

/// The face models the benches run: dlib's and the landmark network always; YuNet, the two
/// anti-spoofing networks and the second face network as asked.
func loadModels(yunet: Bool = true, antispoof: Bool = false, secondNetwork: Bool = false) -> FaceModels {
    do {
        return try FaceModels(landmarks: landmarkModel, shape5: modelsDir + "/shape_predictor_5_face_landmarks.dat",
                              resnet: modelsDir + "/dlib_face_recognition_resnet_model_v1.dat",
                              yunet: yunet ? modelsDir + "/face_detection_yunet_2023mar.onnx" : nil,
                              antispoof: antispoof ? .init(folder: modelsDir) : nil,
                              recognizer: secondNetwork ? recognizerPath() : nil)
    } catch {
        fatalError("models: \(error) (run scripts/setup.sh; the anti-spoofing models come from ../shared/models/antispoof)")
    }
}

/// Runs `body` on every LFW image of `files` (its index, the decoded image), on every core, with
/// progress every 500 images; returns the wall time and the thread count.
func forEachLFWImage(_ files: [String], _ body: @Sendable (Int, ImageRef) -> Void) -> (seconds: Double, threads: Int) {
    let start = now()
    let threads = ProcessInfo.processInfo.activeProcessorCount
    DispatchQueue.concurrentPerform(iterations: threads) { t in
        var i = t
        while i < files.count {
            defer { i += threads }
            guard let frame = readFrame(shared + "/faces/lfw/images/" + files[i]) else { continue }
            body(i, ImageRef(pixels: UnsafePointer(frame.bgr!.pointer), width: frame.width, height: frame.height, channels: 3))
            if t == 0, i % 500 == 0 { say("  \(i)/\(files.count) \(fmt(now() - start, 0)) s") }
        }
    }
    return (now() - start, threads)
}

/// The detection nearest the centre of a 250x250 LFW image (where LFW puts the named person).
func centralDetection(_ found: [FaceEngine.Detection]) -> FaceEngine.Detection? {
    found.min { abs($0.box.centerX - 125) + abs($0.box.centerY - 125) < abs($1.box.centerX - 125) + abs($1.box.centerY - 125) }
}

/// A decoded image file as a Frame.
func readFrame(_ path: String) -> Frame? { try? Frame(contentsOfFile: path) }

// MARK: - LFW

struct Pair {
    let a: String
    let b: String
    let same: Bool
}

func lfwPairs() -> [[Pair]] {
    let text = (try? String(contentsOfFile: shared + "/faces/lfw/pairs.txt", encoding: .utf8)) ?? ""
    var lines = text.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
    if lines.first?.count == 1 { lines = text.split(separator: "\n").map { $0.split(separator: " ").map(String.init) } }
    func path(_ name: String, _ n: String) -> String {
        String(format: "%@/%@_%04d.jpg", name, name, Int(n)!)
    }
    let header = lines.removeFirst()
    let folds = Int(header[0])!, per = Int(header[1])!
    var result: [[Pair]] = []
    var i = 0
    for _ in 0..<folds {
        var fold: [Pair] = []
        for _ in 0..<per { let l = lines[i]; i += 1; fold.append(Pair(a: path(l[0], l[1]), b: path(l[0], l[2]), same: true)) }
        for _ in 0..<per { let l = lines[i]; i += 1; fold.append(Pair(a: path(l[0], l[1]), b: path(l[2], l[3]), same: false)) }
        result.append(fold)
    }
    return result
}


/// How many chips of the view table an `EmbeddingViews` averages.
func chipCount(_ views: EmbeddingViews) -> Int {
    switch views {
    case .single: 1
    case .mirrored: 2
    case .jittered: 8
    }
}

/// LFW accuracy and the score calibration. Side A of every pair is embedded like an enrolment
/// (`enrol` views) and side B like a live probe (`probe` views): the comparison the daemon makes.
func runLFW(write: Bool, enrol: EmbeddingViews, probe: EmbeddingViews) {
    let folds = lfwPairs()
    let files = Array(Set(folds.flatMap { $0.flatMap { [$0.a, $0.b] } })).sorted()
    print("LFW: \(folds.count) folds, \(files.count) images; enrolment side \(enrol), probe side \(probe)")
    let d = computeViews(files, views: max(chipCount(enrol), chipCount(probe)), models: loadModels(), cache: false)
    let result = evaluateViews(d, folds: folds, a: Array(0..<chipCount(enrol)), b: Array(0..<chipCount(probe)),
                               label: "\(enrol) vs \(probe)")
    let (impostor, bins) = (result.impostor, result.bins)
    let impostorTotal = impostor.reduce(0, +)
    let (knots, intercept, slope) = comparisonKnots(impostor, bins: bins)
    print("tail fit: log10 FAR = \(fmt(intercept, 3)) + \(fmt(slope, 3))·d (FAR 1e-6…1e-3)")
    let calibration = FARCalibration(.distance, knots: knots.map { .init($0.0, $0.1) }, source: "LFW")
    for score in [24.0, 36, 48, 60, 72] {
        print("score \(Int(score)) (FAR \(String(format: "%.0e", pow(10, -score / 12)))) at distance \(fmt(calibration.value(forScore: score), 4))")
    }
    let swift = """
        import BiometricCore

        /// The face score calibration (SPEC §4), measured on LFW impostor pairs.
        /// GENERATED by `biometricd-face-bench lfw --write` — do not edit by hand; see Docs/face.md.
        /// \(impostorTotal) impostor pairs of \(files.count) LFW images (all cross-identity pairs), an
        /// enrolment-style (\(enrol)) template against a live-style (\(probe)) probe; knots below
        /// FAR 1e-6 come from the fitted tail log10 FAR = \(fmt(intercept, 3)) + \(fmt(slope, 3))·distance.
        public enum FaceCalibration {
            public static let lfw = FARCalibration(.distance, knots: knots, source: "LFW, \(impostorTotal) impostor pairs")
            static let knots: [FARCalibration.Knot] = [
        \(knots.map { "        .init(\(fmt($0.0, 4)), \(fmt($0.1, 3)))," }.joined(separator: "\n"))
            ]
        }

        """
    if write {
        try! swift.write(toFile: repo + "/Sources/Face/FaceCalibration.swift", atomically: true, encoding: .utf8)
        print("wrote Sources/Face/FaceCalibration.swift (\(knots.count) knots)")
    }
}

/// Per-comparison calibration knots from an impostor distance histogram (`bins` bins over 0–2):
/// empirical log10 FAR where there are >= 30 impostors below, then a straight-line tail (log10
/// FAR vs distance) fitted over FAR 1e-6…1e-3, down to FAR 1e-9. Used by `lfw --write` and
/// `lfw-fusion --nested --write`.
func comparisonKnots(_ impostor: [Int], bins: Int) -> (knots: [(Double, Double)], intercept: Double, slope: Double) {
    let impostorTotal = impostor.reduce(0, +)
    var cumI = [Int](repeating: 0, count: bins + 1)
    var ci = 0
    for b in 0...bins { ci += impostor[b]; cumI[b] = ci }
    func binDistance(_ b: Int) -> Double { Double(b + 1) / Double(bins) * 2 }
    var knots: [(Double, Double)] = []
    var fit: [(Double, Double)] = []
    for b in 0...bins where cumI[b] >= 30 {
        let lf = log10(Double(cumI[b]) / Double(impostorTotal))
        if lf <= -3, lf >= -6 { fit.append((binDistance(b), lf)) }
    }
    for target in stride(from: -5.5, through: -0.5, by: 0.25) {
        if let b = (0...bins).first(where: { cumI[$0] >= 30 && log10(Double(cumI[$0]) / Double(impostorTotal)) >= target }) {
            if knots.last?.0 != binDistance(b) { knots.append((binDistance(b), log10(Double(cumI[b]) / Double(impostorTotal)))) }
        }
    }
    if let b = (0...bins).first(where: { cumI[$0] == impostorTotal }) { knots.append((binDistance(b), 0)) }
    let nf = Double(fit.count)
    let mx = fit.map(\.0).reduce(0, +) / nf, my = fit.map(\.1).reduce(0, +) / nf
    let slope = fit.map { ($0.0 - mx) * ($0.1 - my) }.reduce(0, +) / fit.map { ($0.0 - mx) * ($0.0 - mx) }.reduce(0, +)
    let intercept = my - slope * mx
    let first = knots.first!
    var tail: [(Double, Double)] = []
    for lf in stride(from: -9.0, to: first.1 - 0.25, by: 0.5) {
        let d = (lf - intercept) / slope
        if d < first.0 { tail.append((d, lf)) }
    }
    return (tail + knots, intercept, slope)
}

// MARK: - Stages

func runStages() {
    let person = shared + "/faces/lfw/images/Aaron_Eckhart/Aaron_Eckhart_0001.jpg"
    guard let face = readFrame(person) else { fatalError("no LFW image") }
    // A 640x480 frame: the LFW photo enlarged 1.5x in the middle of a grey canvas.
    let (w, h) = (640, 480)
    let pool = PixelBufferPool(limit: 0)
    let bgr = pool.buffer(count: w * h * 3), grey = pool.buffer(count: w * h)
    for i in 0..<(w * h * 3) { bgr.pointer[i] = 110 }
    for y in 0..<375 { for x in 0..<375 {
        let sx = x * 250 / 375, sy = y * 250 / 375
        for c in 0..<3 { bgr.pointer[((y + 52) * w + x + 132) * 3 + c] = face.bgr!.pointer[(sy * 250 + sx) * 3 + c] }
    } }
    for i in 0..<(w * h) { grey.pointer[i] = UInt8((Int(bgr.pointer[3 * i]) + Int(bgr.pointer[3 * i + 1]) + Int(bgr.pointer[3 * i + 2])) / 3) }
    let frame = Frame(width: w, height: h, grey: grey, bgr: bgr, timestampNs: 0, sequence: 0, isInfrared: false)
    let image = ImageRef(pixels: UnsafePointer(bgr.pointer), width: w, height: h, channels: 3)
    let n = 30
    func time(_ label: String, _ body: () throws -> Void) {
        _ = try? body()
        let t = now()
        for _ in 0..<n { _ = try? body() }
        let ms = (now() - t) / Double(n) * 1000
        print("\(label): \(fmt(ms, 2)) ms (\(fmt(1000 / ms, 0)) /s)")
    }
    for yunet in [true, false] {
        let models = loadModels(yunet: yunet)
        _ = try? models.withEngine { engine in
            time("detect \(yunet ? "YuNet" : "HOG")") { _ = try engine.detect(image) }
        }
        if !yunet { break }
        _ = try? models.withEngine { engine in
            let box = try engine.detect(image)[0].box
            let landmarks = try engine.landmarks(image, box: box)
            time("landmarks 68") { _ = try engine.landmarks(image, box: box) }
            time("pose") { _ = FaceEngine.pose(landmarks, width: w, height: h) }
            time("quality measures") { _ = FaceEngine.measure(image, box: box) }
            time("embed (flip 0)") { _ = try engine.embed(image, landmarks: landmarks, views: .single) }
            time("embed (flip 1)") { _ = try engine.embed(image, landmarks: landmarks, views: .mirrored) }
            time("embed (jittered: 8 chips)") { _ = try engine.embed(image, landmarks: landmarks, views: .jittered) }
        }
        // Tracking: the per-frame pipeline on a still sequence (detector every 8th frame).
        let pipeline = FacePipeline(models: models, threads: 1)
        let tracker = FaceTracker()
        let sem = DispatchSemaphore(value: 0)
        let box = Box()
        Task {
            let t = now()
            for _ in 0..<n { _ = try? await pipeline.analyze(frame, tracker: tracker) }
            box.value = (now() - t) / Double(n) * 1000
            sem.signal()
        }
        sem.wait()
        print("analyze with tracking (detect+landmarks+pose+quality): \(fmt(box.value, 2)) ms/frame (\(fmt(1000 / box.value, 0)) fps)")
    }
}

final class Box: @unchecked Sendable { var value = 0.0 }

/// The best (score << 32 | row) offered by the scan threads.
final class BestIndex: @unchecked Sendable {
    private let lock = NSLock()
    private var best = Int.min
    func offer(_ v: Int) { lock.lock(); best = max(best, v); lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return best }
}

// MARK: - 1:N

func runIdentify() {
    // Memory read bandwidth: a streaming SIMD sum of 512 MiB on every core (the best of 3). It is
    // measured again right before each gallery size is timed: this VM's bandwidth drifts over
    // minutes, and the ratio should compare the scan with the bound of the same moment.
    let count = 128 << 20
    let big = [Float](repeating: 1, count: count)
    let threads = ProcessInfo.processInfo.activeProcessorCount
    var t = now()
    func bandwidth() -> Double {
        var best = 0.0
        for _ in 0..<3 {
            let start = now()
            big.withUnsafeBufferPointer { p in
                nonisolated(unsafe) let base = UnsafeRawPointer(p.baseAddress!)
                DispatchQueue.concurrentPerform(iterations: threads) { k in
                    let chunk = count / threads / 16
                    let v = (base + k * chunk * 64).assumingMemoryBound(to: SIMD16<Float>.self)
                    var acc = SIMD16<Float>(repeating: 0)
                    for i in 0..<chunk { acc = acc + v[i] }
                    if acc.sum() == -1 { print("") }  // keep the loop
                }
            }
            best = max(best, Double(count * 4) / (now() - start) / 1e9)
        }
        return best
    }
    var gbps = bandwidth()
    print("memory read bandwidth (SIMD sum over 512 MiB, \(threads) threads): \(fmt(gbps, 1)) GB/s at start")
    // Real LFW embeddings: the first photo of each person with two or more (enrolled) and the
    // second (probe). The gallery is filled up with look-alikes of the real faces: each a real
    // embedding moved by noise to a distance of 0.5–1.0 (other people's range on LFW), filed under
    // its own user. So the neighbourhood of every probe is as crowded as a big real gallery.
    // --fused: version-2 templates (the second network too), searched on the fused score
    // (FaceGallerySet: the 256-d fused rows), against the exhaustive fused search.
    let fusedMode = arguments.contains("--fused")
    let models = loadModels(secondNetwork: fusedMode)
    let root = shared + "/faces/lfw/images"
    let people = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).sorted().filter {
        ((try? FileManager.default.contentsOfDirectory(atPath: root + "/" + $0)) ?? []).count >= 2
    }.prefix(arguments.contains("--quick") ? 40 : 200)
    func embedding(_ path: String, stored: Bool = false) -> FaceTemplate? {
        guard let f = readFrame(path),
              let o = try? models.withEngine({ try FacePipeline.analyze(f, tracker: FaceTracker(), engine: $0) }),
              let landmarks = o.landmarks else { return nil }
        let image = ImageRef(pixels: UnsafePointer(f.bgr!.pointer), width: f.width, height: f.height, channels: 3)
        let second = fusedMode ? (try? models.withEngine { try $0.secondEmbedding(image, landmarks: landmarks, mirrored: stored) }) ?? nil : nil
        if fusedMode && second == nil { return nil }
        return (try? models.withEngine { try $0.embed(image, landmarks: landmarks, views: .mirrored) }).map { FaceTemplate(embedding: $0, second: second, quality: 80) }
    }
    var real: [(user: String, template: FaceTemplate)] = []
    var probes: [(user: String, template: FaceTemplate)] = []
    for person in people {
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: root + "/" + person)) ?? []).sorted()
        guard let a = embedding(root + "/" + person + "/" + files[0], stored: true), let b = embedding(root + "/" + person + "/" + files[1]) else { continue }
        real.append((person, a))
        probes.append((person, b))
    }
    print("LFW: \(real.count) people enrolled, \(probes.count) probes (another photo of each)")
    var state: UInt64 = 42
    func gaussian() -> Float {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        let u1 = Float(state >> 40) / Float(1 << 24) + 1e-7
        state = state &* 6364136223846793005 &+ 1442695040888963407
        let u2 = Float(state >> 40) / Float(1 << 24)
        return (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
    }
    func rss() -> Double {
        let text = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let kb = text.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }.flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") } ?? 0
        return Double(kb) / 1024
    }
    var items = real
    let sizes = arguments.contains("--quick") ? [10_000, 100_000] : [10_000, 100_000, 1_000_000]
    for n in sizes {
        while items.count < n {
            let base = real[items.count % real.count].template
            let sigma = Float.random(in: 0.045...0.09)
            // The second network's part moved twice as far (its impostors sit near cosine 0).
            items.append(("lookalike\(items.count)", FaceTemplate(embedding: base.embedding.map { $0 + sigma * gaussian() },
                                                                  second: base.second.map { $0.map { $0 + 2 * sigma * gaussian() } }, quality: 50)))
        }
        // Baseline 1: the float32 matrix and sgemv, as the daemon searched before.
        let width = fusedMode ? 256 : 128
        let matrix = items.flatMap { fusedMode ? $0.template.fusedVector! : $0.template.embedding }
        var dots = [Float](repeating: 0, count: n)
        func sgemv(_ q: FaceTemplate) {
            let v = fusedMode ? q.fusedVector! : q.embedding
            matrix.withUnsafeBufferPointer { m in
                v.withUnsafeBufferPointer { qp in
                    cblas_sgemv(CblasRowMajor, CblasNoTrans, Int32(n), Int32(width), 1, m.baseAddress, Int32(width), qp.baseAddress, 1, 0, &dots, 1)
                }
            }
        }
        sgemv(probes[0].template)
        t = now()
        for p in probes.prefix(20) { sgemv(p.template) }
        let floatMs = (now() - t) / Double(min(20, probes.count)) * 1000
        // The int8 gallery with exact re-score.
        let before = rss()
        let gallery = FaceGallerySet(items.indices.map { (key: Int64($0), template: items[$0].template) })
        let galleryMB = rss() - before
        let source = InMemoryFaceTemplates(items)
        let calibration = FaceCalibration.lfw
        _ = try? gallery.rank(probes[0].template, exact: source, calibration: calibration, threads: threads)
        gbps = bandwidth()
        var times: [Double] = []
        var rescored: [Int] = []
        var passes = 0
        for p in probes.prefix(50) {
            var stats = FaceGallery.SearchStats()
            t = now()
            _ = try? gallery.rank(p.template, exact: source, calibration: calibration, threads: threads, stats: &stats)
            times.append((now() - t) * 1000)
            rescored.append(stats.rescored)
            passes = max(passes, stats.passes)
        }
        // Identical to the exhaustive float32 answer? (checked on a few probes: it is slow)
        var same = 0, checked = 0, top1 = 0
        for p in probes.prefix(n >= 1_000_000 ? 10 : 30) {
            let fast = (try? gallery.rank(p.template, exact: source, calibration: calibration, threads: threads)) ?? []
            let exact = FaceGallerySet.exhaustiveRank(p.template, items, calibration: calibration)
            checked += 1
            if fast == exact { same += 1 }
            if fast.first?.user == p.user { top1 += 1 }
        }
        times.sort()
        let median = times[times.count / 2]
        let streamed = Double(n * (width + 8))  // codes + step + error bound per row
        let bound = streamed / (gbps * 1e9) * 1000
        let floatBound = Double(n * width * 4) / (gbps * 1e9) * 1000
        print("1:N n=\(n): int8 + exact re-score \(fmt(median, 2)) ms/probe (p90 \(fmt(times[times.count * 9 / 10], 2))), bound \(fmt(bound, 2)) ms (\(Int(streamed) / n) B/row at \(fmt(gbps, 1)) GB/s, measured just before), ratio \(fmt(median / bound, 2))x; re-scored median \(rescored.sorted()[rescored.count / 2]) max \(rescored.max()!), passes ≤ \(passes)")
        print("    float32 sgemv baseline \(fmt(floatMs, 2)) ms/probe (bound \(fmt(floatBound, 2)) ms, ratio \(fmt(floatMs / floatBound, 2))x); speed-up \(fmt(floatMs / median, 1))x")
        print("    top-5 identical to the exhaustive float32 search\(fusedMode ? " on the fused score" : ""): \(same)/\(checked); genuine top-1 \(top1)/\(checked)")
        print("    gallery memory: \(fmt(Double(gallery.bytes) / 1_048_576, 1)) MiB by layout (\(gallery.bytes / n) B/template), RSS +\(fmt(galleryMB, 1)) MiB; per million: \(fmt(Double(gallery.bytes / n) * 1e6 / 1_048_576, 1)) MiB")
    }
}

// MARK: - Where the face models' megabytes go

func runMemory() {
    func rss() -> Double {
        let text = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let kb = text.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }.flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") } ?? 0
        return Double(kb) / 1024
    }
    var last = rss()
    func step(_ what: String) {

        let now = rss()
        print("\(what): RSS \(fmt(now, 1)) MiB (+\(fmt(now - last, 1)))")
        last = now
    }
    step("process with the libraries")
    let models: FaceModels
    do {
        models = try FaceModels(.init(landmarks: landmarkModel, shape5: modelsDir + "/" + FaceModels.shape5Name,
                                      resnet: modelsDir + "/" + FaceModels.resnetName, yunet: modelsDir + "/" + FaceModels.yunetName,
                                      antispoof: .init(folder: modelsDir), recognizer: recognizerPath()))
    } catch { fatalError("models: \(error)") }
    step("models loaded (\((landmarkModel as NSString).lastPathComponent), 5-point, one ResNet, the ONNX files' bytes)")
    guard let small = readFrame(shared + "/faces/lfw/images/Tony_Blair/Tony_Blair_0018.jpg") else { return }
    // The same face on a 640x480 frame (a webcam's): YuNet's buffers grow with the frame.
    let pool = PixelBufferPool(limit: 0)
    let grey = pool.buffer(count: 640 * 480), bgr = pool.buffer(count: 640 * 480 * 3)
    for i in 0..<(640 * 480) { grey.pointer[i] = 90 }
    for i in 0..<(640 * 480 * 3) { bgr.pointer[i] = 90 }
    for y in 0..<250 {
        (bgr.pointer + ((y + 115) * 640 + 195) * 3).update(from: small.bgr!.pointer + y * 250 * 3, count: 250 * 3)
        (grey.pointer + (y + 115) * 640 + 195).update(from: small.grey.pointer + y * 250, count: 250)
    }
    let large = Frame(width: 640, height: 480, grey: grey, bgr: bgr, timestampNs: 1, sequence: 1, isInfrared: false)
    for (label, frame) in [("250x250 (LFW, the daemon bench's camera)", small), ("640x480", large)] {
        print("# \(label)")
        let image = ImageRef(pixels: UnsafePointer(frame.bgr!.pointer), width: frame.width, height: frame.height, channels: 3)
        _ = try? models.withEngine { engine in
            let tracker = FaceTracker()
            tracker.measurePassive = true
            tracker.measureBorders = true
            guard let box = try engine.detect(image).first?.box else { return }
            step("  engine: YuNet run once")
            let landmarks = try engine.landmarks(image, box: box)
            step("  + landmarks")
            _ = engine.realProbability(image, box: box)
            step("  + passive detector (MiniFASNetV2 + V1SE)")
            _ = try engine.embed(image, landmarks: landmarks, views: .mirrored)
            step("  + ResNet probe (chip + mirror)")
            _ = try engine.embed(image, landmarks: landmarks, views: .jittered)
            step("  + ResNet stored template (8 views)")
            _ = try engine.secondEmbedding(image, landmarks: landmarks, box: box, mirrored: true)
            step("  + keypoints and the second network")
            _ = try FacePipeline.analyze(frame, tracker: tracker, engine: engine)
            step("  + a whole frame's analysis")
        }
        _ = try? models.withEngine { a in
            try models.withEngine { b in
                for e in [a, b] {
                    let tracker = FaceTracker()
                    tracker.measurePassive = true
                    tracker.measureBorders = true
                    if let o = try? FacePipeline.analyze(frame, tracker: tracker, engine: e), let l = o.landmarks {
                        _ = try? e.embed(image, landmarks: l, views: .mirrored)
                        _ = try? e.secondEmbedding(image, landmarks: l, box: o.box, mirrored: false)
                    }
                }
            }
        }
        step("  a second engine, the same work")
    }
}

// MARK: - Replay cue on the real clips

func runSpoof() {
    let models = loadModels()
    for clip in ["tran_live", "tran_replay_screen"] {
        var status = CVIS_OK
        guard let video = cvis_video_open(shared + "/video/\(clip)/video.mp4", &status) else { print("\(clip): cannot open"); continue }
        defer { cvis_video_close(video) }
        var cue = ReplayCue()
        var sides = [Int](repeating: 0, count: 5)
        var frames = 0, faces = 0
        var masks: [Int] = []
        let tracker = FaceTracker()
        let greyPool = PixelBufferPool(), bgrPool = PixelBufferPool()
        var frame: OpaquePointer?
        while cvis_video_next(video, &frame) == CVIS_OK, let f = frame {
            frames += 1
            guard let fr = try? Frame.copying(f, colour: true, greyPool: greyPool, bgrPool: bgrPool, sequence: UInt64(frames)),
                  let bgr = fr.bgr else { continue }
            let w = fr.width, h = fr.height
            guard let obs = try? models.withEngine({ try FacePipeline.analyze(fr, tracker: tracker, engine: $0) }),
                  let box = obs.box else { continue }
            faces += 1
            let image = ImageRef(pixels: UnsafePointer(bgr.pointer), width: w, height: h, channels: 3)
            guard let mask = ReplayCue.borderSides(image, box: box) else { continue }
            cue.observe(borderMask: mask)
            masks.append(mask)
            sides[mask.nonzeroBitCount] += 1
        }
        // As a verify session sees it: windows of 60 face frames (2 s at 30 fps), step 10.
        var windows = 0, flagged = 0
        var start = 0
        while start + 60 <= masks.count {
            var w = ReplayCue()
            masks[start..<(start + 60)].forEach { w.observe(borderMask: $0) }
            windows += 1
            if w.isSpoof { flagged += 1 }
            start += 10
        }
        print("\(clip): 2 s windows flagged as replay: \(flagged)/\(windows) (\(fmt(Double(flagged) / Double(max(windows, 1)) * 100, 1)) %)")
        print("\(clip): \(frames) frames, \(faces) with a face; sides framed 0/1/2/3/4: \(sides.map(String.init).joined(separator: "/")); framed fraction \(fmt(cue.framedFraction * 100, 1)) % -> \(cue.isSpoof ? "SPOOF" : "live")")
    }
}

// MARK: - Blink liveness on a real clip; eye state on eye crops

/// A video file's frames (grey + BGR), timestamps i / fps.
func videoFrames(_ path: String) -> (frames: [Frame], fps: Double) {
    var status = CVIS_OK
    guard let video = cvis_video_open(path, &status) else { return ([], 0) }
    defer { cvis_video_close(video) }
    let fps = cvis_video_fps(video) > 0 ? cvis_video_fps(video) : 25
    var frames: [Frame] = []
    var frame: OpaquePointer?
    while cvis_video_next(video, &frame) == CVIS_OK, let f = frame {
        // Kept frames hold their planes: fresh pools, no recycling.
        guard let c = try? Frame.copying(f, colour: true, greyPool: PixelBufferPool(limit: 0), bgrPool: PixelBufferPool(limit: 0),
                                         sequence: UInt64(frames.count)) else { continue }
        frames.append(Frame(width: c.width, height: c.height, grey: c.grey, bgr: c.bgr,
                            timestampNs: UInt64((Double(frames.count) / fps * 1e9).rounded()),
                            sequence: c.sequence, isInfrared: false))
    }
    return (frames, fps)
}

/// EyeState.openness of the eye around landmarks `points` (36…41 or 42…47): a box 1.4x the corner
/// distance wide at CEW's 34:26 aspect, centred on the contour, resampled (bilinear) to 34x26.
func eyeOpenness(_ frame: Frame, _ landmarks: Landmarks, _ points: ClosedRange<Int>) -> Double {
    let p = points.map { landmarks.points[$0] }
    let centre = p.reduce(SIMD2<Double>(0, 0), +) / Double(p.count)
    let d = p[3] - p[0]
    let bw = 1.4 * (d.x * d.x + d.y * d.y).squareRoot(), bh = bw * 26 / 34
    let (cw, ch) = (34, 26)
    var crop = [UInt8](repeating: 0, count: cw * ch)
    let g = frame.grey.pointer
    func at(_ x: Int, _ y: Int) -> Double { Double(g[min(max(y, 0), frame.height - 1) * frame.width + min(max(x, 0), frame.width - 1)]) }
    for y in 0..<ch {
        for x in 0..<cw {
            let sx = centre.x - bw / 2 + (Double(x) + 0.5) * bw / Double(cw) - 0.5
            let sy = centre.y - bh / 2 + (Double(y) + 0.5) * bh / Double(ch) - 0.5
            let x0 = Int(sx.rounded(.down)), y0 = Int(sy.rounded(.down))
            let fx = sx - Double(x0), fy = sy - Double(y0)
            let v = (at(x0, y0) * (1 - fx) + at(x0 + 1, y0) * fx) * (1 - fy) + (at(x0, y0 + 1) * (1 - fx) + at(x0 + 1, y0 + 1) * fx) * fy
            crop[y * cw + x] = UInt8(max(0, min(255, v.rounded())))
        }
    }
    return crop.withUnsafeBufferPointer { EyeState.openness(grey: $0.baseAddress!, width: cw, height: ch) }
}

struct BlinkFrame {
    let index: Int  // frame of the 25 fps clip
    let ear: Double?
    let openness: Double?  // mean of both eyes
}

/// Runs the pipeline (one tracker) and BlinkLiveness over the clip's frames `keep`, and prints
/// when the blink is declared and how many clip frames after the eye closed.
func blinkRun(_ frames: [Frame], keep: [Int], fps: Double, label: String, models: FaceModels) -> [BlinkFrame] {
    let tracker = FaceTracker()
    var liveness = BlinkLiveness(livenessThreshold: 0)
    var rows: [BlinkFrame] = []
    var stillDoneAt: Int?, liveAt: Int?
    var misses = 0
    for i in keep {
        let frame = frames[i]
        let obs = try? models.withEngine { try FacePipeline.analyze(frame, tracker: tracker, engine: $0) }
        let lm = obs?.landmarks
        if lm == nil { misses += 1 }
        let outcome = liveness.observe(lm, timestampNs: frame.timestampNs)
        if stillDoneAt == nil, liveness.phase != .keepStill { stillDoneAt = i }
        if liveAt == nil, outcome == .live { liveAt = i }
        rows.append(BlinkFrame(index: i, ear: lm?.eyeAspectRatio,
                               openness: lm.map { (eyeOpenness(frame, $0, 36...41) + eyeOpenness(frame, $0, 42...47)) / 2 }))
    }
    let ms = 1000 / fps
    print("\(label): \(keep.count) frames, no face in \(misses); keep-still done at frame \(stillDoneAt.map(String.init) ?? "never")")
    guard let baseline = liveness.baseline else { print("\(label): no baseline (face never held still)"); return rows }
    let closeAt = baseline * liveness.closeRatio
    let closedFrames = rows.filter { ($0.ear ?? .infinity) < closeAt }.map(\.index)
    let firstClosed = closedFrames.first
    let firstClosedAfter = rows.first { $0.index >= stillDoneAt! && ($0.ear ?? .infinity) < closeAt }?.index
    print("\(label): baseline EAR \(fmt(baseline, 3)), closed below \(fmt(closeAt, 3)), open again above \(fmt(baseline * liveness.reopenRatio, 3)); frames below: \(closedFrames.map(String.init).joined(separator: " "))")
    if let liveAt, let firstClosed {
        let from = firstClosedAfter ?? firstClosed
        print("\(label): LIVE at frame \(liveAt) (\(fmt(Double(liveAt) * ms, 0)) ms); first closed frame \(from)"
              + (from != firstClosed ? " (first in blink phase; one earlier at \(firstClosed))" : "")
              + " -> \(liveAt - from) clip frames (\(fmt(Double(liveAt - from) * ms, 0)) ms, \(keep.filter { $0 > from && $0 <= liveAt }.count) frames seen) from eye-closing to detection")
    } else {
        print("\(label): NOT live by the end (\(liveness.phase)); first closed frame \(firstClosed.map(String.init) ?? "none")")
    }
    return rows
}

func runBlink() {
    let start = now()
    let models = loadModels()
    let clip = shared + "/video/grid_face_blink_a/video.mp4"
    let (frames, fps) = videoFrames(clip)
    guard !frames.isEmpty else { print("cannot read \(clip)"); return }
    print("grid_face_blink_a: \(frames.count) frames \(frames[0].width)x\(frames[0].height) at \(fmt(fps, 0)) fps; BlinkLiveness(livenessThreshold: 0) = \(BlinkLiveness(livenessThreshold: 0).stillDurationNs / 1_000_000) ms keep-still, timestamps i/\(fmt(fps, 0)) s")
    let rows = blinkRun(frames, keep: Array(frames.indices), fps: fps, label: "\(fmt(fps, 0)) fps", models: models)
    print("per frame: index EAR openness(EyeState, mean of both eye crops)")
    for chunk in stride(from: 0, to: rows.count, by: 5) {
        print("  " + rows[chunk..<min(chunk + 5, rows.count)].map { r in
            String(format: "%2d %@ %@", r.index, r.ear.map { fmt($0, 3) } ?? "  -  ", r.openness.map { fmt($0, 3) } ?? "  -  ")
        }.joined(separator: " | "))
    }
    let both = rows.compactMap { r in r.ear.flatMap { e in r.openness.map { (e, $0) } } }
    if both.count > 2 {
        let n = Double(both.count)
        let (me, mo) = (both.map(\.0).reduce(0, +) / n, both.map(\.1).reduce(0, +) / n)
        let cov = both.map { ($0.0 - me) * ($0.1 - mo) }.reduce(0, +)
        let ve = both.map { ($0.0 - me) * ($0.0 - me) }.reduce(0, +), vo = both.map { ($0.1 - mo) * ($0.1 - mo) }.reduce(0, +)
        print("Pearson r(EAR, openness) over \(both.count) frames: \(fmt(cov / (ve * vo).squareRoot(), 2))")
    }
    // Lower frame rates: keep clip frame i when round(i·rate/fps) is a new index.
    for rate in [20.0, 15.0] {
        var keep: [Int] = [], last = -1
        for i in frames.indices {
            let j = Int((Double(i) * rate / fps).rounded())
            if j != last { keep.append(i); last = j }
        }
        _ = blinkRun(frames, keep: keep, fps: fps, label: "\(fmt(rate, 0)) fps", models: models)
    }

    // Eye crops (CEW validation split).
    let cew = shared + "/eyes/cew_val/png"
    print("cew_val: the liveness measure (EAR) comes from the 68 face landmarks and needs a whole face; it CANNOT be")
    print("  computed on these isolated 26x34 eye crops, so no EAR ROC here. Below: EyeState.openness, a crop-only")
    print("  measure (vertical-edge share x dark-blob height), as a candidate second cue for IR/small faces.")
    var scores: [(Double, Bool)] = []
    for (label, open) in [("open", true), ("closed", false)] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: cew + "/" + label)) ?? []).filter { $0.hasSuffix(".png") }.sorted()
        for name in names {
            guard let frame = readFrame(cew + "/" + label + "/" + name) else { continue }
            scores.append((EyeState.openness(grey: UnsafePointer(frame.grey.pointer), width: frame.width, height: frame.height), open))
        }
    }
    let pos = scores.filter(\.1).map(\.0), neg = scores.filter { !$0.1 }.map(\.0)
    guard !pos.isEmpty, !neg.isEmpty else { print("cew_val: no crops read"); return }
    var wins = 0.0
    for p in pos { for q in neg { wins += p > q ? 1 : (p == q ? 0.5 : 0) } }
    let auc = wins / Double(pos.count * neg.count)
    let sorted = scores.map(\.0).sorted()
    var bestT = 0.0, bestAcc = 0.0
    for k in 0...sorted.count {
        let t = k == 0 ? sorted[0] - 1 : (k == sorted.count ? sorted[k - 1] + 1 : (sorted[k - 1] + sorted[k]) / 2)
        let acc = Double(scores.filter { ($0.0 > t) == $0.1 }.count) / Double(scores.count)
        if acc > bestAcc { bestAcc = acc; bestT = t }
    }
    let tpr = Double(pos.filter { $0 > bestT }.count) / Double(pos.count), tnr = Double(neg.filter { $0 <= bestT }.count) / Double(neg.count)
    print("cew_val: \(pos.count) open, \(neg.count) closed; openness mean open \(fmt(pos.reduce(0, +) / Double(pos.count), 3)), closed \(fmt(neg.reduce(0, +) / Double(neg.count), 3))")
    print("cew_val: ROC AUC \(fmt(auc, 4)); best threshold \(fmt(bestT, 3)) -> accuracy \(fmt(bestAcc * 100, 1)) % (open recall \(fmt(tpr * 100, 1)) %, closed recall \(fmt(tnr * 100, 1)) %; threshold chosen on the same set: optimistic)")
    print("blink: \(fmt(now() - start, 1)) s")
}

// MARK: - Head pose per frame of a clip (challenge thresholds and frame ranges)

func runPoses(_ clip: String) {
    let models = loadModels()
    let (frames, fps) = videoFrames(shared + "/video/\(clip)/video.mp4")
    let tracker = FaceTracker()
    print("# \(clip): \(frames.count) frames at \(fmt(fps, 1)) fps; frame yaw pitch roll ear (no face: -)")
    for (i, f) in frames.enumerated() {
        guard let o = try? models.withEngine({ try FacePipeline.analyze(f, tracker: tracker, engine: $0) }), let pose = o.pose,
              let l = o.landmarks else {
            print("\(i) -")
            continue
        }
        print("\(i) \(fmt(pose.yaw, 1)) \(fmt(pose.pitch, 1)) \(fmt(pose.roll, 1)) \(fmt(l.eyeAspectRatio, 3))")
    }
}

// MARK: - Re-capture features (a replay with no borders in view)

/// The face-region features of `cvis_face_recapture_features` on every face frame of a clip.
func recaptureFeatures(_ frames: [Frame], models: FaceModels, tracker: FaceTracker = FaceTracker()) -> [[Double]] {
    var out: [[Double]] = []
    for f in frames {
        guard let bgr = f.bgr, let o = try? models.withEngine({ try FacePipeline.analyze(f, tracker: tracker, engine: $0) }),
              let box = o.box else { continue }
        let image = ImageRef(pixels: UnsafePointer(bgr.pointer), width: f.width, height: f.height, channels: 3)
        guard let v = RecaptureFeatures.measure(image, box: box) else { continue }
        out.append(v.values + [box.width])
    }
    return out
}

func runRecapture() {
    let models = loadModels()
    let names = RecaptureFeatures.names
    let live = recaptureFeatures(videoFrames(shared + "/video/tran_live/video.mp4").frames, models: models)
    let replay = recaptureFeatures(videoFrames(shared + "/video/tran_replay_screen/video.mp4").frames, models: models)
    let blinkFrames = videoFrames(shared + "/video/grid_face_blink_a/video.mp4").frames
    let blinkClip = recaptureFeatures(blinkFrames, models: models)
    // The same live clip enlarged 2x (bilinear), as the hardware-in-the-loop rig shows it to the
    // daemon: a live face from a soft, low-resolution camera.
    let enlarged: [Frame] = blinkFrames.map { f in
        let w = f.width * 2, h = f.height * 2
        let pool = PixelBufferPool(limit: 0)
        let bgr = pool.buffer(count: w * h * 3), grey = pool.buffer(count: w * h)
        for y in 0..<h { for x in 0..<w {
            let sx = min(Double(f.width - 1), max(0, (Double(x) + 0.5) / 2 - 0.5)), sy = min(Double(f.height - 1), max(0, (Double(y) + 0.5) / 2 - 0.5))
            let x0 = Int(sx), y0 = Int(sy), x1 = min(f.width - 1, x0 + 1), y1 = min(f.height - 1, y0 + 1)
            let ax = sx - Double(x0), ay = sy - Double(y0)
            for c in 0..<3 {
                func p(_ xx: Int, _ yy: Int) -> Double { Double(f.bgr!.pointer[(yy * f.width + xx) * 3 + c]) }
                let v = (p(x0, y0) * (1 - ax) + p(x1, y0) * ax) * (1 - ay) + (p(x0, y1) * (1 - ax) + p(x1, y1) * ax) * ay
                bgr.pointer[(y * w + x) * 3 + c] = UInt8(max(0, min(255, v.rounded())))
            }
            let i = (y * w + x) * 3
            let b = Double(bgr.pointer[i]), g = Double(bgr.pointer[i + 1]), r = Double(bgr.pointer[i + 2])
            let luma: Double = 0.114 * b + 0.587 * g + 0.299 * r
            grey.pointer[y * w + x] = UInt8(luma.rounded())
        } }
        return Frame(width: w, height: h, grey: grey, bgr: bgr, timestampNs: f.timestampNs, sequence: f.sequence, isInfrared: false)
    }
    let blink2x = recaptureFeatures(enlarged, models: models)
    print("# live blink clip enlarged 2x: face p50 \(fmt(blink2x.map { $0[4] }.sorted()[blink2x.count / 2], 0)) px, hf_share p50 \(fmt(blink2x.map { $0[1] }.sorted()[blink2x.count / 2], 4)), frames >= \(Int(RecaptureCue.minimumFaceWidth)) px: \(blink2x.filter { $0[4] >= RecaptureCue.minimumFaceWidth }.count)/\(blink2x.count)")
    // LFW stills: first-generation photos, as a live camera would see a face (not re-captured).
    let people = (try? FileManager.default.contentsOfDirectory(atPath: shared + "/faces/lfw/images"))?.sorted() ?? []
    var stills: [Frame] = []
    for person in people.prefix(300) {
        let dir = shared + "/faces/lfw/images/" + person
        if let first = (try? FileManager.default.contentsOfDirectory(atPath: dir))?.sorted().first,
           let f = try? Frame(contentsOfFile: dir + "/" + first) { stills.append(f) }
    }
    var lfw: [[Double]] = []
    for f in stills { lfw += recaptureFeatures([f], models: models) }
    func pct(_ v: [Double], _ p: Double) -> Double { v.isEmpty ? .nan : v.sorted()[min(v.count - 1, Int(Double(v.count - 1) * p))] }
    /// Median of each 2 s window (60 frames at 30 fps, step 10): what a session would judge.
    func windows(_ v: [Double]) -> [Double] {
        stride(from: 0, to: max(0, v.count - 59), by: 10).map { pct(Array(v[$0..<($0 + 60)]), 0.5) }
    }
    print("# re-capture features in the face box (frames: live \(live.count), replay \(replay.count), blink clip \(blinkClip.count), LFW stills \(lfw.count))")
    print("# face width px: live p50 \(fmt(pct(live.map { $0[4] }, 0.5), 0)), replay \(fmt(pct(replay.map { $0[4] }, 0.5), 0)), blink clip \(fmt(pct(blinkClip.map { $0[4] }, 0.5), 0)), LFW \(fmt(pct(lfw.map { $0[4] }, 0.5), 0))")
    // The cue as the daemon runs it (RecaptureCue): median hf_share of the last 60 frames whose
    // face is at least minimumFaceWidth wide, judged once 45 such frames were seen.
    func cueWindows(_ v: [[Double]]) -> [Double] {
        let usable = v.filter { $0[4] >= RecaptureCue.minimumFaceWidth }.map { $0[1] }
        return stride(from: 0, to: max(0, usable.count - 44), by: 10).map { pct(Array(usable[$0..<min(usable.count, $0 + 60)]), 0.5) }
    }
    let lw = cueWindows(live), rw = cueWindows(replay), bw = cueWindows(blinkClip), sw = lfw.filter { $0[4] >= RecaptureCue.minimumFaceWidth }
    print("# cue windows (faces >= \(Int(RecaptureCue.minimumFaceWidth)) px): live \(lw.count), replay \(rw.count), blink clip \(bw.count); LFW stills with such faces: \(sw.count)")
    // Face size is a confound (the replay's face is smaller): compare frames of equal size.
    for band in [(160.0, 200.0), (200.0, 240.0), (240.0, 300.0)] {
        let l = live.filter { $0[4] >= band.0 && $0[4] < band.1 }.map { $0[1] }
        let r = replay.filter { $0[4] >= band.0 && $0[4] < band.1 }.map { $0[1] }
        print("# faces \(Int(band.0))-\(Int(band.1)) px: live \(l.count) frames hf_share p50 \(fmt(pct(l, 0.5), 4)), replay \(r.count) frames p50 \(fmt(pct(r, 0.5), 4))")
    }
    if arguments.contains("--verbose") {
        print("# replay frames: width hf_share: " + replay.prefix(120).map { "\(Int($0[4])):\(fmt($0[1], 4))" }.joined(separator: " "))
    }
    print("# threshold  live windows refused  replay windows caught")
    for t in [0.0002, 0.0003, 0.0004, 0.0005, 0.0006, 0.0008] {
        let fr = lw.filter { $0 < t }.count + bw.filter { $0 < t }.count
        print("  \(String(format: "%.4f", t))\(t == RecaptureCue.threshold ? " (shipped)" : "")  \(fr)/\(lw.count + bw.count)  \(rw.filter { $0 < t }.count)/\(rw.count) (\(fmt(Double(rw.filter { $0 < t }.count) / Double(max(1, rw.count)) * 100, 1)) %)")
    }
    // Cost per frame (the cue runs on every liveness frame).
    if let f = videoFrames(shared + "/video/tran_live/video.mp4").frames.first, let bgr = f.bgr,
       let o = try? models.withEngine({ try FacePipeline.analyze(f, tracker: FaceTracker(), engine: $0) }), let box = o.box {
        let image = ImageRef(pixels: UnsafePointer(bgr.pointer), width: f.width, height: f.height, channels: 3)
        let t0 = now()
        for _ in 0..<500 { _ = RecaptureFeatures.measure(image, box: box) }
        let t1 = now()
        for _ in 0..<200 { _ = ReplayCue.borderSides(image, box: box) }
        print("# cost per frame: recapture features \(fmt((t1 - t0) / 500 * 1000, 3)) ms; border cue (baseline, same run) \(fmt((now() - t1) / 200 * 1000, 3)) ms")
    }
    for (k, name) in names.enumerated() {
        let l = live.map { $0[k] }, r = replay.map { $0[k] }, b = blinkClip.map { $0[k] }, s = lfw.map { $0[k] }
        var wins = 0.0
        for a in r { for c in l { wins += a > c ? 1 : (a == c ? 0.5 : 0) } }
        let auc = wins / Double(max(1, l.count * r.count))
        let lw = windows(l), rw = windows(r), bw = windows(b)
        // Replay above every live value (clips and stills): zero false refusals on what we have.
        let above = max(l.max() ?? 0, s.max() ?? 0, b.max() ?? 0)
        let below = min(l.min() ?? 0, s.min() ?? 0, b.min() ?? 0)
        let caughtHigh = Double(rw.filter { $0 > (max(lw.max() ?? 0, bw.max() ?? 0)) }.count) / Double(max(1, rw.count))
        let caughtLow = Double(rw.filter { $0 < (min(lw.min() ?? 0, bw.min() ?? 0)) }.count) / Double(max(1, rw.count))
        print("\(name): live p5/p50/p95 \(fmt(pct(l, 0.05), 4))/\(fmt(pct(l, 0.5), 4))/\(fmt(pct(l, 0.95), 4)); replay \(fmt(pct(r, 0.05), 4))/\(fmt(pct(r, 0.5), 4))/\(fmt(pct(r, 0.95), 4)); blink clip p50 \(fmt(pct(b, 0.5), 4)); LFW p5/p50/p95 \(fmt(pct(s, 0.05), 4))/\(fmt(pct(s, 0.5), 4))/\(fmt(pct(s, 0.95), 4))")
        print("  frame AUC replay>live \(fmt(auc, 4)); 2 s window medians: live \(fmt(lw.min() ?? .nan, 4))..\(fmt(lw.max() ?? .nan, 4)), replay \(fmt(rw.min() ?? .nan, 4))..\(fmt(rw.max() ?? .nan, 4)); replay windows beyond every live window: above \(fmt(caughtHigh * 100, 1)) %, below \(fmt(caughtLow * 100, 1)) %; frame range of live+stills \(fmt(below, 4))..\(fmt(above, 4))")
    }
}

// MARK: - Challenge-response on real clips

/// Poses (nil: no face) and landmarks of every frame, tracked in order as a session would.
func clipObservations(_ clip: String, models: FaceModels) -> [(HeadPose?, Landmarks?)] {
    let (frames, _) = videoFrames(shared + "/video/\(clip)/video.mp4")
    let tracker = FaceTracker()
    return frames.map { f in
        let o = try? models.withEngine { try FacePipeline.analyze(f, tracker: tracker, engine: $0) }
        return (o?.pose, o?.landmarks)
    }
}

/// Runs the sessions' liveness check (keep-still, then `sequence` and the blink) on the frames
/// `order` at 30 fps; the outcome and when.
func simulateChallenge(_ obs: [(HeadPose?, Landmarks?)], order: [Int], sequence: [ChallengeLiveness.Action],
                       stepTimeoutMs: Int = 5000, trace: Bool = false) -> (passed: Bool, seconds: Double, why: String) {
    var check = FaceLivenessCheck(livenessThreshold: 50, challenge: sequence, stepTimeoutMs: stepTimeoutMs)
    for (n, i) in order.enumerated() {
        let ns = UInt64(Double(n) / 30 * 1e9)
        let (pose, landmarks) = obs[i]
        let verdict = check.observe(landmarks: landmarks, pose: pose, at: ns)
        if trace { print("\(n) frame \(i) yaw \(pose.map { fmt($0.yaw, 1) } ?? "-") pitch \(pose.map { fmt($0.pitch, 1) } ?? "-") blink \(check.phase) \(verdict)") }
        switch verdict {
        case .failedChallenge(let why, _): return (false, Double(n) / 30, why)
        case .failedPassive(let why, _): return (false, Double(n) / 30, "\(why)")  // not reached: challenge mode
        case .live: return (true, Double(n) / 30, "")
        case .pending: continue
        }
    }
    return (false, Double(order.count) / 30, "clip ended (\(check.challengeState.map { "\($0)" } ?? "-"), blink \(check.phase))")
}

/// How often a replay of each clip passes a random challenge: every sequence of 2 (and 3) moves
/// with no move twice in a row, the clip started at every 0.5 s offset and looped, 5 s per move.
func runChallenge() {
    let models = loadModels()
    if let i = arguments.firstIndex(of: "--trace") {
        // --trace SEQ RANGES: e.g. turn_left,turn_right 0-58,163-215,270-310,60-85
        let sequence = arguments[i + 1].split(separator: ",").compactMap { ChallengeLiveness.Action(rawValue: String($0)) }
        let order = arguments[i + 2].split(separator: ",").flatMap { r -> [Int] in
            let b = r.split(separator: "-").compactMap { Int($0) }
            return Array(b[0]...b[1])
        }
        let r = simulateChallenge(clipObservations("tran_live", models: models), order: order, sequence: sequence, trace: true)
        print("passed=\(r.passed) after \(fmt(r.seconds, 2)) s \(r.why)")
        return
    }
    let moves = ChallengeLiveness.Action.allCases
    let pairs = moves.flatMap { a in moves.filter { $0 != a }.map { [a, $0] } }
    let triples = pairs.flatMap { p in moves.filter { $0 != p[1] }.map { p + [$0] } }
    for clip in ["tran_live", "tran_replay_screen"] {
      let obs = clipObservations(clip, models: models)
      for (name, sequences) in [("2-move", pairs), ("3-move", triples)] {
        var runs = 0, passes = 0, failures: [String: Int] = [:]
        for start in stride(from: 0, to: obs.count, by: 15) {
            let order = (0..<(obs.count * 2)).map { (start + $0) % obs.count }
            for seq in sequences {
                runs += 1
                let r = simulateChallenge(obs, order: order, sequence: seq)
                if r.passed { passes += 1 } else {
                    let key = r.why.contains("other way") ? "moved the other way" : r.why.contains("within") ? "move not made in time" : "other"
                    failures[key, default: 0] += 1
                }
            }
        }
        print("\(clip) replayed: \(passes)/\(runs) random \(name) challenges passed (\(fmt(Double(passes) / Double(runs) * 100, 1)) %); failures: \(failures.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))")
      }
    }
}

switch arguments.first {
case "challenge": runChallenge()
case "recapture": runRecapture()
case "passive": runPassive()
case "passive-sessions": runPassiveSessions()
case "poses": runPoses(arguments.count > 1 ? arguments[1] : "tran_live")
case "passive-window": runPassiveWindow()
case "landmarks": runLandmarks()
case "blink": runBlink()
case "eyes": runEyes()
case "spoof": runSpoof()
case "lfw":
    // --enrol / --probe single|mirrored|jittered (default: what the daemon ships, jittered enrolment
    // templates against mirrored live probes).
    func views(_ flag: String) -> EmbeddingViews? {
        arguments.firstIndex(of: flag).flatMap { i in
            arguments.indices.contains(i + 1) ? EmbeddingViews.allCases.first { "\($0)" == arguments[i + 1] } : nil
        }
    }
    runLFW(write: arguments.contains("--write"), enrol: views("--enrol") ?? .jittered, probe: views("--probe") ?? .mirrored)
case "lfw-views":
    let count = arguments.firstIndex(of: "--count").flatMap { Int(arguments[$0 + 1]) } ?? 26
    runLFWViews(count: max(2, min(42, count)))
case "lfw-fusion": runLFWFusion()
case "second-chips": runSecondChips(Array(arguments.dropFirst()))
case "second-stages": runSecondStages()
case "attempts": runAttempts()
case "stages": runStages()
case "preview": runPreview()
case "memory": runMemory()
case "identify": runIdentify()
default:
    print("usage: biometricd-face-bench lfw [--write] [--enrol V] [--probe V] (V: single|mirrored|jittered) | attempts [--frames K] [--cap N] [--write] | lfw-fusion [--nested] [--sweep] [--errors] [--cache-only] | second-stages | second-chips FILE… | lfw-views [--count N] [--alignment 1|2|3] [--hog] [--errors] | stages | preview | identify | spoof | blink | eyes [--series] | poses CLIP | challenge [--trace MOVES RANGES] | recapture | passive | passive-sessions [--blink]")
    exit(2)
}
