import BiometricCamera
import BiometricCore
import BiometricFace
import BiometricProtocol
import BiometricStore
import Foundation
import Logging

/// face.*: enrol, verify and identify sessions, and template management (SPEC §4).
struct FaceMethods: MethodGroup {
    let face: FaceService
    let templates: TemplateRepository
    let leases: CameraLeases
    let auth: AuthService
    let policy: AccessPolicy
    let limits: DaemonLimits
    let logger: Logger
    /// The challenge moves of a test daemon's hook (nil in production: moves are random).
    let fixedChallenge: [ChallengeLiveness.Action]?

    var store: Store { templates.store }

    func register(in table: inout MethodTable) {
        table.register(Method.faceEnroll, .selfReverifiedOrAdmin("enrol") { $0.user }, faceEnroll)
        table.register(Method.faceVerify, .selfOrAdmin("verify") { $0.user },
                       requires: .liveCapture(.face, camera: .trustedToGrant), grants: .authentication, faceVerify)
        table.register(Method.faceIdentify, .adminOrLogin("face.identify"),
                       requires: .liveCapture(.face, camera: .trusted), grants: .lockoutReset, faceIdentify)
        table.register(Method.faceList, .selfOrAdmin("list the faces of") { $0.user }, faceList)
        table.register(Method.faceRemove, .selfReverifiedOrAdmin("remove the faces of") { $0.user }, faceRemove)
        table.register(Method.faceAdd, .admin("face.add"), faceAdd)
        table.register(Method.faceExport, .admin("face.export"), faceExport)
        table.register(Method.faceSet, .admin("face.set"), faceSet)
        table.register(Method.faceReset, .admin("face.reset"), faceReset)
        table.register(Method.faceExtract, .admin("face.extract"), faceExtract)
        table.register(Method.faceMatch, .admin("face.match"), faceMatch)
    }

    // MARK: Handlers, one per method, named after it

    /// face.enroll
    func faceEnroll(_ context: CallContext, _ p: FaceEnrollParams) async throws -> FaceEnrollResult {
        return try await enroll(p, context)
    }

    /// face.verify
    func faceVerify(_ context: CallContext, _ p: FaceVerifyParams) async throws -> FaceVerifyResult {
        return try await verify(p, context).result
    }

    /// face.identify
    func faceIdentify(_ context: CallContext, _ p: FaceIdentifyParams) async throws -> FaceIdentifyResult {
        return try await identify(p, context)
    }

    /// face.list
    func faceList(_ context: CallContext, _ p: FaceListParams) async throws -> FaceListResult {
        // The version is byte 4 of the (sealed) payload: opened to read it.
        let items = try store.templates.payloads(user: p.user, modality: .face)
        return FaceListResult(templates: items.map { info, data in
            FaceTemplateInfo(id: info.id, user: info.user, created: info.created, quality: Int(info.quality),
                             pose: info.meta.pose ?? "front", version: Self.templateVersion(data))
        })
    }

    /// face.remove
    func faceRemove(_ context: CallContext, _ p: FaceRemoveParams) async throws -> RemovedResult {
        guard try store.users.named(p.user) != nil else {
            throw RPCError.userNotEnrolled(p.user)
        }
        let n = try templates.removeTemplates(user: p.user, modality: .face, id: p.templateID)
        return RemovedResult(removed: n)
    }

    /// face.add
    func faceAdd(_ context: CallContext, _ p: FaceAddParams) async throws -> TemplateIDs {
        let template = try Self.decodeTemplate(p.template, field: "template")
        let info = try templates.addTemplates(user: p.user, modality: .face, [
            NewTemplate(id: p.templateID, quality: Double(template.quality), meta: TemplateMeta(pose: "front", source: .import),
                        payload: template.data)], quota: limits.quotas.templates(.face, isAdmin: context.peer.isAdmin))[0]
        return TemplateIDs(templates: [info.id])
    }

    /// face.export
    func faceExport(_ context: CallContext, _ p: UserParams) async throws -> FaceExportResult {
        guard try store.users.named(p.user) != nil else {
            throw RPCError.userNotEnrolled(p.user)
        }
        let items = try store.templates.payloads(user: p.user, modality: .face).map {
            FaceExportResult.Item(id: $0.0.id, template: $0.1.base64EncodedString(), quality: Int($0.0.quality),
                                  version: Self.templateVersion($0.1))
        }
        return FaceExportResult(user: p.user, templates: items)
    }

    /// face.set
    func faceSet(_ context: CallContext, _ p: FaceSetParams) async throws -> TemplateIDs {
        // Decode every template first: a bad one changes nothing.
        let faces = try p.faces.enumerated().map { try Self.decodeTemplate($1, field: "faces[\($0)]") }
        if try store.users.named(p.user) != nil {
            _ = try templates.removeTemplates(user: p.user, modality: .face, id: nil)
        }
        let added = try templates.addTemplates(
            user: p.user, modality: .face,
            faces.map { NewTemplate(quality: Double($0.quality), meta: TemplateMeta(pose: "front", source: .import), payload: $0.data) },
            quota: limits.quotas.templates(.face, isAdmin: context.peer.isAdmin))
        return TemplateIDs(templates: added.map(\.id))
    }

    /// face.reset
    func faceReset(_ context: CallContext, _ params: NoParams) async throws -> RemovedResult {
        var removed = 0
        for user in try store.users.all() where user.faceTemplates > 0 {
            removed += try templates.removeTemplates(user: user.name, modality: .face, id: nil)
        }
        logger.notice("face.reset by uid \(context.peer.uid): \(removed) templates removed")
        return RemovedResult(removed: removed)
    }

    /// face.extract
    func faceExtract(_ context: CallContext, _ p: FaceExtractParams) async throws -> FaceExtractResult {
        let pipeline = try await face.pipeline()
        return try await extract(p.image, field: "image", pipeline: pipeline, caller: context.peer.uid)
    }

    /// face.match
    func faceMatch(_ context: CallContext, _ p: FaceMatchParams) async throws -> MatchResult {
        let threshold = FaceMatchParams.matchingThreshold(p.matchingThreshold)
        // An image is embedded as what it stands for: the probe like a live frame, the
        // reference like an enrolment (the pairing the score calibration is fitted on).
        let probe = try await templateOrImage(p.probe, field: "probe", views: .mirrored, caller: context.peer.uid)
        let reference = try await templateOrImage(p.reference, field: "reference", views: .jittered, caller: context.peer.uid)
        let score = FaceVerification.score(probe, against: [reference], calibration: face.calibration)
        return MatchResult(score: score, match: score >= threshold, threshold: threshold)
    }

    // MARK: Helpers

    /// A template from face.add/face.set/face.match: refused as `invalid_params` with `data.field`
    /// and a stable `data.problem`, as finger templates are (Docs/finger-print.md):
    /// `not_base64`, `template_format` (not a BMFT blob), `template_version` (a version this build
    /// does not read; `data.version` and `data.supported_versions` say which), `template_corrupt`.
    static func decodeTemplate(_ base64: String, field: String) throws -> FaceTemplate {
        func refuse(_ message: String, _ problem: String, _ extra: [String: JSONValue] = [:]) -> RPCError {
            var data: [String: JSONValue] = ["reason": "invalid_params", "field": .string(field), "problem": .string(problem)]
            data.merge(extra) { $1 }
            return RPCError(code: RPCError.invalidParamsCode, message: "'\(field)'\(message)", data: .object(data))
        }
        guard let data = Data(base64Encoded: base64) else { throw refuse(" is not base64", "not_base64") }
        do {
            return try FaceTemplate(data: data)
        } catch {
            switch error {
            case .notATemplate: throw refuse(": \(error.description)", "template_format")
            case .unsupportedVersion(let version):
                throw refuse(": \(error.description)", "template_version",
                             ["version": .int(Int64(version)),
                              "supported_versions": .array(FaceTemplate.supportedVersions.map { .int(Int64($0)) })])
            case .badDimensions, .notNormalised: throw refuse(": \(error.description)", "template_corrupt")
            }
        }
    }

    /// The format version of a stored face template blob (byte 4), nil if it is not one.
    static func templateVersion(_ data: Data) -> Int? {
        data.count > 4 && data.starts(with: FaceTemplate.magic) ? Int(data[data.startIndex + 4]) : nil
    }

    /// A template, or the face found in an image.
    func templateOrImage(_ base64: String, field: String, views: EmbeddingViews, caller: UInt32) async throws -> FaceTemplate {
        guard let data = Data(base64Encoded: base64) else {
            throw RPCError.invalidParams(field: field, "'\(field)' is not base64")
        }
        if data.starts(with: FaceTemplate.magic) { return try Self.decodeTemplate(base64, field: field) }
        let result = try await extract(base64, field: field, pipeline: try await face.pipeline(), views: views, caller: caller)
        return try Self.decodeTemplate(result.template, field: field)
    }

    /// Decodes an uploaded image (its size read from the header first; in the fair image queue
    /// under the caller's uid) and extracts its subject: the only face, the dominant one, or among
    /// faces of similar size the one nearest the centre (`FaceSubjectRule.stillImage`); the result
    /// says which and how many faces there were.
    func extract(_ base64: String, field: String, pipeline: FacePipeline, views: EmbeddingViews = .jittered, caller: UInt32)
        async throws -> FaceExtractResult
    {
        guard let data = Data(base64Encoded: base64), !data.isEmpty else {
            throw RPCError.invalidParams(field: field, "'\(field)' must be a base64 JPEG, PNG or PGM image")
        }
        let maxPixels = Int64(limits.maxImagePixels)
        let frame: Frame
        do {
            frame = try await limits.images.run(owner: caller) { try Frame(encoded: data, maxPixels: maxPixels) }
        } catch let error as ImageDecodeError {
            throw RPCError.invalidParams(field: field, "'\(field)' does not decode: \(error.description)")
        }
        let tracker = FaceTracker()
        tracker.subjectRule = .stillImage
        let observation = try await pipeline.analyze(frame, tracker: tracker)
        guard let box = observation.box, let landmarks = observation.landmarks, let pose = observation.pose else {
            throw RPCError.app(.badQuality, "no face found in the image", hint: "use a photo with one clear, frontal face",
                               details: ["feedback": ["no_face"]])
        }
        // With the second network loaded the template is v2 (both embeddings, the views' pairing).
        let template = try await pipeline.template(of: frame, observation, views: views, second: .matching(views))
        return FaceExtractResult(
            template: template.data.base64EncodedString(),
            box: box.pixelRect,
            landmarks: landmarks.flat.map { (Double($0) * 10).rounded() / 10 },
            yaw: (pose.yaw * 10).rounded() / 10, pitch: (pose.pitch * 10).rounded() / 10, roll: (pose.roll * 10).rounded() / 10,
            quality: observation.qualityScore, feedback: observation.feedback, facesSeen: max(1, observation.faceCount),
            subject: observation.subject ?? .only)
    }
}
