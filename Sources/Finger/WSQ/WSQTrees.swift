/// The subband geometry of the FBI WSQ specification (IAFIS-IC-0110 v3, §A.1): a 20-node
/// wavelet tree (which rectangles are split by one 2-D analysis step, in order, and which of them
/// are spectrally inverted) and the 64-subband quantisation tree it produces (subbands 60–63 are
/// never coded). Encoder and decoder must agree on every rectangle to the pixel, odd sides
/// included, so the splitting rules are the specification's, not a general dyadic layout.
struct WSQRect: Equatable, Sendable {
    var x = 0, y = 0, width = 0, height = 0
}

struct WSQTrees: Sendable {
    /// One analysis step: the rectangle, and whether its row (resp. column) split puts the
    /// high-pass half first (spectral inversion).
    struct Node: Sendable {
        var rect = WSQRect()
        var invertRows = false
        var invertColumns = false
    }

    static let waveletNodes = 20
    static let subbands = 64
    /// Subbands that carry data (60–63 are not coded).
    static let codedSubbands = 60
    /// First subband of blocks 2 and 3 (block 1 is 0..<19).
    static let block2Start = 19, block3Start = 52

    var wavelet: [Node]
    var quant: [WSQRect]

    init(width: Int, height: Int) {
        wavelet = Array(repeating: Node(), count: Self.waveletNodes)
        quant = Array(repeating: WSQRect(), count: Self.subbands)
        for n in [2, 4, 7, 9, 11, 13, 16, 18] { wavelet[n].invertRows = true }
        for n in [3, 5, 8, 9, 12, 13, 17, 18] { wavelet[n].invertColumns = true }
        buildWavelet(width: width, height: height)
        buildQuant()
    }

    /// Halves of an odd side: the first part gets the larger half unless `smallFirst`.
    private static func split(_ len: Int, smallFirst: Bool) -> (Int, Int) {
        if len % 2 == 0 { return (len / 2, len / 2) }
        return smallFirst ? ((len - 1) / 2, (len + 1) / 2) : ((len + 1) / 2, (len - 1) / 2)
    }

    private mutating func buildWavelet(width: Int, height: Int) {
        splitFour(parent: 0, first: 1, width: width, height: height, x: 0, y: 0, skipLast: true)
        let (lx, lx2) = Self.split(wavelet[1].rect.width, smallFirst: false)
        let (ly, ly2) = Self.split(wavelet[1].rect.height, smallFirst: false)
        splitFour(parent: 4, first: 6, width: lx2, height: ly, x: lx, y: 0, skipLast: false)
        splitFour(parent: 5, first: 10, width: lx, height: ly2, x: 0, y: ly, skipLast: false)
        splitFour(parent: 14, first: 15, width: lx, height: ly, x: 0, y: 0, skipLast: false)
        let w15 = wavelet[15].rect
        wavelet[19].rect = WSQRect(x: 0, y: 0, width: (w15.width + 1) / 2, height: (w15.height + 1) / 2)
    }

    /// Node `parent` covers the rectangle; nodes first…first+3 get its four quarters (the last
    /// quarter left unset when `skipLast`, the spec's subbands 60–63 region).
    private mutating func splitFour(parent: Int, first p: Int, width: Int, height: Int, x: Int, y: Int, skipLast: Bool) {
        wavelet[parent].rect = WSQRect(x: x, y: y, width: width, height: height)
        let (w0, w1) = Self.split(width, smallFirst: parent == 4)
        let (h0, h1) = Self.split(height, smallFirst: parent == 5)
        wavelet[p].rect = WSQRect(x: x, y: y, width: w0, height: h0)
        wavelet[p + 1].rect = WSQRect(x: x + w0, y: y, width: w1, height: h0)
        wavelet[p + 2].rect = WSQRect(x: x, y: y + h0, width: w0, height: h1)
        if !skipLast { wavelet[p + 3].rect = WSQRect(x: x + w0, y: y + h0, width: w1, height: h1) }
    }

    private mutating func buildQuant() {
        sixteen(start: 3, wavelet[14].rect, invertRows: false, invertColumns: false)
        sixteen(start: 19, wavelet[4].rect, invertRows: false, invertColumns: true)
        sixteen(start: 48, wavelet[0].rect, invertRows: false, invertColumns: false)
        sixteen(start: 35, wavelet[5].rect, invertRows: true, invertColumns: false)
        four(start: 0, wavelet[19].rect)
    }

    /// Four subbands of a rectangle split once (odd sides: the first part is the larger).
    private mutating func four(start p: Int, _ r: WSQRect) {
        let (w0, w1) = Self.split(r.width, smallFirst: false)
        let (h0, h1) = Self.split(r.height, smallFirst: false)
        quant[p] = WSQRect(x: r.x, y: r.y, width: w0, height: h0)
        quant[p + 1] = WSQRect(x: r.x + w0, y: r.y, width: w1, height: h0)
        quant[p + 2] = WSQRect(x: r.x, y: r.y + h0, width: w0, height: h1)
        quant[p + 3] = WSQRect(x: r.x + w0, y: r.y + h0, width: w1, height: h1)
    }

    /// Sixteen subbands: the rectangle split twice. The first split of an inverted axis gives the
    /// smaller half first; the second splits give the larger half first, except the right
    /// (resp. lower) halves' horizontal (resp. vertical) split, which gives it last.
    private mutating func sixteen(start p: Int, _ r: WSQRect, invertRows: Bool, invertColumns: Bool) {
        let (tx, t2x) = Self.split(r.width, smallFirst: invertColumns)
        let (ty, t2y) = Self.split(r.height, smallFirst: invertRows)
        // Top-left quarter (tx × ty): four subbands p…p+3.
        four(start: p, WSQRect(x: r.x, y: r.y, width: tx, height: ty))
        // Top-right quarter (t2x × ty): p+4…p+7, its column split small half first.
        let (a0, a1) = Self.split(t2x, smallFirst: true)
        let top = quant[p].height, bottom = quant[p + 2].height
        quant[p + 4] = WSQRect(x: r.x + tx, y: r.y, width: a0, height: top)
        quant[p + 5] = WSQRect(x: r.x + tx + a0, y: r.y, width: a1, height: top)
        quant[p + 6] = WSQRect(x: r.x + tx, y: r.y + top, width: a0, height: bottom)
        quant[p + 7] = WSQRect(x: r.x + tx + a0, y: r.y + top, width: a1, height: bottom)
        // Bottom-left quarter (tx × t2y): p+8…p+11, its row split small half first.
        let (b0, b1) = Self.split(t2y, smallFirst: true)
        let left = quant[p].width, right = quant[p + 1].width
        quant[p + 8] = WSQRect(x: r.x, y: r.y + ty, width: left, height: b0)
        quant[p + 9] = WSQRect(x: r.x + left, y: r.y + ty, width: right, height: b0)
        quant[p + 10] = WSQRect(x: r.x, y: r.y + ty + b0, width: left, height: b1)
        quant[p + 11] = WSQRect(x: r.x + left, y: r.y + ty + b0, width: right, height: b1)
        // Bottom-right quarter: p+12…p+15, columns as the top-right, rows as the bottom-left.
        quant[p + 12] = WSQRect(x: quant[p + 4].x, y: quant[p + 8].y, width: a0, height: b0)
        quant[p + 13] = WSQRect(x: quant[p + 5].x, y: quant[p + 8].y, width: a1, height: b0)
        quant[p + 14] = WSQRect(x: quant[p + 4].x, y: quant[p + 10].y, width: a0, height: b1)
        quant[p + 15] = WSQRect(x: quant[p + 5].x, y: quant[p + 10].y, width: a1, height: b1)
    }
}
