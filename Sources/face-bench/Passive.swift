// passive: the passive liveness detector (MiniFASNetV2 + MiniFASNetV1SE) and the frame-noise cue on
// the shared clips (whole, cropped tightly to the face, grey), on a still picture repeated, and on
// LFW stills; and the passive decision (PassiveLiveness) frame by frame, as a session makes it.
import BiometricCore
import BiometricFace
import BiometricProtocol
import Foundation

func loadPassiveModels() -> FaceModels { loadModels(antispoof: true) }

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

// MARK: - Window length (passive-window)

/// What a passive session sees of each frame from its start: the detector's reading (on a track's
/// first usable colour frames), the frame difference, the border mask, whether the frame is usable.
struct SessionFrames {
    var readings: [Double?] = []
    var differences: [Double?] = []
    var borders: [Int?] = []
    var usable: [Bool] = []
}

/// Frames `start..<start + count` through a fresh tracker, as a session started there sees them.
func sessionFrames(_ frames: [Frame], start: Int, count: Int, models: FaceModels) -> SessionFrames {
    let tracker = FaceTracker()
    tracker.measureBorders = true
    tracker.measurePassive = true
    tracker.detectorReadings = count
    var out = SessionFrames()
    for f in frames[start..<min(frames.count, start + count)] {
        guard let o = try? models.withEngine({ try FacePipeline.analyze(f, tracker: tracker, engine: $0) }), o.landmarks != nil else {
            out.readings.append(nil); out.differences.append(nil); out.borders.append(nil); out.usable.append(false)
            continue
        }
        out.readings.append(o.isUsable && o.colour ? o.antispoof?.real : nil)
        out.differences.append(o.frameDifference)
        out.borders.append(o.borderMask)
        out.usable.append(o.isUsable)
    }
    return out
}

/// A passive decision rule: `w` detector readings, `w - 1` noise pairs and a border cue judged on
/// `border` frames; with `early` (frames, median), a face also passes at `early.frames` frames when
/// the median of those readings is at least `early.median`, their noise is cleared and none of
/// them was framed.
struct WindowRule: CustomStringConvertible {
    var w: Int
    var border: Int
    var early: (frames: Int, median: Double)?
    var description: String {
        early.map { "early at \($0.frames) (median ≥ \($0.median)), else \(w) readings, border \(border)" } ?? "\(w) readings, \(w - 1) noise pairs, border \(border)"
    }
}

/// The decision on the first frames of `s` under `rule`: the verdict, the frame it came at, the
/// detector median and framed fraction it used.
func windowDecision(_ s: SessionFrames, rule: WindowRule) -> (verdict: PassiveVerdict, frame: Int?, median: Double?, framed: Double?) {
    var passive = PassiveLiveness(frames: rule.w, noisePairs: max(1, rule.w - 1))
    var border = ReplayCue(minimumFrames: rule.border)
    var readings: [Double] = [], differences: [Double] = []
    var framedEarly = 0, seenEarly = 0
    for i in s.usable.indices {
        if let mask = s.borders[i] {
            border.observe(borderMask: mask)
            if seenEarly < (rule.early?.frames ?? 0) { seenEarly += 1; if ReplayCue.isFramed(mask) { framedEarly += 1 } }
        }
        if let r = s.readings[i] { readings.append(r) }
        if let d = s.differences[i] { differences.append(d) }
        passive.observe(reading: s.readings[i].map { AntispoofReading(real: $0, v2: $0, v1se: $0) }, frameDifference: s.differences[i])
        passive.observe(framedFraction: border.judgedFraction, highFrequencyShare: nil)
        let v = passive.verdict
        if case .spoof = v { return (v, i, passive.realProbability, border.judgedFraction) }
        if case .live = v, border.judgedFraction != nil { return (v, i, passive.realProbability, border.judgedFraction) }
        if let early = rule.early, readings.count >= early.frames, differences.count >= early.frames - 1, seenEarly >= early.frames, framedEarly == 0 {
            let m = PassiveLiveness.median(Array(readings.prefix(early.frames)))!
            let d = PassiveLiveness.median(Array(differences.prefix(early.frames - 1)))!
            if m >= early.median, d >= PassiveLiveness.identicalDifference {
                return (.live(realProbability: m, score: PassiveLiveness.score(realProbability: m)), i, m, 0)
            }
        }
    }
    return (.pending, nil, passive.realProbability, border.judgedFraction)
}

/// How the passive cues separate live faces from attacks as the window shortens: sessions started
/// every `--step` frames [5] of each clip (whole and cropped 1.15× to the face; the screen replay;
/// each clip's first frame looped), decided with windows of 3…15 frames and with an early pass.
func runPassiveWindow() {
    let models = loadPassiveModels()
    let step = arguments.firstIndex(of: "--step").flatMap { Int(arguments[$0 + 1]) } ?? 5
    let longest = 17
    struct Material { let name: String; let live: Bool; let fps: Double; let sessions: [SessionFrames] }
    var materials: [Material] = []
    let started = now()
    for clip in ["tran_live", "grid_face_blink_a", "tran_replay_screen"] {
        let (frames, fps) = videoFrames(shared + "/video/\(clip)/video.mp4")
        let live = clip != "tran_replay_screen"
        for (label, material) in [(clip, frames), (clip + " cropped 1.15x", tightCrops(frames, models: models))] {
            let starts = Array(stride(from: 0, to: max(1, material.count - longest), by: step))
            materials.append(Material(name: label, live: live, fps: fps, sessions: starts.map { sessionFrames(material, start: $0, count: longest, models: models) }))
        }
        if let first = frames.first {
            let still = (0..<longest).map { k in
                Frame(width: first.width, height: first.height, grey: first.grey, bgr: first.bgr, timestampNs: UInt64(k) * 66_666_667,
                      sequence: UInt64(k), isInfrared: false)
            }
            materials.append(Material(name: clip + " frame 0 looped", live: false, fps: 15, sessions: [sessionFrames(still, start: 0, count: longest, models: models)]))
        }
    }
    print("sessions every \(step) frames; \(fmt(now() - started, 0)) s to analyse")
    var rules = [3, 4, 5, 6, 7, 8, 10, 12, 15].map { WindowRule(w: $0, border: $0) }
    rules.append(WindowRule(w: 8, border: 15))
    for e in [3, 4, 5] { for m in [0.4, 0.5, 0.6] { rules.append(WindowRule(w: 8, border: 15, early: (e, m))) } }
    print("| rule | live sessions passed | live: lowest detector median | live passed at, p50 / p95 (30 fps; 25 fps) | attacks refused (detector / still / border) | screen replay: highest detector median (whole / cropped) |")
    print("|---|---|---|---|---|---|")
    for rule in rules {
        var livePassed = 0, liveTotal = 0, attackRefused = 0, attackTotal = 0
        var byCue: [String: Int] = [:]
        var liveMin = 1.0, replayMax = (whole: 0.0, cropped: 0.0)
        var at: [String: [Double]] = [:]
        for m in materials {
            for s in m.sessions {
                let d = windowDecision(s, rule: rule)
                if m.live {
                    liveTotal += 1
                    if case .live = d.verdict {
                        livePassed += 1
                        at[m.fps == 25 ? "25" : "30", default: []].append(Double((d.frame ?? 0) + 1) / m.fps * 1000)
                    }
                    if let p = d.median { liveMin = min(liveMin, p) }
                } else {
                    attackTotal += 1
                    if case .spoof(let cue, _) = d.verdict {
                        attackRefused += 1
                        let name = switch cue { case .detector: "detector"; case .stillFrames: "still"; case .border: "border"; case .recapture: "recapture" }
                        byCue[name, default: 0] += 1
                    }
                    if m.name.hasPrefix("tran_replay_screen"), let p = d.median {
                        if m.name.contains("cropped") { replayMax.cropped = max(replayMax.cropped, p) } else { replayMax.whole = max(replayMax.whole, p) }
                    }
                }
            }
        }
        func times(_ v: [Double]?) -> String { v.map { "\(fmt(percentile($0, 0.5), 0)) / \(fmt(percentile($0, 0.95), 0))" } ?? "-" }
        print("| \(rule) | \(livePassed) / \(liveTotal) | \(fmt(liveMin, 3)) | \(times(at["30"])); \(times(at["25"])) ms | \(attackRefused) / \(attackTotal) (\(byCue["detector"] ?? 0) / \(byCue["still"] ?? 0) / \(byCue["border"] ?? 0)) | \(fmt(replayMax.whole, 3)) / \(fmt(replayMax.cropped, 3)) |")
    }
    // Per material, for the shipped rule and the fixed windows around it.
    print("\nper material (lowest live / highest attack detector median of the sessions; sessions decided live / refused):")
    for rule in [WindowRule(w: 6, border: 6), WindowRule(w: 8, border: 15), WindowRule(w: 8, border: 15, early: (4, 0.5))] {
        print("  \(rule):")
        for m in materials {
            let ds = m.sessions.map { windowDecision($0, rule: rule) }
            let medians = ds.compactMap(\.median)
            let live = ds.filter { if case .live = $0.verdict { return true } else { return false } }.count
            let refused = ds.filter { if case .spoof = $0.verdict { return true } else { return false } }.count
            print("    \(m.name): \(ds.count) sessions, median \(m.live ? "lowest" : "highest") \(fmt(m.live ? (medians.min() ?? .nan) : (medians.max() ?? .nan), 3)); live \(live), refused \(refused)")
        }
    }
    // The border cue alone (it must still catch a screen replay the detector were fooled by).
    print("\nborder cue alone on the uncropped screen replay, sessions flagged (framed fraction ≥ \(ReplayCue.defaultSpoofFraction)) by window:")
    for w in [3, 4, 5, 6, 8, 10, 15] {
        guard let m = materials.first(where: { $0.name == "tran_replay_screen" }) else { break }
        var flagged = 0
        for s in m.sessions {
            var cue = ReplayCue(minimumFrames: w)
            for mask in s.borders.compactMap({ $0 }) where cue.framesSeen < w { cue.observe(borderMask: mask) }
            if cue.isSpoof { flagged += 1 }
        }
        print("  \(w) frames: \(flagged) / \(m.sessions.count)")
    }
}

// MARK: - PFLD against dlib's 68-point predictor (landmarks)

/// The landmark network the daemon runs (PFLD) against dlib's predictor it replaced, on the same
/// detector boxes of every 10th LFW image: where their points differ (per region, in eye
/// distances), what that does to pose and the eye aspect ratio, that the ResNet's chips (aligned on
/// dlib's 5-point model in the detector's box) do not change, and the cost per face.
func runLandmarks() {
    func distance(_ a: SIMD2<Double>, _ b: SIMD2<Double>) -> Double { ((a - b) * (a - b)).sum().squareRoot() }
    func load(_ landmarks: String) -> FaceModels {
        do {
            return try FaceModels(landmarks: landmarks, shape5: modelsDir + "/" + FaceModels.shape5Name,
                                  resnet: modelsDir + "/" + FaceModels.resnetName, yunet: modelsDir + "/" + FaceModels.yunetName)
        } catch { fatalError("models: \(error)") }
    }
    let pfld = load(modelsDir + "/" + FaceModels.landmarkName), dlib = load(modelsDir + "/" + FaceModels.dlib68Name)
    let lfw = shared + "/faces/lfw/images"
    let people = ((try? FileManager.default.contentsOfDirectory(atPath: lfw)) ?? []).sorted()
    var files: [String] = []
    for p in people { for f in ((try? FileManager.default.contentsOfDirectory(atPath: lfw + "/" + p)) ?? []).sorted() { files.append(p + "/" + f) } }
    let regions: [(String, Range<Int>)] = [("jaw", 0..<17), ("brows", 17..<27), ("nose", 27..<36), ("eyes", 36..<48), ("mouth", 48..<68)]
    var regionError: [String: [Double]] = [:], all: [Double] = []
    var yaw: [Double] = [], pitch: [Double] = [], roll: [Double] = [], ear: [Double] = [], earDlib: [Double] = []
    var descriptorDiff = 0.0, faces = 0
    var tP = 0.0, tD = 0.0
    for (k, file) in files.enumerated() where k % 10 == 0 {
        guard let frame = readFrame(lfw + "/" + file) else { continue }
        let image = ImageRef(pixels: UnsafePointer(frame.bgr!.pointer), width: frame.width, height: frame.height, channels: 3)
        _ = try? pfld.withEngine { pe in
            try dlib.withEngine { de in
                guard let box = centralDetection(try pe.detect(image, minSize: 30))?.box
                else { return }
                var t = now()
                let a = try pe.landmarks(image, box: box)
                tP += now() - t
                t = now()
                let b = try de.landmarks(image, box: box)
                tD += now() - t
                let iod = max(1, b.interocular)
                for (name, r) in regions {
                    let e = r.map { distance(a.points[$0], b.points[$0]) / iod }.reduce(0, +) / Double(r.count)
                    regionError[name, default: []].append(e)
                }
                all.append((0..<68).map { distance(a.points[$0], b.points[$0]) / iod }.reduce(0, +) / 68)
                let pa = FaceEngine.pose(a, width: frame.width, height: frame.height), pb = FaceEngine.pose(b, width: frame.width, height: frame.height)
                yaw.append(pa.yaw - pb.yaw); pitch.append(pa.pitch - pb.pitch); roll.append(pa.roll - pb.roll)
                ear.append(a.eyeAspectRatio); earDlib.append(b.eyeAspectRatio)
                // The ResNet's chip is aligned by dlib's 5-point model in the detector's box, whatever
                // the 68 landmarks are: the descriptors must be the same.
                let da = try pe.embed(image, landmarks: a, views: .mirrored), db = try de.embed(image, landmarks: b, views: .mirrored)
                descriptorDiff = max(descriptorDiff, zip(da, db).map { Double(abs($0 - $1)) }.max() ?? 0)
                faces += 1
            }
        }
    }
    func p(_ v: [Double], _ q: Double) -> String { fmt(percentile(v, q), 3) }
    print("LFW, every 10th image: \(faces) faces, the same YuNet box given to both")
    print("PFLD against dlib, mean point distance in eye distances (median / p90): all \(p(all, 0.5)) / \(p(all, 0.9))")
    for (name, _) in regions { print("  \(name): \(p(regionError[name]!, 0.5)) / \(p(regionError[name]!, 0.9))") }
    print("pose difference PFLD − dlib, degrees (p5 / p50 / p95): yaw \(p(yaw, 0.05)) / \(p(yaw, 0.5)) / \(p(yaw, 0.95)); pitch \(p(pitch, 0.05)) / \(p(pitch, 0.5)) / \(p(pitch, 0.95)); roll \(p(roll, 0.05)) / \(p(roll, 0.5)) / \(p(roll, 0.95))")
    print("eye aspect ratio, open eyes of LFW (p5 / p50 / p95): PFLD \(p(ear, 0.05)) / \(p(ear, 0.5)) / \(p(ear, 0.95)); dlib \(p(earDlib, 0.05)) / \(p(earDlib, 0.5)) / \(p(earDlib, 0.95))")
    print("ResNet descriptors (chip + mirror) from the two: largest difference \(descriptorDiff) (the chip is aligned by the 5-point model)")
    print("landmarks per face: PFLD \(fmt(tP / Double(max(1, faces)) * 1000, 2)) ms, dlib \(fmt(tD / Double(max(1, faces)) * 1000, 2)) ms (same process, alternating)")
}
