// passive: the passive liveness detector (MiniFASNetV2 + MiniFASNetV1SE) and the frame-noise cue on
// the shared clips (whole, cropped tightly to the face, grey), on a still picture repeated, and on
// LFW stills; and the passive decision (PassiveLiveness) frame by frame, as a session makes it.
import BiometricCore
import BiometricFace
import BiometricProtocol
import Foundation

func loadPassiveModels() -> FaceModels {
    do {
        return try FaceModels(shape68: modelsDir + "/shape_predictor_68_face_landmarks.dat",
                              resnet: modelsDir + "/dlib_face_recognition_resnet_model_v1.dat",
                              yunet: modelsDir + "/face_detection_yunet_2023mar.onnx",
                              antispoof: .init(folder: modelsDir))
    } catch {
        fatalError("models: \(error) (run scripts/setup.sh; the anti-spoofing models come from ../shared/models/antispoof)")
    }
}

/// `frame` cut to `box` scaled by `scale` about its centre (clamped to the frame): a replay held so
/// close that no border is in view.
func croppedFrame(_ frame: Frame, box: FaceBox, scale: Double) -> Frame {
    let cx = box.x + box.width / 2, cy = box.y + box.height / 2
    let x0 = max(0, Int((cx - box.width * scale / 2).rounded())), y0 = max(0, Int((cy - box.height * scale / 2).rounded()))
    let x1 = min(frame.width, Int((cx + box.width * scale / 2).rounded())), y1 = min(frame.height, Int((cy + box.height * scale / 2).rounded()))
    let w = max(1, x1 - x0), h = max(1, y1 - y0)
    let pool = PixelBufferPool(limit: 0)
    let grey = pool.buffer(count: w * h)
    for y in 0..<h { (grey.pointer + y * w).update(from: frame.grey.pointer + (y0 + y) * frame.width + x0, count: w) }
    var bgr: PixelBuffer?
    if let src = frame.bgr {
        let b = PixelBufferPool(limit: 0).buffer(count: w * h * 3)
        for y in 0..<h { (b.pointer + y * w * 3).update(from: src.pointer + ((y0 + y) * frame.width + x0) * 3, count: w * 3) }
        bgr = b
    }
    return Frame(width: w, height: h, grey: grey, bgr: bgr, timestampNs: frame.timestampNs, sequence: frame.sequence, isInfrared: false)
}

/// The same frame without its colour plane (a grey camera's view of it).
func greyFrame(_ frame: Frame) -> Frame {
    Frame(width: frame.width, height: frame.height, grey: frame.grey, bgr: nil, timestampNs: frame.timestampNs,
          sequence: frame.sequence, isInfrared: true)
}

struct PassiveTrace {
    var label: String
    var frames = 0
    var faces = 0
    var readings: [Double] = []
    var differences: [Double] = []
    var widths: [Double] = []
    /// The frame and clip time at which PassiveLiveness decided, and how.
    var decided: (frame: Int, seconds: Double, verdict: PassiveVerdict)?
}

func percentile(_ v: [Double], _ q: Double) -> Double {
    guard !v.isEmpty else { return .nan }
    let s = v.sorted()
    return s[min(s.count - 1, max(0, Int((Double(s.count - 1) * q).rounded())))]
}

/// Runs the pipeline (liveness measurements on) and PassiveLiveness over `frames`.
func passiveTrace(_ label: String, _ frames: [Frame], models: FaceModels) -> PassiveTrace {
    var trace = PassiveTrace(label: label)
    let tracker = FaceTracker()
    tracker.measureBorders = true
    tracker.measurePassive = true
    var passive = PassiveLiveness()
    let start = frames.first?.timestampNs ?? 0
    for (i, f) in frames.enumerated() {
        trace.frames += 1
        guard let o = try? models.withEngine({ try FacePipeline.analyze(f, tracker: tracker, engine: $0) }), let box = o.box else { continue }
        trace.faces += 1
        trace.widths.append(box.width)
        if let r = o.antispoof { trace.readings.append(r.real) }
        if let d = o.frameDifference { trace.differences.append(d) }
        if o.trackRestarted { passive = PassiveLiveness() }
        if o.isUsable { passive.observe(reading: o.antispoof, frameDifference: o.frameDifference) }
        if trace.decided == nil, passive.verdict != .pending {
            trace.decided = (i, Double(f.timestampNs - start) / 1e9, passive.verdict)
        }
    }
    return trace
}

/// Every `step`-th frame's detector reading over the whole clip (not only a track's first frames).
func clipReadings(_ frames: [Frame], models: FaceModels, step: Int = 3) -> [Double] {
    let tracker = FaceTracker()
    var out: [Double] = []
    for (i, f) in frames.enumerated() {
        guard let o = try? models.withEngine({ try FacePipeline.analyze(f, tracker: tracker, engine: $0) }), let box = o.box,
              i % step == 0 else { continue }
        let image = ImageRef(pixels: UnsafePointer((f.bgr ?? f.grey).pointer), width: f.width, height: f.height, channels: f.bgr == nil ? 1 : 3)
        if let r = try? models.withEngine({ $0.realProbability(image, box: box) }) { out.append(r.real) }
    }
    return out
}

/// Each frame cut to 1.15× its face box (found on the whole frame), as the tests do.
func tightCrops(_ frames: [Frame], models: FaceModels, scale: Double = 1.15) -> [Frame] {
    let tracker = FaceTracker()
    return frames.compactMap { f in
        guard let o = try? models.withEngine({ try FacePipeline.analyze(f, tracker: tracker, engine: $0) }), let box = o.box else { return nil }
        return croppedFrame(f, box: box, scale: scale)
    }
}

func describe(_ v: PassiveVerdict) -> String {
    switch v {
    case .pending: "pending"
    case .live(let p, let s): "LIVE (p \(fmt(p, 3)), score \(s))"
    case .spoof(.detector(let p), let s): "SPOOF detector (p \(fmt(p, 3)), score \(s))"
    case .spoof(.stillFrames(let d), _): "SPOOF still frames (difference \(fmt(d, 3)))"
    case .spoof(.border(let f), let s): "SPOOF border (framed \(fmt(f, 2)), score \(s))"
    case .spoof(.recapture(let h), let s): "SPOOF recapture (share \(fmt(h, 5)), score \(s))"
    }
}

func runPassive() {
    let models = loadPassiveModels()
    let started = now()
    var rows: [PassiveTrace] = []
    for clip in ["tran_live", "grid_face_blink_a", "tran_replay_screen"] {
        let (frames, fps) = videoFrames(shared + "/video/\(clip)/video.mp4")
        print("# \(clip): \(frames.count) frames, \(fmt(fps, 1)) fps, \(frames.first.map { "\($0.width)x\($0.height)" } ?? "-")")
        let whole = clipReadings(frames, models: models)
        print("  every 3rd frame, whole clip: n \(whole.count), real p5/p50/p95 \(fmt(percentile(whole, 0.05), 3)) / \(fmt(percentile(whole, 0.5), 3)) / \(fmt(percentile(whole, 0.95), 3))")
        rows.append(passiveTrace(clip, frames, models: models))
        let crops = tightCrops(frames, models: models)
        let wholeCrops = clipReadings(crops, models: models)
        print("  cropped 1.15x, every 3rd frame: n \(wholeCrops.count), real p5/p50/p95 \(fmt(percentile(wholeCrops, 0.05), 3)) / \(fmt(percentile(wholeCrops, 0.5), 3)) / \(fmt(percentile(wholeCrops, 0.95), 3))")
        rows.append(passiveTrace(clip + " cropped 1.15x", crops, models: models))
        let grey = frames.map(greyFrame)
        let wholeGrey = clipReadings(grey, models: models)
        print("  grey, every 3rd frame: n \(wholeGrey.count), real p5/p50/p95 \(fmt(percentile(wholeGrey, 0.05), 3)) / \(fmt(percentile(wholeGrey, 0.5), 3)) / \(fmt(percentile(wholeGrey, 0.95), 3))")
        rows.append(passiveTrace(clip + " grey", grey, models: models))
        // Sessions starting later in the clip: every second, the first second's decision.
        var starts: [String] = []
        var step = 0
        while step + Int(fps) < frames.count {
            let t = passiveTrace("", Array(frames[step...]), models: models)
            starts.append(t.decided.map { "\(describe($0.verdict).prefix(5))@\(fmt($0.seconds, 2))" } ?? "-")
            step += Int(fps.rounded())
        }
        print("  a session started at each whole second: \(starts.joined(separator: " "))")
        // A still picture looped by a replay camera: the clip's first frame, 30 times at 15 fps.
        if let first = frames.first {
            let still = (0..<30).map { k in
                Frame(width: first.width, height: first.height, grey: first.grey, bgr: first.bgr, timestampNs: UInt64(k) * 66_666_667,
                      sequence: UInt64(k), isInfrared: false)
            }
            rows.append(passiveTrace(clip + " frame 0 looped", still, models: models))
        }
    }
    print("\n| material | frames with a face | readings p50 (n) | frame difference p5/p50 | decided | at clip time |")
    print("|---|---|---|---|---|---|")
    for t in rows {
        print("| \(t.label) | \(t.faces) of \(t.frames) | \(fmt(percentile(t.readings, 0.5), 3)) (\(t.readings.count)) | \(fmt(percentile(t.differences, 0.05), 2)) / \(fmt(percentile(t.differences, 0.5), 2)) | \(t.decided.map { describe($0.verdict) } ?? "undecided") | \(t.decided.map { "\(fmt($0.seconds, 2)) s (frame \($0.frame))" } ?? "-") |")
    }
    // LFW stills: photos a real camera took. Every 14th person's first image (about 300).
    let lfw = shared + "/faces/lfw/images"
    let people = ((try? FileManager.default.contentsOfDirectory(atPath: lfw)) ?? []).sorted()
    var stills: [Double] = []
    for (k, person) in people.enumerated() where k % 14 == 0 {
        guard let file = ((try? FileManager.default.contentsOfDirectory(atPath: lfw + "/" + person)) ?? []).sorted().first,
              let f = readFrame(lfw + "/" + person + "/" + file),
              let o = try? models.withEngine({ try FacePipeline.analyze(f, tracker: FaceTracker(), engine: $0) }), let box = o.box else { continue }
        let image = ImageRef(pixels: UnsafePointer((f.bgr ?? f.grey).pointer), width: f.width, height: f.height, channels: f.bgr == nil ? 1 : 3)
        if let r = try? models.withEngine({ $0.realProbability(image, box: box) }) { stills.append(r.real) }
    }
    let real = stills.filter { $0 >= PassiveLiveness.threshold }.count
    print("\nLFW stills (every 14th person's first photo): \(stills.count), real p5/p50/p95 \(fmt(percentile(stills, 0.05), 3)) / \(fmt(percentile(stills, 0.5), 3)) / \(fmt(percentile(stills, 0.95), 3)); at or above \(PassiveLiveness.threshold): \(real) (\(fmt(Double(real) / Double(max(1, stills.count)) * 100, 1)) %)")
    // Cost per reading.
    if let f = videoFrames(shared + "/video/tran_live/video.mp4").frames.first,
       let o = try? models.withEngine({ try FacePipeline.analyze(f, tracker: FaceTracker(), engine: $0) }), let box = o.box {
        let image = ImageRef(pixels: UnsafePointer((f.bgr ?? f.grey).pointer), width: f.width, height: f.height, channels: 3)
        _ = try? models.withEngine { $0.realProbability(image, box: box) }
        let t0 = now()
        for _ in 0..<50 { _ = try? models.withEngine { $0.realProbability(image, box: box) } }
        print("detector: \(fmt((now() - t0) / 50 * 1000, 1)) ms per reading (both networks, one core)")
    }
    print("passive: \(fmt(now() - started, 1)) s")
}

// MARK: - Whole verify sessions (passive-sessions)

/// How one verify session in `mode` over `frames` ended (the template: the frames' own first
/// usable face, so the outcome is about liveness), and at what clip time from its first frame.
func passiveSession(_ frames: [Frame], mode: LivenessMode, models: FaceModels) -> (outcome: String, seconds: Double?) {
    let settings = FaceAuthenticationSettings(liveness: true, matchingThreshold: 0, qualityThreshold: 0, livenessThreshold: 50,
                                              blinkTimeoutMs: 5000, timeoutMs: 30000, livenessMode: mode)
    guard let start = frames.first?.timestampNs else { return ("no frames", nil) }
    let tracker = FaceTracker()
    tracker.measureBorders = true
    tracker.measurePassive = true
    var session: FaceVerification?
    for frame in frames {
        guard let o = try? models.withEngine({ try FacePipeline.analyze(frame, tracker: tracker, engine: $0) }) else { continue }
        func embed() -> FaceTemplate? {
            guard let l = o.landmarks else { return nil }
            let image = ImageRef(pixels: UnsafePointer((frame.bgr ?? frame.grey).pointer), width: frame.width, height: frame.height,
                                 channels: frame.bgr == nil ? 1 : 3)
            return (try? models.withEngine { try $0.embed(image, landmarks: l) }).map { FaceTemplate(embedding: $0, quality: 80) }
        }
        if session == nil {
            guard o.isUsable, let reference = embed() else { continue }
            session = FaceVerification(settings, references: [reference], calibration: FaceCalibration.lfw, startedAt: start)
        }
        var step = session!.observe(o, at: frame.timestampNs)
        if case .needTemplate = step, let probe = embed() { step = session!.judged(probe) }
        let t = Double(frame.timestampNs - start) / 1e9
        switch step {
        case .decided(let outcome, _): return (outcome.liveness == .live ? "live" : "not live", t)
        case .failed(.spoof(let cue, _)):
            let name = switch cue {
            case .detector: "detector"
            case .stillFrames: "still_frames"
            case .border: "border"
            case .recapture: "recapture"
            case .challenge: "challenge"
            case .virtualCamera: "virtual_camera"
            }
            return ("spoof:" + name, t)
        case .failed(let f): return ("\(f)".prefix(while: { $0 != "(" }).description, t)
        default: continue
        }
    }
    return ("undecided", nil)
}

/// Verify sessions started every 0.5 s of each clip (each given 3 s of frames), per material:
/// how many end live or refused, by which cue, and when.
func runPassiveSessions() {
    let models = loadPassiveModels()
    let mode: LivenessMode = arguments.contains("--blink") ? .passiveBlink : .passive
    print("| material | sessions | live | refused (cue: count) | other | time to decision p50 / max |")
    print("|---|---|---|---|---|---|")
    for clip in ["tran_live", "grid_face_blink_a", "tran_replay_screen"] {
        let (frames, fps) = videoFrames(shared + "/video/\(clip)/video.mp4")
        let variants: [(String, [Frame])] = [(clip, frames), (clip + " cropped 1.15x", tightCrops(frames, models: models)),
                                             (clip + " grey", frames.map(greyFrame))]
        for (label, material) in variants {
            var live = 0, refused: [String: Int] = [:], other: [String: Int] = [:], times: [Double] = []
            var offset = 0
            let step = max(1, Int((fps / 2).rounded()))
            repeat {
                let window = Array(material[offset..<min(material.count, offset + Int(3 * fps))])
                let (outcome, t) = passiveSession(window, mode: mode, models: models)
                if let t { times.append(t) }
                if outcome == "live" { live += 1 } else if outcome.hasPrefix("spoof:") { refused[String(outcome.dropFirst(6)), default: 0] += 1 } else { other[outcome, default: 0] += 1 }
                offset += step
            } while offset + Int(fps) <= material.count
            let n = live + refused.values.reduce(0, +) + other.values.reduce(0, +)
            print("| \(label) | \(n) | \(live) | \(refused.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")) | \(other.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")) | \(fmt(percentile(times, 0.5), 2)) / \(fmt(times.max() ?? .nan, 2)) s |")
        }
    }
}
