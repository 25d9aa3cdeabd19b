import BiometricCamera
import BiometricFace
import BiometricProtocol
import BiometricStore
import Foundation

/// What a verify or identify capture ended with.
struct FaceAuthOutcome: Sendable {
    var bestScore: Double = 0
    var matched = false
    var liveness = "not_checked"
    var livenessScore = 0
    var goodFrames = 0
    var durationMs = 0
}

/// Settings shared by verify and identify.
struct FaceAuthSettings: Sendable {
    var camera: String?
    var liveness: Bool
    var matchingThreshold: Double
    var qualityThreshold: Int
    var livenessThreshold: Int
    var blinkTimeoutMs: Int
    var timeoutMs: Int
    /// Image mode decides after this many good frames without a match.
    var maxGoodFrames = 5
    /// Challenge-response liveness: the moves to ask for (nil: blink mode).
    var challenge: [ChallengeLiveness.Action]?
    var challengeStepTimeoutMs = 5000
}

extension Daemon {
    /// The liveness part of verify and identify params, resolved: the moves come from the
    /// system CSPRNG, or from the test hook of a non-production daemon.
    func challengeMoves(mode: String?, steps: Int?) -> [ChallengeLiveness.Action]? {
        guard mode == "challenge" else { return nil }
        if let fixed = configuration.testChallengeSequence, !configuration.isProductionInstance { return fixed }
        return ChallengeLiveness.random(steps: steps ?? 2)
    }
}

extension Daemon {
    func faceVerify(_ p: FaceVerifyParams, _ context: CallContext) async throws -> FaceVerifyResult {
        let pipeline = try await face.pipeline()
        let references = try face.templates(store, user: p.user)
        guard !references.isEmpty else {
            throw RPCError.app(.noFaceRegistered, "user '\(p.user)' has no face enrolled",
                               hint: "enrol first: authctl face enroll \(p.user)", details: ["user": .string(p.user)])
        }
        try auth.checkBiometric(p.user)
        let settings = FaceAuthSettings(
            camera: p.camera, liveness: (p.mode ?? "liveness") == "liveness", matchingThreshold: p.matchingThreshold ?? 48,
            qualityThreshold: p.qualityThreshold ?? 48, livenessThreshold: p.livenessThreshold ?? 50,
            blinkTimeoutMs: p.blinkTimeoutMs ?? 5000, timeoutMs: p.timeoutMs ?? 30000,
            challenge: challengeMoves(mode: p.livenessMode, steps: p.challengeSteps),
            challengeStepTimeoutMs: p.challengeStepTimeoutMs ?? 5000)
        let face = self.face
        let outcome: FaceAuthOutcome
        do {
            outcome = try await faceAuthenticate(settings, pipeline: pipeline, context: context) { probe in
                let score = face.score(probe, against: references)
                return (score, score >= settings.matchingThreshold)
            }
        } catch {
            if AuthService.countsAsFailure(error) { auth.recordBiometric(p.user, success: false, modality: "face") }
            throw error
        }
        auth.recordBiometric(p.user, success: outcome.matched, modality: "face")
        logger.info("face.verify \(p.user): match=\(outcome.matched) score=\(outcome.bestScore) liveness=\(outcome.liveness) in \(outcome.durationMs) ms")
        return FaceVerifyResult(match: outcome.matched, score: outcome.bestScore, threshold: settings.matchingThreshold,
                                liveness: outcome.liveness, livenessScore: outcome.livenessScore,
                                // A detected spoof ends the call with spoof_detected: a result never is one.
                                spoofAttempt: false, durationMs: outcome.durationMs)
    }

    func faceIdentify(_ p: FaceIdentifyParams, _ context: CallContext) async throws -> FaceIdentifyResult {
        let pipeline = try await face.pipeline()
        let gallery = try face.gallery(store)
        guard gallery.count > 0 else {
            throw RPCError.app(.noFaceRegistered, "no face is enrolled on this machine", hint: "enrol users first")
        }
        let settings = FaceAuthSettings(
            camera: p.camera, liveness: (p.mode ?? "liveness") == "liveness", matchingThreshold: p.matchingThreshold ?? 48,
            qualityThreshold: p.qualityThreshold ?? 48, livenessThreshold: p.livenessThreshold ?? 50,
            blinkTimeoutMs: p.blinkTimeoutMs ?? 5000, timeoutMs: p.timeoutMs ?? 30000,
            challenge: challengeMoves(mode: p.livenessMode, steps: p.challengeSteps),
            challengeStepTimeoutMs: p.challengeStepTimeoutMs ?? 5000)
        let best = BestCandidates()
        let calibration = face.calibration
        let source = StoredFaceTemplates(store: store)
        let threads = face.searchThreads
        let outcome = try await faceAuthenticate(settings, pipeline: pipeline, context: context, restart: { best.reset() }) { probe in
            // A store that cannot be read fails closed: no candidate.
            let ranked = ((try? gallery.rank(probe, exact: source, threads: threads)) ?? [])
                .map { Candidate(user: $0.user, score: calibration.score(distance: $0.distance)) }
            best.offer(ranked)
            let top = ranked.first?.score ?? 0
            return (top, top >= settings.matchingThreshold)
        }
        let candidates = best.candidates
        let margin = p.margin ?? 5
        let top = candidates.first
        let matched = outcome.matched && top != nil
        if matched, let chosen = top?.user {
            // The chosen user's lockout applies; a recognised user starts their count again.
            try auth.checkBiometric(chosen)
            auth.recordBiometric(chosen, success: true, modality: "face")
        }
        let stepUp = matched && candidates.count > 1 && top!.score - candidates[1].score < margin
        return FaceIdentifyResult(user: matched ? top?.user : nil, score: top?.score ?? 0, candidates: candidates,
                                  stepUpRequired: stepUp, liveness: outcome.liveness, durationMs: outcome.durationMs)
    }

    /// The capture loop of verify and identify: analyse frames, run keep-still + blink liveness
    /// when asked, and judge the face of every good frame until a decision.
    func faceAuthenticate(_ s: FaceAuthSettings, pipeline: FacePipeline, context: CallContext,
                          restart judgeReset: @escaping @Sendable () -> Void = {},
                          judge: @escaping @Sendable (FaceTemplate) -> (score: Double, matched: Bool)) async throws -> FaceAuthOutcome
    {
        let started = monotonicNanoseconds()
        return try await withCameraSession(s.camera) { capture, _ in
            try await withDeadline(milliseconds: s.timeoutMs + 3000, "face capture", watching: capture) {
                var outcome = FaceAuthOutcome()
                outcome.liveness = s.liveness ? "spoof" : "not_checked"
                let tracker = FaceTracker()
                tracker.measureBorders = s.liveness
                var replayCue = ReplayCue()
                var recaptureCue = RecaptureCue()
                var liveness = BlinkLiveness(livenessThreshold: s.livenessThreshold)
                let newChallenge = { s.challenge.map { ChallengeLiveness(sequence: $0, stepTimeoutMs: s.challengeStepTimeoutMs) } }
                var challenge = newChallenge()
                var blinkPhaseStart: UInt64?
                var sawFace = false
                var throttle = EventThrottle()
                let deadline = started + UInt64(s.timeoutMs) * 1_000_000
                while true {
                    let frame = try await capture.frames.next()
                    let observation = try await pipeline.analyze(frame, tracker: tracker)
                    if observation.box != nil { sawFace = true }
                    if s.liveness && observation.trackRestarted {
                        // Another face: keep-still, blink and the match must all come from one
                        // tracked face, so they start again.
                        liveness = BlinkLiveness(livenessThreshold: s.livenessThreshold)
                        challenge = newChallenge()
                        replayCue = ReplayCue()
                        recaptureCue = RecaptureCue()
                        blinkPhaseStart = nil
                        outcome = FaceAuthOutcome()
                        outcome.liveness = "spoof"
                        judgeReset()
                    }
                    var live = !s.liveness
                    if s.liveness {
                        let now = frame.timestampNs
                        let blinked = liveness.observe(observation.landmarks, timestampNs: now) == .live
                        if var c = challenge {
                            // After keep-still, the moves; the blink may come at any time.
                            if liveness.phase != .keepStill, c.state == .waiting, let rest = observation.pose { c.start(rest: rest, at: now) }
                            let state = c.observe(observation.pose, at: now)
                            challenge = c
                            if case .failed(let why) = state {
                                throw Self.spoof("the head moves asked for were not made: \(why)", cue: "challenge",
                                                 score: Self.livenessScore(liveness, challenge), hint: "follow the moves shown (a recording cannot)",
                                                 ["steps_done": .int(Int64(c.completed))])
                            }
                            live = blinked && state == .passed
                            if state == .passed, blinkPhaseStart == nil { blinkPhaseStart = now }
                        } else {
                            live = blinked
                            if liveness.phase != .keepStill, blinkPhaseStart == nil { blinkPhaseStart = now }
                        }
                        outcome.livenessScore = Self.livenessScore(liveness, challenge)
                        if let features = observation.recapture, let box = observation.box {
                            recaptureCue.observe(features, faceWidth: box.width)
                        }
                        if recaptureCue.isSpoof {
                            throw Self.spoof("the face looks re-captured from a screen (its fine detail is gone)", cue: "recapture",
                                             score: outcome.livenessScore,
                                             ["high_frequency_share": .double(((recaptureCue.level ?? 0) * 1e5).rounded() / 1e5)])
                        }
                        // A face big enough for the re-capture cue is judged by it before it may pass.
                        if live, recaptureCue.level == nil, (observation.box?.width ?? 0) >= RecaptureCue.minimumFaceWidth { live = false }
                        if let mask = observation.borderMask { replayCue.observe(borderMask: mask) }
                        if replayCue.isSpoof {
                            throw Self.spoof("the face is shown on a screen or a print (it sits inside straight borders)", cue: "border",
                                             score: outcome.livenessScore,
                                             ["framed_fraction": .double((replayCue.framedFraction * 100).rounded() / 100)])
                        }
                    }
                    var extraction: String?
                    let good = observation.isUsable && observation.qualityScore >= s.qualityThreshold
                    if good && (!outcome.matched || live) && outcome.goodFrames < 20 {
                        extraction = "extracting"
                        let probe = try await pipeline.template(of: frame, observation)
                        let (score, matched) = judge(probe)
                        outcome.goodFrames += 1
                        outcome.bestScore = max(outcome.bestScore, score)
                        outcome.matched = outcome.matched || matched
                        extraction = "success"
                    }
                    let action = s.liveness ? Self.livenessAction(liveness, challenge) : nil
                    if throttle.allow(now: frame.timestampNs, key: "\(liveness.phase)\(action ?? "")") {
                        context.emit("face.frame", observation.eventFields(
                            livenessAction: action, livenessScore: outcome.livenessScore,
                            extraction: extraction, captured: outcome.goodFrames, needed: 0))
                    }
                    let now = frame.timestampNs
                    outcome.durationMs = Int((monotonicNanoseconds() - started) / 1_000_000)
                    if s.liveness {
                        if live && outcome.goodFrames > 0 {
                            outcome.liveness = "live"
                            return outcome
                        }
                        if let start = blinkPhaseStart, liveness.phase != .done, now > start,
                           now - start > UInt64(s.blinkTimeoutMs) * 1_000_000 {
                            var details: [String: JSONValue] = ["liveness_score": .int(Int64(liveness.score))]
                            var hint = "blink once, naturally, while looking at the camera"
                            if let fps = liveness.measuredFPS { details["camera_fps"] = .double((fps * 10).rounded() / 10) }
                            if liveness.cameraTooSlow {
                                hint = "the camera is too slow (under 8 fps) to see a blink; use a faster mode or more light"
                            }
                            throw RPCError.app(.blinkTimeout, "no blink within \(s.blinkTimeoutMs) ms", hint: hint, details: details)
                        }
                    } else if outcome.matched || outcome.goodFrames >= s.maxGoodFrames {
                        return outcome
                    }
                    if now >= deadline || monotonicNanoseconds() >= deadline {
                        if outcome.goodFrames == 0 && sawFace {
                            throw RPCError.app(.badQuality, "only frames below quality \(s.qualityThreshold) were seen",
                                               hint: observation.feedback.map(Self.describeFeedback).joined(separator: "; "),
                                               details: ["feedback": .array(observation.feedback.map { .string($0) })])
                        }
                        throw RPCError.app(.timeout, sawFace ? "no decision within \(s.timeoutMs) ms" : "no face seen within \(s.timeoutMs) ms",
                                           hint: sawFace ? "keep still, then blink" : "look at the camera",
                                           details: ["face_seen": .bool(sawFace)])
                    }
                }
            }
        }
    }

    /// spoof_detected (3004) for the cue that fired: `data.cue`, the liveness score capped at 20.
    static func spoof(_ message: String, cue: String, score: Int, hint: String = "present your real face to the camera",
                      _ details: [String: JSONValue]) -> RPCError {
        var all = details
        all["liveness_score"] = .int(Int64(min(score, 20)))
        all["spoof_attempt"] = true
        all["cue"] = .string(cue)
        return RPCError.app(.spoofDetected, message, hint: hint, details: all)
    }

    /// `liveness_score` 0–100. Blink mode: 50 once the face held still, 75 with the eyes seen
    /// closed, 100 with the blink. Challenge mode: 40 once still, + 40 shared by the moves done,
    /// + 20 for the blink. A fired presentation-attack cue caps it at 20 (the spoof error says so).
    static func livenessScore(_ blink: BlinkLiveness, _ challenge: ChallengeLiveness?) -> Int {
        guard let challenge else { return blink.score }
        guard blink.phase != .keepStill else { return 0 }
        return 40 + Int((40 * challenge.progress).rounded()) + (blink.phase == .done ? 20 : 0)
    }

    /// What the person is asked to do now (SPEC §5 liveness_action, plus the challenge moves).
    static func livenessAction(_ blink: BlinkLiveness, _ challenge: ChallengeLiveness?) -> String? {
        guard let challenge, blink.phase != .keepStill else { return blink.action }
        if let move = challenge.action { return move.rawValue }
        return challenge.state == .passed && blink.phase != .done ? "blink" : nil
    }

    static func describeFeedback(_ code: String) -> String {
        code.replacingOccurrences(of: "_", with: " ")
    }

    // MARK: Enrol

    func faceEnroll(_ p: FaceEnrollParams, _ context: CallContext) async throws -> FaceEnrollResult {
        let pipeline = try await face.pipeline()
        let full = (p.mode ?? "simple") == "full"
        let targets: [FaceQuality.PoseTarget] = full ? [.front, .left, .right, .up, .down] : [.front]
        let perTarget = p.frames ?? 4
        let threshold = p.qualityThreshold ?? 48
        let countdown = p.countdownS ?? 5
        let timeoutMs = p.timeoutMs ?? 30000
        let started = monotonicNanoseconds()
        let needed = perTarget * targets.count
        let captured: [(FaceQuality.PoseTarget, FaceTemplate)] = try await withCameraSession(p.camera) { capture, _ in
            try await withDeadline(milliseconds: timeoutMs + Int(countdown) * 1000 + 3000, "face.enroll", watching: capture) {
                let tracker = FaceTracker()
                var throttle = EventThrottle()
                // Countdown: the user gets ready while we already show guidance.
                let countdownEnd = monotonicNanoseconds() + UInt64(countdown) * 1_000_000_000
                while monotonicNanoseconds() < countdownEnd {
                    let frame = try await capture.frames.next()
                    let observation = try await pipeline.analyze(frame, tracker: tracker)
                    let left = Int((Double(countdownEnd - min(countdownEnd, monotonicNanoseconds())) / 1e9).rounded(.up))
                    if throttle.allow(now: frame.timestampNs, key: "countdown\(left)") {
                        context.emit("face.frame", observation.eventFields(countdown: left, captured: 0, needed: needed))
                    }
                }
                let deadline = monotonicNanoseconds() + UInt64(timeoutMs) * 1_000_000
                var result: [(FaceQuality.PoseTarget, FaceTemplate)] = []
                var lowQuality = 0
                var lastFeedback: [String] = []
                for target in targets {
                    tracker.target = target
                    var got = 0
                    while got < perTarget {
                        guard monotonicNanoseconds() < deadline else {
                            if result.isEmpty && lowQuality > 0 {
                                throw RPCError.app(.badQuality, "no frame reached quality \(threshold)",
                                                   hint: lastFeedback.map(Self.describeFeedback).joined(separator: "; "),
                                                   details: ["feedback": .array(lastFeedback.map { .string($0) })])
                            }
                            throw RPCError.app(.timeout, "enrolment did not complete within \(timeoutMs) ms (pose \(target.rawValue): \(got)/\(perTarget) frames)",
                                               hint: "follow the guidance: \(lastFeedback.map(Self.describeFeedback).joined(separator: ", "))")
                        }
                        let frame = try await capture.frames.next()
                        let observation = try await pipeline.analyze(frame, tracker: tracker)
                        lastFeedback = observation.feedback
                        var extraction: String?
                        if let pose = observation.pose, observation.isUsable, target.accepts(pose) {
                            if observation.qualityScore >= threshold {
                                extraction = "extracting"
                                let template = try await pipeline.template(of: frame, observation, views: .jittered)
                                result.append((target, template))
                                got += 1
                                extraction = "success"
                            } else {
                                lowQuality += 1
                                extraction = "failed"
                            }
                        }
                        if throttle.allow(now: frame.timestampNs, key: "\(target)\(got)\(extraction ?? "")") {
                            context.emit("face.frame", observation.eventFields(extraction: extraction, captured: result.count, needed: needed))
                        }
                    }
                }
                return result
            }
        }
        // One template per pose: the quality-weighted fusion of its frames.
        var ids: [String] = []
        for target in targets {
            let frames = captured.filter { $0.0 == target }.map(\.1)
            guard let fused = FaceTemplate.fused(frames) else { continue }
            let info = try store.addTemplate(user: p.user, modality: .face, quality: Double(fused.quality),
                                             meta: "{\"pose\":\"\(target.rawValue)\",\"frames\":\(frames.count)}", payload: fused.data)
            ids.append(info.id)
        }
        face.invalidateGallery()
        logger.notice("face.enroll \(p.user): \(ids.count) template(s) from \(captured.count) frames in \((monotonicNanoseconds() - started) / 1_000_000) ms")
        return FaceEnrollResult(templates: ids, framesUsed: captured.count)
    }
}

/// The best score per user seen over all frames of an identify.
final class BestCandidates: @unchecked Sendable {
    private let lock = NSLock()
    private var best: [String: Double] = [:]

    func reset() {
        lock.lock()
        defer { lock.unlock() }
        best = [:]
    }

    func offer(_ ranked: [Candidate]) {
        lock.lock()
        defer { lock.unlock() }
        for c in ranked { best[c.user] = max(best[c.user] ?? 0, c.score) }
    }

    var candidates: [Candidate] {
        lock.lock()
        defer { lock.unlock() }
        let all: [Candidate] = best.map { Candidate(user: $0.key, score: $0.value) }
        let sorted = all.sorted { (a: Candidate, b: Candidate) -> Bool in a.score != b.score ? a.score > b.score : a.user < b.user }
        return Array(sorted.prefix(5))
    }
}
