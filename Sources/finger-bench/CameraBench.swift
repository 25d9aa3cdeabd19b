// Camera side of the finger pipeline, through the daemon's own capture code (FingerCapture): per-frame
// cost at 1280x720 against the classical detector in the same run, and the real photos in
// ../shared/data/hands (open hands with labelled boxes, palm or back, single-finger close-ups,
// cross-view matching of the contactless3d fingertips).
import BiometricCamera
import BiometricCore
import BiometricFinger
import BiometricProtocol
import CHandScene
import CImaging
import Foundation

func runCameraBench(_ arguments: [String]) {
    switch arguments.first {
    case "frame": cameraFrameBench(Array(arguments.dropFirst()))
    case "photos": cameraPhotosBench(Array(arguments.dropFirst()))
    case "repeat": cameraRepeatBench(Array(arguments.dropFirst()))
    case "replay": cameraReplay(Array(arguments.dropFirst()))
    default:
        print("""
            usage: biometricd-finger-bench camera frame [--frames N=60] [--prints-dir DIR] [--models DIR=models]
                   biometricd-finger-bench camera photos [--data DIR=../shared/data/hands] [--models DIR=models] [--verbose]
                                                         [--save DIR] [--sets subhih,palm,ksahib,contactless3d]
                   biometricd-finger-bench camera repeat [--data DIR=../shared/data/hands] [--models DIR=models]
                   biometricd-finger-bench camera replay DIR [--mode fingers|thumb|single] [--hand right|left]
                                                         [--loops N=1] [--liveness LEVEL=none] [--models DIR=models]
            """)
        exit(2)
    }
}

private func option(_ arguments: [String], _ name: String) -> String? {
    guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count else { return nil }
    return arguments[i + 1]
}

private func milliseconds(_ start: UInt64) -> Double { Double(monotonicNanoseconds() - start) / 1e6 }

private func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return .nan }
    let s = values.sorted()
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

private func percentile(_ values: [Double], _ p: Double) -> Double {
    guard !values.isEmpty else { return .nan }
    let s = values.sorted()
    return s[min(s.count - 1, Int(Double(s.count - 1) * p))]
}

private func f(_ v: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", v) }
private func pct(_ n: Int, _ of: Int) -> String { "\(n)/\(of) (\(f(100 * Double(n) / Double(max(of, 1))))%)" }

private func loadModels(_ arguments: [String]) -> HandModels {
    let folder = option(arguments, "--models") ?? "models"
    do {
        return try HandModels(folder: folder)
    } catch {
        print("hand models not found in \(folder): \(error) (scripts/fetch-models.sh ./models)")
        exit(1)
    }
}

// MARK: Per-frame cost

/// Renders frames of a right hand with FVC prints on the fingertips: `widths` gives the middle
/// finger's width per frame (an approach when it grows), the hand fully in view at `tipY`.
private func renderScene(widths: [Float], tipY: Float, printsDir: String) -> [[UInt8]] {
    var prints: [(Int32, Int32, [UInt8])] = []
    for name in ["101_1", "102_1", "103_1", "104_1"] {
        var status = CVIS_OK
        guard let image = cvis_image_read("\(printsDir)/\(name).tif", 0, &status) else {
            print("cannot read \(printsDir)/\(name).tif: \(String(cString: cvis_last_error()))")
            exit(1)
        }
        let w = cvis_image_width(image), h = cvis_image_height(image)
        var grey = [UInt8](repeating: 0, count: Int(w * h))
        _ = cvis_image_copy(image, &grey, nil)
        cvis_image_free(image)
        prints.append((w, h, grey))
    }
    let joined = prints.flatMap(\.2)
    var frames: [[UInt8]] = []
    for (i, width) in widths.enumerated() {
        var p = cvis_scene_params()
        p.width = 1280
        p.height = 720
        p.right_hand = 1
        p.finger_width = width
        p.tip_x = 0.5
        p.tip_y = tipY
        p.seed = 3
        p.frame_index = UInt32(i)
        p.print_ppi = 569
        var bgr = [UInt8](repeating: 0, count: 1280 * 720 * 3)
        let status: cvis_status = joined.withUnsafeBufferPointer { all in
            var offset = 0
            withUnsafeMutableBytes(of: &p.prints) { raw in
                let slots = raw.bindMemory(to: UnsafePointer<UInt8>?.self)
                for (k, d) in prints.enumerated() {
                    slots[k] = all.baseAddress! + offset
                    offset += d.2.count
                }
            }
            withUnsafeMutableBytes(of: &p.print_width) { raw in
                for (k, d) in prints.enumerated() { raw.bindMemory(to: Int32.self)[k] = d.0 }
            }
            withUnsafeMutableBytes(of: &p.print_height) { raw in
                for (k, d) in prints.enumerated() { raw.bindMemory(to: Int32.self)[k] = d.1 }
            }
            return cvis_hand_render_scene(&p, &bgr)
        }
        guard status == CVIS_OK else {
            print("render failed: \(String(cString: cvis_last_error()))")
            exit(1)
        }
        frames.append(bgr)
    }
    return frames
}

private let bgr3: UInt32 = UInt32(66) | UInt32(71) << 8 | UInt32(82) << 16 | UInt32(51) << 24

/// Frames as a camera delivers them (one BGR→grey+BGR conversion each).
private func cameraFrames(_ scene: [[UInt8]]) -> [Frame] {
    let greyPool = PixelBufferPool(), bgrPool = PixelBufferPool()
    return scene.enumerated().map { i, src in
        let grey = greyPool.buffer(count: 1280 * 720), bgr = bgrPool.buffer(count: 1280 * 720 * 3)
        _ = cvis_convert_frame(bgr3, src, src.count, 1280, 720, 0, grey.pointer, bgr.pointer)
        return Frame(width: 1280, height: 720, grey: grey, bgr: bgr, timestampNs: monotonicNanoseconds(), sequence: UInt64(i),
                     isInfrared: false)
    }
}

private struct FrameStats {
    var ms: [Double] = []
    var fourFingers = 0, prints = 0, frames = 0
    var summary: String {
        "median \(f(median(ms))) ms, p90 \(f(percentile(ms, 0.9))) ms; 4 fingers in \(fourFingers)/\(frames) frames, "
            + "\(prints) fingertips rated medium/high"
    }
}

/// Runs `analyse` over `frames` (looped to `count`), timing each call; the first `warmup` frames
/// are analysed untimed (the approach that hands the track over).
private func timeFrames(_ frames: [Frame], count: Int, warmup: [Frame] = [], analyse: (Frame) -> FingerFrameAnalysis) -> FrameStats {
    for frame in warmup { _ = analyse(frame) }
    var stats = FrameStats()
    for i in 0..<count {
        let t = monotonicNanoseconds()
        let a = analyse(frames[i % frames.count])
        stats.ms.append(milliseconds(t))
        stats.frames += 1
        stats.fourFingers += a.fingers.count == 4 ? 1 : 0
        stats.prints += a.fingers.filter { $0.level == .high || $0.level == .medium }.count
    }
    return stats
}

private func cameraFrameBench(_ arguments: [String]) {
    let count = Int(option(arguments, "--frames") ?? "60") ?? 60
    let printsDir = option(arguments, "--prints-dir") ?? "../shared/data/fingers/fvc2002_db2_b/images"
    let models = loadModels(arguments)
    #if DEBUG
    print("note: debug build; per-frame numbers are meant for -c release")
    #endif
    // 1. The whole hand in view (fingers 60 px wide, knuckles in the frame): the landmark model
    //    tracks it every frame; the ridges are not resolved (no prints).
    let tracked = cameraFrames(renderScene(widths: Array(repeating: 60, count: 20), tipY: 0.12, printsDir: printsDir))
    // 2. Print distance (fingers 180 px, the palm out of the frame): reached by an approach from
    //    60 px, then the fingertips are followed on their own and four prints are made per frame.
    let approach = cameraFrames(renderScene(widths: stride(from: 60, to: 180, by: 8).map { Float($0) }, tipY: 0.12,
                                            printsDir: printsDir))
    let close = cameraFrames(renderScene(widths: Array(repeating: 180, count: 20), tipY: 0.12, printsDir: printsDir))
    // Baseline in the same process: the BGR→grey+BGR conversion every frame pays.
    var convertMs: [Double] = []
    let greyPlane = PixelBufferPool().buffer(count: 1280 * 720), bgrPlane = PixelBufferPool().buffer(count: 1280 * 720 * 3)
    let raw = renderScene(widths: [60], tipY: 0.12, printsDir: printsDir)[0]
    for i in 0...count {
        let t = monotonicNanoseconds()
        _ = cvis_convert_frame(bgr3, raw, raw.count, 1280, 720, 0, greyPlane.pointer, bgrPlane.pointer)
        if i > 0 { convertMs.append(milliseconds(t)) }
    }
    let base = median(convertMs)
    print("1280x720, one analyse() per frame (liveness none); baseline BGR→grey conversion \(f(base, 2)) ms")
    for (name, frames, warmup) in [("hand in view, landmarks tracked (fingers 60 px)", tracked, [tracked[0]]),
                                   ("print distance, fingertips followed (fingers 180 px)", close, approach)] {
        let capture = FingerCapture(options: FingerCaptureOptions(mode: .fingers, hand: .right, liveness: .none), models: models)
        let new = timeFrames(frames, count: count, warmup: warmup) { capture.analyse($0) }
        let classical = ClassicalFingerCapture(options: FingerCaptureOptions(mode: .fingers, hand: .right, liveness: .none))
        let old = timeFrames(frames, count: count, warmup: [frames[0]]) { classical.analyse($0) }
        print("  \(name):")
        print("    FingerCapture (hand models)       \(new.summary)")
        print("    ClassicalFingerCapture (baseline) \(old.summary)")
        print("    ratio new/classical \(f(median(new.ms) / median(old.ms), 2))x; new/conversion \(f(median(new.ms) / base, 0))x")
    }
    // The first frame of a session: palm detector + landmarks.
    var detect: [Double] = []
    for _ in 0..<max(5, count / 6) {
        let capture = FingerCapture(options: FingerCaptureOptions(mode: .fingers, hand: .right, liveness: .none), models: models)
        let t = monotonicNanoseconds()
        _ = capture.analyse(tracked[0])
        detect.append(milliseconds(t))
    }
    print("  first frame (palm detector + landmarks): median \(f(median(detect))) ms")
}

// MARK: Real photos

private struct Box {
    var x0, y0, x1, y1: Double
    func contains(_ p: (Double, Double), margin: Double = 0) -> Bool {
        p.0 >= x0 - margin && p.0 <= x1 + margin && p.1 >= y0 - margin && p.1 <= y1 + margin
    }
}

/// The fingertip end of a box (the middle of its top edge, turned by its angle).
private func tip(_ b: FingerBox) -> (Double, Double) {
    let a = b.angle * .pi / 180
    return (b.centreX + sin(a) * b.height / 2, b.centreY - cos(a) * b.height / 2)
}

private func loadFrame(_ path: String) -> Frame? {
    try? Frame(contentsOfFile: path, maxPixels: 40_000_000)
}

/// The frame as a grey (IR-like) camera would give it.
private func greyOnly(_ frame: Frame) -> Frame {
    Frame(width: frame.width, height: frame.height, grey: frame.grey, bgr: nil, timestampNs: frame.timestampNs,
          sequence: frame.sequence, isInfrared: true)
}

/// A still photo shown to a capture as `frames` frames (a replay camera showing it).
@discardableResult
private func show(_ frame: Frame, to capture: FingerCapture, frames: Int = 2) -> [FingerFrameAnalysis] {
    (0..<frames).map { _ in capture.analyse(frame) }
}

/// 11k Hands photos in subhih_handsdataset, labelled by eye for this bench: which hand, and
/// whether the palm or the back faces the camera (palm: creases, no nails; back: nails, knuckles).
private let elevenKLabels: [(String, Hand, Bool)] = [
    ("Hand_0000002.jpg", .right, false), ("Hand_0000026.jpg", .left, false), ("Hand_0000046.jpg", .right, false),
    ("Hand_0000084.jpg", .right, false), ("Hand_0000293.jpg", .right, true), ("Hand_0000412.jpg", .left, true),
    ("Hand_0000451.jpg", .right, true), ("Hand_0000490.jpg", .left, true), ("Hand_0000553.jpg", .right, true),
    ("Hand_0000889.jpg", .left, true), ("Hand_0009341.jpg", .right, true), ("Hand_0009484.jpg", .right, true),
]

/// ksahib close-ups whose ridges are clearly visible over the pad at full resolution (by eye);
/// amit, amitind, niloyind and niloyind2 are faint or blurred; hands and hand2 are open hands.
private let ksahibSharp: Set<String> = [
    "amitind2.jpg", "amitmid.jpg", "finger.jpeg", "finger2.jpeg", "finger3.jpeg", "khalid.jpg", "sahibind.jpeg",
    "sahibind2.jpeg", "sahibind3.jpeg", "sahibind4.jpeg", "sahibind5.jpeg", "sahibind6.jpeg", "sahibind7.jpeg",
    "sahibind8.jpeg", "tonmoy1.jpg", "tonmoy2.jpg", "tony.jpg",
]
private let ksahibOpenHands: Set<String> = ["hands.jpeg", "hand2.jpeg"]

private func cameraPhotosBench(_ arguments: [String]) {
    let data = option(arguments, "--data") ?? "../shared/data/hands"
    let verbose = arguments.contains("--verbose")
    let save = option(arguments, "--save")
    // --sets subhih,palm,ksahib,contactless3d (default all)
    let sets = Set((option(arguments, "--sets") ?? "subhih,palm,ksahib,contactless3d").split(separator: ",").map(String.init))
    let models = loadModels(arguments)
    guard FileManager.default.fileExists(atPath: data) else {
        print("no data at \(data)")
        exit(1)
    }
    if let save { try? FileManager.default.createDirectory(atPath: save, withIntermediateDirectories: true) }

    // 1. Open hands (subhih_handsdataset, VOC boxes from labels.csv), mode fingers: four fingers
    //    found and none off the labelled hand; the same frames in grey (an IR-like camera); the
    //    classical detector on both. Then every photo in mode single: no print may be made (the
    //    fingers are far, and faces, shirts and walls are not fingers).
    var singleJunkPrints = 0, singleJunkFrames = 0
    if sets.contains("subhih"), let csv = try? String(contentsOfFile: "\(data)/subhih_handsdataset/labels.csv", encoding: .utf8) {
        struct Tally { var four = 0, firstFrameFour = 0, any = 0, off = 0, fingers = 0, prints = 0, photosOff = 0 }
        var tallies: [String: Tally] = [:]
        // The 77 webcam frames and the 12 11k Hands photos on white are told apart (their
        // difficulty differs: 800x600 with the face and a room vs a close hand on white).
        var totals: [String: Int] = [:]
        var feedback: [Feedback: Int] = [:]
        for line in csv.split(whereSeparator: \.isNewline).dropFirst() {
            let c = line.split(separator: ",").map(String.init)
            guard c.count == 8, let x0 = Double(c[4]), let y0 = Double(c[5]), let x1 = Double(c[6]), let y1 = Double(c[7]),
                  let colour = loadFrame("\(data)/subhih_handsdataset/images/\(c[0])") else { continue }
            let group = c[0].hasPrefix("Hand_") ? "white" : "webcam"
            totals[group, default: 0] += 1
            let truth = Box(x0: x0, y0: y0, x1: x1, y1: y1)
            // A tip is "off the hand" when it lies outside the labelled box by more than 5 % of its size.
            let margin = 0.05 * max(x1 - x0, y1 - y0)
            var line = "  \(c[0]):"
            for (kind, frame) in [("colour", colour), ("grey", greyOnly(colour))] {
                let options = FingerCaptureOptions(mode: .fingers, hand: .right, liveness: .none)
                let capture = FingerCapture(options: options, models: models)
                let classical = ClassicalFingerCapture(options: options)
                let runs: [(String, [FingerFrameAnalysis], Int)] = [
                    ("models \(kind)", show(frame, to: capture), capture.bestPrints().count),
                    ("classical \(kind)", (0..<2).map { _ in classical.analyse(frame) }, classical.bestPrints().count),
                ]
                for (name, analyses, prints) in runs {
                    var t = tallies["\(name) \(group)", default: Tally()]
                    let a = analyses.last!
                    if analyses[0].fingers.count == 4 { t.firstFrameFour += 1 }
                    if a.fingers.count == 4 { t.four += 1 }
                    if !a.fingers.isEmpty { t.any += 1 }
                    let off = analyses.flatMap(\.fingers).filter { !truth.contains(tip($0.box), margin: margin) }.count
                    t.off += off
                    if off > 0 { t.photosOff += 1 }
                    t.fingers += analyses.flatMap(\.fingers).count
                    t.prints += prints
                    tallies["\(name) \(group)"] = t
                    if name == "models colour" { feedback[a.feedback, default: 0] += 1 }
                    line += " \(name) \(a.fingers.count)\(off > 0 ? " (\(off) off)" : "")"
                }
            }
            // Mode single on the same photo: junk for it.
            let single = FingerCapture(options: FingerCaptureOptions(mode: .single, hand: .right, liveness: .none), models: models)
            show(colour, to: single)
            singleJunkFrames += 1
            singleJunkPrints += single.bestPrints().count
            if verbose { print(line) }
        }
        print("subhih_handsdataset: \(totals.values.reduce(0, +)) photos of an open hand (webcam 800x600, 11k Hands 1600x1200 on white), "
            + "each shown as 2 frames, mode fingers, hand right (the default):")
        for group in ["webcam", "white"] {
            let total = totals[group, default: 0]
            for name in ["models colour", "classical colour", "models grey", "classical grey"] {
                let t = tallies["\(name) \(group)", default: Tally()]
                print("  \(group.padding(toLength: 6, withPad: " ", startingAt: 0)) \(name.padding(toLength: 17, withPad: " ", startingAt: 0)): "
                    + "4 fingers \(pct(t.four, total)) (first frame \(t.firstFrameFour)); any finger \(t.any); fingers off the labelled hand "
                    + "\(t.off) of \(t.fingers) in \(t.photosOff) photos; fingertip prints \(t.prints)")
            }
        }
        print("  feedback (models, colour): " + feedback.sorted { $0.value > $1.value }.map { "\($0.key.rawValue) \($0.value)" }
            .joined(separator: ", "))
    }

    // 2. Palm or back (the 11k Hands photos, hand and side labelled by eye), declared hand = the labelled one.
    if sets.contains("palm") {
        var right = 0, total = 0, printsFromBacks = 0
        var lines: [String] = []
        for (name, hand, palm) in elevenKLabels {
            guard let frame = loadFrame("\(data)/subhih_handsdataset/images/\(name)") else { continue }
            total += 1
            let capture = FingerCapture(options: FingerCaptureOptions(mode: .fingers, hand: hand, liveness: .none), models: models)
            let a = show(frame, to: capture).last!
            let saysBack = a.feedback == .showPalm
            if saysBack != palm { right += 1 }
            if !palm { printsFromBacks += capture.bestPrints().count }
            lines.append("\(name) \(hand.rawValue) \(palm ? "palm" : "back") → \(a.feedback.rawValue)"
                + " (handedness \(f(capture.lastHand?.handedness ?? .nan, 2)))")
        }
        print("palm or back (11k Hands, labelled by eye, the labelled hand declared): \(right)/\(total) right "
            + "(back → show_palm, palm → not); prints from backs \(printsFromBacks)")
        if verbose { lines.forEach { print("  " + $0) } }
    }

    // 3. Single-finger close-ups, mode single: a print for the sharp ones, none for the rest of
    //    the junk; then cross-view matching of the contactless3d prints.
    let extractor = FingerprintExtractor()
    let matcher = FingerMatcher()
    var junkPrints = singleJunkPrints, junkPhotos = singleJunkFrames
    for folder in ["ksahib_phone_fingers", "contactless3d_multiview"] where sets.contains(folder.components(separatedBy: "_")[0]) {
        let dir = "\(data)/\(folder)"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir) else { continue }
        var templates: [String: FingerTemplate] = [:]
        var sharp = 0, sharpPrinted = 0, otherPrinted = 0, others = 0, extracted = 0
        var qualities: [Double] = [], periods: [Double] = [], ms: [Double] = [], minutiae: [Double] = []
        var refusals: [Feedback: Int] = [:]
        var verdicts: [LivenessLevel: [LivenessVerdict: Int]] = [:]
        var prints: [String: FingerprintImage] = [:]
        for name in names.sorted() where name.hasSuffix(".jpg") || name.hasSuffix(".jpeg") {
            guard let frame = loadFrame("\(dir)/\(name)") else { continue }
            let isSharp = folder == "contactless3d_multiview" || ksahibSharp.contains(name)
            let isJunk = ksahibOpenHands.contains(name)
            let capture = FingerCapture(options: FingerCaptureOptions(mode: .single, hand: .right, liveness: .none), models: models)
            let t = monotonicNanoseconds()
            let analyses = show(frame, to: capture)
            ms.append(milliseconds(t) / 2)
            let print = capture.bestPrints().first
            if isSharp {
                sharp += 1
                if print != nil { sharpPrinted += 1 }
            } else if isJunk {
                junkPhotos += 1
                if print != nil { junkPrints += 1 }
            } else {
                others += 1
                if print != nil { otherPrinted += 1 }
            }
            if print == nil { refusals[analyses.last!.feedback, default: 0] += 1 }
            if let print {
                prints[name] = print.image
                qualities.append(Double(print.quality))
                if let template = try? extractor.extract(print.image) {
                    extracted += 1
                    minutiae.append(Double(template.minutiae.count))
                    templates[name] = template
                }
                if let save, let png = try? print.image.encoded(as: .png) {
                    try? png.write(to: URL(fileURLWithPath: "\(save)/\(folder)_\(name).png"))
                }
            }
            if let w = analyses.last?.fingers.first?.box.width { periods.append(w) }
            // Liveness on a real (live) finger: the photo shown 5 times (a still: no motion cue).
            for level in [LivenessLevel.veryLow, .low, .medium] {
                let live = FingerCapture(options: FingerCaptureOptions(mode: .single, hand: .right, liveness: level), models: models)
                show(frame, to: live, frames: 5)
                verdicts[level, default: [:]][live.livenessVerdict(), default: 0] += 1
            }
            if verbose {
                let a = analyses.last!
                Swift.print("  \(name) \(frame.width)x\(frame.height) \(isSharp ? "sharp" : isJunk ? "junk" : "faint"): "
                    + "\(a.fingers.map { "w \(Int($0.box.width)) q \($0.quality)" }) \(a.feedback.rawValue) "
                    + "\(capture.lastMeasures.values.map { "P \(f($0.ridgePeriod)) area \(f($0.ridgeArea, 2)) along \(f($0.ridgeAlong, 2)) rep \(f($0.repeated, 0)) grid \(f($0.gridded, 2))" })"
                    + (print.map { " print \($0.image.width)x\($0.image.height) q \($0.quality)" } ?? " no print")
                    + (templates[name].map { " \($0.minutiae.count) minutiae" } ?? ""))
            }
        }
        print("\(folder), mode single: a print for \(pct(sharpPrinted, sharp)) sharp photos"
            + (others > 0 ? ", \(otherPrinted)/\(others) faint ones" : "")
            + "; quality median \(f(median(qualities), 0)); templates \(extracted) (median \(f(median(minutiae), 0)) minutiae); "
            + "median \(f(median(ms), 0)) ms per frame; no print: "
            + refusals.sorted { $0.value > $1.value }.map { "\($0.key.rawValue) \($0.value)" }.joined(separator: ", "))
        for level in [LivenessLevel.veryLow, .low, .medium] {
            let v = verdicts[level, default: [:]]
            print("  liveness \(level.rawValue) on these live fingers: live \(v[.live, default: 0]), fake \(v[.fake, default: 0]), "
                + "no decision \(v[.noDecision, default: 0])")
        }
        // The same camera prints through the classical extractor (version 2) and the learned one
        // (version 3, when ./models/leader_cv46.onnx is installed): same prints, same pairs.
        var kinds: [(String, FingerprintExtractor)] = [("classical (v2)", extractor)]
        if let learned = benchLearned { kinds.append(("learned (v3)", FingerprintExtractor(learned: learned))) }
        let photos = names.filter { $0.hasSuffix(".jpg") || $0.hasSuffix(".jpeg") }.sorted()
        for (label, e) in kinds {
            var made: [String: FingerTemplate] = [:]
            for (name, image) in prints { if let t = try? e.extract(image) { made[name] = t } }
            print("  extractor \(label): \(made.count)/\(prints.count) camera prints give a template")
            // At one size, then as the daemon compares camera prints (scale search, penalty paid).
            if folder == "contactless3d_multiview" { crossViewLimits(prints: prints, templates: made, extractor: e, matcher: matcher) }
            for search in [FingerMatcher.ScaleSearch.none, .for(.fromRidges)] {
                if folder == "contactless3d_multiview" {
                    crossView(names: photos, templates: made, matcher: matcher, search: search, verbose: verbose,
                              title: "cross-view matching (camera print vs camera print, two views of one finger", views: true,
                              sameFinger: { $0.split(separator: "_").prefix(2) == $1.split(separator: "_").prefix(2) })
                    if search.factors.count > 1 { twoViewEnrolment(names: photos, templates: made, matcher: matcher, search: search) }
                } else {
                    crossView(names: photos.filter { !ksahibOpenHands.contains($0) }, templates: made, matcher: matcher,
                              search: search, verbose: verbose,
                              title: "phone fingerphotos (one finger photographed again: sahibind×8, amit×3, tonmoy×2, niloyind×2", views: false,
                              sameFinger: ksahibSameFinger)
                }
            }
        }
    }
    print("junk in mode single (the 89 open-hand photos: faces, shirts, walls, far fingers; ksahib's 2 open palms): "
        + "\(junkPrints) prints from \(junkPhotos) photos")
}

/// ksahib's photos carry no labels; who is who is read from the file names and checked by eye:
/// sahibind…sahibind8 are one index finger (8 photos: 28 genuine pairs), tonmoy1/tonmoy2 one thumb.
/// amitind, amitind2 and amitmid are one finger (despite its name, amitmid's print is amitind2's
/// whorl, ridge for ridge, and amitind's scene), niloyind/niloyind2 another; their faint photos
/// give no print, so those pairs fail. tony.jpg may be tonmoy's thumb too: those pairs are left
/// out, and so are amit.jpg's (a faint photo that may be the same finger). Every other pair is an
/// impostor pair.
private func ksahibSameFinger(_ a: String, _ b: String) -> Bool? {
    func finger(_ n: String) -> String {
        if n.hasPrefix("sahibind") { return "sahib index" }
        if n.hasPrefix("tonmoy") || n.hasPrefix("tony") { return "tonmoy thumb" }
        if n.hasPrefix("amitind") || n.hasPrefix("amitmid") { return "amit index" }
        if n.hasPrefix("niloyind") { return "niloy index" }
        return n
    }
    if (a == "amit.jpg" && b.hasPrefix("amit")) || (b == "amit.jpg" && a.hasPrefix("amit")) { return nil }
    if finger(a) != finger(b) { return false }
    if a.hasPrefix("tony") || b.hasPrefix("tony") { return nil }
    return true
}

/// What a side view would need to match its front view, tried on each front view (view 0) with
/// itself: its left or right half alone (a side view shares about that much of the pad), and its
/// minutiae shifted across the finger by up to 8 % of the print's width, smoothly (what an
/// unrolling with a wrong cross-section does: x + 0.08·w·sin(πx/w), directions turned to
/// match). When these match at 48 where the real side views do not, the views' prints differ
/// in which minutiae they show, not in how much of the pad they share or in their shape.
private func crossViewLimits(prints: [String: FingerprintImage], templates: [String: FingerTemplate], extractor: FingerprintExtractor,
                             matcher: FingerMatcher) {
    var halves = (matched: 0, tried: 0), warped = (matched: 0, tried: 0)
    for (name, whole) in templates.sorted(by: { $0.key < $1.key }) where name.hasSuffix("_0.jpg") {
        guard let reference = matcher.prepare(whole), let image = prints[name] else { continue }
        for keepLeft in [true, false] {
            var pixels = image.pixels, mask = image.mask ?? [UInt8](repeating: 255, count: pixels.count)
            for y in 0..<image.height {
                for x in 0..<image.width where (x < image.width / 2) != keepLeft {
                    pixels[y * image.width + x] = 255
                    mask[y * image.width + x] = 0
                }
            }
            halves.tried += 1
            guard let half = try? FingerprintImage(width: image.width, height: image.height, pixels: pixels, ppi: image.ppi, mask: mask),
                  let template = try? extractor.extract(half) else { continue }
            if matcher.score(probe: template, reference: reference, search: .none) >= 48 { halves.matched += 1 }
        }
        let w = Double(whole.width)
        let moved = whole.minutiae.map { m -> Minutia in
            let stretch = 1 + 0.08 * .pi * cos(.pi * m.x / w), a = atan2(sin(m.angle), cos(m.angle) * stretch)
            return Minutia(x: m.x + 0.08 * w * sin(.pi * m.x / w), y: m.y, angle: a < 0 ? a + 2 * .pi : a, kind: m.kind, quality: m.quality)
        }
        warped.tried += 1
        let probe = FingerTemplate(sourcePPI: whole.sourcePPI, width: whole.width, height: whole.height, quality: whole.quality,
                                   position: nil, minutiae: moved, minutiaeSource: whole.minutiaeSource)
        if matcher.score(probe: probe, reference: reference, search: .none) >= 48 { warped.matched += 1 }
    }
    print("  what limits cross-view: a front print's left or right half alone matches its whole at ≥ 48 in \(halves.matched)/\(halves.tried); "
        + "its minutiae moved across the finger by up to 8 % of its width in \(warped.matched)/\(warped.tried)")
}

/// What enrolling two views of each finger would give (not what finger.enroll does: it keeps one
/// template per finger): each view verified against the finger's other two views, best of the two,
/// as finger.verify takes the best of a user's templates; impostor attempts are each view against
/// every two-view enrolment of the other fingers, best of two again. A view that gave no template
/// is a failed attempt (and an enrolled view without one matches nothing). The pairs' scores are the cross-view pairs' scores;
/// TAR is also given with the best of two paying for its second chance.
private func twoViewEnrolment(names: [String], templates: [String: FingerTemplate], matcher: FingerMatcher,
                              search: FingerMatcher.ScaleSearch) {
    func finger(_ name: String) -> String { name.split(separator: "_").prefix(2).joined(separator: "_") }
    let prepared = templates.compactMapValues { matcher.prepare($0) }
    var cache: [String: Double] = [:]
    func score(_ probe: String, _ reference: String) -> Double {
        let key = "\(probe)|\(reference)"
        if let s = cache[key] { return s }
        var s = 0.0
        if let p = templates[probe], let r = prepared[reference] { s = matcher.score(probe: p, reference: r, search: search) }
        cache[key] = s
        return s
    }
    let fingers = Dictionary(grouping: names, by: finger)
    var genuine: [Double] = [], impostor: [Double] = []
    for (id, views) in fingers.sorted(by: { $0.key < $1.key }) {
        for probe in views {
            genuine.append(views.filter { $0 != probe }.map { score(probe, $0) }.max() ?? 0)
            for (other, enrolled) in fingers where other != id {
                // Each two-view enrolment of the other finger: every pair of its views.
                for (i, a) in enrolled.enumerated() { for b in enrolled[(i + 1)...] {
                    impostor.append(max(score(probe, a), score(probe, b)))
                } }
            }
        }
    }
    // Two references are two chances for an impostor: with the best of two taken, a score that
    // keeps its FAR meaning per attempt pays 12·log10 2 = 3.6 points (as the scale search pays).
    let penalty = 12 * log10(2.0)
    let tar = genuine.filter { $0 >= 48 }.count, paid = genuine.filter { $0 - penalty >= 48 }.count
    print("  two views enrolled per finger (what finger.enroll would give keeping two views; it keeps one): each view verified "
        + "against its finger's other two, best of two: TAR at 48 \(pct(tar, genuine.count)), \(pct(paid, genuine.count)) with "
        + "the best of two paying −\(f(penalty)) points; median \(f(median(genuine))); "
        + "impostor attempts \(impostor.count): at/above 48 \(impostor.filter { $0 >= 48 }.count), max \(f(impostor.max() ?? 0))")
}

/// Genuine = two photos of one finger (`sameFinger` true), impostor = of different fingers (false),
/// left out when unknown (nil). contactless3d: <subject>_<finger>_1_<view>.jpg, views 0, 1, 2
/// (front, left, right) of each finger, 57 genuine pairs. A photo that gave no template counts as
/// a failed comparison (score 0) on both sides.
private func crossView(names: [String], templates: [String: FingerTemplate], matcher: FingerMatcher, search: FingerMatcher.ScaleSearch,
                       verbose: Bool, title: String, views: Bool, sameFinger: (String, String) -> Bool?) {
    let prepared = templates.compactMapValues { matcher.prepare($0) }
    var genuine: [Double] = [], impostor: [Double] = []
    var worst: [(String, String, Double)] = [], pairs: [(String, String, Double)] = []
    for (i, a) in names.enumerated() {
        for b in names[(i + 1)...] {
            guard let same = sameFinger(a, b) else { continue }
            var score = 0.0
            if let ta = prepared[a], let tb = templates[b] {
                score = matcher.score(probe: tb, reference: ta, search: search) // the later view verified against the earlier
            }
            if same { genuine.append(score); pairs.append((a, b, score)) } else {
                impostor.append(score)
                worst.append((a, b, score))
            }
        }
    }
    // By view pair: front–left, front–right, left–right (how much of one finger two views share).
    var byPair: [String: [Double]] = [:]
    for (i, a) in names.enumerated() { for b in names[(i + 1)...] where views && sameFinger(a, b) == true {
        guard let ta = prepared[a], let tb = templates[b] else { continue }
        let key = "\(a.suffix(5).prefix(1))-\(b.suffix(5).prefix(1))"
        byPair[key, default: []].append(matcher.score(probe: tb, reference: ta, search: search))
    } }
    let pairNames = ["0-1": "front–left", "0-2": "front–right", "1-2": "left–right"]
    let byPairLine = byPair.sorted(by: { $0.key < $1.key }).map { k, v in
        "\(pairNames[k] ?? k) median \(f(median(v))), ≥ 48 in \(v.filter { $0 >= 48 }.count)/\(v.count)"
    }.joined(separator: "; ")
    let threshold = 48.0
    let tar = genuine.filter { $0 >= threshold }.count, far = impostor.filter { $0 >= threshold }.count
    // EER over all thresholds (a comparison matches when its score ≥ t).
    var eer = 1.0, gap = Double.infinity
    for t in Array(Set(genuine + impostor)).sorted() + [Double.infinity] {
        let fmr = Double(impostor.filter { $0 >= t }.count) / Double(impostor.count)
        let fnmr = Double(genuine.filter { $0 < t }.count) / Double(genuine.count)
        if abs(fmr - fnmr) < gap { gap = abs(fmr - fnmr); eer = (fmr + fnmr) / 2 }
    }
    print("  \(title); "
        + (search.factors.count > 1 ? "scale search ×\(search.factors.map { f($0, 2) }.joined(separator: "/")), −\(f(search.penalty)) points" : "one size") + "): genuine \(genuine.count), TAR at 48 \(pct(tar, genuine.count)), median \(f(median(genuine))); "
        + "impostor \(impostor.count): at/above 48 \(far), max \(f(impostor.max() ?? 0)), p99 \(f(percentile(impostor, 0.99))); "
        + "EER \(f(100 * eer, 2))%")
    if views { print("    by views (pairs with both templates): " + byPairLine) }
    if verbose {
        for (a, b, s) in worst.sorted(by: { $0.2 > $1.2 }).prefix(3) { print("    top impostor \(a) vs \(b): \(f(s))") }
        print("    genuine: " + pairs.map { views ? "\($0.0.dropLast(4))–\($0.1.suffix(5).prefix(1)) \(f($0.2, 0))"
            : "\($0.0.split(separator: ".")[0])–\($0.1.split(separator: ".")[0]) \(f($0.2, 0))" }.joined(separator: ", "))
    }
}

// MARK: Repeatability

/// A grey frame turned by `degrees` about its centre, scaled by `scale` and shifted (bilinear):
/// the same view of a finger as a second capture would give it.
private func warped(_ frame: Frame, degrees: Double, scale: Double, dx: Double, dy: Double) -> Frame {
    let w = frame.width, h = frame.height
    let out = PixelBufferPool(limit: 0).buffer(count: w * h)
    let a = degrees * .pi / 180, c = cos(a) / scale, s = sin(a) / scale
    let cx = Double(w) / 2, cy = Double(h) / 2
    let src = frame.grey.pointer, dst = out.pointer
    for y in 0..<h {
        for x in 0..<w {
            // output → source: inverse rotation and scale about the centre, then the shift
            let u = Double(x) - cx - dx, v = Double(y) - cy - dy
            let sx = c * u + s * v + cx, sy = -s * u + c * v + cy
            let x0 = Int(sx.rounded(.down)), y0 = Int(sy.rounded(.down))
            guard x0 >= 0, y0 >= 0, x0 + 1 < w, y0 + 1 < h else { dst[y * w + x] = 0; continue }
            let fx = sx - Double(x0), fy = sy - Double(y0)
            let p00 = Double(src[y0 * w + x0]), p10 = Double(src[y0 * w + x0 + 1])
            let p01 = Double(src[(y0 + 1) * w + x0]), p11 = Double(src[(y0 + 1) * w + x0 + 1])
            dst[y * w + x] = UInt8(((p00 * (1 - fx) + p10 * fx) * (1 - fy) + (p01 * (1 - fx) + p11 * fx) * fy).rounded())
        }
    }
    return Frame(width: w, height: h, grey: out, bgr: nil, timestampNs: 0, sequence: 0, isInfrared: true)
}

/// How repeatable a print is when the same view is captured twice (contactless3d front views,
/// the photo turned 6°, scaled 1.04 and shifted): what the pipeline itself loses, apart from the
/// change of view that cross-view matching adds.
private func cameraRepeatBench(_ arguments: [String]) {
    let data = option(arguments, "--data") ?? "../shared/data/hands"
    let models = loadModels(arguments)
    let extractor = FingerprintExtractor()
    let matcher = FingerMatcher()
    let dir = "\(data)/contactless3d_multiview"
    guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir) else { exit(1) }
    var genuine: [Double] = [], scaleRatios: [Double] = []
    var failed = 0
    for name in names.sorted() where name.hasSuffix("_0.jpg") {
        guard let frame = loadFrame("\(dir)/\(name)") else { continue }
        let grey = greyOnly(frame)
        var templates: [FingerTemplate] = []
        var widths: [Double] = []
        for variant in [grey, warped(grey, degrees: 6, scale: 1.04, dx: 25, dy: -15)] {
            let capture = FingerCapture(options: FingerCaptureOptions(mode: .single, hand: .right, liveness: .none), models: models)
            show(variant, to: capture)
            if let p = capture.bestPrints().first, let t = try? extractor.extract(p.image) {
                templates.append(t)
                widths.append(Double(p.image.width))
            }
        }
        guard templates.count == 2 else { failed += 1; genuine.append(0); continue }
        genuine.append(matcher.score(probe: templates[1], reference: templates[0]))
        scaleRatios.append(widths[1] / widths[0])
        print("  \(name): \(f(genuine.last!)) (print widths \(widths.map { Int($0) }))")
    }
    print("same view twice (turned 6°, scaled 1.04, shifted): \(genuine.count) fingers, score ≥ 48 in "
        + "\(genuine.filter { $0 >= 48 }.count), median \(f(median(genuine))); no template \(failed); "
        + "print width ratio median \(f(median(scaleRatios), 3)) (1.000 = scale recovered from the ridges)")
}

// MARK: Replay

/// Plays a folder of frames (name order, as a replay camera) through one FingerCapture and prints
/// what each frame gave: how the hand was found, each finger's measures and verdict, the feedback.
private func cameraReplay(_ arguments: [String]) {
    guard let dir = arguments.first, !dir.hasPrefix("--"),
          let names = try? FileManager.default.contentsOfDirectory(atPath: dir).sorted() else {
        print("camera replay: a folder of frames is needed")
        exit(2)
    }
    let mode = CaptureMode(rawValue: option(arguments, "--mode") ?? "fingers") ?? .fingers
    let hand = Hand(rawValue: option(arguments, "--hand") ?? "right") ?? .right
    let loops = Int(option(arguments, "--loops") ?? "1") ?? 1
    let level = LivenessLevel(rawValue: option(arguments, "--liveness") ?? "none") ?? .none
    let capture = FingerCapture(options: FingerCaptureOptions(mode: mode, hand: hand, liveness: level), models: loadModels(arguments))
    var index = 0
    for _ in 0..<loops {
        for name in names where [".png", ".jpg", ".jpeg"].contains(where: name.lowercased().hasSuffix) {
            guard let frame = loadFrame("\(dir)/\(name)") else { continue }
            let t = monotonicNanoseconds()
            let a = capture.analyse(frame)
            let ms = milliseconds(t)
            let how = capture.lastHand.map { "landmarks \(f($0.presence, 2))" } ?? (a.fingers.isEmpty ? "none" : "followed/close-up")
            let fingers = a.fingers.map { o -> String in
                let m = capture.lastMeasures[o.position]
                let verdict = capture.lastVerdicts[o.position].map { v -> String in
                    if case .refused(let why) = v { return why.rawValue }
                    return "print"
                } ?? "-"
                return "\(o.position.digit.rawValue) w \(Int(o.box.width)) P \(f(m?.ridgePeriod ?? 0)) area \(f(m?.ridgeArea ?? 0, 2)) q \(o.quality) \(verdict)"
            }
            print("\(index) \(name) \(f(ms, 0)) ms \(how): \(fingers.joined(separator: " | ")) → \(a.feedback.rawValue)"
                + (level == .none ? "" : "; liveness \(capture.livenessVerdict().rawValue) (\(capture.livenessSummary))"))
            index += 1
        }
    }
    print("best prints: " + capture.bestPrints().map { "\($0.position.name) q \($0.quality)" }.joined(separator: ", "))
}
