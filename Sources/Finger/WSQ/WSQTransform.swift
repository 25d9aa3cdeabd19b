/// The WSQ 2-D discrete wavelet transform: odd-length symmetric biorthogonal filters (the
/// specification's 9/7 pair), whole-sample symmetric extension at both ends, low-pass outputs at
/// even samples and high-pass outputs at odd samples, applied along the 20 nodes of the wavelet
/// tree. The synthesis is the exact inverse (it uses the analysis filters modulated by (-1)^n and
/// swapped, as the specification's decoder does), so a decoder built from the filters carried in
/// a file's DTT segment reconstructs what any conforming encoder decomposed.
struct WSQFilters: Equatable, Sendable {
    /// Analysis low-pass (9 taps in the specification), symmetric, odd length.
    var low: [Double]
    /// Analysis high-pass (7 taps), symmetric, odd length.
    var high: [Double]

    /// The specification's filter bank (IAFIS-IC-0110 v3, Table A.1).
    static let standard = WSQFilters(
        low: [0.03782845550699546, -0.02384946501938000, -0.11062440441842342, 0.37740285561265380,
              0.85269867900940344, 0.37740285561265380, -0.11062440441842342, -0.02384946501938000,
              0.03782845550699546],
        high: [0.06453888262893845, -0.04068941760955844, -0.41809227322221221, 0.78848561640566439,
               -0.41809227322221221, -0.04068941760955844, 0.06453888262893845])
}

struct WSQTransform {
    let filters: WSQFilters
    /// Synthesis filters: for the low band the modulated analysis high-pass, for the high band the
    /// modulated analysis low-pass (centre-relative sign (-1)^|c|).
    private let synthLow: [Double], synthHigh: [Double]
    private let pad: Int

    init(filters: WSQFilters) {
        self.filters = filters
        func modulated(_ f: [Double]) -> [Double] {
            let c = f.count / 2
            return f.indices.map { abs($0 - c) % 2 == 0 ? f[$0] : -f[$0] }
        }
        synthLow = modulated(filters.high)
        synthHigh = modulated(filters.low)
        pad = max(filters.low.count, filters.high.count) + 2
    }

    /// Index of sample `j` of a line of `n` samples under whole-sample symmetric extension.
    @inline(__always)
    private static func reflect(_ j: Int, _ n: Int) -> Int {
        if n == 1 { return 0 }
        var j = j
        while j < 0 || j >= n {
            if j < 0 { j = -j }
            if j >= n { j = 2 * (n - 1) - j }
        }
        return j
    }

    /// One line: `n` samples (stride apart from `base`) replaced by their ceil(n/2) low-pass and
    /// floor(n/2) high-pass outputs (high first when `invert`).
    private func analyse(_ data: inout [Double], base: Int, stride: Int, n: Int, invert: Bool,
                         ext: inout [Double], out: inout [Double]) {
        for j in -pad..<(n + pad) { ext[j + pad] = data[base + Self.reflect(j, n) * stride] }
        let lowCount = (n + 1) / 2, highCount = n / 2
        let lo = filters.low, hi = filters.high
        let lc = lo.count / 2, hc = hi.count / 2
        let lowStart = invert ? highCount : 0, highStart = invert ? 0 : lowCount
        for k in 0..<lowCount {
            var s = 0.0
            let o = pad + 2 * k - lc
            for i in 0..<lo.count { s += lo[i] * ext[o + i] }
            out[lowStart + k] = s
        }
        for k in 0..<highCount {
            var s = 0.0
            let o = pad + 2 * k + 1 - hc
            for i in 0..<hi.count { s += hi[i] * ext[o + i] }
            out[highStart + k] = s
        }
        for i in 0..<n { data[base + i * stride] = out[i] }
    }

    /// The inverse of `analyse` on one line.
    private func synthesise(_ data: inout [Double], base: Int, stride: Int, n: Int, invert: Bool,
                            ext: inout [Double], out: inout [Double]) {
        let lowCount = (n + 1) / 2, highCount = n / 2
        let lowStart = invert ? highCount : 0, highStart = invert ? 0 : lowCount
        // Interleave: low k at sample 2k, high k at sample 2k+1; the symmetric extension of the
        // signal keeps every sample's parity, so extending the interleaved line is exact.
        for k in 0..<lowCount { out[2 * k] = data[base + (lowStart + k) * stride] }
        for k in 0..<highCount { out[2 * k + 1] = data[base + (highStart + k) * stride] }
        for j in -pad..<(n + pad) { ext[j + pad] = out[Self.reflect(j, n)] }
        let g0 = synthLow, g1 = synthHigh
        let c0 = g0.count / 2, c1 = g1.count / 2
        for m in 0..<n {
            var s = 0.0
            // Low-band samples sit at even positions m - c.
            for i in 0..<g0.count where (m - (i - c0)) & 1 == 0 { s += g0[i] * ext[pad + m - (i - c0)] }
            for i in 0..<g1.count where (m - (i - c1)) & 1 != 0 { s += g1[i] * ext[pad + m - (i - c1)] }
            data[base + m * stride] = s
        }
    }

    /// Decomposes `data` (row-major, `width` wide) in place along the wavelet tree.
    func decompose(_ data: inout [Double], width: Int, trees: WSQTrees) {
        let longest = trees.wavelet.map { max($0.rect.width, $0.rect.height) }.max() ?? 0
        var ext = [Double](repeating: 0, count: longest + 2 * pad), out = [Double](repeating: 0, count: longest)
        for node in trees.wavelet {
            let r = node.rect
            guard r.width > 0, r.height > 0 else { continue }
            for row in 0..<r.height {
                analyse(&data, base: (r.y + row) * width + r.x, stride: 1, n: r.width,
                        invert: node.invertRows, ext: &ext, out: &out)
            }
            for col in 0..<r.width {
                analyse(&data, base: r.y * width + r.x + col, stride: width, n: r.height,
                        invert: node.invertColumns, ext: &ext, out: &out)
            }
        }
    }

    /// Rebuilds the image from its subbands in place (the tree in reverse, columns before rows).
    func reconstruct(_ data: inout [Double], width: Int, trees: WSQTrees) {
        let longest = trees.wavelet.map { max($0.rect.width, $0.rect.height) }.max() ?? 0
        var ext = [Double](repeating: 0, count: longest + 2 * pad), out = [Double](repeating: 0, count: longest)
        for node in trees.wavelet.reversed() {
            let r = node.rect
            guard r.width > 0, r.height > 0 else { continue }
            for col in 0..<r.width {
                synthesise(&data, base: r.y * width + r.x + col, stride: width, n: r.height,
                           invert: node.invertColumns, ext: &ext, out: &out)
            }
            for row in 0..<r.height {
                synthesise(&data, base: (r.y + row) * width + r.x, stride: 1, n: r.width,
                           invert: node.invertRows, ext: &ext, out: &out)
            }
        }
    }
}
