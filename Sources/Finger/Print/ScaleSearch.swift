import Foundation

/// How well a print's 500-ppi scale is known, which decides whether a comparison searches over
/// sizes (`FingerMatcher.ScaleSearch`).
public enum PrintScale: Sendable, Equatable {
    /// From the sensor's resolution (an uploaded image at its dpi, a contact sensor): exact.
    case known
    /// From the print's own ridge period (a camera print, `FingerCapture`: the frame's measure,
    /// then the print's own, finer one): the period differs by a few percent between the parts
    /// of one finger, so two views of one finger can still come out several percent apart in
    /// size (Docs/finger-camera.md).
    case fromRidges
}

extension FingerMatcher {
    /// The sizes a comparison tries and what that costs in the score.
    ///
    /// Trying n sizes and keeping the best gives an impostor up to n chances to reach a score, so
    /// the best similarity's FAR is multiplied by n before it becomes a score (Bonferroni):
    /// score = −12·(log10 FAR(best) + log10 n), i.e. 12·log10 5 = 8.4 points below the same
    /// similarity compared once. Measured on the FVC impostors (11,520 pairs, these five sizes,
    /// `biometricd-finger-bench print scales`), the tail grew by 2.5–2.9× at every score from 20
    /// to 36, so the bound is conservative: the SPEC's "48 ↔ FAR 0.01 %" still holds per attempt
    /// for a camera comparison.
    public struct ScaleSearch: Sendable, Equatable {
        /// Sizes the probe is compared at (1 = as extracted).
        public let factors: [Double]
        /// Points taken off a score found by searching `factors`.
        public let penalty: Double

        public init(factors: [Double]) {
            self.factors = factors
            penalty = factors.count > 1 ? 12 * log10(Double(factors.count)) : 0
        }

        /// One comparison at the print's own size.
        public static let none = ScaleSearch(factors: [1])
        /// ±12 % in 6 % steps: covers the spread of ridge-period scale between views of one
        /// finger (up to ~10 %) without reaching the 20 % where another finger's prints start to
        /// look alike.
        public static let ridgeScaled = ScaleSearch(factors: [0.88, 0.94, 1, 1.06, 1.12])

        /// The search a comparison with a probe of this scale runs. A camera probe searches,
        /// whatever the reference is: its size error is the probe's own.
        public static func `for`(_ scale: PrintScale) -> ScaleSearch {
            switch scale {
            case .known: .none
            case .fromRidges: .ridgeScaled
            }
        }

        /// A score found by this search, on the SPEC scale (0–100, 0.1 steps).
        public func adjusted(_ score: Double) -> Double {
            penalty == 0 ? score : (max(0, score - penalty) * 10).rounded() / 10
        }
    }

    /// `template` prepared at each of `search`'s sizes (one print for `.none`).
    public func prepare(_ template: FingerTemplate, sizes search: ScaleSearch) -> [PreparedPrint] {
        search.factors.compactMap { prepare(template.scaled(by: $0)) }
    }

    /// The SPEC §4 score of `probe` against `reference` with `search`: the best of the probe's
    /// sizes, less the search's penalty.
    public func score(probe: FingerTemplate, reference: PreparedPrint, search: ScaleSearch) -> Double {
        search.adjusted(prepare(probe, sizes: search).map { score($0, reference) }.max() ?? 0)
    }
}
