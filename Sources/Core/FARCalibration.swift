import Foundation

/// Maps a comparison value (a face embedding distance, a print similarity) to the FAR-calibrated
/// score of SPEC §4: score = −12·log10(FAR), capped to 0–100, so 24 ↔ FAR 1 %, 48 ↔ 0.01 % (the
/// default threshold). One type for both modalities, so a score means the same for each.
///
/// FAR(v) is the fraction of impostor comparisons at least as close as v, measured on public
/// data; where the data run out (very small FAR), a fitted tail extends it. Knots are
/// (value, log10 FAR); between knots log10 FAR is interpolated linearly, beyond the closest knot
/// the closest segment continues (the tail), beyond the farthest it stays at that knot (FAR ≤ 1).
public struct FARCalibration: Sendable {
    /// Which way is closer.
    public enum Measure: Sendable {
        /// Smaller is closer (a distance between unit vectors, 0–2).
        case distance
        /// Larger is closer (a similarity, 0–1).
        case similarity
    }

    public struct Knot: Sendable, Equatable {
        public var value: Double
        public var log10FAR: Double
        public init(_ value: Double, _ log10FAR: Double) {
            self.value = value
            self.log10FAR = log10FAR
        }
    }

    public let measure: Measure
    /// By value, increasing.
    public let knots: [Knot]
    /// Where the calibration came from (shown in Docs and benchmarks).
    public let source: String
    /// The knots in closeness, closest first, as (closeness, log10 FAR) with closeness increasing.
    private let ordered: [(c: Double, l: Double)]

    public init(_ measure: Measure, knots: [Knot], source: String) {
        precondition(knots.count >= 2, "a calibration needs two knots")
        self.measure = measure
        self.knots = knots.sorted { $0.value < $1.value }
        self.source = source
        ordered = self.knots.map { (measure == .distance ? $0.value : -$0.value, $0.log10FAR) }.sorted { $0.c < $1.c }
    }

    public func log10FAR(_ value: Double) -> Double {
        let c = measure == .distance ? value : -value
        if c <= ordered[0].c {
            // Closer than the closest knot: continue the closest segment (the fitted tail).
            let (a, b) = (ordered[0], ordered[1])
            return a.l - (b.l - a.l) / (b.c - a.c) * (a.c - c)
        }
        for (a, b) in zip(ordered, ordered.dropFirst()) where c <= b.c {
            return a.l + (c - a.c) / (b.c - a.c) * (b.l - a.l)
        }
        return min(0, ordered[ordered.count - 1].l)  // farther than every knot: FAR 1
    }

    /// The SPEC §4 score, 0–100, to one decimal.
    public func score(_ value: Double) -> Double {
        let s = -12 * log10FAR(value)
        return (max(0, min(100, s)) * 10).rounded() / 10
    }

    /// The farthest value that still reaches `score` (for thresholds).
    public func value(forScore score: Double) -> Double {
        let target = -score / 12
        var (near, far) = measure == .distance ? (0.0, 2.0) : (1.0, 0.0)
        for _ in 0..<60 {
            let mid = (near + far) / 2
            if log10FAR(mid) <= target { near = mid } else { far = mid }
        }
        return near
    }
}
