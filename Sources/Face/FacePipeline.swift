import BiometricCore
import BiometricVocabulary
import Dispatch
import Foundation

/// What the pipeline saw in one frame.
public struct FaceObservation: Sendable {
    public var frameWidth: Int
    public var frameHeight: Int
    public var timestampNs: UInt64
    /// Faces in the frame (as of the last full detection).
    public var faceCount: Int
    public var box: FaceBox?
    public var landmarks: Landmarks?
    public var pose: HeadPose?
    public var measures: FaceQuality.Measures?
    public var quality: FaceQuality?
    /// A colour frame (false: a grey or IR camera's).
    public var colour = true
    /// Whether this frame ran the detector (false: tracked from the last frame's landmarks).
    public var detected: Bool
    /// Straight borders around the face (ReplayCue), when the session asked for them.
    public var borderMask: Int?
    /// Re-capture features of the face region (RecaptureFeatures), measured with the borders.
    public var recapture: RecaptureFeatures?
    /// The passive detector's reading (liveness sessions with the anti-spoofing models, on the
    /// first usable frames of a track: `FaceTracker.antispoofFrames`).
    public var antispoof: AntispoofReading?
    /// Mean absolute grey difference of the face region since the previous frame (`FrameNoise`),
    /// measured with the borders.
    public var frameDifference: Double?
    /// Several faces, one of which dominates (FaceDominance): `box` is that face and the frame is
    /// usable; `multiple_faces` stays in the feedback. With `FaceSubjectRule.stillImage` a face is
    /// always chosen (`subject` says how).
    public var dominates = true
    /// How the face followed was chosen at the last detection (nil: no face).
    public var subject: FaceSubject?
    /// Tracking started anew on a face elsewhere, or of another size, than the one followed
    /// before: liveness steps seen so far belong to another face, so a session starts them again.
    public var trackRestarted = false
    /// The whole frame's mean grey level (0–255), when the caller measured it (`Frame.meanBrightness`
    /// in the daemon's pump): a dark frame with no face is a camera that cannot see.
    public var frameBrightness: Double?

    /// One face to work on: the only one, or the dominant one.
    public var isUsable: Bool { box != nil && (faceCount <= 1 || dominates) }

    /// SPEC §5 feedback for this frame.
    public var feedback: [Feedback] {
        if faceCount == 0 || box == nil { return [.noFace] }
        var f = quality?.feedback ?? []
        if faceCount > 1 { f.insert(.multipleFaces, at: 0) }
        return f
    }

    public var qualityScore: Int { quality?.score ?? 0 }
}

/// Per-session tracking state: after a detection, the face is followed from its landmarks, so
/// most frames skip the detector (re-detected every `redetectEvery` frames or when lost).
public final class FaceTracker: @unchecked Sendable {
    // Used by one session, one frame at a time.
    var last: Landmarks?
    /// The box landmarks are fitted in; moved only when the face moves, so a still face gets the
    /// very same fit every frame (fit noise must not look like a blink).
    var box: FaceBox?
    /// The landmarks the box was anchored on.
    var anchor: Landmarks?
    /// Where the detector's box sat relative to the landmarks it gave (x, y, w, h as fractions of
    /// their bounding box). Re-anchoring with it keeps the box in the detector's convention, which
    /// the landmark model was trained on: a fit on that box reproduces the same landmarks.
    var relativeBox: (x: Double, y: Double, w: Double, h: Double)?
    var faceCount = 0
    var dominates = true
    var subject: FaceSubject?
    /// Which face to take when several are found (live cameras: only a dominant one).
    public var subjectRule = FaceSubjectRule.dominantOnly
    /// Where the face followed last was (a new track elsewhere, or of another size, is a restart).
    var lastFaceBox: FaceBox?
    var sinceDetection = 0
    public let redetectEvery: Int
    public var target: FaceQuality.PoseTarget = .front
    /// Also measure the replay and re-capture cues (liveness sessions).
    public var measureBorders = false
    /// Also measure the frame noise and run the passive detector (passive liveness sessions only:
    /// the detector's ~5 ms on a track's first frames is not spent where nobody reads it).
    public var measurePassive = false
    /// The previous frame's face patch and where it was sampled (FrameNoise).
    var noisePatch: [UInt8]?
    var noiseBox: FaceBox?
    /// Detector readings taken on this track: passive liveness decides on the first few, so later
    /// frames do not pay ~6 ms for a reading nobody uses.
    var antispoofReadings = 0
    public static let antispoofFrames = PassiveLiveness.frames + 3
    /// Detector readings taken per track (`antispoofFrames`; the face bench reads more to compare
    /// window lengths).
    public var detectorReadings = FaceTracker.antispoofFrames

    public init(redetectEvery: Int = 8) { self.redetectEvery = redetectEvery }
}

/// The face pipeline on the analysis pool (width analysis_threads), each job with its own
/// native engine.
public final class FacePipeline: Sendable {
    public let models: FaceModels
    private let pool: AnalysisPool

    /// - Parameter pool: the analysis pool shared with the other modality (analysis_threads bounds all analysis).
    public init(models: FaceModels, pool: AnalysisPool) {
        self.models = models
        self.pool = pool
    }

    /// A pipeline with a pool of its own (benches, tools).
    public convenience init(models: FaceModels, threads: Int) {
        self.init(models: models, pool: AnalysisPool(label: "biometricd.analysis", threads: threads))
    }

    /// Runs `work` on the pool with an engine.
    func run<T: Sendable>(_ work: @escaping @Sendable (FaceEngine) throws -> T) async throws -> T {
        try await pool.run { [models] in try models.withEngine(work) }
    }

    /// Detects (or tracks), fits landmarks, estimates pose and quality.
    public func analyze(_ frame: Frame, tracker: FaceTracker) async throws -> FaceObservation {
        try await run { engine in
            try Self.analyze(frame, tracker: tracker, engine: engine)
        }
    }

    static func image(of frame: Frame) -> ImageRef {
        ImageRef(pixels: UnsafePointer((frame.bgr ?? frame.grey).pointer), width: frame.width, height: frame.height,
                 channels: frame.bgr == nil ? 1 : 3)
    }

    public static func analyze(_ frame: Frame, tracker: FaceTracker, engine: FaceEngine) throws -> FaceObservation {
        let image = image(of: frame)
        var observation = FaceObservation(frameWidth: frame.width, frameHeight: frame.height,
                                          timestampNs: frame.timestampNs, faceCount: 0, detected: false)
        observation.colour = frame.bgr != nil
        var landmarks: Landmarks?
        var box: FaceBox?
        let redetect = tracker.sinceDetection >= tracker.redetectEvery || tracker.last == nil
        if redetect {
            let detections = try detect(image, frame, engine)
            tracker.faceCount = detections.count
            tracker.sinceDetection = 0
            observation.detected = true
            let boxes = detections.map(\.box)
            let pick: Int?
            if tracker.subjectRule == .stillImage, let chosen = FaceDominance.subject(boxes, frameWidth: frame.width, frameHeight: frame.height) {
                pick = chosen.index
                tracker.subject = chosen.subject
            } else {
                pick = FaceDominance.dominant(boxes, frameWidth: frame.width, frameHeight: frame.height)
                tracker.subject = pick == nil ? nil : boxes.count == 1 ? .only : .dominant
            }
            tracker.dominates = pick != nil
            // The face to follow: the dominant one; with none dominating, whichever we had (the
            // frame is unusable then anyway), else the largest.
            let chosen = pick.map { detections[$0].box }
            if let tracked = tracker.box,
               chosen.map({ overlap($0, tracked) > 0.3 }) ?? detections.contains(where: { overlap($0.box, tracked) > 0.3 }) {
                // Keep following the same face when the detector agrees with the tracked box.
                box = tracked
            } else if let start = chosen ?? detections.first?.box {
                box = start
                // The face found again where it was lost (a quick turn, a blink of the tracker)
                // goes on; a face elsewhere, or of another size, is a new face.
                observation.trackRestarted = tracker.lastFaceBox.map { !Self.sameFace(start, $0) } ?? false
                tracker.box = nil
                tracker.last = nil
                tracker.relativeBox = nil
            } else {
                tracker.box = nil
                tracker.last = nil
            }
        } else {
            box = tracker.box
            tracker.sinceDetection += 1
        }
        if let fitBox = box {
            let fitted = try engine.landmarks(image, box: fitBox)
            // Eyes closing on a tracked (not detected) frame: confirm with the detector that the
            // face is still in the box. Landmarks fitted to whatever stays in a stale box (the face
            // moved away) can close and open "eyes" — a false blink.
            var confirmed = true
            if !redetect, let last = tracker.last, fitted.eyeAspectRatio < 0.85 * last.eyeAspectRatio {
                confirmed = try detect(image, frame, engine).contains { overlap($0.box, fitBox) > 0.3 }
            }
            if !confirmed {
                tracker.sinceDetection = tracker.redetectEvery
                tracker.box = nil
                box = nil
            } else if let last = tracker.last, !plausible(fitted, previous: last, width: frame.width, height: frame.height) {
                // Lost: detect again on the next frame.
                tracker.sinceDetection = tracker.redetectEvery
                tracker.box = nil
                box = nil
            } else {
                landmarks = fitted
                let bounds = boundingBox(of: fitted, margin: 0)
                if tracker.relativeBox == nil, bounds.width > 0, bounds.height > 0 {
                    tracker.relativeBox = ((fitBox.x - bounds.x) / bounds.width, (fitBox.y - bounds.y) / bounds.height,
                                           fitBox.width / bounds.width, fitBox.height / bounds.height)
                }
                if tracker.box == nil {
                    tracker.box = fitBox
                    tracker.anchor = fitted
                } else if moved(fitted, from: tracker.anchor), let r = tracker.relativeBox {
                    // Re-anchor the box on the face where it is now.
                    tracker.box = FaceBox(x: bounds.x + r.x * bounds.width, y: bounds.y + r.y * bounds.height,
                                          width: r.w * bounds.width, height: r.h * bounds.height)
                    tracker.anchor = fitted
                }
                box = tracker.box
            }
        }
        tracker.last = landmarks
        if landmarks != nil, let box { tracker.lastFaceBox = box }
        observation.faceCount = landmarks == nil ? 0 : max(tracker.faceCount, 1)
        observation.dominates = tracker.dominates
        observation.subject = landmarks == nil ? nil : tracker.subject
        guard let landmarks, let box else { return observation }
        let pose = FaceEngine.pose(landmarks, width: frame.width, height: frame.height)
        let measures = FaceEngine.measure(image, box: box)
        observation.box = box
        observation.landmarks = landmarks
        observation.pose = pose
        observation.measures = measures
        observation.quality = FaceQuality.assess(box: box, pose: pose, measures: measures, frameWidth: frame.width,
                                                 frameHeight: frame.height, target: tracker.target)
        if tracker.measureBorders {
            observation.borderMask = ReplayCue.borderSides(image, box: box)
            observation.recapture = RecaptureFeatures.measure(image, box: box)
        }
        if tracker.measurePassive {
            measurePassive(frame, image, box: box, observation: &observation, tracker: tracker, engine: engine)
        }
        return observation
    }

    /// Frame noise against the previous frame (sampled where the face was then, so a still picture
    /// compares like with like) and, on a track's first usable frames, the passive detector.
    static func measurePassive(_ frame: Frame, _ image: ImageRef, box: FaceBox, observation: inout FaceObservation,
                               tracker: FaceTracker, engine: FaceEngine) {
        if observation.trackRestarted {
            tracker.antispoofReadings = 0
            tracker.noisePatch = nil
        }
        if let previous = tracker.noisePatch, let at = tracker.noiseBox {
            let now = FrameNoise.patch(frame, box: at)
            observation.frameDifference = FrameNoise.difference(now, previous)
            tracker.noisePatch = at == box ? now : FrameNoise.patch(frame, box: box)
        } else {
            tracker.noisePatch = FrameNoise.patch(frame, box: box)
        }
        tracker.noiseBox = box
        // The detector was trained on colour: a grey frame is not given to it (it calls live grey
        // faces attacks: Docs/face.md).
        if observation.isUsable, observation.colour, tracker.antispoofReadings < tracker.detectorReadings,
           let reading = engine.realProbability(image, box: box) {
            observation.antispoof = reading
            tracker.antispoofReadings += 1
        }
    }

    /// The template of the observed face. Live probes use `.mirrored` (cheap enough for every
    /// frame); stored templates and uploaded images `.jittered` (four times the cost, steadier).
    /// The score calibration is fitted on exactly that pairing (Docs/face.md). `second` adds the
    /// second network's embedding (a v2 template) when that network is loaded; without it, or if
    /// it fails on this face, the template stays v1 (dlib alone). The second network is aligned on
    /// the detector's five keypoints of the face (`FaceEngine.secondPoints`).
    public func template(of frame: Frame, _ observation: FaceObservation, views: EmbeddingViews = .mirrored,
                         second: SecondEmbedding = .none) async throws -> FaceTemplate
    {
        guard let landmarks = observation.landmarks else { throw FaceError.native("no face to embed") }
        let quality = observation.qualityScore
        let box = observation.box
        return try await run { engine in
            let image = Self.image(of: frame)
            let dlib = try engine.embed(image, landmarks: landmarks, views: views)
            // Aligned on YuNet's keypoints of the observed face (found again on a crop around
            // its box, ~3 ms; tracked frames have no detection of their own), else the 68-point ones.
            let other = second == .none ? nil
                : (try? engine.secondEmbedding(image, landmarks: landmarks, box: box, mirrored: second == .chipAndMirror)) ?? nil
            return FaceTemplate(embedding: dlib, second: other, quality: quality)
        }
    }

    /// Faces down to a twelfth of the frame's short side.
    static func detect(_ image: ImageRef, _ frame: Frame, _ engine: FaceEngine) throws -> [FaceEngine.Detection] {
        try engine.detect(image, minSize: max(24, min(frame.width, frame.height) / 12))
    }

    /// Two boxes of one face: centres within half a face width, sizes within 25 %.
    static func sameFace(_ a: FaceBox, _ b: FaceBox) -> Bool {
        let ratio = a.width / max(b.width, 1)
        let dx = (a.x + a.width / 2) - (b.x + b.width / 2), dy = (a.y + a.height / 2) - (b.y + b.height / 2)
        return ratio > 0.8 && ratio < 1.25 && (dx * dx + dy * dy).squareRoot() < 0.5 * max(a.width, b.width)
    }

    /// Intersection over union of two boxes.
    static func overlap(_ a: FaceBox, _ b: FaceBox) -> Double {
        let x0 = max(a.x, b.x), y0 = max(a.y, b.y)
        let x1 = min(a.x + a.width, b.x + b.width), y1 = min(a.y + a.height, b.y + b.height)
        let inter = max(0, x1 - x0) * max(0, y1 - y0)
        let union = a.width * a.height + b.width * b.height - inter
        return union > 0 ? inter / union : 0
    }

    /// Whether the face moved or changed size enough to re-anchor the fitting box.
    static func moved(_ fitted: Landmarks, from previous: Landmarks?) -> Bool {
        guard let previous else { return true }
        let scale = max(previous.interocular, 1)
        let shift = distance(fitted.points[30], previous.points[30]) / scale
        return shift > 0.08 || abs(fitted.interocular / scale - 1) > 0.06
    }

    static func boundingBox(of landmarks: Landmarks, margin: Double) -> FaceBox {
        let xs = landmarks.points.map(\.x), ys = landmarks.points.map(\.y)
        let (x0, x1, y0, y1) = (xs.min()!, xs.max()!, ys.min()!, ys.max()!)
        let mx = (x1 - x0) * margin, my = (y1 - y0) * margin
        return FaceBox(x: x0 - mx, y: y0 - my, width: x1 - x0 + 2 * mx, height: y1 - y0 + 2 * my)
    }

    /// A tracked fit is kept only if the face kept its size and stayed in the frame.
    static func plausible(_ fitted: Landmarks, previous: Landmarks, width: Int, height: Int) -> Bool {
        let ratio = fitted.interocular / max(previous.interocular, 1)
        guard ratio > 0.8, ratio < 1.25, fitted.interocular > 8 else { return false }
        let shift = distance(fitted.points[30], previous.points[30]) / max(previous.interocular, 1)
        guard shift < 0.5 else { return false }
        // Jaw points of a face filling the frame may touch or cross its edge: allow a margin.
        let slack = fitted.interocular * 0.5
        return fitted.points.allSatisfy {
            $0.x >= -slack && $0.y >= -slack && $0.x < Double(width) + slack && $0.y < Double(height) + slack
        }
    }
}
