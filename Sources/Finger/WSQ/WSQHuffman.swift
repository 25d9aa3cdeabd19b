/// WSQ entropy coding (IAFIS-IC-0110 v3, §A.3): quantised coefficients become symbols — 1–100 a
/// run of that many zeros, 101/102 a positive/negative coefficient in the next 8 bits, 103/104 the
/// same in 16 bits, 105/106 a zero run in 8/16 bits, 107–254 a coefficient of -73…74 (symbol -
/// 180) — coded with a JPEG-style canonical Huffman table (16 code-length counts, then symbols).
/// Coded bytes 0xFF are followed by a stuffed 0x00; a block ends at the next marker.
enum WSQHuffman {
    static let maxCoefficient = 74
    static let maxZeroRun = 100
    static let maxCodeLength = 16

    /// A table as carried in a DHT segment.
    struct Table: Equatable, Sendable {
        /// Number of codes of each length 1…16.
        var bits: [UInt8]
        /// Symbols in code order.
        var values: [UInt8]
    }

    /// Code (right-aligned) and length per symbol, from a table; nil when the table is not a
    /// prefix code or uses the all-ones code (the specification forbids it: padding is ones).
    struct Codes {
        var code = [UInt32](repeating: 0, count: 256)
        var length = [UInt8](repeating: 0, count: 256)
        /// Decoding: per length, the largest code (-1 when none), the smallest, and the index of
        /// its symbol in `values`.
        var maxCode = [Int](repeating: -1, count: maxCodeLength + 1)
        var minCode = [Int](repeating: 0, count: maxCodeLength + 1)
        var firstIndex = [Int](repeating: 0, count: maxCodeLength + 1)
        var values: [UInt8] = []

        init?(_ table: Table) {
            guard table.bits.count == maxCodeLength else { return nil }
            let total = table.bits.reduce(0) { $0 + Int($1) }
            guard total > 0, total == table.values.count, total <= 256 else { return nil }
            values = table.values
            var next = 0, index = 0
            for len in 1...maxCodeLength {
                let n = Int(table.bits[len - 1])
                if n > 0 {
                    minCode[len] = next
                    firstIndex[len] = index
                    for _ in 0..<n {
                        // A code must fit its length and must not be all ones.
                        guard next < (1 << len) - 1 else { return nil }
                        let symbol = Int(table.values[index])
                        guard length[symbol] == 0 else { return nil } // a symbol twice
                        code[symbol] = UInt32(next)
                        length[symbol] = UInt8(len)
                        next += 1
                        index += 1
                    }
                    maxCode[len] = next - 1
                }
                next <<= 1
            }
        }
    }

    /// Symbols of one block, in order, with the raw extra bits some of them carry.
    struct Symbol { var value: Int; var extra: UInt32 = 0; var extraBits = 0 }

    static func symbols(_ q: ArraySlice<Int32>) -> [Symbol] {
        var out: [Symbol] = []
        out.reserveCapacity(q.count / 4)
        var run = 0
        func flushRun() {
            guard run > 0 else { return }
            if run <= maxZeroRun { out.append(Symbol(value: run)) }
            else if run <= 0xFF { out.append(Symbol(value: 105, extra: UInt32(run), extraBits: 8)) }
            else { out.append(Symbol(value: 106, extra: UInt32(run), extraBits: 16)) }
            run = 0
        }
        for v in q {
            if v == 0 {
                run += 1
                if run == 0xFFFF { flushRun() }
                continue
            }
            flushRun()
            let v = Int(v)
            if v > maxCoefficient {
                out.append(v > 255 ? Symbol(value: 103, extra: UInt32(v), extraBits: 16)
                                   : Symbol(value: 101, extra: UInt32(v), extraBits: 8))
            } else if v < 1 - maxCoefficient {
                out.append(v < -255 ? Symbol(value: 104, extra: UInt32(-v), extraBits: 16)
                                    : Symbol(value: 102, extra: UInt32(-v), extraBits: 8))
            } else {
                out.append(Symbol(value: v + 180))
            }
        }
        flushRun()
        return out
    }

    /// The optimal table for these symbol frequencies, code lengths limited to 16 (JPEG Annex
    /// K.2: a reserved symbol takes the longest code, so no real code is all ones).
    static func table(frequencies: [Int]) -> Table {
        var freq = frequencies + [1] // index 256: reserved
        // An empty block still needs a table: give it one (unused) symbol.
        if !frequencies.contains(where: { $0 > 0 }) { freq[1] = 1 }
        let n = freq.count
        var codeSize = [Int](repeating: 0, count: n)
        var others = [Int](repeating: -1, count: n)
        while true {
            // The least frequent symbol c1 (ties: the larger index) and the next least c2.
            var c1 = -1, c2 = -1, v = Int.max
            for i in 0..<n where freq[i] > 0 && freq[i] <= v { v = freq[i]; c1 = i }
            v = Int.max
            for i in 0..<n where freq[i] > 0 && freq[i] <= v && i != c1 { v = freq[i]; c2 = i }
            if c2 < 0 { break }
            freq[c1] += freq[c2]
            freq[c2] = 0
            codeSize[c1] += 1
            var a = c1
            while others[a] >= 0 { a = others[a]; codeSize[a] += 1 }
            others[a] = c2
            codeSize[c2] += 1
            var b = c2
            while others[b] >= 0 { b = others[b]; codeSize[b] += 1 }
        }
        var bits = [Int](repeating: 0, count: 64)
        for i in 0..<n where codeSize[i] > 0 { bits[codeSize[i]] += 1 }
        var i = 63
        while i > maxCodeLength {
            while bits[i] > 0 {
                var j = i - 2
                while bits[j] == 0 { j -= 1 }
                bits[i] -= 2
                bits[i - 1] += 1
                bits[j + 1] += 2
                bits[j] -= 1
            }
            i -= 1
        }
        while bits[i] == 0 { i -= 1 }
        bits[i] -= 1 // drop the reserved symbol's code
        var values: [UInt8] = []
        for size in 1..<64 {
            for s in 0..<256 where codeSize[s] == size { values.append(UInt8(s)) }
        }
        return Table(bits: (1...maxCodeLength).map { UInt8(bits[$0]) }, values: values)
    }
}

/// MSB-first bit output with 0xFF byte stuffing; `finish` pads with ones.
struct WSQBitWriter {
    private(set) var bytes: [UInt8] = []
    private var acc: UInt32 = 0
    private var count = 0

    mutating func write(_ value: UInt32, bits: Int) {
        for b in stride(from: bits - 1, through: 0, by: -1) {
            acc = acc << 1 | (value >> UInt32(b) & 1)
            count += 1
            if count == 8 { emit() }
        }
    }

    private mutating func emit() {
        let byte = UInt8(acc & 0xFF)
        bytes.append(byte)
        if byte == 0xFF { bytes.append(0) }
        acc = 0
        count = 0
    }

    mutating func finish() -> [UInt8] {
        if count > 0 {
            while count < 8 { acc = acc << 1 | 1; count += 1 }
            emit()
        }
        return bytes
    }
}
