import BiometricCamera
import BiometricCore
import BiometricFinger
import BiometricProtocol
import BiometricStore
import CSystemd
import Dispatch
import Foundation
import Logging
import Synchronization

/// Owns the finger pipeline's shared parts: the hand models (MediaPipe palm detector and hand
/// landmarks, loaded on the first capture that needs them, never when the finger modality is
/// off), the print side (extraction, matching, 1:N ranking), and runs finger work on the shared
/// analysis pool. Four-finger capture needs the hand models; the print side one optional model
/// file, the learned minutiae extractor (leader_cv46.onnx). With it, new templates are version 3
/// (learned minutiae); without it, the classical stages make version 2, and finger methods still
/// work on a machine without any model. Version-1/2 references are only ever matched with
/// classical minutiae of the probe (extracted again for them), version-3 ones with learned
/// minutiae: never across (FingerMatcher).
final class FingerService: Sendable {
    let matcher = FingerMatcher()
    private let pool: AnalysisPool
    private let threads: Int
    /// Per-camera distance calibration from the config (camera id or path → calibration).
    let optics: [String: DistanceCalibration]
    private let catalog: ModelCatalog?
    /// The hand models once loaded (or why they could not be).
    private let handModels = Mutex<Result<HandModels, HandModelError>?>(nil)

    /// False when biometricd.conf's `modalities` leaves finger out.
    let enabled: Bool

    private let logger: Logger?
    /// The extractor, made on first use: the learned model is looked up (and its checksum
    /// awaited) then, on a pool thread, never on the event loop.
    private let made = Mutex<FingerprintExtractor?>(nil)

    init(pool: AnalysisPool, threads: Int, optics: [String: DistanceCalibration], enabled: Bool = true,
         catalog: ModelCatalog? = nil, logger: Logger? = nil) {
        self.enabled = enabled
        self.pool = pool
        self.threads = max(1, threads)
        self.optics = optics
        self.catalog = catalog
        self.logger = logger
    }

    /// The hand models, loaded once (waits for their checksums). Mode fingers cannot run without
    /// them (not_initialized); thumb and single can (a finger held close on its own).
    func handModels(for mode: CaptureMode) throws -> HandModels? {
        let loaded = handModels.withLock { state -> Result<HandModels, HandModelError> in
            if let state { return state }
            let result: Result<HandModels, HandModelError>
            if let catalog, let palm = catalog.path(of: HandModels.palmFile), let landmark = catalog.path(of: HandModels.landmarkFile) {
                result = Result { () throws(HandModelError) in try HandModels(palm: palm, landmark: landmark) }
            } else {
                let names = [HandModels.palmFile, HandModels.landmarkFile]
                let corrupt = names.filter { catalog?.status.corrupt.contains($0) ?? false }
                result = .failure(.unavailable(corrupt.isEmpty
                    ? "the hand models (\(names.joined(separator: ", "))) are not installed"
                    : "\(corrupt.joined(separator: ", ")) fails its checksum"))
            }
            state = result
            return result
        }
        switch loaded {
        case .success(let models): return models
        case .failure(let error):
            guard mode == .fingers else { return nil }
            throw RPCError.app(.notInitialized, "four-finger capture needs the hand models: \(error)",
                               hint: "install them with scripts/setup.sh (scripts/fetch-models.sh copies them from ../shared/models/hands)",
                               details: ["modality": "finger"])
        }
    }

    /// The daemon's extractor: learned minutiae when leader_cv46.onnx is installed (and passes its
    /// sha256), else classical. Blocks on the model's checksum the first time: call it from the pool.
    var extractor: FingerprintExtractor {
        if let e = made.withLock({ $0 }) { return e }
        var learned: LearnedMinutiae?
        if let catalog, let path = catalog.path(of: LearnedMinutiae.modelName) {
            do {
                let model = try LearnedMinutiae(path: path)
                logger?.info("finger: learned minutiae (\(LearnedMinutiae.modelName)), convolutions in \(model.precision == .bfloat16 ? "bfloat16 (this CPU has it)" : "float32")")
                learned = model
            } catch {
                logger?.warning("finger: \(error); using the classical extractor (version-2 templates)")
            }
        } else if catalog != nil {
            logger?.notice("finger: \(LearnedMinutiae.modelName) not installed (or failing its sha256): classical minutiae, version-2 templates (scripts/setup.sh installs it)")
        }
        return made.withLock { existing in
            if let existing { return existing }
            let e = FingerprintExtractor(learned: learned)
            existing = e
            return e
        }
    }

    /// Which extractor's templates new enrolments get.
    var primarySource: MinutiaeSource { extractor.minutiaeSource }

    /// The configured calibration of a camera (by id or device path), nil for the default one.
    func optics(for device: any CameraDevice) -> DistanceCalibration? {
        optics[device.id] ?? optics[device.description.path]
    }

    /// Runs `work` on the analysis pool (bounded by analysis_threads; waiting is cancellable).
    func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        guard enabled else {
            throw RPCError.app(.notInitialized, "finger is not enabled on this machine",
                               hint: "add finger to 'modalities' in biometricd.conf", details: ["modality": "finger"])
        }
        return try await pool.run(work)
    }

    /// After this long without finger work the learned extractor's networks are freed (~20 MB
    /// each; the next print makes one again, ~350 ms). An enrolment's captures and a login's
    /// verify come within seconds of each other; between logins the daemon gives the memory back.
    static let idleReleaseSeconds = 30.0

    private let idle = IdleRelease(after: FingerService.idleReleaseSeconds)

    /// Frees the learned extractor's networks that no extraction is using (IdleRelease's action).
    private func releaseIdleNetworks() {
        guard let learned = made.withLock({ $0?.learned }) else { return }
        let freed = learned.releaseIdleNetworks()
        if freed > 0 { logger?.debug("finger: freed \(freed) learned-extractor network(s) after \(Int(Self.idleReleaseSeconds)) s without finger work") }
    }

    /// Runs `body`, which extracts the prints of one call on the pool (a frame's fingertips), as
    /// one batch of the learned extractor: its networks keep their prepared convolutions and
    /// buffers from print to print and drop them when the batch ends (LearnedMinutiae.beginBatch;
    /// outside a batch every print pays for them again). The extractor is made first if no call has
    /// made it yet, on the pool.
    func batch<T>(_ body: () async throws -> T) async throws -> T {
        let learned: LearnedMinutiae?
        if let made = made.withLock({ $0 }) {
            learned = made.learned
        } else {
            learned = try await run { self.extractor.learned }
        }
        learned?.beginBatch()
        defer { learned?.endBatch() }
        return try await body()
    }

    /// The best-matching references for `probe`, best first, one per user (at most `limit`
    /// users), on the SPEC §4 score scale. Large galleries go through the pre-selection index
    /// (small ones, e.g. one user's fingers, are searched exhaustively by it). 1:N runs on
    /// `analysis_threads` threads: call it from the pool (`run`), not from a task.
    ///
    /// `scale`: how the probe's size is known. A camera print's (`.fromRidges`) is searched at the
    /// sizes of `FingerMatcher.ScaleSearch`, and its scores carry that search's penalty, so a
    /// score means the same FAR whichever path made it.
    func rank(_ probes: [MinutiaeSource: FingerTemplate], among gallery: FingerGallery, scale: PrintScale, limit: Int = 5)
        -> [(reference: FingerReference, score: Double)]
    {
        let references = gallery.references
        let search = FingerMatcher.ScaleSearch.for(scale)
        // Each source's references are searched with the probe of that source (both scores are on
        // the SPEC scale, so the hits merge); a source without a probe is not searched.
        var hits: [(index: Int, score: Double)] = []
        for part in gallery.parts {
            guard let probe = probes[part.source] else { continue }
            for prepared in matcher.prepare(probe, sizes: search) {
                // A user has up to ten fingers enrolled: ask for enough hits to find `limit` users.
                hits += part.index.search(prepared, limit: limit * 10, threads: threads).map {
                    (part.positions[$0.index], search.adjusted($0.score))
                }
            }
        }
        hits.sort { $0.score != $1.score ? $0.score > $1.score : $0.index < $1.index }
        var users = Set<String>()
        var ranked: [(reference: FingerReference, score: Double)] = []
        for hit in hits where users.insert(references[hit.index].user).inserted {
            ranked.append((references[hit.index], hit.score))
            if ranked.count == limit { break }
        }
        return ranked
    }

    /// The probe templates `gallery` needs: the print extracted by the extractor of each source
    /// its references have (the classical one again for version-1/2 references). A source whose
    /// extractor is not available (version-3 references without the learned model) is left out.
    func probes(_ image: FingerprintImage, position: FingerPosition?, for sources: Set<MinutiaeSource>) throws
        -> [MinutiaeSource: FingerTemplate]
    {
        var out: [MinutiaeSource: FingerTemplate] = [:]
        for source in sources.sorted(by: { $0.rawValue < $1.rawValue }) {
            guard let e = extractor.producing(source) else {
                logger?.warning("finger: version-3 references need \(LearnedMinutiae.modelName), which is not installed; they are not matched")
                continue
            }
            out[source] = try extract(image, position: position, with: e)
        }
        return out
    }

    // MARK: Uploaded images and templates

    /// Decodes an uploaded print image (PNG, JPEG, TIFF, PGM, WSQ) at `dpi`. A bad WSQ file is
    /// `invalid_params` on the field with the codec's reason (truncated, too large, bad marker…).
    static func decodePrint(_ base64: String, dpi: Int, field: String) throws -> FingerprintImage {
        guard let data = Data(base64Encoded: base64), !data.isEmpty else {
            throw RPCError.invalidParams(field: field, "'\(field)' must be a base64 PNG, JPEG, TIFF, PGM or WSQ image")
        }
        do {
            return try FingerprintExtractor.decodeImage([UInt8](data), ppi: dpi)
        } catch {
            throw RPCError.invalidParams(field: field, "'\(field)': \(error)")
        }
    }

    /// Extracts a template, mapping "no usable ridges" to bad_capture.
    func extract(_ image: FingerprintImage, position: FingerPosition? = nil, with chosen: FingerprintExtractor? = nil) throws -> FingerTemplate {
        // Every extraction, whichever method asked, passes here: the idle release counts from it.
        // What an extraction freed under 4 MiB (`Daemon.mmapThreshold`) stays in the pool
        // threads' heap arenas, which glibc trims only at their top: malloc_trim hands their free
        // pages back (0.3–0.8 ms a call, measured), ~4 MiB after a hand's prints.
        defer {
            _ = csd_release_free_memory()
            idle.workEnded { [weak self] in self?.releaseIdleNetworks() }
        }
        do {
            return try (chosen ?? extractor).extract(image, position: position)
        } catch {
            guard error.isUnusablePrint else { throw RPCError.internal("fingerprint extraction failed: \(error)") }
            // The count travels as data too, so a client can tell "too few minutiae" (press the
            // whole fingertip, a larger area) from "no ridges at all" without parsing the message.
            var details: [String: JSONValue] = [:]
            if case .tooFewMinutiae(let found, let required) = error {
                details["minutiae"] = .int(Int64(found))
                details["minimum_minutiae"] = .int(Int64(required))
            }
            throw RPCError.app(.badCapture, "no usable fingerprint: \(error)",
                               hint: "use a sharper print with visible ridges over the whole fingertip (and the right dpi)",
                               details: details)
        }
    }

    /// A template, or an image still to extract (finger.match extracts it with the extractor of the
    /// other side's template, so the two are compared under one set of rules).
    enum MatchInput {
        case template(FingerTemplate)
        case image(FingerprintImage)
    }

    /// finger.match: both sides' templates (images extracted with the extractor the other side's
    /// template needs), or `invalid_params` (problem `template_version`) for a version-3 template
    /// against a version-1/2 one: their minutiae come from different extractors and no rules
    /// compare them.
    func matchPair(_ probe: MatchInput, _ reference: MatchInput) throws -> (FingerTemplate, FingerTemplate) {
        func extracted(_ image: FingerprintImage, for other: FingerTemplate?, field: String) throws -> FingerTemplate {
            guard let other else { return try extract(image) }
            guard let e = extractor.producing(other.minutiaeSource) else {
                throw RPCError.app(.notInitialized, "matching a version-3 finger template needs the learned minutiae model",
                                   hint: "install \(LearnedMinutiae.modelName) (scripts/setup.sh)",
                                   details: ["model": .string(LearnedMinutiae.modelName)])
            }
            return try extract(image, with: e)
        }
        switch (probe, reference) {
        case (.template(let a), .template(let b)):
            guard a.minutiaeSource == b.minutiaeSource else {
                throw RPCError(code: RPCError.invalidParamsCode,
                               message: "'reference': a version-\(b.version) finger template cannot be compared with a version-\(a.version) one (different minutiae extractors); extract both from their images again",
                               data: .object(["reason": "invalid_params", "field": "reference", "problem": "template_version"]))
            }
            return (a, b)
        case (.template(let a), .image(let b)): return (a, try extracted(b, for: a, field: "reference"))
        case (.image(let a), .template(let b)): return (try extracted(a, for: b, field: "probe"), b)
        case (.image(let a), .image(let b)): return (try extract(a), try extract(b))
        }
    }

    /// A base64 finger template (biometricd or ISO 19794-2) or a print image (decoded, not extracted).
    func templateOrImage(_ base64: String, dpi: Int, field: String) throws -> MatchInput {
        guard let data = Data(base64Encoded: base64), !data.isEmpty else {
            throw RPCError.invalidParams(field: field, "'\(field)' is not base64")
        }
        let bytes = [UInt8](data)
        if FingerTemplate.looksLikeTemplate(bytes) {
            do {
                return .template(try FingerTemplate(decoding: bytes))
            } catch {
                throw RPCError.invalidParams(field: field, "'\(field)' is not a valid finger template: \(error)")
            }
        }
        if ISO19794_2.looksLikeRecord(bytes) {
            do {
                guard let first = try ISO19794_2.decode(bytes, as: primarySource).first else {
                    throw RPCError.invalidParams(field: field, "'\(field)': the ISO 19794-2 record holds no finger view")
                }
                return .template(first)
            } catch let error as RPCError {
                throw error
            } catch {
                throw RPCError.invalidParams(field: field, "'\(field)' is not a valid ISO 19794-2 record: \(error)")
            }
        }
        return .image(try Self.decodePrint(base64, dpi: dpi, field: field))
    }
}
