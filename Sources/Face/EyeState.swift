import Foundation

/// Eye openness measured on an eye crop alone (no face landmarks), as a second eye-state cue for
/// small or infrared faces where the 68-point eye contour is too coarse.
///
/// The crop should be roughly centred on the eye, corners near its left and right edges (as the
/// 34x26 CEW crops are). Two cues, both in 0…1 and relative to the crop, so the crop's scale and
/// brightness do not matter:
/// - vertical-edge share: an open eye shows the round iris, whose sides are vertical edges; a
///   closed eye is a horizontal line (lid and lashes), whose edges are horizontal. The share of
///   Sobel energy in x over x+y, weighted by a Gaussian on the crop centre (σ = 0.15 w, 0.2 h).
/// - dark height: the crop is normalised to zero mean and unit deviation, pixels below -0.5 are
///   dark; per column of the central third, the longest vertical run of dark pixels, median over
///   those columns, as a fraction of the crop height (the iris is tall, a closed lid line is thin).
/// openness = √(share × height), higher = more open.
public enum EyeState {
    public static func openness(grey: UnsafePointer<UInt8>, width: Int, height: Int) -> Double {
        guard width >= 3, height >= 3 else { return 0 }
        let (w, h) = (width, height)
        func px(_ x: Int, _ y: Int) -> Double { Double(grey[min(max(y, 0), h - 1) * w + min(max(x, 0), w - 1)]) }

        // Vertical-edge share of the gradient energy, centre-weighted.
        let sx = 0.15 * Double(w), sy = 0.2 * Double(h)
        let cx = Double(w - 1) / 2, cy = Double(h - 1) / 2
        var ex = 0.0, ey = 0.0
        for y in 0..<h {
            for x in 0..<w {
                let gx = (px(x + 1, y - 1) + 2 * px(x + 1, y) + px(x + 1, y + 1))
                    - (px(x - 1, y - 1) + 2 * px(x - 1, y) + px(x - 1, y + 1))
                let gy = (px(x - 1, y + 1) + 2 * px(x, y + 1) + px(x + 1, y + 1))
                    - (px(x - 1, y - 1) + 2 * px(x, y - 1) + px(x + 1, y - 1))
                let dx = (Double(x) - cx) / sx, dy = (Double(y) - cy) / sy
                let weight = exp(-(dx * dx + dy * dy) / 2)
                ex += weight * gx * gx
                ey += weight * gy * gy
            }
        }
        let share = ex + ey > 0 ? ex / (ex + ey) : 0

        // Height of the dark blob in the central third, after contrast normalisation.
        let n = Double(w * h)
        var sum = 0.0, sum2 = 0.0
        for i in 0..<(w * h) { let v = Double(grey[i]); sum += v; sum2 += v * v }
        let mean = sum / n
        let sd = max(0, sum2 / n - mean * mean).squareRoot()
        guard sd > 1e-6 else { return 0 }
        let dark = mean - 0.5 * sd
        var runs: [Int] = []
        for x in (w / 3)..<(2 * w / 3) {
            var best = 0, current = 0
            for y in 0..<h {
                current = Double(grey[y * w + x]) < dark ? current + 1 : 0
                best = max(best, current)
            }
            runs.append(best)
        }
        guard !runs.isEmpty else { return 0 }
        runs.sort()
        // The median (the mean of the two middle values for an even count).
        let c = runs.count
        let median = c % 2 == 1 ? Double(runs[c / 2]) : Double(runs[c / 2 - 1] + runs[c / 2]) / 2
        let darkHeight = median / Double(h)

        return (share * darkHeight).squareRoot()
    }
}
