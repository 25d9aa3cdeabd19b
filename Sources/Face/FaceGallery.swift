import CSearch
import Dispatch
import Synchronization

/// Where the exact (float32) templates of a gallery live: the daemon reads them from the sealed
/// store, tests and benchmarks from memory. Only the few candidates a search re-scores are asked for.
public protocol FaceTemplateSource: Sendable {
    /// The templates stored under `keys`, with their users; keys no longer stored (deleted since
    /// the gallery was built) are left out, so a deleted template is never a candidate.
    func templates(_ keys: [Int64]) throws -> [Int64: (user: String, template: FaceTemplate)]
}

/// All enrolled face templates, compact, for 1:N search at up to millions of templates.
///
/// Each template is kept as 128 int8 codes with its own scale (144 bytes with its error bound
/// and key, instead of 512 for float32), so a search streams a quarter of the memory. The int8 scores are only a filter: each
/// row also keeps a bound on its quantisation error, the best candidates are re-scored exactly from
/// their float32 templates, and the filter widens until no row left out could still reach the top
/// `limit` users. The answer is therefore the float32 search's answer (`exhaustiveRank`), not an
/// approximation of it (tested on LFW embeddings).
public struct FaceGallery: Sendable {
    public static let dimensions = FaceTemplate.dimensions

    /// Which distance the gallery orders by: dlib's (128 codes a row, any template) or the fused
    /// one of two version-2 templates (the 256-d `fusedVector`, 256 codes a row; v1 rows and
    /// probes without the second embedding are left out). Docs/face.md "Two networks, one score".
    public enum Metric: Sendable, Equatable {
        case dlib
        case fused

        /// The vector whose Euclidean distance is this metric, nil when the template has none.
        func vector(_ t: FaceTemplate) -> [Float]? { self == .dlib ? t.embedding : t.fusedVector }
        func distance(_ a: FaceTemplate, _ b: FaceTemplate) -> Double? { self == .dlib ? a.distance(to: b) : a.fusedDistance(to: b) }
        public var width: Int { self == .dlib ? FaceTemplate.dimensions : FaceTemplate.dimensions + FaceTemplate.secondDimensions }
    }

    public let metric: Metric
    /// Codes per row (128, or 256 for the fused metric).
    public var width: Int { metric.width }

    /// count × width codes: value ≈ code × step.
    private var codes: [Int8] = []
    /// Per row: the quantisation step (max |value| / 127).
    private var steps: [Float] = []
    /// Per row: ‖template − code × step‖₂, the error the filter must allow for.
    private var errors: [Float] = []
    /// Per row: the source's key of the exact template.
    public private(set) var keys: [Int64] = []
    /// The largest and smallest ‖template‖ (1 for normalised templates, up to float rounding).
    private var maxNorm: Float = 0
    private var minNorm: Float = .infinity

    public init(metric: Metric = .dlib) { self.metric = metric }

    public init<S: Sequence>(_ items: S, metric: Metric = .dlib) where S.Element == (key: Int64, template: FaceTemplate) {
        self.metric = metric
        reserveCapacity(items.underestimatedCount)
        for item in items { append(key: item.key, item.template) }
    }

    public var count: Int { keys.count }

    /// Bytes held per template (codes, step, error bound, key) of a dlib gallery.
    public static let bytesPerTemplate = dimensions + 4 + 4 + 8
    /// Bytes held per row of this gallery.
    public var bytesPerRow: Int { width + 4 + 4 + 8 }

    public mutating func reserveCapacity(_ n: Int) {
        codes.reserveCapacity(n * width)
        steps.reserveCapacity(n)
        errors.reserveCapacity(n)
        keys.reserveCapacity(n)
    }

    /// Adds a template's row (a fused gallery skips a v1 template: it has no fused vector).
    public mutating func append(key: Int64, _ template: FaceTemplate) {
        guard let v = metric.vector(template) else { return }
        let peak = v.reduce(Float(0)) { max($0, abs($1)) }
        let step = peak > 0 ? peak / 127 : 1
        var error: Float = 0, norm: Float = 0
        for x in v {
            let code = Int8(max(-127, min(127, (x / step).rounded())))
            codes.append(code)
            let e = x - Float(code) * step
            error += e * e
            norm += x * x
        }
        steps.append(step)
        // Rounded up a little: the bound must hold after float rounding.
        errors.append(error.squareRoot() * 1.0001 + 1e-7)
        keys.append(key)
        maxNorm = max(maxNorm, norm.squareRoot())
        minNorm = min(minNorm, norm.squareRoot())
    }

    public struct Candidate: Sendable, Equatable {
        public var user: String
        public var distance: Double
        public init(user: String, distance: Double) {
            self.user = user
            self.distance = distance
        }
    }

    /// What a search did (for benchmarks and logs).
    public struct SearchStats: Sendable {
        public var rescored = 0
        public var passes = 0
        public init(rescored: Int = 0, passes: Int = 0) {
            self.rescored = rescored
            self.passes = passes
        }
    }

    /// The best distance per user, best first, at most `limit` users: the same answer as
    /// `exhaustiveRank` over the exact templates. `threads` slices of the gallery are scanned at once.
    public func rank(_ probe: FaceTemplate, limit: Int = 5, exact source: some FaceTemplateSource, threads: Int = 1,
                     stats: UnsafeMutablePointer<SearchStats>? = nil) throws -> [Candidate]
    {
        guard count > 0, limit > 0, let vector = metric.vector(probe) else { return [] }
        let quantised = Self.quantiseProbe(vector)
        // Enough rows for `limit` users with a few templates each, plus room for the filter's slack.
        var shortlist = min(count, 64 + 8 * limit)
        var passes = 0
        while true {
            passes += 1
            let (rows, nextBound) = candidates(quantised, keep: shortlist, threads: threads)
            let exact = try source.templates(rows.map { keys[$0] })
            var best: [String: Double] = [:]
            for row in rows {
                guard let found = exact[keys[row]], let d = metric.distance(probe, found.template) else { continue }
                best[found.user] = min(best[found.user] ?? .infinity, d)
            }
            let ranked = Self.sorted(best, limit: limit)
            // Done when every row left out is provably farther than the last user kept, or none is left.
            let last = ranked.count == limit ? ranked[limit - 1].distance : .infinity
            if shortlist >= count || nextBound > last * last {
                stats?.pointee = SearchStats(rescored: rows.count, passes: passes)
                return ranked
            }
            shortlist = min(count, shortlist * 4)
        }
    }

    /// The reference answer: every exact template scored (what the int8 filter must reproduce).
    public static func exhaustiveRank(_ probe: FaceTemplate, _ items: [(user: String, template: FaceTemplate)],
                                      limit: Int = 5, metric: Metric = .dlib) -> [Candidate]
    {
        var best: [String: Double] = [:]
        for item in items {
            guard let d = metric.distance(probe, item.template) else { continue }
            best[item.user] = min(best[item.user] ?? .infinity, d)
        }
        return sorted(best, limit: limit)
    }

    static func sorted(_ best: [String: Double], limit: Int) -> [Candidate] {
        let all = best.map { Candidate(user: $0.key, distance: $0.value) }
        return Array(all.sorted { $0.distance != $1.distance ? $0.distance < $1.distance : $0.user < $1.user }.prefix(limit))
    }

    // MARK: The filter

    struct QuantisedProbe {
        var codes: [Int16]
        var step: Float
        /// ‖probe − codes × step‖₂
        var error: Float
        var norm: Float
    }

    static func quantiseProbe(_ v: [Float]) -> QuantisedProbe {
        let peak = v.reduce(Float(0)) { max($0, abs($1)) }
        let step = peak > 0 ? peak / 32767 : 1
        var codes = [Int16](repeating: 0, count: v.count)
        var error: Float = 0
        for (i, x) in v.enumerated() {
            codes[i] = Int16(max(-32767, min(32767, (x / step).rounded())))
            let e = x - Float(codes[i]) * step
            error += e * e
        }
        let norm = v.reduce(Float(0)) { $0 + $1 * $1 }.squareRoot()
        return QuantisedProbe(codes: codes, step: step, error: error.squareRoot() * 1.0001 + 1e-7, norm: norm)
    }

    /// The `keep` rows with the smallest lower bound on their squared distance, and the smallest
    /// lower bound among the rows not kept (+∞ when all are kept).
    ///
    /// With q = p·s_q + e_q and g = c·s_g + e_g: q·g = (p·c)·s_q·s_g + (p·s_q)·e_g + e_q·g, so
    /// |q·g − approx| ≤ (1 + ‖e_q‖)·‖e_g‖ + ‖e_q‖·max‖g‖, and ‖q − g‖² = ‖q‖² + ‖g‖² − 2 q·g.
    private func candidates(_ probe: QuantisedProbe, keep: Int, threads: Int) -> (rows: [Int], nextBound: Double) {
        let slices = max(1, min(threads, count / 16_384))
        let chunk = (count + slices - 1) / slices
        let found = Mutex<[(Float, Int)]>([])
        // ‖q‖² + ‖g‖² ≥ ‖q‖² + minNorm², less a margin for the float rounding of exact distances.
        let norms = probe.norm * probe.norm + minNorm * minNorm - 1e-4
        let probeError = probe.error
        // bound = norms − 2·(approx + (1 + ‖e_q‖)·‖e_g‖ + ‖e_q‖·max‖g‖)
        let offset = norms - 2 * probeError * maxNorm
        codes.withUnsafeBufferPointer { codes in
            probe.codes.withUnsafeBufferPointer { p in
                steps.withUnsafeBufferPointer { steps in
                    errors.withUnsafeBufferPointer { errors in
                        // Read-only views shared by the slices (each reads its own rows).
                        let shared = UncheckedSendablePointers(codes: codes, probe: p, steps: steps, errors: errors)
                        let scan = { @Sendable (slice: Int) in
                            let (codes, p, steps, errors) = (shared.codes, shared.probe, shared.steps, shared.errors)
                            let lo = slice * chunk, hi = min(count, lo + chunk)
                            guard lo < hi else { return }
                            // The kept rows of this slice: lower bounds (smaller is better).
                            var heap = BoundedBest(capacity: keep + 1)
                            withUnsafeTemporaryAllocation(of: Float.self, capacity: 4096) { bounds in
                                let out = bounds.baseAddress!
                                var start = lo
                                while start < hi {
                                    let n = min(4096, hi - start)
                                    csearch_int8_bounds(codes.baseAddress! + start * width, steps.baseAddress! + start,
                                                        errors.baseAddress! + start, n, width, p.baseAddress!,
                                                        probe.step, 1 + probeError, offset, out)
                                    for k in 0..<n where out[k] < heap.worst { heap.offer(out[k], start + k) }
                                    start += n
                                }
                            }
                            let local = heap.items
                            found.withLock { $0.append(contentsOf: local) }
                        }
                        if slices == 1 { scan(0) } else { DispatchQueue.concurrentPerform(iterations: slices, execute: scan) }
                    }
                }
            }
        }
        let all = found.withLock { $0 }.sorted { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }
        let kept = all.prefix(keep).map(\.1)
        let next = all.count > keep ? Double(all[keep].0) : .infinity
        return (kept, next)
    }
}

/// The `capacity` smallest values seen, with a cheap reject test for the rest (most rows).
struct BoundedBest {
    let capacity: Int
    private(set) var items: [(Float, Int)] = []
    /// Values at or above this cannot be among the best (∞ until `capacity` were seen).
    private(set) var worst = Float.infinity

    init(capacity: Int) {
        self.capacity = capacity
        items.reserveCapacity(capacity * 4)
    }

    mutating func offer(_ value: Float, _ row: Int) {
        guard items.count < capacity || value < worst else { return }
        items.append((value, row))
        if items.count >= capacity * 4 { shrink() }
        else if items.count <= capacity { worst = items.count == capacity ? items.map(\.0).max()! : .infinity }
    }

    private mutating func shrink() {
        items.sort { $0.0 < $1.0 }
        items.removeLast(items.count - capacity)
        worst = items[capacity - 1].0
    }
}

/// The gallery's buffers, handed to the scanning threads (read-only while the scan runs).
private struct UncheckedSendablePointers: @unchecked Sendable {
    let codes: UnsafeBufferPointer<Int8>
    let probe: UnsafeBufferPointer<Int16>
    let steps: UnsafeBufferPointer<Float>
    let errors: UnsafeBufferPointer<Float>
}

/// Exact templates held in memory (tests, benchmarks, small tools).
public struct InMemoryFaceTemplates: FaceTemplateSource {
    public let items: [(user: String, template: FaceTemplate)]
    public init(_ items: [(user: String, template: FaceTemplate)]) { self.items = items }

    /// Keys are indexes into `items`.
    public func templates(_ keys: [Int64]) -> [Int64: (user: String, template: FaceTemplate)] {
        var out: [Int64: (user: String, template: FaceTemplate)] = [:]
        for k in keys where k >= 0 && Int(k) < items.count { out[k] = items[Int(k)] }
        return out
    }
}
