// `biometricd-face-bench eyes`: eye state in the dark (issue 23, part 2). Two measures of an
// eye's openness, side by side, under the same blink rule:
//   EAR   the eye aspect ratio of the 68 face landmarks (what BlinkLiveness uses);
//   iris  the eyelid height / width of MediaPipe's iris landmark network on a crop made from the
//         eye corners (IrisEyeModel);
// and, on the isolated CEW crops where EAR cannot exist, EyeState.openness beside the iris net.
// Material: ../shared/data/eyes/cew_val, the live clips (grid_face_blink_a, tran_live), and
// darkened copies of both: v' = 255·(v/255)^γ plus Gaussian sensor noise σ (grey levels), the
// look of an under-lit or IR-without-emitter frame. Nothing here is tuned on the result.
import BiometricCore
import BiometricFace
import Foundation

/// A darkening: γ (≥1 darker) and Gaussian noise σ in grey levels; seeded, so runs repeat.
struct Darkening: CustomStringConvertible {
    var gamma: Double
    var noise: Double
    var description: String { gamma == 1 && noise == 0 ? "plain" : "γ \(fmt(gamma, 1)) σ \(fmt(noise, 0))" }
    static let levels = [Darkening(gamma: 1, noise: 0), Darkening(gamma: 2.2, noise: 4), Darkening(gamma: 3.0, noise: 8)]

    func apply(_ plane: UnsafeBufferPointer<UInt8>, into out: UnsafeMutablePointer<UInt8>, rng: inout SplitMix64) {
        var table = [Double](repeating: 0, count: 256)
        for v in 0..<256 { table[v] = 255 * pow(Double(v) / 255, gamma) }
        for i in plane.indices {
            var v = table[Int(plane[i])]
            if noise > 0 {
                // Box–Muller from two uniforms.
                let u1 = max(Double(rng.next() >> 11) / Double(1 << 53), 1e-12), u2 = Double(rng.next() >> 11) / Double(1 << 53)
                v += noise * (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
            }
            out[i] = UInt8(max(0, min(255, v.rounded())))
        }
    }

    func apply(_ frame: Frame, rng: inout SplitMix64) -> Frame {
        if gamma == 1 && noise == 0 { return frame }
        let pool = PixelBufferPool(limit: 0)
        let grey = pool.buffer(count: frame.grey.count)
        apply(frame.grey.bytes, into: grey.pointer, rng: &rng)
        var bgr: PixelBuffer?
        if let b = frame.bgr {
            let out = pool.buffer(count: b.count)
            apply(b.bytes, into: out.pointer, rng: &rng)
            bgr = out
        }
        return Frame(width: frame.width, height: frame.height, grey: grey, bgr: bgr, timestampNs: frame.timestampNs,
                     sequence: frame.sequence, isInfrared: frame.isInfrared)
    }
}

/// The iris network from the models folder, else straight from ../shared/models/eyes (a bench-only
/// model until it wins a measure: set-up does not install it).
func loadIris() -> IrisEyeModel {
    let installed = modelsDir + "/" + IrisEyeModel.fileName
    let path = FileManager.default.fileExists(atPath: installed) ? installed : repo + "/../shared/models/eyes/" + IrisEyeModel.fileName
    do { return try IrisEyeModel(path: path) } catch { fatalError("\(error)") }
}

/// ROC AUC of scores where `open` should score higher.
func rocAUC(open pos: [Double], closed neg: [Double]) -> Double {
    var wins = 0.0
    for p in pos { for q in neg { wins += p > q ? 1 : (p == q ? 0.5 : 0) } }
    return wins / Double(max(1, pos.count * neg.count))
}

/// BlinkLiveness's rule over a series of one measure (nil: no face): the open level is the upper
/// median of the first `baselineFrames` measured frames; the eye is closed below 0.72× that level
/// and a blink is declared when it reopens above 0.86× (Liveness.swift's closeRatio/reopenRatio).
/// Returns the frame index where the blink is declared, or nil.
func blinkFrame(_ series: [Double?], baselineFrames: Int) -> Int? {
    let measured = series.enumerated().compactMap { i, v in v.map { (i, $0) } }
    guard measured.count > baselineFrames else { return nil }
    let firstOpen = measured.prefix(baselineFrames).map(\.1).sorted()
    let baseline = firstOpen[min(firstOpen.count - 1, firstOpen.count * 2 / 3)]
    guard baseline > 0 else { return nil }
    var sawClosed = false
    for (i, v) in measured.dropFirst(baselineFrames) {
        if v < baseline * 0.72 { sawClosed = true } else if sawClosed && v > baseline * 0.86 { return i }
    }
    return nil
}

/// How far the closed frames sit below the open ones, in pooled standard deviations (d′), for a
/// clip whose blink frames are known; nil without both kinds.
func separation(_ series: [Double?], closed: Set<Int>) -> Double? {
    let c = series.enumerated().compactMap { i, v in closed.contains(i) ? v : nil }
    let o = series.enumerated().compactMap { i, v in closed.contains(i) ? nil : v }
    guard c.count >= 2, o.count >= 2 else { return nil }
    func stats(_ x: [Double]) -> (Double, Double) {
        let m = x.reduce(0, +) / Double(x.count)
        return (m, x.map { ($0 - m) * ($0 - m) }.reduce(0, +) / Double(x.count - 1))
    }
    let (mc, vc) = stats(c), (mo, vo) = stats(o)
    return (mo - mc) / ((vc + vo) / 2).squareRoot()
}

/// Both eyes' mean iris-net openness. The net was trained on left eyes: by default the image-left
/// eye (the subject's right, landmarks 36–41) is mirrored, as IrisEyeModel.openness does;
/// `--mirror-other` mirrors the other one instead, `--mirror-none` neither (a check that the
/// choice is not what fails).
func irisOpenness(_ iris: IrisEyeModel, _ image: ImageRef, _ lm: Landmarks) throws -> Double {
    let p = lm.points
    let other = arguments.contains("--mirror-other"), none = arguments.contains("--mirror-none")
    let right = try iris.eyelid(image, corners: p[36], p[39], mirror: !none && !other)
    let left = try iris.eyelid(image, corners: p[42], p[45], mirror: !none && other)
    return (right.openness + left.openness) / 2
}

func runEyes() {
    let start = now()
    let models = loadModels()
    let iris = loadIris()

    // 1. CEW crops: no face, so no EAR; EyeState.openness beside the iris net. The crops are tight
    // around the eye (corners near the edges): the corners given to the net are the crop's
    // horizontal centre line at 13 % and 87 % of its width; CEW does not say which eye, so the
    // net's openness is the mean of the crop and its mirror.
    print("cew_val (26x34 eye crops, 147 open / 141 closed): ROC AUC, open vs closed")
    let cew = shared + "/eyes/cew_val/png"
    for level in Darkening.levels {
        var rng = SplitMix64(seed: 23)
        var openness: [(Double, Bool)] = [], irisScores: [(Double, Bool)] = []
        for (label, open) in [("open", true), ("closed", false)] {
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: cew + "/" + label)) ?? []).filter { $0.hasSuffix(".png") }.sorted()
            for name in names {
                guard let original = readFrame(cew + "/" + label + "/" + name) else { continue }
                let frame = level.apply(original, rng: &rng)
                let grey = UnsafePointer(frame.grey.pointer)
                openness.append((EyeState.openness(grey: grey, width: frame.width, height: frame.height), open))
                let image = ImageRef(pixels: grey, width: frame.width, height: frame.height, channels: 1)
                let y = Double(frame.height) / 2, w = Double(frame.width)
                let a = SIMD2(0.13 * w, y), b = SIMD2(0.87 * w, y)
                if let r1 = try? iris.eyelid(image, corners: a, b, mirror: false), let r2 = try? iris.eyelid(image, corners: a, b, mirror: true) {
                    irisScores.append(((r1.openness + r2.openness) / 2, open))
                }
            }
        }
        func auc(_ s: [(Double, Bool)]) -> String { fmt(rocAUC(open: s.filter(\.1).map(\.0), closed: s.filter { !$0.1 }.map(\.0)), 3) }
        print("  \(level): EyeState.openness \(auc(openness)) (n \(openness.count)), iris net \(auc(irisScores)) (n \(irisScores.count))")
    }

    // 2. The live clips: per frame EAR and the iris net's openness on the same landmarks' eye
    // corners, then the blink rule over each series. grid_face_blink_a's blink is frames 14–17
    // (Docs/face.md "Blink measurements"): d′ separates those from the rest.
    let clips: [(name: String, closed: Set<Int>)] = [("grid_face_blink_a", [14, 15, 16, 17]), ("tran_live", [])]
    var irisMs: [Double] = []
    for clip in clips {
        let (frames, fps) = videoFrames(shared + "/video/\(clip.name)/video.mp4")
        guard !frames.isEmpty else { print("cannot read \(clip.name)"); continue }
        let baselineFrames = max(3, Int((0.5 * fps).rounded()))  // ~keep-still's first half second
        print("\(clip.name): \(frames.count) frames \(frames[0].width)x\(frames[0].height) at \(fmt(fps, 0)) fps; open level from the first \(baselineFrames) measured frames")
        for level in Darkening.levels {
            var rng = SplitMix64(seed: 7)
            let tracker = FaceTracker()
            var ears: [Double?] = [], irises: [Double?] = []
            for original in frames {
                let frame = level.apply(original, rng: &rng)
                let obs = try? models.withEngine { try FacePipeline.analyze(frame, tracker: tracker, engine: $0) }
                guard let lm = obs?.landmarks else { ears.append(nil); irises.append(nil); continue }
                ears.append(lm.eyeAspectRatio)
                let image: ImageRef = frame.bgr.map { ImageRef(pixels: UnsafePointer($0.pointer), width: frame.width, height: frame.height, channels: 3) }
                    ?? ImageRef(pixels: UnsafePointer(frame.grey.pointer), width: frame.width, height: frame.height, channels: 1)
                let t0 = now()
                irises.append(try? irisOpenness(iris, image, lm))
                irisMs.append((now() - t0) * 1000)
            }
            func at(_ f: Int?) -> String { f.map { "frame \($0) (\(fmt(Double($0) / fps, 2)) s)" } ?? "none" }
            var line = "  \(level): face in \(ears.compactMap { $0 }.count)/\(frames.count); blink by EAR \(at(blinkFrame(ears, baselineFrames: baselineFrames))), by iris \(at(blinkFrame(irises, baselineFrames: baselineFrames)))"
            if !clip.closed.isEmpty {
                line += "; d′ EAR \(separation(ears, closed: clip.closed).map { fmt($0, 2) } ?? "-"), iris \(separation(irises, closed: clip.closed).map { fmt($0, 2) } ?? "-")"
            }
            print(line)
            if level.gamma == 1, arguments.contains("--series") {
                for (i, (e, r)) in zip(ears, irises).enumerated() {
                    print(String(format: "    %3d EAR %@ iris %@", i, e.map { fmt($0, 3) } ?? "  -  ", r.map { fmt($0, 3) } ?? "  -  "))
                }
            }
        }
    }
    if !irisMs.isEmpty {
        let s = irisMs.sorted()
        print("iris net, both eyes of one frame: median \(fmt(s[s.count / 2], 2)) ms, p90 \(fmt(s[s.count * 9 / 10], 2)) ms (one core)")
    }
    print("eyes: \(fmt(now() - start, 1)) s")
}
