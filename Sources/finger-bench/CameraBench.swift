// Camera side of the finger pipeline: per-frame cost on rendered 1280x720 scenes, and detection on
// the real photos in ../shared/data/hands (hand boxes, fingertip keypoints, fingertip close-ups).
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
    default:
        print("""
            usage: biometricd-finger-bench camera frame [--frames N=60] [--prints-dir DIR]
                   biometricd-finger-bench camera photos [--data DIR=../shared/data/hands] [--verbose] [--invert]
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

// MARK: Per-frame cost

/// Renders `count` frames of a right hand at optimal distance with FVC prints on the fingertips.
private func renderScene(count: Int, printsDir: String) -> [[UInt8]] {
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
    for i in 0..<count {
        var p = cvis_scene_params()
        p.width = 1280
        p.height = 720
        p.right_hand = 1
        p.finger_width = 180
        p.tip_x = 0.5
        p.tip_y = 0.1
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

private func cameraFrameBench(_ arguments: [String]) {
    let count = Int(option(arguments, "--frames") ?? "60") ?? 60
    let printsDir = option(arguments, "--prints-dir") ?? "../shared/data/fingers/fvc2002_db2_b/images"
    #if DEBUG
    print("note: debug build; per-frame numbers are meant for -c release")
    #endif
    let scene = renderScene(count: min(count, 30), printsDir: printsDir)
    let greyPool = PixelBufferPool(), bgrPool = PixelBufferPool()
    // Frames as a camera would deliver them (one BGR→grey+BGR conversion each).
    var frames: [Frame] = []
    for (i, src) in scene.enumerated() {
        let grey = greyPool.buffer(count: 1280 * 720), bgr = bgrPool.buffer(count: 1280 * 720 * 3)
        _ = cvis_convert_frame(bgr3, src, src.count, 1280, 720, 0, grey.pointer, bgr.pointer)
        frames.append(Frame(width: 1280, height: 720, grey: grey, bgr: bgr, timestampNs: monotonicNanoseconds(),
                            sequence: UInt64(i), isInfrared: false))
    }
    // Baseline: that conversion alone, into one reused pair of planes (what every frame costs anyway).
    var convertMs: [Double] = []
    let greyPlane = greyPool.buffer(count: 1280 * 720), bgrPlane = bgrPool.buffer(count: 1280 * 720 * 3)
    for i in 0...count {
        let src = scene[i % scene.count]
        let t = monotonicNanoseconds()
        _ = cvis_convert_frame(bgr3, src, src.count, 1280, 720, 0, greyPlane.pointer, bgrPlane.pointer)
        if i > 0 { convertMs.append(milliseconds(t)) } // first: warm-up
    }
    for level in [LivenessLevel.none, .medium] {
        let capture = FingerCapture(options: FingerCaptureOptions(mode: .fingers, hand: .right, liveness: level))
        _ = capture.analyse(frames[0]) // warm-up (allocations, OpenCV's first-call setup)
        var ms: [Double] = []
        var found = 0, qualities: [Double] = []
        for i in 0..<count {
            let t = monotonicNanoseconds()
            let a = capture.analyse(frames[i % frames.count])
            ms.append(milliseconds(t))
            found += a.fingers.count == 4 ? 1 : 0
            qualities += a.fingers.map { Double($0.quality) }
        }
        let base = median(convertMs)
        print("analyse (liveness \(level.rawValue)) 1280x720: median \(f(median(ms))) ms, p90 \(f(percentile(ms, 0.9))) ms; "
            + "baseline BGR→grey conversion \(f(base, 2)) ms; ratio \(f(median(ms) / base, 0))x; "
            + "4 fingers in \(found)/\(count) frames, median quality \(f(median(qualities), 0))")
    }
}

// MARK: Real photos

private struct Box {
    var x0, y0, x1, y1: Double
    func iou(_ o: Box) -> Double {
        let ix = max(0, min(x1, o.x1) - max(x0, o.x0)), iy = max(0, min(y1, o.y1) - max(y0, o.y0))
        let inter = ix * iy
        let union = (x1 - x0) * (y1 - y0) + (o.x1 - o.x0) * (o.y1 - o.y0) - inter
        return union > 0 ? inter / union : 0
    }
    func contains(_ p: (Double, Double)) -> Bool { p.0 >= x0 && p.0 <= x1 && p.1 >= y0 && p.1 <= y1 }
}

private func tip(_ b: FingerBox) -> (Double, Double) {
    let a = b.angle * .pi / 180
    return (b.centreX + sin(a) * b.height / 2, b.centreY - cos(a) * b.height / 2)
}

private func loadFrame(_ path: String) -> Frame? {
    try? Frame(contentsOfFile: path, maxPixels: 40_000_000)
}

private func cameraPhotosBench(_ arguments: [String]) {
    let data = option(arguments, "--data") ?? "../shared/data/hands"
    let verbose = arguments.contains("--verbose")
    // Experiment: ridges bright (invert the prints) before extraction.
    let invert = arguments.contains("--invert")
    guard FileManager.default.fileExists(atPath: data) else {
        print("no data at \(data)")
        exit(1)
    }

    // 1. Hand boxes (subhih_handsdataset, VOC boxes from labels.csv).
    if let csv = try? String(contentsOfFile: "\(data)/subhih_handsdataset/labels.csv", encoding: .utf8) {
        var total = 0, iouHits = 0, tipHits = 0, either = 0, anyFinger = 0
        var ious: [Double] = []
        for line in csv.split(whereSeparator: \.isNewline).dropFirst() {
            let c = line.split(separator: ",").map(String.init)
            guard c.count == 8, let x0 = Double(c[4]), let y0 = Double(c[5]), let x1 = Double(c[6]), let y1 = Double(c[7]),
                  let frame = loadFrame("\(data)/subhih_handsdataset/images/\(c[0])") else { continue }
            total += 1
            let truth = Box(x0: x0, y0: y0, x1: x1, y1: y1)
            // Palm toward the camera; which hand is unknown, so right (naming does not matter here).
            let capture = FingerCapture(options: FingerCaptureOptions(mode: .fingers, hand: .right, liveness: .none))
            let a = capture.analyse(frame)
            if !a.fingers.isEmpty { anyFinger += 1 }
            var iou = 0.0
            if let r = capture.handRegion {
                iou = truth.iou(Box(x0: r.x, y0: r.y, x1: r.x + r.width, y1: r.y + r.height))
            }
            ious.append(iou)
            let tipsInside = !a.fingers.isEmpty && a.fingers.allSatisfy { truth.contains(tip($0.box)) }
            if iou >= 0.5 { iouHits += 1 }
            if tipsInside { tipHits += 1 }
            if iou >= 0.5 || tipsInside { either += 1 }
            if verbose { print("  \(c[0]): \(a.fingers.count) fingers, IoU \(f(iou, 2)), tips inside \(tipsInside)") }
        }
        print("subhih_handsdataset: \(total) photos; hand box IoU≥0.5 \(iouHits) (\(f(100 * Double(iouHits) / Double(max(total, 1))))%), "
            + "all found tips inside the box \(tipHits), either \(either) (\(f(100 * Double(either) / Double(max(total, 1))))%); "
            + "any finger found \(anyFinger); median IoU \(f(median(ious), 2))")
    }

    // 2. Fingertip keypoints (mmpose samples: keypoints 4, 8, 12, 16, 20).
    var errors: [Double] = []
    var gtTips = 0, matched = 0, images = 0
    for (folder, json) in [("freihand", "test_freihand.json"), ("onehand10k", "test_onehand10k.json"),
                           ("panoptic", "test_panoptic.json")] {
        guard let raw = FileManager.default.contents(atPath: "\(data)/mmpose_hand_kpt_samples/\(folder)/\(json)"),
              let root = try? JSONSerialization.jsonObject(with: raw) as? [String: Any],
              let imageList = root["images"] as? [[String: Any]], let annotations = root["annotations"] as? [[String: Any]]
        else { continue }
        for image in imageList {
            guard let id = image["id"] as? Int, let name = image["file_name"] as? String,
                  let frame = loadFrame("\(data)/mmpose_hand_kpt_samples/\(folder)/\(name)") else { continue }
            images += 1
            let capture = FingerCapture(options: FingerCaptureOptions(mode: .fingers, hand: .right, liveness: .none))
            let found = capture.analyse(frame).fingers.map { tip($0.box) }
            for ann in annotations where ann["image_id"] as? Int == id {
                guard let kp = ann["keypoints"] as? [Double], kp.count >= 63, let bbox = ann["bbox"] as? [Double] else { continue }
                let scale = max(bbox[2], bbox[3])
                for k in [4, 8, 12, 16, 20] where kp[3 * k + 2] > 0 {
                    gtTips += 1
                    let nearest = found.map { hypot($0.0 - kp[3 * k], $0.1 - kp[3 * k + 1]) }.min()
                    if let nearest {
                        errors.append(nearest / scale)
                        if nearest / scale < 0.1 { matched += 1 }
                    }
                }
            }
        }
    }
    print("mmpose samples: \(images) images, \(gtTips) annotated fingertips; within 10 % of the hand box: \(matched) "
        + "(\(f(100 * Double(matched) / Double(max(gtTips, 1))))%); with any detection: \(errors.count), "
        + "median distance to the nearest found tip \(f(median(errors), 2)) hand sizes (InterHand 3-D set not used)")

    // 3. Fingertip close-ups: found-a-fingertip rate, print quality, minutiae from the prints, and
    //    (contactless3d: three views per finger) whether views of one finger match each other.
    let extractor = FingerprintExtractor()
    let matcher = FingerMatcher()
    for folder in ["ksahib_phone_fingers", "contactless3d_multiview"] {
        var templates: [String: FingerTemplate] = [:]
        var prints: [String: FingerprintImage] = [:]
        var extracted = 0, minutiae: [Double] = []
        var verdicts: [LivenessLevel: [LivenessVerdict: Int]] = [:]
        let dir = "\(data)/\(folder)"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir) else { continue }
        var total = 0, foundAny = 0
        var qualities: [Double] = []
        var levels: [QualityLevel: Int] = [:]
        var ms: [Double] = []
        for name in names.sorted() where name.hasSuffix(".jpg") || name.hasSuffix(".jpeg") {
            guard let frame = loadFrame("\(dir)/\(name)") else { continue }
            total += 1
            // One finger presented: thumb mode picks the single best finger (the label is moot).
            let capture = FingerCapture(options: FingerCaptureOptions(mode: .thumb, hand: .right, liveness: .none))
            let t = monotonicNanoseconds()
            let a = capture.analyse(frame)
            ms.append(milliseconds(t))
            if let finger = a.fingers.first {
                foundAny += 1
                qualities.append(Double(finger.quality))
                levels[finger.level, default: 0] += 1
            }
            // Liveness on a real (live) finger: the photo shown 5 times (a still: no motion cue).
            for level in [LivenessLevel.veryLow, .low, .medium] {
                let live = FingerCapture(options: FingerCaptureOptions(mode: .thumb, hand: .right, liveness: level))
                for _ in 0..<5 { _ = live.analyse(frame) }
                verdicts[level, default: [:]][live.livenessVerdict(), default: 0] += 1
            }
            if let print = capture.bestPrints().first {
                var image = print.image
                if invert, let mask = image.mask {
                    let flipped = zip(image.pixels, mask).map { $1 != 0 ? 255 - $0 : $0 }
                    image = (try? FingerprintImage(width: image.width, height: image.height, pixels: flipped, ppi: image.ppi,
                                                   mask: mask)) ?? image
                }
                prints[name] = image
                if let template = try? extractor.extract(image) {
                    extracted += 1
                    minutiae.append(Double(template.minutiae.count))
                    templates[name] = template
                }
            }
            if verbose {
                print("  \(name) \(frame.width)x\(frame.height): \(a.fingers.map { "w \(Int($0.box.width)) q \($0.quality)" })")
            }
        }
        print("\(folder): \(total) photos; a fingertip found in \(foundAny) (\(f(100 * Double(foundAny) / Double(max(total, 1))))%); "
            + "print quality median \(f(median(qualities), 0)), levels high \(levels[.high, default: 0]) medium \(levels[.medium, default: 0]) "
            + "low \(levels[.low, default: 0]); median \(f(median(ms), 0)) ms per photo; "
            + "extractor accepted \(extracted) prints (median \(f(median(minutiae), 0)) minutiae)")
        for level in [LivenessLevel.veryLow, .low, .medium] {
            let v = verdicts[level, default: [:]]
            print("  liveness \(level.rawValue) on these live fingers: live \(v[.live, default: 0]), fake \(v[.fake, default: 0]), "
                + "no decision \(v[.noDecision, default: 0])")
        }
        if folder == "contactless3d_multiview" {
            // <subject>_<finger>_1_<view>.jpg: views 0, 1, 2 of one finger. The camera-side prints
            // of the current code, through the classical extractor (version 2) and the learned one
            // (version 3, when ./models/leader_cv46.onnx is installed): same prints, same pairs.
            func finger(_ k: String) -> String { k.split(separator: "_").prefix(2).joined(separator: "_") }
            let sizes = prints.values.map { Double($0.width * $0.height) }
            print("  camera prints: \(prints.count), median \(f(median(sizes) / 1000, 0)) kpx at 500 ppi")
            var kinds: [(String, FingerprintExtractor)] = [("classical (v2)", extractor)]
            if let learned = benchLearned { kinds.append(("learned (v3)", FingerprintExtractor(learned: learned))) }
            for (label, e) in kinds {
                var made: [String: FingerTemplate] = [:]
                var times: [Double] = []
                for (name, image) in prints {
                    let t = monotonicNanoseconds()
                    if let template = try? e.extract(image) { made[name] = template }
                    times.append(milliseconds(t))
                }
                var genuine: [Double] = [], impostor: [Double] = []
                var refusedGenuine = 0
                let names = prints.keys.sorted()
                for (i, a) in names.enumerated() {
                    for b in names[(i + 1)...] {
                        guard let ta = made[a], let tb = made[b] else {
                            if finger(a) == finger(b) { refusedGenuine += 1 }
                            continue
                        }
                        let score = matcher.score(probe: ta, reference: tb)
                        if finger(a) == finger(b) { genuine.append(score) } else { impostor.append(score) }
                    }
                }
                let maxImpostor = impostor.max() ?? 0
                let above = genuine.filter { $0 > maxImpostor }.count
                let at48 = genuine.filter { $0 >= 48 }.count
                print("  cross-view, \(label): \(made.count)/\(prints.count) prints accepted (median \(f(median(made.values.map { Double($0.minutiae.count) }), 0)) minutiae, "
                    + "\(f(median(times), 0)) ms per print); genuine \(genuine.count) (+\(refusedGenuine) with a refused print) median \(f(median(genuine), 1)), ≥ 48: \(at48); "
                    + "impostor \(impostor.count) median \(f(median(impostor), 1)) p99 \(f(percentile(impostor, 0.99), 1)) max \(f(maxImpostor, 1)); "
                    + "genuine above every impostor: \(above)")
            }
        }
    }
}
