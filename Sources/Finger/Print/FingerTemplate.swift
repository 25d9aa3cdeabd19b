/// A fingerprint template: the minutiae of one print plus what is needed to use them (size,
/// quality, finger). Stored encrypted by the daemon; `encoded()` is its versioned binary form.
///
/// Format version 1 (big-endian, see Docs/finger-print.md):
///
///     "BMFP"  magic                         4
///     version (1)                           1
///     flags (bit 0: position present)       1
///     source ppi                            2
///     width, height (500-ppi pixels)        2 + 2
///     quality 0–100                         1
///     position ISO code (0 = unknown)       1
///     minutia count                         2
///     minutiae, 8 bytes each: x, y in 1/4 px (u16 each), angle in 2π/65536 (u16), kind (1 ending,
///       2 bifurcation), quality 0–100
///     CRC-32 (IEEE) of everything above     4
///
/// Coordinates and angles are quantised when a template is made, so decode(encode(t)) == t.
public struct FingerTemplate: Sendable, Hashable {
    public static let magic: [UInt8] = Array("BMFP".utf8)
    public static let currentVersion: UInt8 = 1
    /// More than any real print has (ISO 19794-2 allows 255 per view); bounds decoding work.
    public static let maxMinutiae = 255
    static let headerLength = 16
    static let minutiaLength = 8

    /// Resolution of the source image (coordinates are always at 500 ppi).
    public let sourcePPI: Int
    /// Size of the print at 500 ppi.
    public let width: Int
    public let height: Int
    /// 0–100: image quality of the print the template came from.
    public let quality: Int
    public let position: FingerPosition?
    public let minutiae: [Minutia]

    /// Makes a template; minutiae beyond `maxMinutiae` (lowest quality first) are dropped and the
    /// rest quantised to the stored precision.
    public init(sourcePPI: Int, width: Int, height: Int, quality: Int, position: FingerPosition?, minutiae: [Minutia]) {
        self.sourcePPI = max(0, min(Int(UInt16.max), sourcePPI))
        self.width = max(0, min(Int(UInt16.max), width))
        self.height = max(0, min(Int(UInt16.max), height))
        self.quality = max(0, min(100, quality))
        self.position = position
        var kept = minutiae
        if kept.count > Self.maxMinutiae {
            kept = Array(kept.sorted { $0.quality > $1.quality }.prefix(Self.maxMinutiae))
        }
        self.minutiae = kept.map(Self.quantised)
    }

    /// A copy with another finger position.
    public func with(position: FingerPosition?) -> FingerTemplate {
        FingerTemplate(sourcePPI: sourcePPI, width: width, height: height, quality: quality, position: position, minutiae: minutiae)
    }

    static func quantised(_ m: Minutia) -> Minutia {
        let x = Double(UInt16(clamping: Int((m.x * 4).rounded()))) / 4
        let y = Double(UInt16(clamping: Int((m.y * 4).rounded()))) / 4
        let units = Int((m.angle / (2 * .pi) * 65536).rounded()) & 0xFFFF
        return Minutia(x: x, y: y, angle: Double(units) * 2 * .pi / 65536, kind: m.kind, quality: m.quality)
    }

    /// True when `bytes` start like a biometricd template (for telling templates from images).
    public static func looksLikeTemplate(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 4 && Array(bytes.prefix(4)) == magic
    }

    public func encoded() -> [UInt8] {
        var out = Self.magic
        out.reserveCapacity(Self.headerLength + Self.minutiaLength * minutiae.count + 4)
        out.append(Self.currentVersion)
        out.append(position == nil ? 0 : 1)
        out.appendBE16(sourcePPI)
        out.appendBE16(width)
        out.appendBE16(height)
        out.append(UInt8(quality))
        out.append(position?.isoCode ?? 0)
        out.appendBE16(minutiae.count)
        for m in minutiae {
            out.appendBE16(Int((m.x * 4).rounded()))
            out.appendBE16(Int((m.y * 4).rounded()))
            out.appendBE16(Int((m.angle / (2 * .pi) * 65536).rounded()) & 0xFFFF)
            out.append(m.kind == .ending ? 1 : 2)
            out.append(UInt8(m.quality))
        }
        out.appendBE32(CRC32.checksum(out))
        return out
    }

    /// Decodes and validates a template; never traps on hostile input.
    public init(decoding bytes: [UInt8]) throws(FingerTemplateError) {
        guard bytes.count >= 4, Array(bytes.prefix(4)) == Self.magic else { throw .badMagic }
        guard bytes.count >= Self.headerLength + 4 else {
            throw .truncated(needed: Self.headerLength + 4, got: bytes.count)
        }
        guard bytes[4] == Self.currentVersion else { throw .unsupportedVersion(bytes[4]) }
        let flags = bytes[5]
        guard flags & ~1 == 0 else { throw .invalidField("flags", Int(flags)) }
        let count = bytes.be16(14)
        guard count <= Self.maxMinutiae else { throw .tooManyMinutiae(count) }
        let expected = Self.headerLength + Self.minutiaLength * count + 4
        guard bytes.count >= expected else { throw .truncated(needed: expected, got: bytes.count) }
        guard bytes.count == expected else { throw .trailingBytes(bytes.count - expected) }
        let stored = UInt32(bytes.be16(expected - 4)) << 16 | UInt32(bytes.be16(expected - 2))
        guard CRC32.checksum(bytes[0..<(expected - 4)]) == stored else { throw .checksumMismatch }

        let ppi = bytes.be16(6), width = bytes.be16(8), height = bytes.be16(10)
        guard FingerprintImage.ppiRange.contains(ppi) else { throw .invalidField("source ppi", ppi) }
        guard width > 0, height > 0 else { throw .invalidField("size", width * height) }
        let quality = Int(bytes[12])
        guard quality <= 100 else { throw .invalidField("quality", quality) }
        var position: FingerPosition?
        if flags & 1 != 0 {
            guard let p = FingerPosition(isoCode: bytes[13]) else { throw .invalidField("position", Int(bytes[13])) }
            position = p
        } else if bytes[13] != 0 {
            throw .invalidField("position", Int(bytes[13]))
        }
        var minutiae: [Minutia] = []
        minutiae.reserveCapacity(count)
        for i in 0..<count {
            let o = Self.headerLength + i * Self.minutiaLength
            let x = Double(bytes.be16(o)) / 4, y = Double(bytes.be16(o + 2)) / 4
            // One pixel of slack: coordinates are rounded, sizes are whole pixels.
            guard x <= Double(width + 1), y <= Double(height + 1) else {
                throw .invalidField("minutia \(i) position", Int(x))
            }
            let kind: Minutia.Kind
            switch bytes[o + 6] {
            case 1: kind = .ending
            case 2: kind = .bifurcation
            default: throw .invalidField("minutia \(i) kind", Int(bytes[o + 6]))
            }
            let q = Int(bytes[o + 7])
            guard q <= 100 else { throw .invalidField("minutia \(i) quality", q) }
            minutiae.append(Minutia(x: x, y: y, angle: Double(bytes.be16(o + 4)) * 2 * .pi / 65536, kind: kind, quality: q))
        }
        self.init(sourcePPI: ppi, width: width, height: height, quality: quality, position: position, minutiae: minutiae)
    }
}

/// Why template bytes were refused.
public enum FingerTemplateError: Error, Equatable, Sendable, CustomStringConvertible {
    case badMagic
    case unsupportedVersion(UInt8)
    case truncated(needed: Int, got: Int)
    case trailingBytes(Int)
    case tooManyMinutiae(Int)
    case checksumMismatch
    case invalidField(String, Int)

    public var description: String {
        switch self {
        case .badMagic: "not a biometricd finger template (no BMFP magic)"
        case .unsupportedVersion(let v): "finger template version \(v) is not supported (this build reads 1)"
        case .truncated(let needed, let got): "finger template truncated: \(got) bytes, \(needed) needed"
        case .trailingBytes(let n): "finger template has \(n) unexpected trailing bytes"
        case .tooManyMinutiae(let n): "finger template claims \(n) minutiae (at most \(FingerTemplate.maxMinutiae))"
        case .checksumMismatch: "finger template checksum mismatch (corrupt)"
        case .invalidField(let field, let value): "finger template has an invalid \(field): \(value)"
        }
    }
}

// MARK: Byte helpers

extension Array where Element == UInt8 {
    mutating func appendBE16(_ v: Int) {
        let u = UInt16(clamping: v)
        append(UInt8(u >> 8))
        append(UInt8(u & 0xFF))
    }

    mutating func appendBE32(_ v: UInt32) {
        append(UInt8(v >> 24))
        append(UInt8((v >> 16) & 0xFF))
        append(UInt8((v >> 8) & 0xFF))
        append(UInt8(v & 0xFF))
    }

    /// Big-endian u16 at `offset` (callers check bounds first).
    func be16(_ offset: Int) -> Int { Int(self[offset]) << 8 | Int(self[offset + 1]) }
}

/// CRC-32 (IEEE 802.3, as zlib): detects storage or transport corruption of templates.
enum CRC32 {
    static let table: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    static func checksum<C: Collection>(_ bytes: C) -> UInt32 where C.Element == UInt8 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in bytes { c = table[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        return c ^ 0xFFFF_FFFF
    }
}
