import BiometricCore
import BiometricVocabulary
import CFingerVision
import Foundation

/// What was measured of one fingertip in a frame (frame pixels): for benchmarks and tests.
public struct FingertipMeasure: Sendable, Equatable {
    /// Both sides and the apex were found (else the width is the seed's guess).
    public var sidesFound: Bool
    public var width: Double
    /// Median ridge period in the pad's centre, 0 when no ridges were found.
    public var ridgePeriod: Double
    /// Share of the pad's centre with ridges, 0–1.
    public var ridgeArea: Double
    /// Mean share of spectral energy in the ridge peak, 0–1.
    public var ridgeStrength: Double
    /// Share of the ridge blocks whose ridges run along the finger's axis, 0–1.
    public var ridgeAlong: Double
    /// The factor the frame was blown up by around the pad, repeating pixels (1: not).
    public var repeated: Double
    /// Share of the ridge blocks whose spacing runs along the frame's rows or columns, 0–1.
    public var gridded: Double
}

/// A fingertip as measured in one frame (frame pixels).
struct Fingertip {
    var raw: cvis_fingertip

    var measure: FingertipMeasure {
        FingertipMeasure(sidesFound: sidesFound, width: width, ridgePeriod: Double(raw.ridge_period), ridgeArea: Double(raw.ridge_area),
                         ridgeStrength: Double(raw.ridge_strength), ridgeAlong: Double(raw.ridge_along), repeated: Double(raw.repeated),
                         gridded: Double(raw.ridge_gridded))
    }

    var sidesFound: Bool { raw.found != 0 }

    /// The ridge gate's verdict on this fingertip's measures.
    func ridgeVerdict(moving: Bool) -> RidgeGate.Verdict {
        RidgeGate.judge(sidesFound: sidesFound, width: width, period: Double(raw.ridge_period), area: Double(raw.ridge_area),
                        moving: moving, repeated: Double(raw.repeated), gridded: Double(raw.ridge_gridded))
    }
    var tipX: Double { Double(raw.tip_x) }
    var tipY: Double { Double(raw.tip_y) }
    var width: Double { Double(raw.width) }

    /// The distal phalanx: from the apex down the finger to its last joint, as wide as the finger.
    var box: FingerBox {
        let length = Double(raw.length), dx = Double(raw.dir_x), dy = Double(raw.dir_y)
        return FingerBox(centreX: tipX - dx * length / 2, centreY: tipY - dy * length / 2, width: width, height: length,
                         angle: atan2(dx, -dy) * 180 / .pi)
    }

    /// Edge/centre brightness across the fingertip (shading cue for liveness), nil when unmeasured.
    var shadingRatio: Double? { raw.centre_level > 8 ? Double(raw.edge_level / raw.centre_level) : nil }

    /// Where to look in the next frame when there are no landmarks: here.
    var seed: cvis_fingertip_seed {
        let length = raw.length
        return cvis_fingertip_seed(tip_x: raw.tip_x, tip_y: raw.tip_y, base_x: raw.tip_x - raw.dir_x * length,
                                   base_y: raw.tip_y - raw.dir_y * length, width: raw.width)
    }
}

/// The camera side of one finger capture. Per frame:
/// 1. **Hands** (modes fingers and thumb): MediaPipe's hand landmarks on the crop the previous frame's
///    landmarks give; the palm detector only when there is no track (`cvis_hand_track`). The
///    landmarks name the fingers (index…little, or the thumb) of the declared hand and say which
///    side of the hand faces the camera (`HandObservation.showsPalm`): the back of the hand gets
///    `show_palm` and no print. When the hand comes so close that the landmark model loses it
///    (the palm leaves the frame), the fingertips found in the previous frame are followed on
///    their own, each only where it was; nothing else in the frame ever becomes a finger.
///    Mode single (and thumb when no hand is in view): one finger held close, found by its
///    outline (the classical finder), at least a tenth of the frame's short side wide.
/// 2. **Fingertips** (`cvis_fingertip_measure`): sides, apex, width, and the ridge period in the
///    pad's centre.
/// 3. **The ridge gate** (`RidgeGate`): a print only where the ridges are resolved; otherwise the
///    feedback says what to do (move_closer, hold_still, focus).
/// 4. **Prints** (`cvis_fingertip_print`): scaled so the finger's own ridges have the 500-ppi
///    period of an average adult finger, unrolled around the finger's axis, upright; the best per
///    finger is kept. Its pixels are exactly what extraction sees (no separate mask), so the
///    image finger.capture returns re-extracts to the same template.
/// 5. Distance from the fingers' widths (the gauge), liveness cues.
///
/// One per capture session, used from one thread at a time (it owns native scratch buffers, so it
/// is deliberately not Sendable).
public final class FingerCapture {
    public let options: FingerCaptureOptions
    private let engine: OpaquePointer
    private let tracker: OpaquePointer?
    private var smoother = FingerBoxSmoother()
    private var kept: CaptureKeeper
    /// The fingertips measured in the last frame (followed when the landmarks are lost; motion).
    private var previous: [Digit: Fingertip] = [:]
    /// Frames in a row the fingertips were followed without landmarks.
    private var followed = 0
    /// Fingertips lost while their neighbours are followed: where they were, moved with the
    /// others since, and for how many frames.
    private var stale: [Digit: (tip: Fingertip, age: Int)] = [:]
    /// Frames a lost fingertip is looked for where the hand's motion puts it.
    static let staleFrames = 10
    /// The most a followed fingertip's edge/centre shading may change between analysed frames
    /// (the rendered and photographed live fingers vary by ≤ 0.05 while held; a jump to a palm or
    /// the background changes it by 0.25–0.4).
    static let maximumShadingChange = 0.15
    /// The palm check (kept while fingertips are followed; changed only when three landmark frames
    /// in a row disagree with it, or at a new track).
    private var palmShown = true
    private var palmDisagreements = 0
    /// Close-up finder output, reused every frame.
    private let found = UnsafeMutableBufferPointer<cvis_finger>.allocate(capacity: 16)
    /// Print scratch per digit, reused every frame.
    private var scratch: [Digit: (pixels: [UInt8], mask: [UInt8])] = [:]

    /// The hand the landmark model saw in the last frame (nil: none, or fingertips followed alone).
    public private(set) var lastHand: HandObservation?
    /// Bounding box (angle 0) of the hand's landmarks, or of the fingertips followed, in the last frame.
    public private(set) var handRegion: FingerBox?
    /// The ridge gate's verdict on each finger of the last frame.
    public private(set) var lastVerdicts: [FingerPosition: RidgeGate.Verdict] = [:]
    /// What was measured of each finger of the last frame.
    public private(set) var lastMeasures: [FingerPosition: FingertipMeasure] = [:]

    /// Resolution of the prints made (the print side's extractor expects 500 ppi).
    public static let printPPI = 500
    /// The ridge period prints are scaled to (500-ppi pixels): the mean of the median periods of
    /// the three real-sensor FVC sets (FVC2002 DB1_B 8.40, DB2_B 8.40, FVC2004 DB1_B 9.00; measured
    /// by cvis_ridge_period), i.e. 0.437 mm.
    public static let printRidgePeriod: Float = 8.6
    /// How far around the finger a print is unrolled (degrees either side of the axis): as far as
    /// the ridges stay resolved. At φ from the axis the surface is seen turned by φ, so a ridge
    /// period of P frame pixels shows as P·cos φ: the print goes out to where that is still the
    /// ridge gate's 4 pixels, between 60° (what every resolved finger gets) and 80° (beyond, the
    /// surface is seen edge-on). A sharp close-up (P ≈ 12–16 px) is unrolled to 70–75°, which
    /// is what lets a side view share the pad's centre with a front view (Docs/finger-camera.md).
    public static func unrollDegrees(ridgePeriod: Double) -> Float {
        let resolved = ridgePeriod > RidgeGate.minimumPixelsPerRidge
            ? acos(RidgeGate.minimumPixelsPerRidge / ridgePeriod) * 180 / .pi : 0
        return Float(min(80, max(60, resolved)))
    }
    /// A fingertip that moved more than this share of its width since the last frame is moving.
    static let movingShare = 0.12

    /// `models` nil: no hand is ever found in mode fingers (the daemon refuses that mode without
    /// the models), and thumb falls back to a thumb held close on its own.
    public init(options: FingerCaptureOptions, models: HandModels? = nil) {
        self.options = options
        kept = CaptureKeeper(options: options)
        var status = CVIS_OK
        // Creating an engine only allocates an empty struct; failure means out of memory.
        engine = cvis_hand_engine_create(&status)!
        tracker = models.flatMap { cvis_hand_tracker_create($0.pointer, &status) }
        self.models = models
    }

    /// Kept so the native models outlive the tracker that points into them.
    private let models: HandModels?

    deinit {
        cvis_hand_engine_free(engine)
        if let tracker { cvis_hand_tracker_free(tracker) }
        found.deallocate()
    }

    /// Forgets everything: tracks, best prints and liveness evidence.
    public func reset() {
        startNewCapture()
        if let tracker { cvis_hand_tracker_reset(tracker) }
        previous.removeAll()
        stale.removeAll()
        followed = 0
        palmShown = true
        palmDisagreements = 0
    }

    /// A new capture of the same hand (an enrolment round): forgets the best prints and the
    /// liveness evidence, keeps following the hand.
    public func startNewCapture() {
        smoother.reset()
        kept.startNewCapture()
    }

    /// The best print of each finger seen so far, index→little (or the thumb).
    public func bestPrints() -> [CapturedPrint] { kept.bestPrints }

    public func livenessVerdict() -> LivenessVerdict { kept.liveness.verdict }

    /// The liveness evidence so far (frames, each cue's median), for benches and debug logs.
    public var livenessSummary: String { kept.liveness.summary }

    /// The distance scale for frames of this size.
    public func distanceScale(frameWidth: Int, frameHeight: Int) -> DistanceScale {
        kept.distanceScale(frameWidth: frameWidth, frameHeight: frameHeight)
    }

    public func analyse(_ frame: Frame) -> FingerFrameAnalysis {
        let distanceScale = distanceScale(frameWidth: frame.width, frameHeight: frame.height)
        let colourPlane = frame.bgr
        let view = cvis_image_view(pixels: colourPlane?.pointer ?? frame.grey.pointer, width: Int32(frame.width),
                                   height: Int32(frame.height), channels: colourPlane == nil ? 1 : 3)
        let grey = cvis_image_view(pixels: frame.grey.pointer, width: Int32(frame.width), height: Int32(frame.height),
                                   channels: 1)
        let expected = options.expectedDigits
        var tips: [Digit: Fingertip] = [:]
        var palm = true
        lastHand = nil
        handRegion = nil
        if let tracker {
            // 1. The fingertips found in the last frame, each followed where it was; one lost
            //    lately is looked for where the others' motion puts it.
            for digit in expected {
                guard let last = previous[digit], let next = follow(last, in: view) else { continue }
                tips[digit] = next
            }
            // A track that lost more than half its fingertips in one frame is not followed: the
            // hand jumped (a fast move between analysed frames, a cut), and what was found where
            // the fingertips had been is whatever lies there now (a palm, another finger).
            let tracked = previous.keys.filter(expected.contains).count
            if tracked >= 2, 2 * tips.count < tracked {
                tips.removeAll()
                previous.removeAll()
                stale.removeAll()
            }
            followStale(in: view, into: &tips)
            // 2. The hand's landmarks; the palm detector runs only when nothing is tracked (while
            //    fingertips are followed the palm is out of the frame anyway).
            let allowDetect = tips.isEmpty
            var landmarks = cvis_hand_landmarks()
            var status = CVIS_OK
            let seen = cvis_hand_track(tracker, view, Self.minimumPresence, allowDetect ? 1 : 0, &landmarks, &status) == 1
            let hand = seen ? HandObservation(landmarks) : nil
            // The landmarks name the fingers and correct a followed fingertip that drifted —
            // unless they put most followed fingertips elsewhere: then they are a confused track
            // (a hand half out of the frame), the followed fingertips win and the landmark track
            // starts over.
            // A hand seen with its knuckles in the frame (presence ≥ 0.7) is trusted over what was
            // followed: the model sees the whole hand.
            let agreeing = hand.map { hand in tips.filter { hand.tipDistance($0.key, to: $0.value) < 0.6 * $0.value.width }.count } ?? 0
            let trusted = hand.map { $0.presence >= 0.7 && $0.palmInView(width: frame.width, height: frame.height) } ?? false
            if let hand, trusted || 2 * agreeing >= tips.count {
                lastHand = hand
                handRegion = hand.bounds
                followed = 0
                // Which side faces the camera needs a hand seen well (presence ≥ 0.9, knuckles in
                // the frame); the first such frame of a track decides, later ones change it only
                // when three in a row disagree (a hand half out of the frame flips the landmarks).
                if options.mode != .thumb, hand.presence >= 0.9, hand.palmInView(width: frame.width, height: frame.height) {
                    notePalm(hand.showsPalm(of: options.hand), fresh: previous.isEmpty)
                }
                // A followed fingertip stays (the landmarks of a hand this close are rougher than
                // its measured outline) unless two followed fingertips ended on one finger.
                for digit in expected {
                    if let t = tips[digit], !Self.collides(digit, t, in: tips),
                       !trusted || hand.tipDistance(digit, to: t) < 0.6 * t.width { continue }
                    tips[digit] = measure(view, hand.seed(digit), expect: hand)
                }
            } else {
                if hand != nil { cvis_hand_tracker_reset(tracker) }
                if !tips.isEmpty {
                    followed += 1
                    // The hand moved as its fingertips did: every 4th frame the landmark model
                    // looks for it there (a hand moving back into full view is named again).
                    if followed % 4 == 1, let motion = Self.motion(from: previous, to: tips) {
                        cvis_hand_tracker_shift(tracker, Float(motion.dx), Float(motion.dy), Float(motion.scale))
                    }
                }
            }
            // The thumb's pad faces the camera side-on to the palm: no palm check for it.
            palm = options.mode == .thumb || palmShown
        }
        Self.dropOddOnes(&tips)
        if tips.isEmpty, options.mode != .fingers, let tip = closeUp(view, frame: frame) {
            tips[expected[0]] = tip
            palm = true
        }
        guard !tips.isEmpty else {
            previous.removeAll()
            stale.removeAll()
            followed = 0
            lastVerdicts = [:]
            lastMeasures = [:]
            _ = smoother.update([])
            return FingerFrameAnalysis(fingers: [], distance: nil, distanceRange: distanceScale.range, feedback: .noFingers)
        }
        if handRegion == nil { handRegion = Self.bounds(of: tips.values.map(\.box)) }

        let smoothed = smoother.update(tips.map { (FingerPosition(options.hand, $0.key), $0.value.box) })
        var observations: [FingerObservation] = []
        var verdicts: [FingerPosition: RidgeGate.Verdict] = [:]
        var measures: [FingerPosition: FingertipMeasure] = [:]
        var shading: [Double] = [], periodic: [Double] = [], saturations: [Double] = [], crs: [Double] = []
        var equivalentWidths: [Double] = []
        var printed = 0
        for digit in expected {
            guard let tip = tips[digit] else { continue }
            let position = FingerPosition(options.hand, digit)
            let moving = previous[digit].map { hypot($0.tipX - tip.tipX, $0.tipY - tip.tipY) > Self.movingShare * tip.width } ?? false
            let verdict: RidgeGate.Verdict = palm ? tip.ridgeVerdict(moving: moving) : .refused(.showPalm)
            verdicts[position] = verdict
            measures[position] = tip.measure
            var quality: Int?
            if verdict == .resolved { quality = makePrint(position: position, tip: tip, grey: grey) }
            if quality != nil { printed += 1 }
            // A fingertip refused by the gate is rated low (its ridges are poor); one whose sides
            // were not found is not measurable.
            let level: QualityLevel = quality.map { QualityLevel(quality: $0) } ?? (tip.sidesFound ? .low : .unavailable)
            let shown = quality ?? (tip.sidesFound ? min(Self.refusedQualityCap, Int((100 * tip.raw.ridge_area * tip.raw.ridge_strength).rounded())) : 0)
            observations.append(FingerObservation(position: position, box: smoothed[position] ?? tip.box, quality: shown, level: level))
            let nominal = options.mode == .single ? DistanceCalibration.nominalWidthMM
                : Double(cvis_hand_nominal_width_mm(Int32(digit.order)))
            equivalentWidths.append(tip.width * DistanceCalibration.nominalWidthMM / nominal)
            if tip.sidesFound {
                if let ratio = tip.shadingRatio { shading.append(ratio) }
                if colourPlane != nil, tip.raw.mean_cr > 0 {
                    saturations.append(Double(tip.raw.mean_saturation))
                    crs.append(Double(tip.raw.mean_cr))
                }
                if options.liveness == .medium {
                    var status = CVIS_OK
                    let p = cvis_hand_region_periodicity(grey, tip.box.native, &status)
                    if p >= 1 { periodic.append(Double(p)) } // 0: not measurable at this distance
                }
            }
        }
        lastVerdicts = verdicts
        lastMeasures = measures
        let found = tips.filter(\.value.sidesFound)
        for (digit, tip) in previous where found[digit] == nil && stale[digit] == nil { stale[digit] = (tip, 0) }
        for digit in found.keys { stale[digit] = nil }
        previous = found
        // Liveness evidence comes from frames good enough to print (a far hand's cues are not the
        // ones the prints are taken under).
        if options.liveness != .none, palm, printed > 0 {
            let colour: (Double, Double)? = saturations.isEmpty ? nil : (Self.median(saturations), Self.median(crs))
            kept.liveness.add(colour: colour, shadingRatios: shading, periodicities: periodic)
        }
        let width = equivalentWidths.reduce(0, +) / Double(equivalentWidths.count)
        return FingerFrameAnalysis(fingers: observations, distance: distanceScale.distance(fingerWidth: width),
                                   distanceRange: distanceScale.range,
                                   feedback: Self.feedback(palm: palm, verdicts: Array(verdicts.values), expected: expected.count,
                                                           width: width, scale: distanceScale))
    }

    /// Landmark model presence under which the hand counts as lost (MediaPipe's default).
    static let minimumPresence: Float = 0.5

    /// One frame's advice: the back of the hand first; optimal when every expected finger made a
    /// print (its ridges are resolved: measured, whatever the optics predict); else too close (the
    /// fingers do not fit, or are nearer than the camera focuses), too far (not even 2 px per
    /// nominal ridge), or the commonest reason the gate gave (move_closer, hold_still, focus).
    static func feedback(palm: Bool, verdicts: [RidgeGate.Verdict], expected: Int, width: Double, scale: DistanceScale) -> Feedback {
        guard palm else { return .showPalm }
        let refusals = verdicts.compactMap { v -> Feedback? in if case .refused(let f) = v { f } else { nil } }
        if refusals.isEmpty && verdicts.count >= expected { return .optimal }
        let zone = scale.feedback(fingerWidth: width)
        if zone == .tooClose { return .tooClose }
        if width < scale.farthestWidth { return .tooFar }
        guard !refusals.isEmpty else { return zone }
        // The commonest reason; ties go to the first of move_closer, hold_still, focus.
        let order: [Feedback] = [.moveCloser, .holdStill, .focus]
        return order.max { a, b in
            let ca = refusals.filter { $0 == a }.count, cb = refusals.filter { $0 == b }.count
            return ca != cb ? ca < cb : order.firstIndex(of: a)! > order.firstIndex(of: b)!
        } ?? .focus
    }

    /// The quality shown for a fingertip the gate refused stays under "medium".
    static let refusedQualityCap = 34

    /// How the fingertips followed from `old` moved: mean shift and mean width change.
    static func motion(from old: [Digit: Fingertip], to new: [Digit: Fingertip]) -> (dx: Double, dy: Double, scale: Double)? {
        let pairs = new.compactMap { digit, tip in old[digit].map { ($0, tip) } }
        guard !pairs.isEmpty else { return nil }
        let n = Double(pairs.count)
        return (pairs.reduce(0) { $0 + $1.1.tipX - $1.0.tipX } / n, pairs.reduce(0) { $0 + $1.1.tipY - $1.0.tipY } / n,
                pairs.reduce(0) { $0 + $1.1.width / $1.0.width } / n)
    }

    /// Looks for fingertips lost lately where the hand's motion since puts them: the followed
    /// fingertips' mean shift and width change, applied about their centre.
    private func followStale(in view: cvis_image_view, into tips: inout [Digit: Fingertip]) {
        let moved = tips.compactMap { digit, tip in previous[digit].map { (old: $0, new: tip) } }
        guard !stale.isEmpty, !moved.isEmpty else {
            if moved.isEmpty { stale.removeAll() }
            return
        }
        let n = Double(moved.count)
        let oldX = moved.reduce(0) { $0 + $1.old.tipX } / n, oldY = moved.reduce(0) { $0 + $1.old.tipY } / n
        let newX = moved.reduce(0) { $0 + $1.new.tipX } / n, newY = moved.reduce(0) { $0 + $1.new.tipY } / n
        let scale = moved.reduce(0) { $0 + $1.new.width / $1.old.width } / n
        for (digit, entry) in stale {
            var raw = entry.tip.raw
            raw.tip_x = Float(newX + (Double(raw.tip_x) - oldX) * scale)
            raw.tip_y = Float(newY + (Double(raw.tip_y) - oldY) * scale)
            raw.width *= Float(scale)
            raw.length *= Float(scale)
            let predicted = Fingertip(raw: raw)
            if tips[digit] == nil, let next = follow(predicted, in: view) {
                tips[digit] = next
                stale[digit] = nil
            } else if entry.age + 1 >= Self.staleFrames {
                stale[digit] = nil
            } else {
                stale[digit] = (predicted, entry.age + 1)
            }
        }
    }

    /// The fingers of one hand are alike: a measured fingertip more than 35 % wider or narrower
    /// than the median of the others is not trusted (its seed's geometry stays, unmeasured) —
    /// landmarks of a hand half out of the frame put fingertips on creases and neighbours.
    static func dropOddOnes(_ tips: inout [Digit: Fingertip]) {
        let found = tips.filter(\.value.sidesFound)
        guard found.count >= 3 else { return }
        for (digit, tip) in found {
            let others = found.filter { $0.key != digit && $0.key != .thumb }.map(\.value.width).sorted()
            guard !others.isEmpty, digit != .thumb else { continue }
            let median = others[others.count / 2]
            if tip.width > 1.35 * median || tip.width < median / 1.35 {
                var raw = tip.raw
                raw.found = 0
                raw.ridge_period = 0
                raw.ridge_area = 0
                tips[digit] = Fingertip(raw: raw)
            }
        }
    }

    /// Whether another followed fingertip lies on this one (within a third of its width).
    static func collides(_ digit: Digit, _ tip: Fingertip, in tips: [Digit: Fingertip]) -> Bool {
        tips.contains { $0.key != digit && hypot($0.value.tipX - tip.tipX, $0.value.tipY - tip.tipY) < tip.width / 3 }
    }

    private func notePalm(_ shown: Bool, fresh: Bool) {
        if fresh || shown == palmShown {
            palmShown = shown
            palmDisagreements = 0
        } else {
            palmDisagreements += 1
            if palmDisagreements >= 3 {
                palmShown = shown
                palmDisagreements = 0
            }
        }
    }

    /// A fingertip from the landmarks' seed; a measured width far from the one the landmarks
    /// imply (a neighbour's edge, background clutter) is not trusted: the seed's geometry stays.
    private func measure(_ view: cvis_image_view, _ seed: cvis_fingertip_seed, expect hand: HandObservation) -> Fingertip {
        var tip = measure(view, seed)
        let ratio = tip.width / Double(seed.width)
        if tip.sidesFound, !(0.7...1.4).contains(ratio) {
            tip = Fingertip(raw: Self.unmeasured(seed))
        }
        return tip
    }

    static func unmeasured(_ seed: cvis_fingertip_seed) -> cvis_fingertip {
        var raw = cvis_fingertip()
        raw.tip_x = seed.tip_x
        raw.tip_y = seed.tip_y
        let dx = seed.tip_x - seed.base_x, dy = seed.tip_y - seed.base_y, n = max(hypotf(dx, dy), 1e-3)
        raw.dir_x = dx / n
        raw.dir_y = dy / n
        raw.width = seed.width
        raw.length = n
        return raw
    }

    private func measure(_ view: cvis_image_view, _ seed: cvis_fingertip_seed) -> Fingertip {
        var raw = cvis_fingertip()
        if cvis_fingertip_measure(view, seed, &raw) != CVIS_OK {
            raw = Self.unmeasured(seed) // only a degenerate seed fails: keep its geometry, unmeasured
        }
        return Fingertip(raw: raw)
    }

    /// A fingertip followed from the last frame: found where it was, about as wide (×0.75–1.33: a
    /// hand approaching while frames are dropped), pointing the same way (±25°), moved less than
    /// 0.6 of its width, about as bright.
    private func follow(_ last: Fingertip, in view: cvis_image_view) -> Fingertip? {
        let next = measure(view, last.seed)
        guard next.sidesFound, next.raw.edge_contrast >= 3 else { return nil }
        let ratio = next.width / last.width
        let turn = Double(next.raw.dir_x * last.raw.dir_x + next.raw.dir_y * last.raw.dir_y)
        let moved = hypot(next.tipX - last.tipX, next.tipY - last.tipY)
        let level = last.raw.centre_level > 8 ? Double(next.raw.centre_level / last.raw.centre_level) : 1
        // A finger's edge/centre shading does not change much from one analysed frame to the next;
        // an outline found where a fingertip was that is lit flat or brighter at its sides is
        // something else (a palm or the background after the hand jumped).
        var shadingChange = 0.0
        if let before = last.shadingRatio, let now = next.shadingRatio { shadingChange = abs(now - before) }
        guard (0.75...1.33).contains(ratio), turn > cos(25 * .pi / 180), moved < 0.6 * last.width, (0.65...1.5).contains(level),
              shadingChange <= Self.maximumShadingChange
        else { return nil }
        return next
    }

    /// One finger held close: the fingertip whose ridges are clearest among the hypotheses of
    /// where it may be — the largest region entering the frame (bright, skin-coloured or reddish;
    /// cvis_fingertip_closeup_seeds) and the finger-like outlines of the classical finder —, at
    /// least a tenth of the frame's short side wide. Only used when no hand is in view (a hand
    /// the landmark model sees names its own fingers).
    private func closeUp(_ view: cvis_image_view, frame: Frame) -> Fingertip? {
        let minWidth = Float(Self.closeUpShare * Double(min(frame.width, frame.height)))
        var status = CVIS_OK
        var seeds = [cvis_fingertip_seed](repeating: cvis_fingertip_seed(), count: 4)
        let regions = Int(cvis_fingertip_closeup_seeds(view, minWidth, &seeds, Int32(seeds.count), &status))
        seeds = Array(seeds.prefix(max(0, regions)))
        let count = Int(cvis_hand_find_fingers(engine, view, minWidth, 0, found.baseAddress, Int32(found.count), &status))
        for f in (0..<max(0, count)).map({ found[$0] }) where f.score >= 0.45 {
            seeds.append(Self.seed(tipX: f.tip_x, tipY: f.tip_y, dirX: f.dir_x, dirY: f.dir_y, width: f.width))
        }
        let usable = { (t: Fingertip) in t.sidesFound && t.width >= Double(minWidth) }
        var tips = seeds.map { measure(view, $0) }.filter(usable)
        // No region outlined a finger clearly: look where a capture guide puts one. A guide seed's
        // joint is only a guess, so a fingertip found from it is measured again from its own apex
        // and width, as the region seeds' are.
        if (tips.map { Double($0.raw.edge_contrast) }.max() ?? 0) < Self.outlinedEdgeContrast {
            for guide in Self.guideSeeds(width: frame.width, height: frame.height) {
                let first = measure(view, guide)
                guard first.sidesFound else { continue }
                let r = first.raw
                tips.append(measure(view, Self.seed(tipX: r.tip_x, tipY: r.tip_y, dirX: r.dir_x, dirY: r.dir_y, width: r.width)))
            }
        }
        return Self.chooseCloseUp(tips.filter(usable))
    }

    /// Sides that stand out at least this clearly (median edge over the view's median gradient;
    /// twice what cvis_fingertip_measure needs to call them sides) outline a finger: the finger's
    /// outline against its background, not texture across it. The fingers of ksahib and
    /// contactless3d: 9.8–36 where the region seeds found them; sahibind6's pink sheet: 2.6.
    static let outlinedEdgeContrast = 4.0

    /// A seed at a fingertip found elsewhere: its apex, its width, the joint 1.35 widths down its axis.
    static func seed(tipX: Float, tipY: Float, dirX: Float, dirY: Float, width: Float) -> cvis_fingertip_seed {
        cvis_fingertip_seed(tip_x: tipX, tip_y: tipY, base_x: tipX - dirX * 1.35 * width, base_y: tipY - dirY * 1.35 * width, width: width)
    }

    /// Where a capture guide puts a finger held close, whatever its colours: across the middle of
    /// the frame, pointing away from a short side (up in a portrait frame; left or right in a
    /// landscape one), about 0.4 of the short side wide. The region seeds miss a finger whose
    /// skin and background fall on one side of every threshold (ksahib's sahibind6: a finger on a
    /// pink sheet before brown wood); from this seed the sides are found on the finger's own edges.
    static func guideSeeds(width: Int, height: Int) -> [cvis_fingertip_seed] {
        let w = Float(width), h = Float(height), fw = 0.4 * min(w, h)
        if h >= w { return [seed(tipX: w / 2, tipY: 0.25 * h, dirX: 0, dirY: -1, width: fw)] }
        return [seed(tipX: 0.25 * w, tipY: h / 2, dirX: -1, dirY: 0, width: fw),
                seed(tipX: 0.75 * w, tipY: h / 2, dirX: 1, dirY: 0, width: fw)]
    }

    /// The close-up hypothesis to keep: the one whose ridges are clearest, unless a narrower one
    /// whose ridges are resolved lies inside it. A region that merged the finger with what lies
    /// beside it (a bed sheet, a sleeve, a shadow of the same grey) is wider than the finger and
    /// holds it, and its window then takes in the background's folds and weave, which can look as
    /// "ridged" as the pad; the finger's own outline is the narrower one. (ksahib's sahibind5/7/8:
    /// 561 / 736 / 709 px outlines on a bed sheet against 440 / 470 / 500 px fingers.)
    static func chooseCloseUp(_ found: [Fingertip]) -> Fingertip? {
        // Sides that stand out less than half as clearly as the best-outlined hypothesis' are
        // texture inside the finger or the background, not its outline.
        let sharpest = found.map { Double($0.raw.edge_contrast) }.max() ?? 0
        let tips = found.filter { Double($0.raw.edge_contrast) >= 0.5 * sharpest }
        guard let clearest = tips.max(by: { clarity($0) < clarity($1) }) else { return nil }
        let inner = tips.filter { t in
            t.width <= 0.9 * clearest.width && Self.lies(t, inside: clearest) && t.ridgeVerdict(moving: false) == .resolved
        }
        return inner.max(by: { clarity($0) < clarity($1) }) ?? clearest
    }

    /// Whether fingertip `a` lies within `b`'s outline: their axes agree within 15°, their apexes
    /// within a third of `b`'s width along the axis, and `a`'s sides fall between `b`'s (a tenth of
    /// `a`'s width of slack) across the pad.
    static func lies(_ a: Fingertip, inside b: Fingertip) -> Bool {
        let bx = Double(b.raw.dir_x), by = Double(b.raw.dir_y)
        guard Double(a.raw.dir_x) * bx + Double(a.raw.dir_y) * by >= cos(15 * Double.pi / 180) else { return false }
        // a's pad centre (half a width below its apex) in b's frame: along and across b's axis.
        let cx = a.tipX - Double(a.raw.dir_x) * a.width / 2, cy = a.tipY - Double(a.raw.dir_y) * a.width / 2
        let dx = cx - b.tipX, dy = cy - b.tipY
        let across = abs(-dx * by + dy * bx)
        let apexAlong = (a.tipX - b.tipX) * bx + (a.tipY - b.tipY) * by
        return abs(apexAlong) <= b.width / 3 && across + a.width / 2 <= b.width / 2 + 0.1 * a.width
    }

    /// How clearly a fingertip shows ridges (to choose among close-up hypotheses): ridge area ×
    /// strength, then the sharpness of its sides.
    static func clarity(_ t: Fingertip) -> Double {
        Double(t.raw.ridge_area * t.raw.ridge_strength) + 0.001 * Double(t.raw.edge_contrast)
    }

    /// A finger held close on its own is at least this share of the frame's short side wide.
    static let closeUpShare = 0.1

    /// Makes the fingertip's print into the digit's scratch buffers; keeps it when it is the best
    /// of its finger so far. Returns its quality (nil: no print could be made).
    private func makePrint(position: FingerPosition, tip: Fingertip, grey: cvis_image_view) -> Int? {
        var raw = tip.raw
        var w: Int32 = 0, h: Int32 = 0
        let unroll = Self.unrollDegrees(ridgePeriod: Double(raw.ridge_period))
        guard cvis_fingertip_print_size(&raw, Self.printRidgePeriod, unroll, &w, &h) == CVIS_OK,
              FingerprintImage.sideRange.contains(Int(w)), FingerprintImage.sideRange.contains(Int(h)) else { return nil }
        let count = Int(w) * Int(h)
        var buffers = scratch[position.digit] ?? ([], [])
        scratch[position.digit] = nil // keep the arrays uniquely referenced while writing
        if buffers.pixels.count != count {
            buffers = ([UInt8](repeating: 0, count: count), [UInt8](repeating: 0, count: count))
        }
        var measures = cvis_print_quality()
        let status = buffers.pixels.withUnsafeMutableBufferPointer { out in
            buffers.mask.withUnsafeMutableBufferPointer { mask in
                cvis_fingertip_print(grey, &raw, Self.printRidgePeriod, unroll, out.baseAddress, mask.baseAddress,
                                     w, h, &measures)
            }
        }
        defer { scratch[position.digit] = buffers }
        guard status == CVIS_OK else { return nil }
        let quality = FingerQuality.score(measures)
        // No separate mask: the background is white in the pixels themselves, so extraction sees
        // exactly what the PNG of this print holds.
        kept.offer(position, quality: quality, box: tip.box) {
            try Self.sizedByItsRidges(width: Int(w), height: Int(h), pixels: buffers.pixels, mask: buffers.mask)
        }
        return quality
    }

    /// The ridge period a print's fine measure (cvis_print_ridge_period) gives on 500-ppi contact
    /// prints: FVC2002 DB1_B 8.44, DB2_B 8.82 (10.04 at its 569 ppi), FVC2004 DB1_B 9.22; their mean.
    public static let printFinePeriod: Float = 8.83

    /// The print made at the frame's period, resampled so that its own ridges, measured finely
    /// over the whole print, have the period 500-ppi prints have. The frame's measure is coarse
    /// (whole frequency bins of 32-px blocks), and how far off it is depends on the period: two
    /// photos of one finger came out up to 15 % apart in size, past the matcher's size search.
    /// A print whose fine period cannot be measured, or is implausibly far off, keeps its size.
    static func sizedByItsRidges(width: Int, height: Int, pixels: [UInt8], mask: [UInt8]) throws -> FingerprintImage {
        var status = CVIS_OK
        let period = cvis_print_ridge_period(pixels, mask, Int32(width), Int32(height), &status)
        let s = period > 0 ? Double(printFinePeriod / period) : 1
        let w = Int((Double(width) * s).rounded()), h = Int((Double(height) * s).rounded())
        if abs(s - 1) > 0.02, s > 0.8, s < 1.25, FingerprintImage.sideRange.contains(w), FingerprintImage.sideRange.contains(h) {
            var out = [UInt8](repeating: 255, count: w * h)
            if cvis_print_resample(pixels, Int32(width), Int32(height), &out, Int32(w), Int32(h)) == CVIS_OK {
                return try FingerprintImage(width: w, height: h, pixels: out, ppi: printPPI)
            }
        }
        return try FingerprintImage(width: width, height: height, pixels: pixels, ppi: printPPI)
    }

    static func bounds(of boxes: [FingerBox]) -> FingerBox? {
        guard !boxes.isEmpty else { return nil }
        var x0 = Double.infinity, y0 = Double.infinity, x1 = -Double.infinity, y1 = -Double.infinity
        for b in boxes {
            let r = max(b.width, b.height) / 2
            x0 = min(x0, b.centreX - r)
            y0 = min(y0, b.centreY - r)
            x1 = max(x1, b.centreX + r)
            y1 = max(y1, b.centreY + r)
        }
        return FingerBox(x: x0, y: y0, width: x1 - x0, height: y1 - y0, angle: 0)
    }

    static func median(_ values: [Double]) -> Double {
        let s = values.sorted()
        return s.isEmpty ? 0 : s[s.count / 2]
    }
}
