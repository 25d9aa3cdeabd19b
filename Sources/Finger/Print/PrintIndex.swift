import CFingerVision
import Dispatch
import Synchronization

/// 1:N search in two stages, so a large gallery costs a fixed number of full matches: a coarse
/// score against every reference picks a shortlist, and only the shortlist is compared with the
/// full matcher (`FingerMatcher`), whose scores are the only ones returned.
///
/// The coarse score compares index codes (`PreparedPrint.code`): Bloom filters of minutia
/// triplets — for each minutia and each pair of its 4 nearest neighbours, the triangle's side
/// lengths, handedness and the minutiae's directions relative to its sides, quantised and hashed
/// to one of 4,096 bits (the triplet indexing of FLASH, Germain et al. 1997, and Bhanu & Tan
/// 2003, in a fixed-length form). These features do not change with rotation or translation, and
/// a triangle only involves close minutiae, so partial overlap and distortion lose some triangles
/// instead of breaking the code. Scoring one reference is an AND and a popcount over 64 words.
///
/// A gallery no larger than the shortlist is searched exhaustively, exactly as
/// `FingerMatcher.search` does. Immutable once built; searches only read it, so one index can
/// serve concurrent searches.
public struct PrintIndex: Sendable {
    /// How many references the full matcher sees: `fraction` of the gallery, at least `minimum`
    /// (so galleries up to that size are searched exhaustively) and at most `maximum` (which
    /// bounds the full stage's cost whatever the gallery size).
    public struct Shortlist: Sendable, Equatable {
        public var fraction: Double
        public var minimum: Int
        public var maximum: Int

        public init(fraction: Double, minimum: Int, maximum: Int) {
            self.fraction = fraction
            self.minimum = max(1, minimum)
            self.maximum = max(self.minimum, maximum)
        }

        /// 0.5 % of the gallery, 500–1,000 references. On FVC2002 DB2_B with 100,000 perturbed
        /// distractors rank-1 hardly changes between 0.5 % and 2 %, while each shortlisted
        /// reference costs ≈ 0.1 ms of full matching on two cores, so 500 keep a 100,000-reference
        /// search near 50 ms (Docs/finger-print.md, "1:N pre-selection").
        public static let standard = Shortlist(fraction: 0.005, minimum: 500, maximum: 1000)

        /// The shortlist length for a gallery of `count` references.
        public func size(for count: Int) -> Int {
            let wanted = Int((fraction * Double(count)).rounded(.up))
            return min(count, max(minimum, min(maximum, wanted)))
        }
    }

    public let matcher: FingerMatcher
    public let prints: [PreparedPrint]
    public let shortlist: Shortlist
    /// Every reference's code, one after another (prints.count × CVIS_PRINT_CODE_WORDS words):
    /// one contiguous scan per query.
    let codes: [UInt64]

    public init(_ prints: [PreparedPrint], matcher: FingerMatcher = FingerMatcher(), shortlist: Shortlist = .standard) {
        self.prints = prints
        self.matcher = matcher
        self.shortlist = shortlist
        var codes: [UInt64] = []
        codes.reserveCapacity(prints.count * Self.codeWords)
        for print in prints { codes.append(contentsOf: print.code) }
        self.codes = codes
    }

    static let codeWords = Int(CVIS_PRINT_CODE_WORDS)

    public var count: Int { prints.count }

    /// Bytes of coarse code per reference held by the index.
    public static let bytesPerReference = codeWords * MemoryLayout<UInt64>.size

    /// 1:N: the `limit` best references for `probe`, best first, with full-matcher scores — the
    /// same shape and scale as `FingerMatcher.search`. `threads` is used by both stages.
    public func search(_ probe: PreparedPrint, limit: Int = 5, threads: Int = 1) -> [(index: Int, score: Double)] {
        let size = shortlist.size(for: prints.count)
        guard size < prints.count else { return matcher.search(probe, in: prints, limit: limit, threads: threads) }
        let chosen = candidates(for: probe, count: size, threads: threads)
        return matcher.search(probe, in: chosen.map { prints[$0] }, limit: limit, threads: threads)
            .map { (chosen[$0.index], $0.score) }
    }

    /// The `count` references with the best coarse scores, in gallery order (so the full matcher
    /// breaks ties as an exhaustive search would). The result does not depend on `threads`.
    public func candidates(for probe: PreparedPrint, count: Int, threads: Int = 1) -> [Int] {
        let n = prints.count, k = max(0, min(count, n))
        guard k > 0 else { return [] }
        guard k < n else { return Array(0..<n) }
        // Slices scored concurrently, each keeping its own k best; merged below.
        let slices = max(1, min(threads, n / 2048 + 1))
        let chunk = (n + slices - 1) / slices
        let found = Mutex<[(index: Int, score: Float)]>([])
        let (codes, words, probeCode) = (self.codes, Self.codeWords, probe.code)
        let work = { @Sendable (slice: Int) in
            let start = min(n, slice * chunk), end = min(n, start + chunk)
            guard start < end else { return }
            var index = [UInt32](repeating: 0, count: k), score = [Float](repeating: 0, count: k)
            var written = 0
            let status = probeCode.withUnsafeBufferPointer { p in
                codes.withUnsafeBufferPointer { c in
                    cvis_print_index_best(p.baseAddress, c.baseAddress! + start * words, end - start, k,
                                          &index, &score, &written)
                }
            }
            // Only running out of memory fails here; the slice's first k references then stand in
            // with score 0, so the search still gets a full shortlist.
            let best = status == CVIS_OK
                ? (0..<written).map { (Int(index[$0]) + start, score[$0]) }
                : (start..<min(end, start + k)).map { ($0, Float(0)) }
            found.withLock { $0.append(contentsOf: best) }
        }
        if slices == 1 { work(0) } else { DispatchQueue.concurrentPerform(iterations: slices, execute: work) }
        // Best first, equal scores by position: the same order whatever the slicing.
        let merged = found.withLock { $0 }
            .sorted { $0.score != $1.score ? $0.score > $1.score : $0.index < $1.index }
        return merged.prefix(k).map(\.index).sorted()
    }
}
