import BiometricFace
import BiometricFinger
import BiometricProtocol
import BiometricStore
import Foundation
import Logging
import Synchronization

/// The sealed store's templates and the in-memory galleries built from them. Every change to
/// templates goes through here, so no gallery outlives a change (a deleted user is never found).
final class TemplateRepository: Sendable {
    let store: Store
    private let faceLoader: GalleryLoader
    private let fingerCache = Mutex<FingerGallery?>(nil)
    private let fingerMatcher: FingerMatcher

    init(store: Store, fingerMatcher: FingerMatcher, logger: Logger) {
        self.store = store
        self.fingerMatcher = fingerMatcher
        faceLoader = GalleryLoader(logger: logger)
    }

    // MARK: Face

    func faceTemplates(user: String) throws -> [FaceTemplate] {
        try store.templates.payloads(user: user, modality: .face).compactMap { try? FaceTemplate(data: $0.1) }
    }

    /// The 1:N gallery, or not_initialized with `data.reason: "loading"` while the first load runs.
    func faceGallery() throws -> FaceGallerySet { try faceLoader.current(store) }

    /// The exact templates for the gallery's re-score.
    var storedFaceTemplates: StoredFaceTemplates { StoredFaceTemplates(store: store) }

    /// Starts loading the face gallery in the background (at start: READY does not wait for it).
    func loadFaceGallery() { faceLoader.startLoading(store) }

    var faceGalleryStatus: GalleryStatus { faceLoader.status }

    // MARK: Finger

    func fingerReferences(user: String?) throws -> [FingerReference] {
        try store.templates.payloads(user: user, modality: .finger).compactMap { info, data in
            guard let template = try? FingerTemplate(decoding: [UInt8](data)), let prepared = fingerMatcher.prepare(template) else {
                return nil
            }
            return FingerReference(user: info.user, templateID: info.id, position: info.position, print: prepared)
        }
    }

    /// One user's fingers, ready to search.
    func fingerGallery(user: String) throws -> FingerGallery {
        FingerGallery(try fingerReferences(user: user), matcher: fingerMatcher)
    }

    /// Every user's finger templates and their index (cached until a change).
    func fingerGallery() throws -> FingerGallery {
        if let cached = fingerCache.withLock({ $0 }) { return cached }
        let all = FingerGallery(try fingerReferences(user: nil), matcher: fingerMatcher)
        fingerCache.withLock { $0 = all }
        return all
    }

    // MARK: Changes

    func addTemplate(user: String, modality: Modality, position: String? = nil, quality: Double, meta: TemplateMeta,
                     payload: Data, quota: Quota?) throws -> TemplateInfo
    {
        try addTemplates(user: user, modality: modality,
                         [NewTemplate(position: position, quality: quality, meta: meta, payload: payload)], quota: quota)[0]
    }

    /// Stores all of `items` or none (one transaction; the quota is counted inside it).
    func addTemplates(user: String, modality: Modality, _ items: [NewTemplate], quota: Quota?) throws -> [TemplateInfo] {
        defer { changed(modality) }
        return try store.templates.add(user: user, modality: modality, items, quota: quota)
    }

    /// Refuses at once (before a camera session) when `adding` more would pass the quota.
    func checkQuota(user: String, modality: Modality, adding: Int, quota: Quota?) throws {
        guard let quota else { return }
        let have = try store.templates.list(user: user, modality: modality).count
        if have + adding > quota.max { throw StoreError.quotaExceeded(quota.name, max: quota.max, have: have) }
    }

    /// Removes one template (`id`) or all of the modality; the number removed.
    func removeTemplates(user: String, modality: Modality, id: String?) throws -> Int {
        defer { changed(modality) }
        return try store.templates.remove(user: user, modality: modality, id: id)
    }

    /// Removes the user and every template of theirs; the number of templates removed.
    func deleteUser(named name: String) throws -> Int {
        defer {
            changed(.face)
            changed(.finger)
        }
        return try store.users.delete(named: name)
    }

    private func changed(_ modality: Modality) {
        switch modality {
        case .face: faceLoader.invalidate()
        case .finger: fingerCache.withLock { $0 = nil }
        }
    }
}

/// One stored finger template, ready to match.
struct FingerReference: Sendable {
    var user: String
    var templateID: String
    var position: String?
    /// Local structures precomputed once, so each comparison only matches.
    var print: PreparedPrint
}

/// References to search, with a pre-selection index over each minutiae source's references
/// (built once per gallery: copying the references' 512-byte codes into one block). Version-1/2
/// and version-3 templates are indexed and searched apart: each is matched only with a probe
/// from its own extractor.
struct FingerGallery: Sendable {
    struct Part: Sendable {
        let source: MinutiaeSource
        /// Positions in `references` of this part's references, in order.
        let positions: [Int]
        let index: PrintIndex
    }

    let references: [FingerReference]
    let parts: [Part]

    init(_ references: [FingerReference], matcher: FingerMatcher) {
        self.references = references
        parts = [MinutiaeSource.learned, .classical].compactMap { source in
            let positions = references.indices.filter { references[$0].print.template.minutiaeSource == source }
            guard !positions.isEmpty else { return nil }
            return Part(source: source, positions: positions, index: PrintIndex(positions.map { references[$0].print }, matcher: matcher))
        }
    }

    var isEmpty: Bool { references.isEmpty }

    /// The minutiae sources of the references (which probes a search needs).
    var sources: Set<MinutiaeSource> { Set(parts.map(\.source)) }
}
