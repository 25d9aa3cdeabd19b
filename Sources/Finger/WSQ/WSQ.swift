import Foundation

/// FBI WSQ grey-scale fingerprint image compression (IAFIS-IC-0110 v3), written from the
/// specification: the 9/7 wavelet decomposition into 64 subbands (`WSQTransform`, `WSQTrees`),
/// adaptive scalar quantisation with per-subband bin widths and zero bins targeting a bit rate
/// (0.75 bpp by default, the usual setting), and Huffman coding of three blocks (`WSQHuffman`) in
/// the specification's marker structure: SOI, COM (NISTCOM), DTT, DQT, SOF, DHT, SOB…, EOI.
///
/// Decoding is for untrusted input (`finger.extract`/`finger.match` uploads): every length, table
/// and count is checked, sizes are capped, and every failure is a `WSQ.Error`, never a trap.
public enum WSQ {
    /// A decoded (or to-be-encoded) 8-bit grey image.
    public struct Image: Sendable, Equatable {
        public let width: Int
        public let height: Int
        public let pixels: [UInt8]
        /// From the file's NISTCOM comment (PPI); nil when absent or unknown (-1).
        public let ppi: Int?
    }

    public enum Error: Swift.Error, Equatable, Sendable, CustomStringConvertible {
        /// No SOI marker: not a WSQ file.
        case notWSQ
        /// The data ends inside a segment or block.
        case truncated
        /// More bytes than `maxBytes`.
        case tooLarge(bytes: Int)
        /// Frame size outside `sideRange` or above `maxPixels`.
        case dimensions(width: Int, height: Int)
        /// A marker where the format does not allow it (or an unknown one).
        case unexpectedMarker(UInt16)
        /// A table segment (DTT, DQT, DHT, SOF, SOB) with impossible contents.
        case badTable(String)
        /// Coded data that is not a code of its Huffman table, or a missing stuffed zero.
        case badCode
        /// The blocks hold a different number of coefficients than the frame needs.
        case coefficientCount(expected: Int, got: Int)

        public var description: String {
            switch self {
            case .notWSQ: "not a WSQ file (no SOI marker)"
            case .truncated: "WSQ data truncated"
            case .tooLarge(let n): "WSQ data too large: \(n) bytes (at most \(WSQ.maxBytes))"
            case .dimensions(let w, let h): "WSQ frame \(w)x\(h) is outside \(WSQ.sideRange) per side or above \(WSQ.maxPixels) pixels"
            case .unexpectedMarker(let m): "unexpected WSQ marker 0x\(String(m, radix: 16, uppercase: true))"
            case .badTable(let what): "bad WSQ \(what)"
            case .badCode: "bad WSQ Huffman-coded data"
            case .coefficientCount(let e, let g): "WSQ blocks hold \(g) coefficients, the frame needs \(e)"
            }
        }
    }

    /// The usual r bit-rate setting (FBI: 0.75 for 500 ppi prints, ~15:1).
    public static let defaultBitRate = 0.75
    /// Side limits, those of `FingerprintImage`.
    public static let sideRange = FingerprintImage.sideRange
    /// Pixel cap: the working buffers are 12 bytes a pixel (a 2,048 × 2,048 slap fits).
    public static let maxPixels = 2048 * 2048
    /// Input cap: far above any 0.75 bpp file of `maxPixels` (~400 KB).
    public static let maxBytes = 8 << 20

    enum Marker: UInt16 {
        case soi = 0xFFA0, eoi = 0xFFA1, sof = 0xFFA2, sob = 0xFFA3, dtt = 0xFFA4, dqt = 0xFFA5, dht = 0xFFA6
        case drt = 0xFFA7, com = 0xFFA8
    }

    /// True when `bytes` start with the SOI marker.
    public static func looksLikeWSQ<C: Collection<UInt8>>(_ bytes: C) -> Bool {
        bytes.starts(with: [0xFF, 0xA0])
    }

    // MARK: Encoding

    /// Compresses an 8-bit grey image. `ppi` goes into the NISTCOM comment (-1 when nil).
    public static func encode(pixels: [UInt8], width: Int, height: Int, ppi: Int?,
                              bitRate: Double = defaultBitRate) throws(Error) -> [UInt8] {
        guard sideRange.contains(width), sideRange.contains(height), width * height <= maxPixels else {
            throw .dimensions(width: width, height: height)
        }
        guard pixels.count == width * height else { throw .badTable("pixel buffer length \(pixels.count)") }
        guard bitRate > 0, bitRate <= 8 else { throw .badTable("bit rate \(bitRate)") }
        let count = pixels.count
        // Shift by the mean, scale so the farther extreme is ±128.
        var sum = 0, low = 255, high = 0
        for p in pixels { sum += Int(p); low = min(low, Int(p)); high = max(high, Int(p)) }
        let mean = Double(sum) / Double(count)
        let scale = max(max(mean - Double(low), Double(high) - mean), 1) / 128
        // The frame header carries both as a scaled 16-bit integer: use those exact values.
        let shift = ScaledInt.rounded(mean, limit: 0xFFFF), rScale = ScaledInt.rounded(scale, limit: 0xFFFF)
        var data = pixels.map { (Double($0) - shift.value) / rScale.value }

        let trees = WSQTrees(width: width, height: height)
        WSQTransform(filters: .standard).decompose(&data, width: width, trees: trees)
        let quantiser = WSQQuantiser.fit(data, width: width, trees: trees, bitRate: bitRate)
        let q = quantiser.quantise(data, width: width, trees: trees)

        var out = ByteWriter()
        out.marker(.soi)
        out.comment(nistcom(width: width, height: height, ppi: ppi, bitRate: bitRate))
        out.transformTable(.standard)
        out.quantisationTable(quantiser)
        out.frameHeader(width: width, height: height, shift: shift, scale: rScale)
        // Block 1 has its own table; blocks 2 and 3 share one.
        let b1 = q.blockRanges[0], b2 = q.blockRanges[1], b3 = q.blockRanges[2]
        let s1 = WSQHuffman.symbols(q.values[b1])
        let s2 = WSQHuffman.symbols(q.values[b2]), s3 = WSQHuffman.symbols(q.values[b3])
        let t0 = WSQHuffman.table(frequencies: frequencies(s1))
        let t1 = WSQHuffman.table(frequencies: zip(frequencies(s2), frequencies(s3)).map { $0 + $1 })
        guard let c0 = WSQHuffman.Codes(t0), let c1 = WSQHuffman.Codes(t1) else {
            throw .badTable("generated Huffman table") // cannot happen: K.2 tables are prefix codes
        }
        out.huffmanTable(id: 0, t0)
        out.block(table: 0, coded: code(s1, c0))
        out.huffmanTable(id: 1, t1)
        out.block(table: 1, coded: code(s2, c1))
        out.block(table: 1, coded: code(s3, c1))
        out.marker(.eoi)
        return out.bytes
    }

    private static func frequencies(_ symbols: [WSQHuffman.Symbol]) -> [Int] {
        var f = [Int](repeating: 0, count: 256)
        for s in symbols { f[s.value] += 1 }
        return f
    }

    private static func code(_ symbols: [WSQHuffman.Symbol], _ codes: WSQHuffman.Codes) -> [UInt8] {
        var w = WSQBitWriter()
        for s in symbols {
            w.write(codes.code[s.value], bits: Int(codes.length[s.value]))
            if s.extraBits > 0 { w.write(s.extra, bits: s.extraBits) }
        }
        return w.finish()
    }

    private static func nistcom(width: Int, height: Int, ppi: Int?, bitRate: Double) -> String {
        let fields = [
            ("PIX_WIDTH", "\(width)"), ("PIX_HEIGHT", "\(height)"), ("PIX_DEPTH", "8"),
            ("PPI", "\(ppi ?? -1)"), ("LOSSY", "1"), ("COLORSPACE", "GRAY"), ("COMPRESSION", "WSQ"),
            ("WSQ_BITRATE", String(format: "%f", bitRate)),
        ]
        return (["NIST_COM \(fields.count + 1)"] + fields.map { "\($0.0) \($0.1)" }).joined(separator: "\n")
    }

    // MARK: Decoding

    /// Decompresses a WSQ file; any malformed input is a typed error.
    public static func decode<C: Collection<UInt8>>(_ input: C) throws(Error) -> Image {
        guard input.count <= maxBytes else { throw .tooLarge(bytes: input.count) }
        var r = ByteReader(Array(input))
        guard r.remaining >= 2, try r.u16() == Marker.soi.rawValue else { throw .notWSQ }
        var state = DecoderState()
        // Tables up to the frame header.
        var marker = try r.u16()
        while marker != Marker.sof.rawValue {
            try state.table(marker, &r)
            marker = try r.u16()
        }
        let frame = try r.frameHeader()
        let width = frame.width, height = frame.height
        guard sideRange.contains(width), sideRange.contains(height), width * height <= maxPixels else {
            throw .dimensions(width: width, height: height)
        }
        let trees = WSQTrees(width: width, height: height)
        // Blocks (tables may still come between them), until EOI.
        var q: [Int32] = []
        q.reserveCapacity(width * height)
        var blocks = 0
        marker = try r.u16()
        while marker != Marker.eoi.rawValue {
            guard marker == Marker.sob.rawValue else {
                try state.table(marker, &r)
                marker = try r.u16()
                continue
            }
            blocks += 1
            guard blocks <= 8 else { throw .badTable("block count") }
            guard let quant = state.quant else { throw .badTable("block before its quantisation table (DQT)") }
            let expected = quant.codedCount(trees)
            let id = try r.blockHeader()
            guard let codes = state.huffman[id] else { throw .badTable("block uses undefined Huffman table \(id)") }
            marker = try decodeBlock(&r, codes, into: &q, limit: expected)
        }
        guard let quant = state.quant else { throw .badTable("missing quantisation table (DQT)") }
        guard let filters = state.filters else { throw .badTable("missing transform table (DTT)") }
        let expected = quant.codedCount(trees)
        guard q.count == expected else { throw .coefficientCount(expected: expected, got: q.count) }

        var data = quant.dequantise(q, width: width, height: height, trees: trees)
        WSQTransform(filters: filters).reconstruct(&data, width: width, trees: trees)
        let pixels = data.map { v -> UInt8 in
            let p = v * frame.scale + frame.shift + 0.5
            return p.isNaN || p < 0 ? 0 : p > 255 ? 255 : UInt8(p)
        }
        return Image(width: width, height: height, pixels: pixels, ppi: state.ppi)
    }

    /// Decodes one block's symbols into `q` (at most `limit` coefficients in all); returns the
    /// marker that ends the block.
    private static func decodeBlock(_ r: inout ByteReader, _ codes: WSQHuffman.Codes,
                                    into q: inout [Int32], limit: Int) throws(Error) -> UInt16 {
        var bits = BitReader()
        while true {
            // One code, bit by bit; a marker reached while reading a code ends the block (the
            // bits read were the ones-padding).
            guard let first = try bits.bit(&r) else { return bits.marker }
            var code = Int(first), len = 1
            while code > codes.maxCode[len] {
                len += 1
                guard len <= WSQHuffman.maxCodeLength else { throw .badCode }
                guard let b = try bits.bit(&r) else { return bits.marker }
                code = code << 1 | Int(b)
            }
            let index = codes.firstIndex[len] + code - codes.minCode[len]
            guard index >= 0, index < codes.values.count else { throw .badCode }
            let symbol = Int(codes.values[index])
            var zeros = 0
            switch symbol {
            case 1...100: zeros = symbol
            case 101, 102, 103, 104:
                let v = Int32(try bits.bits(symbol >= 103 ? 16 : 8, &r))
                guard q.count < limit else { throw .coefficientCount(expected: limit, got: q.count + 1) }
                q.append(symbol % 2 == 1 ? v : -v)
            case 105, 106: zeros = Int(try bits.bits(symbol == 105 ? 8 : 16, &r))
            case 107...254:
                guard q.count < limit else { throw .coefficientCount(expected: limit, got: q.count + 1) }
                q.append(Int32(symbol - 180))
            default: throw .badCode
            }
            if zeros > 0 {
                guard q.count + zeros <= limit else { throw .coefficientCount(expected: limit, got: q.count + zeros) }
                q.append(contentsOf: repeatElement(0, count: zeros))
            }
        }
    }

    /// Tables seen so far.
    private struct DecoderState {
        var filters: WSQFilters?
        var quant: WSQQuantiser?
        var huffman: [Int: WSQHuffman.Codes] = [:]
        var ppi: Int?

        mutating func table(_ marker: UInt16, _ r: inout ByteReader) throws(Error) {
            switch Marker(rawValue: marker) {
            case .dtt: filters = try r.transformTable()
            case .dqt: quant = try r.quantisationTable()
            case .dht:
                for (id, table) in try r.huffmanTables() {
                    guard let codes = WSQHuffman.Codes(table) else { throw .badTable("Huffman table \(id)") }
                    huffman[id] = codes
                }
            case .com:
                let text = try r.comment()
                if text.hasPrefix("NIST_COM") {
                    for line in text.split(separator: "\n") where line.hasPrefix("PPI ") {
                        if let v = Int(line.dropFirst(4).trimmingCharacters(in: .whitespaces)), v > 0 { ppi = v }
                    }
                }
            default: throw .unexpectedMarker(marker)
            }
        }
    }
}

/// A positive value as the specification stores it: an integer below `limit` and a decimal
/// exponent (value = integer / 10^exponent), the largest exponent that fits.
struct ScaledInt {
    var integer: UInt32
    var exponent: UInt8
    var value: Double { Double(integer) / pow(10, Double(exponent)) }

    static func rounded(_ v: Double, limit: Double) -> ScaledInt {
        guard v > 0, v.isFinite else { return ScaledInt(integer: 0, exponent: 0) }
        var e = 0, x = v
        while x * 10 < limit && e < 40 { x *= 10; e += 1 }
        return ScaledInt(integer: UInt32(min(x.rounded(), limit)), exponent: UInt8(e))
    }
}

/// Big-endian segment writer.
struct ByteWriter {
    var bytes: [UInt8] = []

    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u16(_ v: UInt16) { bytes.append(UInt8(v >> 8)); bytes.append(UInt8(v & 0xFF)) }
    mutating func u32(_ v: UInt32) { u16(UInt16(v >> 16)); u16(UInt16(v & 0xFFFF)) }
    mutating func marker(_ m: WSQ.Marker) { u16(m.rawValue) }
    mutating func scaled16(_ s: ScaledInt) { u8(s.exponent); u16(UInt16(s.integer)) }

    mutating func comment(_ text: String) {
        let b = Array(text.utf8.prefix(0xFFFF - 2))
        marker(.com)
        u16(UInt16(b.count + 2))
        bytes += b
    }

    /// DTT: the right halves (centre first) of both analysis filters, sign + exponent + 32 bits.
    mutating func transformTable(_ f: WSQFilters) {
        marker(.dtt)
        u16(UInt16(2 + 2 + 6 * ((f.low.count + 1) / 2 + (f.high.count + 1) / 2)))
        u8(UInt8(f.low.count))
        u8(UInt8(f.high.count))
        for c in f.low[(f.low.count / 2)...] + f.high[(f.high.count / 2)...] {
            let s = ScaledInt.rounded(abs(c), limit: 4294967295)
            u8(c < 0 ? 1 : 0)
            u8(s.exponent)
            u32(s.integer)
        }
    }

    mutating func quantisationTable(_ q: WSQQuantiser) {
        marker(.dqt)
        u16(389)
        u8(2)
        u16(44) // bin centre C = 0.44
        for i in 0..<WSQTrees.subbands {
            let qb = i < WSQTrees.codedSubbands ? q.binWidth[i] : 0
            let zb = i < WSQTrees.codedSubbands ? q.zeroBin[i] : 0
            scaled16(qb > 0 ? ScaledInt.rounded(qb, limit: 65535) : ScaledInt(integer: 0, exponent: 0))
            scaled16(qb > 0 ? ScaledInt.rounded(zb, limit: 65535) : ScaledInt(integer: 0, exponent: 0))
        }
    }

    mutating func frameHeader(width: Int, height: Int, shift: ScaledInt, scale: ScaledInt) {
        marker(.sof)
        u16(17)
        u8(0)   // black
        u8(255) // white
        u16(UInt16(height))
        u16(UInt16(width))
        scaled16(shift)
        scaled16(scale)
        u8(2)   // WSQ encoder number
        u16(0)  // software implementation number
    }

    mutating func huffmanTable(id: UInt8, _ t: WSQHuffman.Table) {
        marker(.dht)
        u16(UInt16(3 + 16 + t.values.count))
        u8(id)
        bytes += t.bits
        bytes += t.values
    }

    mutating func block(table: UInt8, coded: [UInt8]) {
        marker(.sob)
        u16(3)
        u8(table)
        bytes += coded
    }
}

/// Bounds-checked big-endian reader over untrusted input.
struct ByteReader {
    let bytes: [UInt8]
    var offset = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }
    var remaining: Int { bytes.count - offset }

    mutating func u8() throws(WSQ.Error) -> UInt8 {
        guard offset < bytes.count else { throw .truncated }
        defer { offset += 1 }
        return bytes[offset]
    }
    mutating func u16() throws(WSQ.Error) -> UInt16 { UInt16(try u8()) << 8 | UInt16(try u8()) }
    mutating func u32() throws(WSQ.Error) -> UInt32 { UInt32(try u16()) << 16 | UInt32(try u16()) }
    mutating func take(_ n: Int) throws(WSQ.Error) -> ArraySlice<UInt8> {
        guard n >= 0, n <= remaining else { throw .truncated }
        defer { offset += n }
        return bytes[offset..<(offset + n)]
    }
    mutating func scaled16() throws(WSQ.Error) -> Double {
        let e = try u8(), v = try u16()
        guard e <= 40 else { throw .badTable("scale exponent \(e)") }
        return Double(v) / pow(10, Double(e))
    }

    /// A segment's declared length (counting its own two bytes), checked against the data.
    mutating func segmentLength(minimum: Int) throws(WSQ.Error) -> Int {
        let n = Int(try u16())
        guard n >= minimum else { throw .badTable("segment length \(n)") }
        guard n - 2 <= remaining else { throw .truncated }
        return n
    }

    mutating func comment() throws(WSQ.Error) -> String {
        let n = try segmentLength(minimum: 2)
        return String(decoding: try take(n - 2), as: UTF8.self)
    }

    mutating func transformTable() throws(WSQ.Error) -> WSQFilters {
        let n = try segmentLength(minimum: 4)
        let end = offset + n - 2
        let lowCount = Int(try u8()), highCount = Int(try u8())
        // Odd, symmetric filters only (the specification's bank; even banks are not used).
        guard lowCount % 2 == 1, highCount % 2 == 1, (3...31).contains(lowCount), (3...31).contains(highCount),
              n == 4 + 6 * ((lowCount + 1) / 2 + (highCount + 1) / 2) else {
            throw .badTable("transform table (DTT) of \(lowCount)/\(highCount) taps, \(n) bytes")
        }
        func half(_ count: Int, _ r: inout ByteReader) throws(WSQ.Error) -> [Double] {
            var right: [Double] = []
            for _ in 0..<((count + 1) / 2) {
                let sign = try r.u8(), e = try r.u8(), v = try r.u32()
                guard sign <= 1, e <= 40 else { throw .badTable("transform table (DTT) coefficient") }
                right.append((sign == 1 ? -1 : 1) * Double(v) / pow(10, Double(e)))
            }
            return right.dropFirst().reversed() + right
        }
        let low = try half(lowCount, &self), high = try half(highCount, &self)
        guard offset == end, low.allSatisfy(\.isFinite), high.allSatisfy(\.isFinite) else {
            throw .badTable("transform table (DTT)")
        }
        return WSQFilters(low: low, high: high)
    }

    mutating func quantisationTable() throws(WSQ.Error) -> WSQQuantiser {
        let n = try segmentLength(minimum: 389)
        guard n == 389 else { throw .badTable("quantisation table (DQT) length \(n)") }
        let centre = try scaled16()
        var q = WSQQuantiser(binCentre: centre)
        for i in 0..<WSQTrees.subbands {
            let qb = try scaled16(), zb = try scaled16()
            if i < WSQTrees.codedSubbands {
                q.binWidth[i] = qb
                q.zeroBin[i] = zb
            }
        }
        return q
    }

    mutating func huffmanTables() throws(WSQ.Error) -> [(Int, WSQHuffman.Table)] {
        let n = try segmentLength(minimum: 3 + 16)
        let end = offset + n - 2
        var tables: [(Int, WSQHuffman.Table)] = []
        while offset < end {
            let id = Int(try u8())
            guard id < 8 else { throw .badTable("Huffman table id \(id)") }
            guard end - offset >= 16 else { throw .badTable("Huffman table (DHT) length") }
            let bits = Array(try take(16))
            let count = bits.reduce(0) { $0 + Int($1) }
            guard count > 0, count <= 256, end - offset >= count else {
                throw .badTable("Huffman table \(id) with \(count) codes")
            }
            tables.append((id, WSQHuffman.Table(bits: bits, values: Array(try take(count)))))
        }
        return tables
    }

    struct Frame { var width: Int, height: Int, shift: Double, scale: Double }

    mutating func frameHeader() throws(WSQ.Error) -> Frame {
        let n = try segmentLength(minimum: 17)
        guard n == 17 else { throw .badTable("frame header (SOF) length \(n)") }
        _ = try u8() // black
        _ = try u8() // white
        let height = Int(try u16()), width = Int(try u16())
        let shift = try scaled16(), scale = try scaled16()
        _ = try u8()  // encoder
        _ = try u16() // software
        guard scale > 0, shift.isFinite, scale.isFinite else { throw .badTable("frame header (SOF) scale \(scale)") }
        return Frame(width: width, height: height, shift: shift, scale: scale)
    }

    mutating func blockHeader() throws(WSQ.Error) -> Int {
        let n = try segmentLength(minimum: 3)
        guard n == 3 else { throw .badTable("block header (SOB) length \(n)") }
        return Int(try u8())
    }
}

/// Bits of a block's coded data, MSB first, with stuffed zeros removed; a marker (0xFF then a
/// non-zero byte) ends the data.
struct BitReader {
    private var current: UInt8 = 0
    private var left = 0
    private(set) var marker: UInt16 = 0

    /// The next bit, or nil when the data ends at a marker (left unread past it).
    mutating func bit(_ r: inout ByteReader) throws(WSQ.Error) -> UInt8? {
        if left == 0 {
            let b = try r.u8()
            if b == 0xFF {
                let b2 = try r.u8()
                if b2 != 0 {
                    marker = UInt16(b) << 8 | UInt16(b2)
                    return nil
                }
            }
            current = b
            left = 8
        }
        left -= 1
        return current >> UInt8(left) & 1
    }

    /// `n` raw bits; a marker inside them is an error.
    mutating func bits(_ n: Int, _ r: inout ByteReader) throws(WSQ.Error) -> UInt32 {
        var v: UInt32 = 0
        for _ in 0..<n {
            guard let b = try bit(&r) else { throw .badCode }
            v = v << 1 | UInt32(b)
        }
        return v
    }
}
