import BiometricAuth
import BiometricCamera
import BiometricCore
import BiometricFace
import BiometricProtocol
import BiometricStore
import Foundation

/// face.verify, face.identify and face.enroll: resolve the params, run the session
/// (Face/Sessions) on a camera, and apply what the daemon owns (lockout, the store).
extension FaceMethods {
    /// The liveness mode a call runs with: the one it names, else biometricd.conf's
    /// `face_liveness_mode`. Passive needs the anti-spoofing models: a call that names it without
    /// them gets not_initialized with `data.model`; the configured default falls back to blink
    /// (what every call did before passive mode existed).
    func livenessMode(_ p: FaceCaptureOptions, pipeline: FacePipeline) throws -> LivenessMode {
        if let asked = p.livenessMode {
            if asked.isPassive, !pipeline.models.hasAntispoof {
                let missing = FaceModels.AntispoofFiles.v2Name
                throw RPCError.app(.notInitialized, "passive liveness needs the anti-spoofing models (\(missing), \(FaceModels.AntispoofFiles.v1seName))",
                                   hint: "install them with scripts/setup.sh, or ask for liveness_mode blink",
                                   details: ["model": .string(missing)])
            }
            return asked
        }
        let configured = limits.faceLivenessMode
        return configured.isPassive && !pipeline.models.hasAntispoof ? .blink : configured
    }

    /// The liveness part of verify and identify params, resolved: the moves come from the
    /// system CSPRNG, or from the test hook of a non-production daemon.
    func challengeMoves(_ p: FaceCaptureOptions, mode: LivenessMode) -> [ChallengeLiveness.Action]? {
        guard mode == .challenge else { return nil }
        if let fixedChallenge { return fixedChallenge }
        return ChallengeLiveness.random(steps: FaceCaptureOptions.challengeSteps(p.challengeSteps))
    }

    /// Verify and identify params with their SPEC defaults; the threshold is the caller's if it
    /// asked for one it may, else the configured one.
    private func authenticationSettings(_ p: FaceCaptureOptions, _ peer: Peer, pipeline: FacePipeline) throws
        -> FaceAuthenticationSettings
    {
        typealias S = FaceCaptureOptions
        let threshold: Double = switch limits.callers.threshold(.face, asked: p.matchingThreshold, isAdmin: peer.isAdmin) {
        case .use(let t): t
        case .belowFloor(_, let floor): floor  // refused by the table (the floors); never lower here
        }
        let liveness = (p.mode ?? .default) == .liveness
        let mode = liveness ? try livenessMode(p, pipeline: pipeline) : .blink
        return FaceAuthenticationSettings(
            liveness: liveness, matchingThreshold: threshold,
            qualityThreshold: S.qualityThreshold(p.qualityThreshold), livenessThreshold: S.livenessThreshold(p.livenessThreshold),
            blinkTimeoutMs: S.blinkTimeoutMs(p.blinkTimeoutMs), timeoutMs: S.timeoutMs(p.timeoutMs),
            livenessMode: mode, challenge: challengeMoves(p, mode: mode), challengeStepTimeoutMs: S.challengeStepTimeoutMs(p.challengeStepTimeoutMs))
    }

    /// One face verification: the wire result, and whether it proved the user (`TrustPolicy`:
    /// matched, on a trusted camera, every knob at its floor). What it grants is settled here,
    /// once, under the calling method's declaration (face.verify's own, or auth.authenticate's
    /// when it runs the face factor); the camera's trust comes from the lease, the floors'
    /// judgement from the table (or from auth.authenticate for its own factors).
    func verify(_ p: FaceVerifyParams, _ context: CallContext, requireArrival: Bool = false) async throws
        -> (result: FaceVerifyResult, proven: Bool)
    {
        // The models may still be loading (a daemon socket activation just started): the camera
        // opens meanwhile and the session is made once they are in (runFace(loading:)).
        try face.requireModelsInstalled()
        let references = try templates.faceTemplates(user: p.user)
        guard !references.isEmpty else {
            throw RPCError.app(.noFaceRegistered, "user '\(p.user)' has no face enrolled",
                               hint: "enrol first: authctl face enroll \(p.user)", details: ["user": .string(p.user)])
        }
        try auth.checkBiometric(p.user)
        let started = monotonicNanoseconds()
        let calibration = face.calibration
        let peer = context.peer
        let run: (outcome: FaceAuthenticationOutcome, session: FaceVerification, timing: FaceSessionTiming)
        do {
            run = try await leases.runFace(
                loading: { [face] in try await face.pipeline() }, limitMs: FaceCaptureOptions.timeoutMs(p.capture.timeoutMs),
                session: { [self] pipeline in
                    var settings = try authenticationSettings(p.capture, peer, pipeline: pipeline)
                    settings.requireArrival = requireArrival
                    return FaceVerification(settings, references: references, calibration: calibration, startedAt: started,
                                            secondNetwork: pipeline.models.hasRecognizer)
                },
                camera: p.camera, context: context, what: "face capture", preview: p.capture.preview) { $0 }
        } catch {
            context.settle(user: p.user, factor: .face, verdict: AttemptVerdict(error: error))
            throw error
        }
        let (outcome, session) = (run.outcome, run.session)
        let secondNetwork = session.secondNetworkLoaded
        let durationMs = elapsedMilliseconds(since: started)
        let settled = context.settle(user: p.user, factor: .face, verdict: AttemptVerdict(matched: outcome.matched))
        logger.info("face.verify \(LogText(p.user)): match=\(outcome.matched) proven=\(settled.proven) score=\(outcome.bestScore) liveness=\(outcome.liveness.rawValue) templates v\(session.fused ? 2 : 1) in \(durationMs) ms: \(run.timing.summary)\(face.startupNote(call: run.timing))")
        let hint = Self.reenrollHint(user: p.user, references: references, secondNetwork: secondNetwork)
        if let hint { logger.notice("face.verify \(LogText(p.user)): \(hint)") }
        var result = FaceVerifyResult(match: outcome.matched, score: outcome.bestScore, threshold: session.settings.matchingThreshold,
                                      liveness: outcome.liveness, livenessScore: outcome.livenessScore,
                                      // A detected spoof ends the call with spoof_detected: a result never is one.
                                      spoofAttempt: false, durationMs: durationMs)
        result.templateVersion = session.fused ? 2 : 1
        result.reenrollHint = hint
        result.authenticated = settled.effects.reverify
        if !session.settings.liveness { result.facesSeen = max(1, outcome.facesSeen) }
        return (result, settled.proven)
    }

    /// What a user with only version-1 face templates is told when the daemon could score both
    /// networks (Docs/face.md "Two networks, one score"); nil otherwise. Their templates keep
    /// verifying with dlib alone.
    static func reenrollHint(user: String, references: [FaceTemplate], secondNetwork: Bool) -> String? {
        guard secondNetwork, !references.isEmpty, !references.contains(where: { $0.version >= 2 }) else { return nil }
        return "face templates are version 1 (dlib only): re-enrol with 'authctl face enroll \(user)' to use both face networks"
    }

    func identify(_ p: FaceIdentifyParams, _ context: CallContext) async throws -> FaceIdentifyResult {
        let pipeline = try await face.pipeline()
        let gallery = try templates.faceGallery()
        guard gallery.count > 0 else {
            throw RPCError.app(.noFaceRegistered, "no face is enrolled on this machine", hint: "enrol users first")
        }
        let settings = try authenticationSettings(p.capture, context.peer, pipeline: pipeline)
        let started = monotonicNanoseconds()
        let session = FaceIdentification(settings, margin: FaceIdentifyParams.margin(p.margin), startedAt: started,
                                         fused: gallery.hasVersion2 && pipeline.models.hasRecognizer)
        let calibration = face.calibration
        let source = templates.storedFaceTemplates
        let threads = face.searchThreads
        let leased = LeasedCamera()
        let auth = self.auth
        let outcome: FaceIdentification.Outcome
        do {
            outcome = try await leases.runFace(session, camera: p.camera, pipeline: pipeline, context: context, what: "face capture",
                                                 preview: p.capture.preview,
                                                 admit: { id in
                                                     leased.set(id)
                                                     try auth.checkCamera(id)
                                                 }) { probe in
                // A store that cannot be read fails closed: no candidate.
                ((try? gallery.rank(probe, exact: source, calibration: calibration, threads: threads)) ?? [])
                    .map { Candidate(user: $0.user, score: $0.score) }
            }
        } catch {
            // A refusal before capture (the camera's lock, a virtual camera) is not judged.
            if let camera = leased.value { auth.recordCamera(camera, AttemptVerdict(error: error)) }
            throw error
        }
        if let camera = leased.value {
            // A face judged and nobody recognised counts against the camera; a step-up (two close
            // candidates) does not: someone enrolled is probably there.
            let verdict: AttemptVerdict = outcome.user != nil ? .matched
                : outcome.stepUpRequired ? .notJudged(.error) : outcome.candidates.isEmpty ? .notJudged(.nobodyInView) : .noMatch
            auth.recordCamera(camera, verdict)
        }
        // Nothing about users it did not match: only candidates at or above the threshold.
        let disclosed = TrustPolicy.disclosed(outcome.candidates, score: \.score, threshold: settings.matchingThreshold,
                                              stepUpMargin: outcome.stepUpRequired ? FaceIdentifyParams.margin(p.margin) : nil)
        if outcome.stepUpRequired { context.awaitStepUp(candidates: disclosed.map(\.user), modality: .face) }
        if let chosen = outcome.user {
            // The chosen user's lockout applies; a proven recognition starts their count again.
            try auth.checkBiometric(chosen)
            context.settle(user: chosen, factor: .face, verdict: .matched)
        }
        return FaceIdentifyResult(user: outcome.user, score: outcome.user == nil ? 0 : disclosed.first?.score ?? 0,
                                  candidates: disclosed.map { Candidate(user: $0.user, score: $0.score) },
                                  stepUpRequired: outcome.stepUpRequired, liveness: outcome.capture.liveness,
                                  durationMs: elapsedMilliseconds(since: started))
    }

    func enroll(_ p: FaceEnrollParams, _ context: CallContext) async throws -> FaceEnrollResult {
        let pipeline = try await face.pipeline()
        typealias P = FaceEnrollParams
        let full = (p.mode ?? .default) == .full
        // A full quota is refused before anyone is asked to pose.
        let quota = limits.quotas.templates(.face, isAdmin: context.peer.isAdmin)
        try templates.checkQuota(user: p.user, modality: .face, adding: full ? 5 : 1, quota: quota)
        let started = monotonicNanoseconds()
        let session = FaceEnrolment(targets: full ? [.front, .left, .right, .up, .down] : [.front], framesPerPose: P.frames(p.frames),
                                    qualityThreshold: P.qualityThreshold(p.qualityThreshold), countdownS: P.countdownS(p.countdownS),
                                    timeoutMs: P.timeoutMs(p.timeoutMs), startedAt: started)
        let outcome = try await leases.runFace(session, camera: p.camera, pipeline: pipeline, context: context, what: "face.enroll",
                                                 preview: p.preview) { $0 }
        let ids = try templates.addTemplates(user: p.user, modality: .face, outcome.templates.map { pose, template, frames in
            NewTemplate(quality: Double(template.quality), meta: TemplateMeta(pose: pose.rawValue, frames: frames, source: .capture),
                        payload: template.data)
        }, quota: quota).map(\.id)
        logger.notice("face.enroll \(LogText(p.user)): \(ids.count) template(s) from \(outcome.framesUsed) frames in \(elapsedMilliseconds(since: started)) ms")
        var result = FaceEnrollResult(templates: ids, framesUsed: outcome.framesUsed)
        if outcome.facesSeen > 1 { result.facesSeen = outcome.facesSeen }
        return result
    }
}
