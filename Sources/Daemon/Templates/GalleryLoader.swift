import BiometricCamera
import BiometricCore
import BiometricFace
import BiometricProtocol
import BiometricStore
import Foundation
import Logging
import Synchronization

/// Keeps the face gallery of a store in memory. The first load runs in the background, page by
/// page (a million sealed templates take seconds, and READY must not wait); until it ends, identify
/// is answered with not_initialized, `data.reason: "loading"` and the progress. After a change a
/// small gallery is rebuilt on the spot; a large one keeps serving while a refresh runs in the
/// background (deleted templates are never answered meanwhile: the exact re-score reads the store).
final class GalleryLoader: Sendable {
    /// Below this many templates a stale gallery is rebuilt at once (well under 0.1 s).
    static let rebuildInPlaceBelow = 20_000
    static let pageSize = 10_000

    private struct State {
        var gallery: FaceGallerySet?
        var stale = false
        /// Bumped by every change, so a load that started before it does not count as fresh.
        var generation = 0
        var loading = false
        var loaded = 0
        var total = 0
    }
    private let state = Mutex(State())
    private let logger: Logger

    init(logger: Logger) { self.logger = logger }

    var status: GalleryStatus {
        state.withLock { s in
            GalleryStatus(state: s.gallery == nil ? "loading" : "ready", templates: s.gallery?.count ?? s.loaded,
                          loaded: s.loading ? s.loaded : (s.gallery?.count ?? 0), total: s.loading ? s.total : (s.gallery?.count ?? 0),
                          refreshing: s.loading && s.gallery != nil)
        }
    }

    func invalidate() {
        state.withLock { s in
            s.stale = true
            s.generation += 1
        }
    }

    func startLoading(_ store: Store) {
        let generation: Int? = state.withLock { s in
            guard !s.loading else { return nil }
            s.loading = true
            s.loaded = 0
            s.total = 0
            return s.generation
        }
        guard let generation else { return }
        Task.detached(priority: .utility) { [self] in
            let started = monotonicNanoseconds()
            do {
                let gallery = try build(store)
                state.withLock { s in
                    s.gallery = gallery
                    s.stale = s.generation != generation
                    s.loading = false
                }
                logger.info("face gallery: \(gallery.count) templates loaded in \(String(format: "%.0f", Double(monotonicNanoseconds() - started) / 1e6)) ms")
            } catch {
                state.withLock { $0.loading = false }
                logger.error("face gallery: loading failed: \(error)")
            }
        }
    }

    func current(_ store: Store) throws -> FaceGallerySet {
        let (gallery, stale, generation, loading, loaded, total) = state.withLock { s in
            (s.gallery, s.stale, s.generation, s.loading, s.loaded, s.total)
        }
        guard let gallery else {
            if !loading { startLoading(store) }
            throw RPCError(code: ErrorReason.notInitialized.code, message: "the face gallery is loading (\(loaded) of \(total) templates)",
                           data: ["reason": "loading", "loaded": .int(Int64(loaded)), "total": .int(Int64(total)),
                                  "hint": "identify is available once the gallery is loaded; see daemon.status face_gallery"])
        }
        guard stale else { return gallery }
        if gallery.count < Self.rebuildInPlaceBelow {
            let fresh = try build(store, progress: false)
            state.withLock { s in
                if s.generation == generation {
                    s.gallery = fresh
                    s.stale = false
                }
            }
            return fresh
        }
        startLoading(store)
        return gallery
    }

    private func build(_ store: Store, progress: Bool = true) throws -> FaceGallerySet {
        let total = try store.templates.count(modality: .face)
        if progress { state.withLock { $0.total = total } }
        var gallery = FaceGallerySet()
        gallery.reserveCapacity(total)
        var after: Int64 = 0
        while true {
            let page = try store.templates.payloadPage(modality: .face, after: after, limit: Self.pageSize)
            guard let last = page.last else { break }
            for (key, data) in page {
                // A template that does not decode is skipped (face.list still shows it).
                if let template = try? FaceTemplate(data: data) { gallery.append(key: key, template) }
            }
            after = last.key
            if progress { state.withLock { $0.loaded = gallery.count } }
        }
        return gallery
    }
}

/// The exact templates of a gallery, read from the sealed store for the re-score.
struct StoredFaceTemplates: FaceTemplateSource {
    let store: Store

    func templates(_ keys: [Int64]) throws -> [Int64: (user: String, template: FaceTemplate)] {
        var out: [Int64: (user: String, template: FaceTemplate)] = [:]
        for (key, user, data) in try store.templates.payloads(keys: keys, modality: .face) {
            if let t = try? FaceTemplate(data: data) { out[key] = (user, t) }
        }
        return out
    }
}
