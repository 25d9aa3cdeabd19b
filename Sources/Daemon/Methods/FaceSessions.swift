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

    /// What the caller asked for that it may not: a threshold under the floor, or no liveness,
    /// from a caller who is not an admin (CallerLimits decides). Checked where a call enters,
    /// before any camera opens; auth.authenticate's own face factor never asks either.
    func checkCallerMay(_ p: FaceCaptureOptions, _ peer: Peer) throws {
        if case .belowFloor(let asked, let floor) = limits.callers.threshold(.face, asked: p.matchingThreshold, isAdmin: peer.isAdmin) {
            throw RPCError.app(.permissionDenied, "matching_threshold \(asked) is below \(floor): only an administrator may lower it",
                               hint: "leave it out, or ask for \(floor) or more", details: ["field": "matching_threshold", "floor": .double(floor)])
        }
        if limits.callers.liveness(skipped: (p.mode ?? .default) == .image, isAdmin: peer.isAdmin) == .livenessRequired {
            throw RPCError.app(.permissionDenied, "mode image (no liveness check) needs an administrator",
                               hint: "leave mode out: liveness is what refuses a photo of you", details: ["field": "mode"])
        }
    }

    /// Verify and identify params with their SPEC defaults; the threshold is the caller's if it
    /// asked for one it may, else the configured one.
    private func authenticationSettings(_ p: FaceCaptureOptions, _ peer: Peer, pipeline: FacePipeline) throws
        -> FaceAuthenticationSettings
    {
        typealias S = FaceCaptureOptions
        let threshold: Double = switch limits.callers.threshold(.face, asked: p.matchingThreshold, isAdmin: peer.isAdmin) {
        case .use(let t): t
        case .belowFloor(_, let floor): floor  // refused at the edge (checkCallerMay); never lower here
        }
        let liveness = (p.mode ?? .default) == .liveness
        let mode = liveness ? try livenessMode(p, pipeline: pipeline) : .blink
        return FaceAuthenticationSettings(
            liveness: liveness, matchingThreshold: threshold,
            qualityThreshold: S.qualityThreshold(p.qualityThreshold), livenessThreshold: S.livenessThreshold(p.livenessThreshold),
            blinkTimeoutMs: S.blinkTimeoutMs(p.blinkTimeoutMs), timeoutMs: S.timeoutMs(p.timeoutMs),
            livenessMode: mode, challenge: challengeMoves(p, mode: mode), challengeStepTimeoutMs: S.challengeStepTimeoutMs(p.challengeStepTimeoutMs))
    }

    /// Refuses the leased camera when it is virtual and `face_liveness_refuse_virtual` says so
    /// for this call (`VirtualCameraRule` decides); run as the session's `admit`, before capture.
    func checkVirtualCamera(_ id: String, liveness: Bool, login: Bool) throws {
        guard liveness, let device = sessions.cameras.devices.first(where: { $0.id == id }) else { return }
        let camera = VirtualCameraRule.Camera(isVirtual: sessions.cameras.roles(of: device).isVirtual,
                                              isReplay: device is ReplayDevice, driver: device.description.driver)
        if case .refused(let driver) = limits.virtualCameras.decide(camera, liveness: liveness, login: login) {
            logger.warning("face liveness refused camera \(id): virtual capture device (driver \(driver))")
            throw SessionFailure.face(.spoof(.virtualCamera(driver: driver), livenessScore: 0))
        }
    }

    /// `login`: called by auth.authenticate (PAM's path), where `face_liveness_refuse_virtual`
    /// `pam` refuses virtual cameras.
    func verify(_ p: FaceVerifyParams, _ context: CallContext, login: Bool = false) async throws -> FaceVerifyResult {
        // The models may still be loading (a daemon socket activation just started): the camera
        // opens meanwhile and the session is made once they are in (runFace(loading:)).
        try face.requireModelsInstalled()
        let references = try templates.faceTemplates(user: p.user)
        guard !references.isEmpty else {
            throw RPCError.app(.noFaceRegistered, "user '\(p.user)' has no face enrolled",
                               hint: "enrol first: authctl face enroll \(p.user)", details: ["user": .string(p.user)])
        }
        try auth.checkBiometric(p.user)
        let liveness = (p.capture.mode ?? .default) == .liveness
        let started = monotonicNanoseconds()
        let calibration = face.calibration
        let peer = context.peer
        let run: (outcome: FaceAuthenticationOutcome, session: FaceVerification, timing: FaceSessionTiming)
        do {
            run = try await sessions.runFace(
                loading: { [face] in try await face.pipeline() }, limitMs: FaceCaptureOptions.timeoutMs(p.capture.timeoutMs),
                session: { [self] pipeline in
                    let settings = try authenticationSettings(p.capture, peer, pipeline: pipeline)
                    return FaceVerification(settings, references: references, calibration: calibration, startedAt: started,
                                            secondNetwork: pipeline.models.hasRecognizer)
                },
                camera: p.camera, context: context, what: "face capture", preview: p.capture.preview,
                admit: { [self] id in try checkVirtualCamera(id, liveness: liveness, login: login) }) { $0 }
        } catch {
            auth.record(p.user, AttemptVerdict(error: error), modality: "face")
            throw error
        }
        let (outcome, session) = (run.outcome, run.session)
        let secondNetwork = session.secondNetworkLoaded
        let durationMs = elapsedMilliseconds(since: started)
        auth.record(p.user, AttemptVerdict(matched: outcome.matched), modality: "face")
        if outcome.matched { context.authenticated(as: p.user) }
        logger.info("face.verify \(p.user): match=\(outcome.matched) score=\(outcome.bestScore) liveness=\(outcome.liveness.rawValue) templates v\(session.fused ? 2 : 1) in \(durationMs) ms: \(run.timing.summary)\(face.startupNote(call: run.timing))")
        let hint = Self.reenrollHint(user: p.user, references: references, secondNetwork: secondNetwork)
        if let hint { logger.notice("face.verify \(p.user): \(hint)") }
        var result = FaceVerifyResult(match: outcome.matched, score: outcome.bestScore, threshold: session.settings.matchingThreshold,
                                      liveness: outcome.liveness, livenessScore: outcome.livenessScore,
                                      // A detected spoof ends the call with spoof_detected: a result never is one.
                                      spoofAttempt: false, durationMs: durationMs)
        result.templateVersion = session.fused ? 2 : 1
        result.reenrollHint = hint
        if !session.settings.liveness { result.facesSeen = max(1, outcome.facesSeen) }
        return result
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
            outcome = try await sessions.runFace(session, camera: p.camera, pipeline: pipeline, context: context, what: "face capture",
                                                 preview: p.capture.preview,
                                                 admit: { [self] id in
                                                     leased.set(id)
                                                     try auth.checkCamera(id)
                                                     try checkVirtualCamera(id, liveness: settings.liveness, login: false)
                                                 }) { probe in
                // A store that cannot be read fails closed: no candidate.
                ((try? gallery.rank(probe, exact: source, calibration: calibration, threads: threads)) ?? [])
                    .map { Candidate(user: $0.user, score: $0.score) }
            }
        } catch {
            if let camera = leased.value, (error as? RPCError)?.errorReason != .lockedOut {
                auth.recordCamera(camera, AttemptVerdict(error: error))
            }
            throw error
        }
        if let camera = leased.value {
            // A face judged and nobody recognised counts against the camera; a step-up (two close
            // candidates) does not: someone enrolled is probably there.
            let verdict: AttemptVerdict = outcome.user != nil ? .matched
                : outcome.stepUpRequired ? .notJudged(.error) : outcome.candidates.isEmpty ? .notJudged(.nobodyInView) : .noMatch
            auth.recordCamera(camera, verdict)
        }
        if outcome.stepUpRequired { context.awaitStepUp(candidates: outcome.candidates.map(\.user), modality: .face) }
        if let chosen = outcome.user {
            // The chosen user's lockout applies; a recognised user starts their count again.
            try auth.checkBiometric(chosen)
            auth.record(chosen, .matched, modality: "face")
        }
        return FaceIdentifyResult(user: outcome.user, score: outcome.candidates.first?.score ?? 0,
                                  candidates: outcome.candidates.map { Candidate(user: $0.user, score: $0.score) },
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
        let outcome = try await sessions.runFace(session, camera: p.camera, pipeline: pipeline, context: context, what: "face.enroll",
                                                 preview: p.preview) { $0 }
        let ids = try templates.addTemplates(user: p.user, modality: .face, outcome.templates.map { pose, template, frames in
            NewTemplate(quality: Double(template.quality), meta: "{\"pose\":\"\(pose.rawValue)\",\"frames\":\(frames)}",
                        payload: template.data)
        }, quota: quota).map(\.id)
        logger.notice("face.enroll \(p.user): \(ids.count) template(s) from \(outcome.framesUsed) frames in \(elapsedMilliseconds(since: started)) ms")
        var result = FaceEnrollResult(templates: ids, framesUsed: outcome.framesUsed)
        if outcome.facesSeen > 1 { result.facesSeen = outcome.facesSeen }
        return result
    }
}
