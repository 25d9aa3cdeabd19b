import BiometricCore
import CFingerVision
import Dispatch
import Synchronization

/// A template made ready for matching: its Minutia Cylinder-Codes (the local descriptor of every
/// minutia) are computed once, so 1:N search only pays for comparisons. Immutable after creation
/// and only read while matching, hence safe to share between threads.
public final class PreparedPrint: @unchecked Sendable {
    public let template: FingerTemplate
    /// The C++ model (cylinders); freed with this object. Never mutated after init.
    let model: OpaquePointer

    /// The coarse 1:N code (a Bloom filter of minutia triplets, see `PrintIndex`); 512 bytes.
    public let code: [UInt64]

    /// Minutiae with a valid cylinder (enough neighbours inside the print).
    public var cylinderCount: Int { Int(cvis_print_model_cylinders(model)) }

    init?(_ template: FingerTemplate) {
        var raw = template.minutiae.map {
            cvis_minutia(x: Float($0.x), y: Float($0.y), angle: Float($0.angle),
                         kind: UInt8($0.kind == .ending ? CVIS_MINUTIA_ENDING.rawValue : CVIS_MINUTIA_BIFURCATION.rawValue),
                         quality: UInt8($0.quality))
        }
        var status = CVIS_OK
        let field = template.orientationField
        let cells = field?.cells ?? []
        guard let model = raw.withUnsafeMutableBufferPointer({ m in
            cells.withUnsafeBufferPointer { f in
                cvis_print_model_make_with_field(m.baseAddress, Int32(m.count), field == nil ? nil : f.baseAddress,
                                                 Int32(field?.width ?? 0), Int32(field?.height ?? 0), &status)
            }
        }) else {
            return nil
        }
        var code = [UInt64](repeating: 0, count: Int(CVIS_PRINT_CODE_WORDS))
        status = raw.withUnsafeBufferPointer { m in
            code.withUnsafeMutableBufferPointer { cvis_print_index_code(m.baseAddress, Int32(m.count), $0.baseAddress) }
        }
        guard status == CVIS_OK else {
            cvis_print_model_free(model)
            return nil
        }
        self.template = template
        self.model = model
        self.code = code
    }

    deinit { cvis_print_model_free(model) }
}

/// Compares fingerprint templates. Local structures (MCC cylinders: which neighbours lie where
/// around each minutia, relative to its direction) make it independent of rotation and
/// translation and tolerant of partial overlap (any rotation: the best local pairs vote for the
/// global rotation, and only pairs within 90° of it are kept); a relaxation step keeps the pairs
/// whose mutual geometry agrees (distances, relative angles), which tolerates skin distortion
/// locally but rejects coincidental look-alikes. The hot loop is C++
/// (CFingerVision/print_match.cpp), compiled -O2 even in debug builds, so tests and the daemon
/// see the same speed.
///
/// Templates are only compared with templates of the same `MinutiaeSource`: classical minutiae
/// (versions 1 and 2) with the classical calibration they were fitted on, learned minutiae
/// (version 3) with theirs. A comparison across sources has similarity 0 and score 0 — never
/// matched, so an old template is never judged by the new rules; the daemon extracts the probe
/// with the reference's extractor instead (FingerService).
public struct FingerMatcher: Sendable {
    /// The classical templates' calibration (versions 1 and 2).
    public let calibration: FARCalibration
    /// The learned templates' calibration (version 3).
    public let learnedCalibration: FARCalibration

    public init(calibration: FARCalibration = FingerCalibration.fvcB,
                learnedCalibration: FARCalibration = FingerLearnedCalibration.fvcB) {
        self.calibration = calibration
        self.learnedCalibration = learnedCalibration
    }

    /// The calibration of comparisons between templates of `source`.
    public func calibration(for source: MinutiaeSource) -> FARCalibration {
        source == .learned ? learnedCalibration : calibration
    }

    /// Prepares a template for repeated matching (nil only when memory runs out).
    public func prepare(_ template: FingerTemplate) -> PreparedPrint? { PreparedPrint(template) }

    /// Raw similarity 0–1 (the matcher's own scale; see `score` for the calibrated one); 0 across
    /// minutiae sources.
    public func similarity(_ probe: PreparedPrint, _ reference: PreparedPrint) -> Double {
        guard probe.template.minutiaeSource == reference.template.minutiaeSource else { return 0 }
        return cvis_print_match(probe.model, reference.model)
    }

    /// What a comparison rests on (benchmarks, tests, explaining a score).
    public struct Comparison: Sendable, Equatable {
        /// The raw similarity (`similarity(_:_:)`).
        public var similarity: Double
        /// Minutiae in the probe and the reference.
        public var minutiae: [Int]
        /// Minutiae with a valid cylinder (enough neighbours inside the print) in each.
        public var cylinders: [Int]
        /// Consistent pairs the similarity sums (at most 12; the sum is always divided by 12, so
        /// fewer pairs — a sparse template, a small overlap — mean a proportionally lower value).
        public var pairs: Int
        /// Overlapping orientation-field cells compared (0 when either template has no field) and
        /// their mean agreement 0–1, which scales the similarity — and raises it by up to 25 % when
        /// above 0.92 over 100 or more cells (1 when not compared; a comparison without fields is
        /// scaled by 0.7 instead, print_match.cpp).
        public var fieldCells: Int = 0
        public var orientation: Double = 1
    }

    public func compare(_ probe: PreparedPrint, _ reference: PreparedPrint) -> Comparison {
        var info = cvis_print_match_info()
        guard probe.template.minutiaeSource == reference.template.minutiaeSource,
              cvis_print_match_details(probe.model, reference.model, &info) == CVIS_OK else {
            return Comparison(similarity: 0, minutiae: [0, 0], cylinders: [0, 0], pairs: 0)
        }
        return Comparison(similarity: info.similarity, minutiae: [Int(info.minutiae_a), Int(info.minutiae_b)],
                          cylinders: [Int(info.cylinders_a), Int(info.cylinders_b)], pairs: Int(info.pairs),
                          fieldCells: Int(info.field_cells), orientation: info.orientation)
    }

    /// The SPEC §4 score, 0–100 (−12·log10 FAR): 48 ↔ FAR 0.01 %.
    public func score(_ probe: PreparedPrint, _ reference: PreparedPrint) -> Double {
        score(similarity: similarity(probe, reference), source: reference.template.minutiaeSource)
    }

    /// The SPEC §4 score of a similarity between two templates of `source`.
    public func score(similarity: Double, source: MinutiaeSource) -> Double {
        similarity <= 0 ? 0 : calibration(for: source).score(similarity)
    }

    /// The SPEC §4 score of two templates (prepares both; use `prepare` for repeated matching).
    public func score(probe: FingerTemplate, reference: FingerTemplate) -> Double {
        guard let p = prepare(probe), let r = prepare(reference) else { return 0 }
        return score(p, r)
    }

    /// 1:N: the `limit` best references for `probe`, best first. With `threads` > 1 the gallery
    /// is split into that many slices searched concurrently (matching only reads the prepared
    /// prints, so no locking is needed); the caller decides how many cores a search may take.
    public func search(_ probe: PreparedPrint, in gallery: [PreparedPrint], limit: Int = 5,
                       threads: Int = 1) -> [(index: Int, score: Double)] {
        let slices = max(1, min(threads, gallery.count / 256 + 1))
        let chunk = (gallery.count + slices - 1) / max(1, slices)
        let partial = Mutex<[(slice: Int, found: [Ranked])]>([])
        let work = { @Sendable (slice: Int) in
            let range = min(gallery.count, slice * chunk)..<min(gallery.count, (slice + 1) * chunk)
            let found = Self.best(limit, of: range.lazy.map { self.ranked(probe, gallery[$0], index: $0) })
            partial.withLock { $0.append((slice, found)) }
        }
        if slices == 1 { work(0) } else { DispatchQueue.concurrentPerform(iterations: slices, execute: work) }
        // Merged in slice order, so equal keys keep the lowest index as in a serial scan
        // (not whichever slice finished first).
        let merged = partial.withLock { $0 }.sorted { $0.slice < $1.slice }.flatMap(\.found)
        return Self.best(limit, of: merged).map { ($0.index, $0.score) }
    }

    /// One comparison of a search: its SPEC score and the key it is ranked by — −12·log10 FAR
    /// before rounding and capping (a gallery may hold both minutiae sources, whose similarities
    /// differ in scale; the score itself is rounded to 0.1 and capped at 100, so it would tie).
    struct Ranked: Sendable {
        var index: Int
        var key: Double
        var score: Double
    }

    func ranked(_ probe: PreparedPrint, _ reference: PreparedPrint, index: Int) -> Ranked {
        let s = similarity(probe, reference)
        guard s > 0 else { return Ranked(index: index, key: 0, score: 0) }
        let calibration = calibration(for: reference.template.minutiaeSource)
        return Ranked(index: index, key: -12 * calibration.log10FAR(s), score: calibration.score(s))
    }

    /// The `limit` highest keys, best first, equal keys in arrival order (a small insertion list:
    /// limit is tiny).
    static func best<S: Sequence>(_ limit: Int, of candidates: S) -> [Ranked] where S.Element == Ranked {
        var best: [Ranked] = []
        for r in candidates where best.count < limit || r.key > best[best.count - 1].key {
            let at = best.firstIndex { $0.key < r.key } ?? best.count
            best.insert(r, at: at)
            if best.count > limit { best.removeLast() }
        }
        return best
    }
}


