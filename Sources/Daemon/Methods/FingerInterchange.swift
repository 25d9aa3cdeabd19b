import BiometricAuth
import BiometricFinger
import BiometricProtocol
import BiometricStore
import Foundation

/// Template interchange (issue 26 item 4, IDEMIA BIOStore): finger.add and finger.export, as
/// face.add and face.export are for faces, and the templates finger.verify takes from the
/// caller (`references`, a badge). What is stored is always the biometricd format; what comes in
/// may be it or ISO/IEC 19794-2, and is decoded and checked completely before anything changes.
extension FingerMethods {
    func registerInterchange(in table: inout MethodTable) {
        table.register(Method.fingerAdd, .admin("finger.add"), fingerAdd)
        table.register(Method.fingerExport, .admin("finger.export"), fingerExport)
    }

    // MARK: Handlers, one per method, named after it

    /// finger.add
    func fingerAdd(_ context: CallContext, _ p: FingerAddParams) async throws -> TemplateIDs {
        return try add(p, context)
    }

    /// finger.export
    func fingerExport(_ context: CallContext, _ p: FingerExportParams) async throws -> FingerExportResult {
        return try export(p)
    }

    func add(_ p: FingerAddParams, _ context: CallContext) throws -> TemplateIDs {
        // Everything is decoded and checked first: a refused call stores nothing.
        let isoSource = finger.primarySource
        var (source, imported) = try Self.importTemplates(p.template, expecting: p.format, field: "template", isoSource: isoSource)
        if let name = p.position {
            guard let position = FingerPosition(name: name) else {
                throw RPCError.invalidParams(field: "position", "'position' must be a finger such as right_index or left_thumb")
            }
            imported = imported.map { $0.with(position: position) }
        }
        if p.templateID != nil, imported.count > 1 {
            throw RPCError.invalidParams(field: "template_id", "'template_id' names one template; the record holds \(imported.count) fingers")
        }
        let added = try templates.addTemplates(user: p.user, modality: .finger, imported.map {
            NewTemplate(id: p.templateID, position: $0.position?.name, quality: Double($0.quality),
                        meta: TemplateMeta(source: .import, format: source.rawValue), payload: Data($0.encoded()))
        }, quota: limits.quotas.templates(.finger, isAdmin: context.peer.isAdmin))
        logger.notice("finger.add by uid \(context.peer.uid): \(added.count) \(source.rawValue) template(s) for '\(LogText(p.user))'")
        return TemplateIDs(templates: added.map(\.id))
    }

    func export(_ p: FingerExportParams) throws -> FingerExportResult {
        guard try store.users.named(p.user) != nil else { throw RPCError.userNotEnrolled(p.user) }
        let format = p.format ?? .default
        let items = try store.templates.payloads(user: p.user, modality: .finger).map { info, data in
            let bytes: [UInt8]
            switch format {
            case .biometricd: bytes = [UInt8](data)
            case .iso19794_2:
                guard let template = try? FingerTemplate(decoding: [UInt8](data)) else {
                    throw RPCError.internal("stored finger template \(info.id) does not decode")
                }
                bytes = ISO19794_2.encode([template])
            }
            return FingerExportResult.Item(id: info.id, position: info.position ?? "unknown",
                                           template: Data(bytes).base64EncodedString(), quality: Int(info.quality))
        }
        return FingerExportResult(user: p.user, format: format, templates: items)
    }

    /// finger.verify's `references`: decoded and checked before any capture or lockout check, so a
    /// bad one is refused without counting an attempt. The caller must be allowed to supply them
    /// (CallerLimits.callerReferences) and the user must exist (the lockout is theirs).
    func callerReferences(_ encoded: [String], user: String, _ context: CallContext) throws -> FingerGallery {
        if limits.callers.callerReferences(isAdmin: context.peer.isAdmin) == .adminRequired {
            throw RPCError.app(.permissionDenied, "verifying against caller-supplied templates needs an administrator",
                               hint: "leave 'references' out to verify against the enrolled fingers", details: ["field": "references"])
        }
        guard try store.users.named(user) != nil else { throw RPCError.userNotEnrolled(user) }
        var references: [FingerReference] = []
        let isoSource = finger.primarySource
        for (i, base64) in encoded.enumerated() {
            for (j, template) in try Self.importTemplates(base64, expecting: nil, field: "references[\(i)]", isoSource: isoSource).templates.enumerated() {
                guard let prepared = finger.matcher.prepare(template) else {
                    throw RPCError.invalidParams(field: "references[\(i)]", "'references[\(i)]': the template cannot be matched")
                }
                references.append(FingerReference(user: user, templateID: "reference-\(i)-\(j)",
                                                  position: template.position?.name, print: prepared))
            }
        }
        return FingerGallery(references, matcher: finger.matcher)
    }

    /// Decoded templates, or `invalid_params` naming the field and a stable `problem`
    /// (template_format, template_version, template_resolution, template_corrupt, template_empty,
    /// not_base64).
    /// An ISO record's minutiae join `isoSource`'s templates (the daemon's extractor: the record
    /// does not say how they were found).
    static func importTemplates(_ base64: String, expecting: TemplateFormat?, field: String, isoSource: MinutiaeSource) throws
        -> (format: FingerTemplateImport.Format, templates: [FingerTemplate])
    {
        do {
            return try FingerTemplateImport.decode(base64: base64, expecting: expecting.map { $0 == .iso19794_2 ? .iso19794_2 : .biometricd },
                                                   isoSource: isoSource)
        } catch {
            throw RPCError(code: RPCError.invalidParamsCode, message: "'\(field)': \(error)",
                           data: .object(["reason": "invalid_params", "field": .string(field), "problem": .string(error.problem)]))
        }
    }
}
