import Foundation

/// WSQ adaptive scalar quantisation (IAFIS-IC-0110 v3, §A.2): each of the 60 coded subbands gets
/// a bin width Q and a zero bin Z = 1.2 Q, from its variance and the target bit rate r, by the
/// specification's iteration (subbands whose bit rate would be non-positive are dropped and the
/// proportionality constant q recomputed). Subbands with variance below 1.01 are not coded
/// (Q = 0). Reconstruction puts a value at C = 0.44 of its bin from the zero-bin edge.
struct WSQQuantiser: Sendable {
    var binWidth = [Double](repeating: 0, count: WSQTrees.codedSubbands)
    var zeroBin = [Double](repeating: 0, count: WSQTrees.codedSubbands)
    var binCentre = 0.44

    init(binCentre: Double = 0.44) { self.binCentre = binCentre }

    /// Number of coefficients the coded subbands hold (what the blocks must carry in all).
    func codedCount(_ trees: WSQTrees) -> Int {
        (0..<WSQTrees.codedSubbands).reduce(0) { n, i in
            binWidth[i] > 0 ? n + trees.quant[i].width * trees.quant[i].height : n
        }
    }

    /// Variance of a subband: over a central window (the spec's crop, away from the borders the
    /// symmetric extension shapes), or the whole subband.
    private static func variance(_ data: [Double], width: Int, _ r: WSQRect, cropped: Bool) -> Double {
        var x0 = r.x, y0 = r.y, w = r.width, h = r.height
        if cropped {
            x0 += r.width / 8
            y0 += 9 * r.height / 32
            w = 3 * r.width / 4
            h = 7 * r.height / 16
        }
        guard w > 0, h > 0, w * h > 1 else { return 0 }
        var sum = 0.0, squares = 0.0
        for row in y0..<(y0 + h) {
            let base = row * width
            for col in x0..<(x0 + w) {
                let v = data[base + col]
                sum += v
                squares += v * v
            }
        }
        let n = Double(w * h)
        return (squares - sum * sum / n) / (n - 1)
    }

    /// Bin widths for the decomposed image `data` at `bitRate` bits per pixel.
    static func fit(_ data: [Double], width: Int, trees: WSQTrees, bitRate: Double) -> WSQQuantiser {
        let n = WSQTrees.codedSubbands
        var variance = [Double](repeating: 0, count: n)
        for i in 0..<4 { variance[i] = Self.variance(data, width: width, trees.quant[i], cropped: true) }
        // Low-energy images: whole subbands for every variance (as the specification's encoder).
        let cropped = variance[0..<4].reduce(0, +) >= 20000
        let from = cropped ? 4 : 0
        for i in from..<n { variance[i] = Self.variance(data, width: width, trees.quant[i], cropped: cropped) }

        // Weights A (1 except the 52–59 subbands), and 1/m: the fraction of the image a subband
        // of each region covers (1/1024, 1/256, 1/16).
        var weight = [Double](repeating: 1, count: n)
        for (i, a) in [1.32, 1.08, 1.42, 1.08, 1.32, 1.42, 1.08, 1.08].enumerated() { weight[52 + i] = a }
        let share: (Int) -> Double = { $0 < 4 ? 1.0 / 1024 : $0 < 51 ? 1.0 / 256 : 1.0 / 16 }
        let threshold = 1.01
        var q1 = [Double](repeating: 0, count: n), sigma = [Double](repeating: 0, count: n)
        var kept: [Int] = []
        for i in 0..<n where variance[i] >= threshold {
            q1[i] = i < 4 ? 1 : 10 / (weight[i] * log(variance[i]))
            sigma[i] = variance[i].squareRoot()
            kept.append(i)
        }
        let initial = Set(kept)
        var q = 1.0
        while !kept.isEmpty {
            let s = kept.reduce(0.0) { $0 + share($1) }
            let p = kept.reduce(1.0) { $0 * pow(sigma[$1] / q1[$1], share($1)) }
            q = pow(2, bitRate / s - 1) / 2.5 / pow(p, 1 / s)
            let next = kept.filter { q1[$0] / q < 5 * sigma[$0] }
            if next.count == kept.count { break }
            kept = next
        }
        var result = WSQQuantiser()
        for i in 0..<n where initial.contains(i) && q1[i] > 0 {
            let b = q1[i] / q
            guard b.isFinite, b > 0 else { continue }
            result.binWidth[i] = b
            result.zeroBin[i] = 1.2 * b
        }
        return result
    }

    /// Quantised coefficients, subband by subband (coded subbands only, rows in order), and the
    /// ranges of the three blocks (subbands 0–18, 19–51, 52–59).
    struct Quantised { var values: [Int32]; var blockRanges: [Range<Int>] }

    func quantise(_ data: [Double], width: Int, trees: WSQTrees) -> Quantised {
        var out: [Int32] = []
        out.reserveCapacity(data.count)
        var ranges: [Range<Int>] = []
        var start = 0
        for i in 0..<WSQTrees.codedSubbands {
            if i == WSQTrees.block2Start || i == WSQTrees.block3Start {
                ranges.append(start..<out.count)
                start = out.count
            }
            let b = binWidth[i]
            guard b > 0 else { continue }
            let z = zeroBin[i] / 2
            let r = trees.quant[i]
            for row in r.y..<(r.y + r.height) {
                let base = row * width
                for col in r.x..<(r.x + r.width) {
                    let v = data[base + col]
                    let k: Double = v > z ? (v - z) / b + 1 : v < -z ? (v + z) / b - 1 : 0
                    // 16 bits is the widest escape the format has.
                    out.append(Int32(max(-32767, min(32767, k.rounded(.towardZero)))))
                }
            }
        }
        ranges.append(start..<out.count)
        return Quantised(values: out, blockRanges: ranges)
    }

    /// Coefficients back in their subbands (zero where a subband is not coded).
    func dequantise(_ q: [Int32], width: Int, height: Int, trees: WSQTrees) -> [Double] {
        var data = [Double](repeating: 0, count: width * height)
        var k = 0
        for i in 0..<WSQTrees.codedSubbands {
            let b = binWidth[i]
            guard b > 0 else { continue }
            let half = zeroBin[i] / 2
            let r = trees.quant[i]
            for row in r.y..<(r.y + r.height) {
                let base = row * width
                for col in r.x..<(r.x + r.width) {
                    let s = Double(q[k])
                    k += 1
                    data[base + col] = s > 0 ? b * (s - binCentre) + half : s < 0 ? b * (s + binCentre) - half : 0
                }
            }
        }
        return data
    }
}
