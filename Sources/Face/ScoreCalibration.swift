import Foundation

/// Maps a similarity (here: embedding distance) to the FAR-calibrated score of SPEC §4:
/// score = −12·log10(FAR), capped to 0–100, so 24 ↔ FAR 1 %, 48 ↔ 0.01 % (the default threshold).
///
/// FAR(d) is the fraction of impostor comparisons at distance ≤ d, measured on public data; where
/// the data run out (very small FAR), a fitted tail extends it. Knots are (distance, log10 FAR),
/// distances increasing; between knots log10 FAR is interpolated linearly.
public struct ScoreCalibration: Sendable {
    public struct Knot: Sendable, Equatable {
        public var distance: Double
        public var log10FAR: Double
        public init(_ distance: Double, _ log10FAR: Double) {
            self.distance = distance
            self.log10FAR = log10FAR
        }
    }

    public let knots: [Knot]
    /// Where the calibration came from (shown in Docs and benchmarks).
    public let source: String

    public init(knots: [Knot], source: String) {
        precondition(knots.count >= 2)
        self.knots = knots.sorted { $0.distance < $1.distance }
        self.source = source
    }

    public func log10FAR(distance d: Double) -> Double {
        if d <= knots[0].distance {
            // Below the first knot: continue the first segment's slope (the fitted tail).
            let (a, b) = (knots[0], knots[1])
            let slope = (b.log10FAR - a.log10FAR) / (b.distance - a.distance)
            return a.log10FAR - slope * (a.distance - d)
        }
        for (a, b) in zip(knots, knots.dropFirst()) where d <= b.distance {
            let t = (d - a.distance) / (b.distance - a.distance)
            return a.log10FAR + t * (b.log10FAR - a.log10FAR)
        }
        return 0  // beyond the last knot every impostor is closer: FAR 1
    }

    /// The SPEC §4 score, 0–100.
    public func score(distance: Double) -> Double {
        let s = -12 * log10FAR(distance: distance)
        return (max(0, min(100, s)) * 10).rounded() / 10
    }

    /// The distance at which `score` is reached (for thresholds).
    public func distance(forScore score: Double) -> Double {
        let target = -score / 12
        var lo = 0.0, hi = 2.0
        for _ in 0..<60 {
            let mid = (lo + hi) / 2
            if log10FAR(distance: mid) < target { lo = mid } else { hi = mid }
        }
        return lo
    }
}
