// lfw-fusion: the second network (MobileFaceNet, ArcFace loss) alone and fused with dlib's ResNet
// on LFW (issue 23, part 3). The dlib views come from the `lfw-views --count 8` cache; the second
// network's raw chip and mirror outputs are computed once and cached in .build/.
import BiometricCamera
import BiometricCore
import BiometricFace
import CFaceVision
import COpenBLAS
import Foundation

/// The second network's model: ./models, else the shared folder.
func recognizerPath() -> String {
    let local = modelsDir + "/" + FaceModels.recognizerName
    if FileManager.default.fileExists(atPath: local) { return local }
    return repo + "/../shared/models/recognizer/" + FaceModels.recognizerName
}

/// The second network's alignment the daemon ships (`FaceEngine.secondPoints`): `--write` of
/// `lfw-fusion` and `attempts --fused` must be given it, so the calibrations fit what is scored.
let shippedSecondPoints = "yunet"

/// `--points` of the command line ("" for the 68-point five); with `--write` it must be the shipped one.
func secondPointsArgument() -> String {
    let points = arguments.firstIndex(of: "--points").flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil } ?? ""
    if arguments.contains("--write"), points != shippedSecondPoints {
        fatalError("--write fits the shipped calibration: give --points \(shippedSecondPoints), the daemon's alignment")
    }
    return points
}

/// Raw chip and mirror outputs (256 floats per image) of the second network, `files` order.
func computeSecond(_ files: [String]) -> [Float] {
    // --points corners: eye centres from the eye corners (36/39, 42/45) instead of all six points;
    // --points mouth: mouth corners halfway between the outer (48/54) and inner (60/64) lip
    // corners (an open mouth pulls the outer ones); corners+mouth: both.
    let points = secondPointsArgument()
    let corners = points == "corners" || points == "corners+mouth"
    let mouth = points == "mouth" || points == "corners+mouth"
    // --points yunet: YuNet's own five keypoints of the same detection, found as the daemon finds
    // them (`FaceEngine.keypoints`: YuNet again on a crop around the box); none: the 68-point ones.
    // --points yunet-frame: the keypoints of the whole-image detection itself.
    let yunet = points == "yunet" || points == "yunet-frame"
    let cache = repo + "/.build/lfw-mobilefacenet-raw\(points.isEmpty ? "" : "-" + points).bin"
    if let blob = FileManager.default.contents(atPath: cache), blob.count == files.count * 256 * 4 {
        say("second network: raw outputs from \(cache)")
        return blob.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }
    let models = loadModels(secondNetwork: true)
    final class Store: @unchecked Sendable {
        var data: [Float]
        var failed = 0
        var noPoints = 0
        let lock = NSLock()
        init(_ n: Int) { data = [Float](repeating: 0, count: n) }
    }
    let store = Store(files.count * 256)
    let (seconds, threads) = forEachLFWImage(files) { i, image in
        // The same face and landmarks as computeViews (the dlib cache): the detection nearest the centre.
        let d = try? models.withEngine { engine -> [Float]? in
            let found = try engine.detect(image, minSize: 30)
            let central = FaceBox(x: 68, y: 68, width: 114, height: 124)
            let detection = centralDetection(found)
            let box = detection?.box
            var landmarks = try engine.landmarks(image, box: box ?? central)
            let keypoints = points == "yunet" ? try detection.flatMap { try engine.keypoints(image, box: $0.box) } : detection?.points
            if yunet, let five = keypoints {
                if i < 3 {  // the ordering check: the detector's points beside the 68-point ones
                    var p68 = [Float](repeating: 0, count: 10)
                    _ = cvis_recognizer_points(landmarks.flat, &p68)
                    say("  \(files[i]): detector \(five.map { fmt(Double($0), 1) }.joined(separator: " ")); 68-point \(p68.map { fmt(Double($0), 1) }.joined(separator: " "))")
                }
                return try engine.secondDescriptors(image, points: five)
            }
            if yunet { store.lock.lock(); store.noPoints += 1; store.lock.unlock() }
            if corners {
                // Every point of each eye moved to its corners' midpoint: the mean is then that.
                var flat = landmarks.flat
                for (a, b) in [(36, 39), (42, 45)] {
                    let x = (flat[2 * a] + flat[2 * b]) / 2, y = (flat[2 * a + 1] + flat[2 * b + 1]) / 2
                    for k in a..<(a + 6) { flat[2 * k] = x; flat[2 * k + 1] = y }
                }
                landmarks = Landmarks(flat: flat)
            }
            if mouth {
                var flat = landmarks.flat
                for (outer, inner) in [(48, 60), (54, 64)] {
                    flat[2 * outer] = (flat[2 * outer] + flat[2 * inner]) / 2
                    flat[2 * outer + 1] = (flat[2 * outer + 1] + flat[2 * inner + 1]) / 2
                }
                landmarks = Landmarks(flat: flat)
            }
            return try engine.secondDescriptors(image, landmarks: landmarks)
        }
        store.lock.lock()
        if let d { store.data.replaceSubrange((i * 256)..<((i + 1) * 256), with: d) } else { store.failed += 1 }
        store.lock.unlock()
    }
    say("second network: \(files.count) images (chip + mirror) in \(fmt(seconds, 0)) s, \(fmt(seconds / Double(files.count) * 1000, 1)) ms/image wall on \(threads) threads; \(store.failed) failed\(yunet ? ", \(store.noPoints) without detector points (68-point ones used)" : "")")
    _ = store.data.withUnsafeBufferPointer { FileManager.default.createFile(atPath: cache, contents: Data(buffer: $0)) }
    return store.data
}

func unit(_ v: [Float]) -> [Float] {
    let n = v.map { $0 * $0 }.reduce(0, +).squareRoot()
    return n > 0 ? v.map { $0 / n } : v
}

/// One embedding per image for each side of a comparison (template side A, probe side B),
/// unit vectors of any dimension: the distance between them is what is scored.
struct SidedEmbeddings {
    let dim: Int
    var a: [Float]
    var b: [Float]
}

/// Distances of the View-2 pairs, 10-fold accuracy (threshold on 9 folds, tested on the 10th, any
/// distance 0–2), and TAR at FAR 1e-3…1e-5 over all cross-identity pairs (A of the first image
/// against B of the second), with the impostor histogram (4000 bins over 0–2).
@discardableResult
func evaluateSided(_ e: SidedEmbeddings, files: [String], folds: [[Pair]], label: String) -> (impostor: [Int], bins: Int, accuracy: Double, tar5: Double) {
    let n = files.count, dim = e.dim
    let index = Dictionary(uniqueKeysWithValues: files.enumerated().map { ($1, $0) })
    func distance(_ i: Int, _ j: Int) -> Double {
        var s: Float = 0
        for k in 0..<dim { s += e.a[i * dim + k] * e.b[j * dim + k] }
        return Double(max(0, 2 - 2 * s)).squareRoot()
    }
    let scored = folds.map { $0.map { p in (distance(index[p.a]!, index[p.b]!), p.same) } }
    var accuracies: [Double] = []
    for k in 0..<scored.count {
        let train = scored.enumerated().filter { $0.offset != k }.flatMap(\.element).sorted { $0.0 < $1.0 }
        // Sweep every cut between consecutive training distances.
        let impostors = train.filter { !$0.1 }.count
        var correct = impostors, best = impostors, bestT = 0.0
        for (m, s) in train.enumerated() {
            correct += s.1 ? 1 : -1
            if correct > best, m + 1 < train.count { best = correct; bestT = (s.0 + train[m + 1].0) / 2 }
        }
        accuracies.append(Double(scored[k].filter { ($0.0 < bestT) == $0.1 }.count) / Double(scored[k].count))
    }
    let mean = accuracies.reduce(0, +) / Double(accuracies.count)
    let std = (accuracies.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(accuracies.count)).squareRoot()

    let ids = files.map { String($0.split(separator: "/")[0]) }
    let all = CrossPairs(a: e.a, b: e.b, dim: dim, ids: ids)
    say("\(label): LFW 10-fold \(fmt(mean * 100, 2)) % ± \(fmt(std * 100, 2)); \(all.summary)")
    return (all.impostor, all.bins, mean, all.tars[2])
}

/// Impostor mean and standard deviation of the cosine A·B over the View-2 impostor pairs.
func impostorStats(_ a: [Float], _ b: [Float], dim: Int, pairs: [Pair], index: [String: Int]) -> (Double, Double) {
    let c = pairs.filter { !$0.same }.map { p -> Double in
        let i = index[p.a]!, j = index[p.b]!
        var s: Float = 0
        for k in 0..<dim { s += a[i * dim + k] * b[j * dim + k] }
        return Double(s)
    }
    let m = c.reduce(0, +) / Double(c.count)
    return (m, (c.map { ($0 - m) * ($0 - m) }.reduce(0, +) / Double(c.count)).squareRoot())
}

func runLFWFusion() {
    let folds = lfwPairs()
    let files = Array(Set(folds.flatMap { $0.flatMap { [$0.a, $0.b] } })).sorted()
    let index = Dictionary(uniqueKeysWithValues: files.enumerated().map { ($1, $0) })
    let dlib = computeViews(files, views: 8, models: loadModels())
    let raw = computeSecond(files)
    if arguments.contains("--cache-only") { return }
    let n = files.count
    // dlib as shipped: jittered template (8 views) against a mirrored probe (2 views).
    var dA = [Float](), dB = [Float]()
    // Second network: template chip + mirror; probe chip alone (the per-frame budget) or chip + mirror.
    var sA = [Float](), sChip = [Float](), sMirrored = [Float]()
    for i in 0..<n {
        dA += dlib.embedding(i, Array(0..<8))
        dB += dlib.embedding(i, [0, 1])
        let chip = Array(raw[(i * 256)..<(i * 256 + 128)]), mirror = Array(raw[(i * 256 + 128)..<(i * 256 + 256)])
        let both = unit(zip(chip, mirror).map { $0 + $1 })
        sA += both
        sMirrored += both
        sChip += unit(chip)
    }
    if arguments.contains("--errors") {
        // The View-2 genuine pairs the second network scores lowest, beside dlib's cosine.
        func cos(_ x: [Float], _ y: [Float], _ i: Int, _ j: Int) -> Double {
            Double((0..<128).map { x[i * 128 + $0] * y[j * 128 + $0] }.reduce(0, +))
        }
        let genuine = folds.flatMap { $0 }.filter(\.same).map { p -> (Double, Double, Pair) in
            let i = index[p.a]!, j = index[p.b]!
            return (cos(sA, sChip, i, j), cos(dA, dB, i, j), p)
        }.sorted { $0.0 < $1.0 }
        for (c2, c1, p) in genuine.prefix(40) { say("genuine second \(fmt(c2, 3)) dlib \(fmt(c1, 3)) \(p.a) \(p.b)") }
        return
    }
    if arguments.contains("--old-templates") {
        // v2 templates enrolled before the second network was aligned on YuNet's keypoints (on the
        // 68-point five, the `lfw-mobilefacenet-raw.bin` cache) against live probes aligned as now,
        // scored with the shipped share and calibration: how far their genuine scores move.
        let old = FileManager.default.contents(atPath: repo + "/.build/lfw-mobilefacenet-raw.bin").map { blob in
            blob.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) } } ?? []
        guard old.count == n * 256 else { fatalError("run lfw-fusion without --points first (the 68-point cache)") }
        let w = FaceFusion.dlibShare, x = Float(w.squareRoot()), y = Float((1 - w).squareRoot())
        func vectors(_ second: [Float]) -> [Float] {
            var v = [Float](repeating: 0, count: n * 256)
            for i in 0..<n { for k in 0..<128 { v[i * 256 + k] = x * dA[i * 128 + k]; v[i * 256 + 128 + k] = y * second[i * 128 + k] } }
            return v
        }
        var oldA = [Float]()
        for i in 0..<n { oldA += unit(zip(old[(i * 256)..<(i * 256 + 128)], old[(i * 256 + 128)..<(i * 256 + 256)]).map { $0 + $1 }) }
        var probe = [Float](repeating: 0, count: n * 256)
        for i in 0..<n { for k in 0..<128 { probe[i * 256 + k] = x * dB[i * 128 + k]; probe[i * 256 + 128 + k] = y * sChip[i * 128 + k] } }
        let ids = files.map { String($0.split(separator: "/")[0]) }
        let t48 = FaceFusion.calibration.value(forScore: 48)
        for (label, a) in [("templates aligned as now", vectors(sA)), ("old templates (68-point five)", vectors(oldA))] {
            var scores: [Double] = [], shifts: [Double] = []
            var impostor48 = 0, impostors = 0
            let now = vectors(sA)
            for i in 0..<n { for j in 0..<n where i != j {
                var s: Float = 0, s0: Float = 0
                for k in 0..<256 { s += a[i * 256 + k] * probe[j * 256 + k]; s0 += now[i * 256 + k] * probe[j * 256 + k] }
                let d = Double(max(0, 2 - 2 * s)).squareRoot(), d0 = Double(max(0, 2 - 2 * s0)).squareRoot()
                if ids[i] == ids[j] {
                    scores.append(FaceFusion.calibration.score(d))
                    shifts.append(FaceFusion.calibration.score(d) - FaceFusion.calibration.score(d0))
                } else {
                    impostors += 1
                    if d < t48 { impostor48 += 1 }
                }
            } }
            let sorted = scores.sorted(), sh = shifts.sorted()
            let mean = shifts.reduce(0, +) / Double(shifts.count)
            say("\(label) vs live probes: \(scores.count) genuine comparisons, TAR at 48 \(fmt(Double(scores.filter { $0 >= 48 }.count) / Double(scores.count) * 100, 2)) %, median score \(fmt(sorted[sorted.count / 2], 1)); score change against templates aligned as now: mean \(fmt(mean, 2)), median \(fmt(sh[sh.count / 2], 2)), 5–95 % \(fmt(sh[sh.count / 20], 1))…\(fmt(sh[sh.count * 19 / 20], 1)); impostor FAR at 48 \(String(format: "%.2e", Double(impostor48) / Double(impostors))) (\(impostor48)/\(impostors))")
        }
        return
    }
    if !arguments.contains("--nested") {
        evaluateSided(SidedEmbeddings(dim: 128, a: dA, b: dB), files: files, folds: folds, label: "dlib (jittered vs mirrored), as shipped")
        evaluateSided(SidedEmbeddings(dim: 128, a: sA, b: sChip), files: files, folds: folds, label: "second network (chip+mirror vs chip)")
        evaluateSided(SidedEmbeddings(dim: 128, a: sA, b: sMirrored), files: files, folds: folds, label: "second network (chip+mirror vs chip+mirror)")
    }
    let all = folds.flatMap { $0 }
    let (m1, s1) = impostorStats(dA, dB, dim: 128, pairs: all, index: index)
    let (m2, s2) = impostorStats(sA, sChip, dim: 128, pairs: all, index: index)
    say("impostor cosine (View-2 impostor pairs): dlib \(fmt(m1, 4)) ± \(fmt(s1, 4)), second \(fmt(m2, 4)) ± \(fmt(s2, 4)); z-score weights dlib:second = \(fmt(1 / s1, 2)):\(fmt(1 / s2, 2)) → dlib share \(fmt(s2 / (s1 + s2), 3))")
    // z-scored cosines averaged = a weighted sum of the two cosines = the cosine of the
    // concatenated vectors [√w·dlib, √(1−w)·second]: one unit 256-d embedding, one distance.
    func fused(_ w: Double, probeMirrored: Bool) -> SidedEmbeddings {
        let x = Float(w.squareRoot()), y = Float((1 - w).squareRoot())
        var a = [Float](repeating: 0, count: n * 256), b = a
        let probe = probeMirrored ? sMirrored : sChip
        for i in 0..<n {
            for k in 0..<128 {
                a[i * 256 + k] = x * dA[i * 128 + k]; a[i * 256 + 128 + k] = y * sA[i * 128 + k]
                b[i * 256 + k] = x * dB[i * 128 + k]; b[i * 256 + 128 + k] = y * probe[i * 128 + k]
            }
        }
        return SidedEmbeddings(dim: 256, a: a, b: b)
    }
    let zShare = s2 / (s1 + s2)
    if arguments.contains("--nested") {
      var dChip = [Float]()
      for i in 0..<n { dChip += dlib.embedding(i, [0]) }
      let configs: [(String, [Float], [Float])] = [("probe dlib chip+mirror, second chip", dB, sChip),
                                                   ("probe dlib chip, second chip+mirror", dChip, sMirrored),
                                                   ("probe dlib chip, second chip", dChip, sChip),
                                                   ("probe dlib chip+mirror, second chip+mirror", dB, sMirrored)]
      // --write: only the shipped probe (dlib chip + mirror, second chip), then the calibration.
      let write = arguments.contains("--write")
      for (name, dProbe, sProbe) in configs where !write || name == configs[0].0 {
        say("# \(name)")
        // The dlib share chosen on the 9 training folds of each fold (with its threshold), tested
        // on the 10th: the share is a trained parameter, so it must not see the test fold.
        let grid = stride(from: 0.80, through: 0.995, by: 0.005).map { $0 }
        func pairDistances(_ w: Double) -> [[(Double, Bool)]] {
            let x = Float(w), y = Float(1 - w)
            return folds.map { $0.map { p in
                let i = index[p.a]!, j = index[p.b]!
                var c1: Float = 0, c2: Float = 0
                for k in 0..<128 { c1 += dA[i * 128 + k] * dProbe[j * 128 + k]; c2 += sA[i * 128 + k] * sProbe[j * 128 + k] }
                return (Double(max(0, 2 - 2 * (x * c1 + y * c2))).squareRoot(), p.same)
            } }
        }
        func best(_ train: [(Double, Bool)]) -> (accuracy: Double, threshold: Double) {
            let sorted = train.sorted { $0.0 < $1.0 }
            let impostors = sorted.filter { !$0.1 }.count
            var correct = impostors, top = impostors, t = 0.0
            for (m, s) in sorted.enumerated() {
                correct += s.1 ? 1 : -1
                if correct > top, m + 1 < sorted.count { top = correct; t = (s.0 + sorted[m + 1].0) / 2 }
            }
            return (Double(top) / Double(sorted.count), t)
        }
        let byShare = grid.map { pairDistances($0) }
        var accuracies: [Double] = [], chosen: [Double] = []
        for k in 0..<folds.count {
            var pick = (share: grid[0], acc: -1.0, t: 0.0)
            for (g, w) in grid.enumerated() {
                let train = byShare[g].enumerated().filter { $0.offset != k }.flatMap(\.element)
                let b = best(train)
                if b.accuracy > pick.acc { pick = (w, b.accuracy, b.threshold) }
            }
            let g = grid.firstIndex(of: pick.share)!
            accuracies.append(Double(byShare[g][k].filter { ($0.0 < pick.t) == $0.1 }.count) / Double(byShare[g][k].count))
            chosen.append(pick.share)
        }
        let mean = accuracies.reduce(0, +) / Double(accuracies.count)
        let std = (accuracies.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(accuracies.count)).squareRoot()
        say("nested: dlib share chosen on the training folds \(chosen.map { fmt($0, 3) }.joined(separator: " ")); LFW 10-fold \(fmt(mean * 100, 2)) % ± \(fmt(std * 100, 2)) (folds \(accuracies.map { fmt($0 * 100, 1) }.joined(separator: " ")))")
        for (g, w) in grid.enumerated() where g % 4 == 0 && name.hasPrefix("probe dlib chip+mirror, second chip") {
            let all = byShare[g].flatMap { $0 }
            say("  share \(fmt(w, 3)): best accuracy over all 6000 pairs \(fmt(best(all).accuracy * 100, 2)) %")
        }
        // The shipped share: the median of the ten training-fold choices (never a test fold's own optimum).
        let shipped = chosen.sorted()[chosen.count / 2]
        let shares = write ? [shipped] : Set(chosen).sorted()
        for w in shares {
            let x = Float(w.squareRoot()), y = Float((1 - w).squareRoot())
            var a = [Float](repeating: 0, count: n * 256), b = a
            for i in 0..<n {
                for k in 0..<128 {
                    a[i * 256 + k] = x * dA[i * 128 + k]; a[i * 256 + 128 + k] = y * sA[i * 128 + k]
                    b[i * 256 + k] = x * dProbe[i * 128 + k]; b[i * 256 + 128 + k] = y * sProbe[i * 128 + k]
                }
            }
            let r = evaluateSided(SidedEmbeddings(dim: 256, a: a, b: b), files: files, folds: folds, label: "fused (\(name)), dlib share \(fmt(w, 3))")
            printScale(r.impostor, bins: r.bins)
            if write, w == shipped { writeFusionCalibration(share: w, chosen: chosen, nested: mean, impostor: r.impostor, bins: r.bins, images: n) }
        }
      }
      return
    }
    var shares = [zShare]
    if arguments.contains("--sweep") { shares += [0.5, 0.7, 0.8, 0.85, 0.9, 0.95] }
    for w in shares {
        evaluateSided(fused(w, probeMirrored: false), files: files, folds: folds,
                      label: "fused, dlib share \(fmt(w, 3)) (template: dlib jittered + second chip+mirror; probe: dlib mirrored + second chip)")
    }
    evaluateSided(fused(zShare, probeMirrored: true), files: files, folds: folds, label: "fused, dlib share \(fmt(zShare, 3)), second probe chip+mirror")
}

/// Writes the second network's chips of LFW images (PPM) to /tmp, for looking at alignment failures.
func runSecondChips(_ names: [String]) {
    let models = loadModels(secondNetwork: true)
    for name in names {
        guard let frame = readFrame(shared + "/faces/lfw/images/" + name) else { continue }
        let image = ImageRef(pixels: UnsafePointer(frame.bgr!.pointer), width: frame.width, height: frame.height, channels: 3)
        let chip = try? models.withEngine { engine -> [UInt8]? in
            let found = try engine.detect(image, minSize: 30)
            let box = centralDetection(found)?.box
            let landmarks = try engine.landmarks(image, box: box ?? FaceBox(x: 68, y: 68, width: 114, height: 124))
            say("\(name): box \(box.map { "\(Int($0.x)),\(Int($0.y)) \(Int($0.width))x\(Int($0.height))" } ?? "none")")
            return try engine.secondChip(image, landmarks: landmarks)
        }
        guard let chip else { continue }
        var ppm = Data("P6 112 112 255\n".utf8)
        for k in 0..<(112 * 112) { ppm.append(contentsOf: [chip[3 * k + 2], chip[3 * k + 1], chip[3 * k]]) }
        let out = "/tmp/chip-" + name.replacingOccurrences(of: "/", with: "_") + ".ppm"
        FileManager.default.createFile(atPath: out, contents: ppm)
    }
}

/// What the second network adds per verify frame, against dlib's live probe in the same process:
/// a 640×480 frame with an LFW face, landmarks once, then each embedding timed (median of rounds
/// of 20, interleaved so both see the same machine load).
func runSecondStages() {
    guard let face = readFrame(shared + "/faces/lfw/images/Aaron_Eckhart/Aaron_Eckhart_0001.jpg") else { fatalError("no LFW image") }
    let (w, h) = (640, 480)
    var pixels = [UInt8](repeating: 110, count: w * h * 3)
    for y in 0..<375 { for x in 0..<375 {
        let sx = x * 250 / 375, sy = y * 250 / 375
        for c in 0..<3 { pixels[((y + 52) * w + x + 132) * 3 + c] = face.bgr!.pointer[(sy * 250 + sx) * 3 + c] }
    } }
    let models = loadModels(secondNetwork: true)
    pixels.withUnsafeBufferPointer { buffer in
        let image = ImageRef(pixels: buffer.baseAddress!, width: w, height: h, channels: 3)
        _ = try? models.withEngine { engine in
            let box = try engine.detect(image)[0].box
            let landmarks = try engine.landmarks(image, box: box)
            let stages: [(String, () throws -> Void)] = [
                ("dlib, chip + mirror (today's live probe)", { _ = try engine.embed(image, landmarks: landmarks, views: .mirrored) }),
                ("second network, keypoints + chip (live probe as shipped)", { _ = try engine.secondEmbedding(image, landmarks: landmarks, box: box, mirrored: false) }),
                ("second network, keypoints + chip + mirror (stored template)", { _ = try engine.secondEmbedding(image, landmarks: landmarks, box: box, mirrored: true) }),
                ("second network, chip on the 68-point five (before)", { _ = try engine.secondEmbedding(image, landmarks: landmarks, mirrored: false) }),
                ("YuNet keypoints on the crop around the box", { _ = try engine.keypoints(image, box: box) }),
                ("dlib, 8 chips (stored template)", { _ = try engine.embed(image, landmarks: landmarks, views: .jittered) }),
            ]
            var times = [[Double]](repeating: [], count: stages.count)
            for (_, body) in stages { try body() }  // warm up
            for _ in 0..<7 {
                for (k, (_, body)) in stages.enumerated() {
                    let t = now()
                    for _ in 0..<20 { try body() }
                    times[k].append((now() - t) / 20 * 1000)
                }
            }
            let medians = times.map { $0.sorted()[$0.count / 2] }
            for (k, (label, _)) in stages.enumerated() {
                say("\(label): \(fmt(medians[k], 2)) ms (rounds: \(times[k].map { fmt($0, 1) }.joined(separator: " ")))")
            }
            say("per verify frame the second network adds \(fmt(medians[1], 2)) ms = \(fmt(medians[1] / medians[0] * 100, 0)) % of dlib's live probe (\(fmt(medians[0], 2)) ms)")
        }
    }
}

/// The SPEC §4 scale on a distance's impostor histogram: where FAR 1e-2…1e-5 fall (direct
/// counts), and 1e-6 from a straight line in log10 FAR fitted over FAR 1e-6…1e-3 (as `lfw --write`).
func printScale(_ impostor: [Int], bins: Int) {
    let total = Double(impostor.reduce(0, +))
    var cum = 0, fit: [(Double, Double)] = [], at: [Double: Double] = [:]
    for b in 0...bins {
        cum += impostor[b]
        let d = Double(b + 1) / Double(bins) * 2, lf = log10(Double(max(cum, 1)) / total)
        if cum >= 30, lf <= -3, lf >= -6 { fit.append((d, lf)) }
        for far in [1e-2, 1e-3, 1e-4, 1e-5] where at[far] == nil && Double(cum) / total > far { at[far] = Double(b) / Double(bins) * 2 }
    }
    let nf = Double(fit.count)
    let mx = fit.map(\.0).reduce(0, +) / nf, my = fit.map(\.1).reduce(0, +) / nf
    let slope = fit.map { ($0.0 - mx) * ($0.1 - my) }.reduce(0, +) / fit.map { ($0.0 - mx) * ($0.0 - mx) }.reduce(0, +)
    let intercept = my - slope * mx
    let rows = [1e-2, 1e-3, 1e-4, 1e-5].map { far in "score \(Int(-12 * log10(far))) (FAR \(String(format: "%.0e", far))) at distance \(fmt(at[far] ?? .nan, 4))" }
    say("  scale: " + rows.joined(separator: "; ") + "; score 72 (FAR 1e-6) at \(fmt((-6 - intercept) / slope, 4)) (tail log10 FAR = \(fmt(intercept, 3)) + \(fmt(slope, 3))·d over \(fit.count) points)")
}

/// Writes Sources/Face/FaceFusionCalibration.swift: the dlib share and the per-comparison SPEC §4
/// calibration of the fused distance (same fitting as `lfw --write`).
func writeFusionCalibration(share: Double, chosen: [Double], nested: Double, impostor: [Int], bins: Int, images: Int) {
    let (knots, intercept, slope) = comparisonKnots(impostor, bins: bins)
    let total = impostor.reduce(0, +)
    let calibration = FARCalibration(.distance, knots: knots.map { .init($0.0, $0.1) }, source: "LFW fused")
    for score in [24.0, 36, 48, 60, 72] {
        say("score \(Int(score)) (FAR \(String(format: "%.0e", pow(10, -score / 12)))) at fused distance \(fmt(calibration.value(forScore: score), 4))")
    }
    let swift = """
        import BiometricCore

        /// Score fusion of the two face networks (Docs/face.md "Two networks, one score").
        /// GENERATED by `biometricd-face-bench lfw-fusion --nested --points \(shippedSecondPoints) --write` — do not edit by hand.
        /// The second network aligned on YuNet's five keypoints of the face (`FaceEngine.secondPoints`).
        /// `dlibShare` w is the median of the shares chosen on the 9 training folds of each LFW
        /// View-2 fold (\(chosen.map { fmt($0, 3) }.joined(separator: " ")); nested 10-fold accuracy \(fmt(nested * 100, 2)) %).
        /// The fused distance is the distance between [√w·dlib, √(1 − w)·second] vectors: a stored
        /// template (dlib chip, mirror, six jitters; second chip + mirror) against a live probe (dlib
        /// chip + mirror; second chip). `calibration`: \(total) impostor pairs of \(images) LFW images
        /// (all cross-identity pairs); knots below FAR 1e-6 come from the fitted tail
        /// log10 FAR = \(fmt(intercept, 3)) + \(fmt(slope, 3))·distance.
        public enum FaceFusion {
            public static let dlibShare = \(fmt(share, 3))
            public static let calibration = FARCalibration(.distance, knots: knots, source: "LFW fused, \(total) impostor pairs")
            static let knots: [FARCalibration.Knot] = [
        \(knots.map { "        .init(\(fmt($0.0, 4)), \(fmt($0.1, 3)))," }.joined(separator: "\n"))
            ]
        }

        """
    try! swift.write(toFile: repo + "/Sources/Face/FaceFusionCalibration.swift", atomically: true, encoding: .utf8)
    say("wrote Sources/Face/FaceFusionCalibration.swift (share \(fmt(share, 3)), \(knots.count) knots)")
}
