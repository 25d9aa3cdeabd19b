import BiometricAuth
import BiometricCamera
import BiometricCore
import BiometricFinger
import BiometricProtocol
import BiometricStore
import Foundation
import Logging

/// finger.*: capture, enrol, verify and identify sessions, and template management (SPEC §4).
struct FingerMethods: MethodGroup {
    let finger: FingerService
    let templates: TemplateRepository
    let leases: CameraLeases
    let auth: AuthService
    let policy: AccessPolicy
    let limits: DaemonLimits
    let logger: Logger

    var store: Store { templates.store }

    func register(in table: inout MethodTable) {
        // Hands out camera content (print images), like camera.snapshot: admin only.
        table.register(Method.fingerCapture, .admin("finger.capture"), fingerCapture)
        table.register(Method.fingerEnroll, .selfReverifiedOrAdmin("enrol the fingers of") { $0.user }, fingerEnroll)
        table.register(Method.fingerVerify, .selfOrAdmin("verify the fingers of") { $0.user },
                       requires: .liveCapture(.finger, camera: .trustedToGrant), grants: .authentication, fingerVerify)
        table.register(Method.fingerIdentify, .adminOrLogin("finger.identify"),
                       requires: .liveCapture(.finger, camera: .trusted), grants: .lockoutReset, fingerIdentify)
        table.register(Method.fingerExtract, .admin("finger.extract"), fingerExtract)
        table.register(Method.fingerMatch, .admin("finger.match"), fingerMatch)
        table.register(Method.fingerList, .selfOrAdmin("list the fingers of") { $0.user }, fingerList)
        table.register(Method.fingerRemove, .selfReverifiedOrAdmin("remove the fingers of") { $0.user }, fingerRemove)
        registerInterchange(in: &table)
    }

    // MARK: Handlers, one per method, named after it

    /// finger.capture
    func fingerCapture(_ context: CallContext, _ p: FingerCaptureRequest) async throws -> FingerCaptureResult {
        return try await capture(p, context)
    }

    /// finger.enroll
    func fingerEnroll(_ context: CallContext, _ p: FingerEnrollParams) async throws -> FingerEnrollResult {
        return try await enroll(p, context)
    }

    /// finger.verify
    func fingerVerify(_ context: CallContext, _ p: FingerAuthParams) async throws -> FingerVerifyResult {
        guard let user = p.user else { throw RPCError.invalidParams(field: "user", "missing required parameter 'user'") }
        return try await verify(p, user: user, context).result
    }

    /// finger.identify
    func fingerIdentify(_ context: CallContext, _ p: FingerAuthParams) async throws -> FingerIdentifyResult {
        guard p.user == nil else { throw RPCError.invalidParams(field: "user", "finger.identify takes no 'user': it finds one") }
        let gallery = try templates.fingerGallery()
        guard !gallery.isEmpty else {
            throw RPCError.app(.noFingerRegistered, "no finger is enrolled on this machine", hint: "enrol users first")
        }
        let started = monotonicNanoseconds()
        let leased = LeasedCamera()
        let auth = self.auth
        let outcome: FingerAuthentication.Outcome
        do {
            outcome = try await authenticate(p, references: gallery, context: context,
                                             admit: { id in leased.set(id); try auth.checkCamera(id) })
        } catch {
            // A refusal before capture (the camera's lock, a virtual camera) is not judged.
            if let camera = leased.value { auth.recordCamera(camera, AttemptVerdict(error: error)) }
            throw error
        }
        let matched = outcome.matched && outcome.best != nil
        if let camera = leased.value {
            auth.recordCamera(camera, matched ? .matched : outcome.candidates.isEmpty ? .notJudged(.nobodyInView) : .noMatch)
        }
        let chosen = matched ? outcome.best?.user : nil
        if let chosen {
            // The chosen user's lockout applies; a proven recognition starts their count again.
            try auth.checkBiometric(chosen)
            context.settle(user: chosen, factor: .finger, verdict: .matched)
        }
        // Nothing about users it did not match.
        let disclosed = chosen == nil ? [] : TrustPolicy.disclosed(outcome.candidates, score: \.score, threshold: threshold(p, context.peer))
        return FingerIdentifyResult(user: chosen, score: chosen == nil ? 0 : outcome.score,
                                    position: chosen == nil ? nil : outcome.position?.name, candidates: disclosed,
                                    liveness: outcome.liveness,
                                    durationMs: Int((monotonicNanoseconds() - started) / 1_000_000))
    }

    /// finger.extract
    func fingerExtract(_ context: CallContext, _ p: FingerExtractParams) async throws -> FingerExtractResult {
        let finger = self.finger
        let dpi = FingerExtractParams.dpi(p.dpi)
        let template = try await limits.images.run(owner: context.peer.uid) {
            try finger.extract(try FingerService.decodePrint(p.image, dpi: dpi, field: "image"))
        }
        let format = p.format ?? .default
        let bytes = format == .iso19794_2 ? ISO19794_2.encode([template]) : template.encoded()
        return FingerExtractResult(template: Data(bytes).base64EncodedString(), format: format,
                                   minutiae: template.minutiae.map(\.wire), quality: template.quality)
    }

    /// finger.match
    func fingerMatch(_ context: CallContext, _ p: FingerMatchParams) async throws -> MatchResult {
        let threshold = FingerMatchParams.threshold(p.threshold)
        let finger = self.finger
        let dpi = FingerMatchParams.dpi(p.dpi)
        let images = limits.images, uid = context.peer.uid
        let probeInput = try await images.run(owner: uid) { try finger.templateOrImage(p.probe, dpi: dpi, field: "probe") }
        let referenceInput = try await images.run(owner: uid) { try finger.templateOrImage(p.reference, dpi: dpi, field: "reference") }
        let (probe, reference) = try await images.run(owner: uid) { try finger.matchPair(probeInput, referenceInput) }
        let score = finger.matcher.score(probe: probe, reference: reference)
        return MatchResult(score: score, match: score >= threshold, threshold: threshold)
    }

    /// finger.list
    func fingerList(_ context: CallContext, _ p: FingerListParams) async throws -> FingerListResult {
        return FingerListResult(templates: try store.templates.list(user: p.user, modality: .finger).map {
            FingerTemplateInfo(id: $0.id, user: $0.user, position: $0.position ?? "unknown", created: $0.created,
                               quality: Int($0.quality))
        })
    }

    /// finger.remove
    func fingerRemove(_ context: CallContext, _ p: FingerRemoveParams) async throws -> RemovedResult {
        guard try store.users.named(p.user) != nil else {
            throw RPCError.userNotEnrolled(p.user)
        }
        let n = try templates.removeTemplates(user: p.user, modality: .finger, id: p.templateID)
        return RemovedResult(removed: n)
    }
}

extension Minutia {
    var wire: MinutiaWire {
        MinutiaWire(x: (Double(x) * 10).rounded() / 10, y: (Double(y) * 10).rounded() / 10,
                    angle: (Double(angleDegrees) * 10).rounded() / 10, type: kind.rawValue, quality: Int(quality))
    }
}

extension FingerMethods {
    /// Fast authentication of one user's fingers, with their lockout: against the enrolled
    /// fingers, or against templates the caller supplies (`references`, a badge) — the same
    /// liveness, lockout check and attempt record; only the enrolled case authenticates the
    /// connection (CallerLimits.ReferencesDecision).
    func verify(_ p: FingerAuthParams, user: String, _ context: CallContext) async throws -> (result: FingerVerifyResult, proven: Bool) {
        let references = try p.references.map { try callerReferences($0, user: user, context) } ?? templates.fingerGallery(user: user)
        guard !references.isEmpty else {
            throw RPCError.app(.noFingerRegistered, "user '\(user)' has no finger enrolled",
                               hint: "enrol first: authctl finger enroll \(user)", details: ["user": .string(user)])
        }
        try auth.checkBiometric(user)
        let whose: References = p.references == nil ? .enrolled : .callerSupplied
        let started = monotonicNanoseconds()
        let outcome: FingerAuthentication.Outcome
        do {
            outcome = try await authenticate(p, references: references, context: context, stopAtMatch: true)
        } catch {
            context.settle(user: user, factor: .finger, verdict: AttemptVerdict(error: error), references: whose)
            throw error
        }
        let settled = context.settle(user: user, factor: .finger, verdict: AttemptVerdict(matched: outcome.matched), references: whose)
        let ms = Int((monotonicNanoseconds() - started) / 1_000_000)
        logger.info("finger.verify \(LogText(user))\(p.references == nil ? "" : " (caller's templates)"): match=\(outcome.matched) proven=\(settled.proven) score=\(outcome.score) in \(ms) ms")
        let learnedAvailable = try await finger.run { [finger] in finger.primarySource == .learned }
        let hint = p.references == nil
            ? Self.reenrollHint(user: user, references: references.references.map(\.print.template), learnedAvailable: learnedAvailable) : nil
        if let hint { logger.notice("finger.verify \(LogText(user)): \(hint)") }
        var result = FingerVerifyResult(match: outcome.matched, score: outcome.score, threshold: threshold(p, context.peer),
                                        position: outcome.position?.name, liveness: outcome.liveness,
                                        captures: outcome.captures, durationMs: ms)
        result.reenrollHint = hint
        result.authenticated = settled.effects.reverify
        return (result, settled.proven)
    }

    /// What a user whose enrolled fingers all lack the orientation field is told (templates
    /// stored before version 2, or imported as ISO 19794-2, whose record has no place for it):
    /// they keep verifying on minutiae alone, scaled by 0.7, and only re-enrolment gives them the
    /// orientation check (Docs/finger-print.md item 9). nil when any finger has the field.
    static func reenrollHint(user: String, references: [FingerTemplate], learnedAvailable: Bool) -> String? {
        guard !references.isEmpty else { return nil }
        if learnedAvailable, !references.contains(where: { $0.minutiaeSource == .learned }) {
            return "finger templates are version 1 or 2 (classical minutiae): re-enrol with 'authctl finger enroll \(user)' for the learned minutiae of version 3"
        }
        guard !references.contains(where: { $0.orientationField != nil }) else { return nil }
        return "finger templates have no orientation field (version 1 or ISO 19794-2): re-enrol with 'authctl finger enroll \(user)' for the orientation check"
    }
}
