import BiometricCamera
import BiometricCore
import BiometricFinger
import BiometricProtocol
import BiometricStore
import Dispatch
import Foundation
import Synchronization

/// Owns the finger pipeline's shared parts: the hand models (MediaPipe palm detector and hand
/// landmarks, loaded on the first capture that needs them, never when the finger modality is
/// off), the print side (extraction, matching, 1:N ranking), and runs finger work on the shared
/// analysis pool. The print side needs no model file; four-finger capture needs the hand models.
final class FingerService: Sendable {
    let extractor = FingerprintExtractor()
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

    init(pool: AnalysisPool, threads: Int, optics: [String: DistanceCalibration], catalog: ModelCatalog? = nil, enabled: Bool = true) {
        self.enabled = enabled
        self.pool = pool
        self.threads = max(1, threads)
        self.optics = optics
        self.catalog = catalog
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

        /// The best-matching references for `probe`, best first, one per user (at most `limit`
    /// users), on the SPEC §4 score scale. Large galleries go through the pre-selection index
    /// (small ones, e.g. one user's fingers, are searched exhaustively by it). 1:N runs on
    /// `analysis_threads` threads: call it from the pool (`run`), not from a task.
    func rank(_ probe: FingerTemplate, among gallery: FingerGallery, limit: Int = 5)
        -> [(reference: FingerReference, score: Double)]
    {
        let references = gallery.references
        guard let prepared = matcher.prepare(probe), !references.isEmpty else { return [] }
        // A user has up to ten fingers enrolled: ask for enough hits to find `limit` users.
        let hits = gallery.index.search(prepared, limit: limit * 10, threads: threads)
        var users = Set<String>()
        var ranked: [(reference: FingerReference, score: Double)] = []
        for hit in hits where users.insert(references[hit.index].user).inserted {
            ranked.append((references[hit.index], hit.score))
            if ranked.count == limit { break }
        }
        return ranked
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
    func extract(_ image: FingerprintImage, position: FingerPosition? = nil) throws -> FingerTemplate {
        do {
            return try extractor.extract(image, position: position)
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

    /// A base64 finger template (biometricd or ISO 19794-2) or a print image.
    func templateOrImage(_ base64: String, dpi: Int, field: String) throws -> FingerTemplate {
        guard let data = Data(base64Encoded: base64), !data.isEmpty else {
            throw RPCError.invalidParams(field: field, "'\(field)' is not base64")
        }
        let bytes = [UInt8](data)
        if FingerTemplate.looksLikeTemplate(bytes) {
            do {
                return try FingerTemplate(decoding: bytes)
            } catch {
                throw RPCError.invalidParams(field: field, "'\(field)' is not a valid finger template: \(error)")
            }
        }
        if ISO19794_2.looksLikeRecord(bytes) {
            do {
                guard let first = try ISO19794_2.decode(bytes).first else {
                    throw RPCError.invalidParams(field: field, "'\(field)': the ISO 19794-2 record holds no finger view")
                }
                return first
            } catch let error as RPCError {
                throw error
            } catch {
                throw RPCError.invalidParams(field: field, "'\(field)' is not a valid ISO 19794-2 record: \(error)")
            }
        }
        return try extract(try Self.decodePrint(base64, dpi: dpi, field: field))
    }
}
