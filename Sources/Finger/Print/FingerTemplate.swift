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
/// Version 2 is version 1 with the print's coarse orientation field (`OrientationField`) between
/// the minutiae and the CRC: field width, height in 16-px cells (u16 each, = ⌈width/16⌉,
/// ⌈height/16⌉), then 2 bytes per cell. A template without a field is written as version 1, so
/// older templates and ISO imports round-trip unchanged and match on minutiae alone.
///
/// Version 3 holds minutiae found by the learned extractor (LEADER, `LearnedMinutiae`): the same
/// layout as version 2, with flags bit 1 saying whether the orientation field follows the minutiae
/// (it does for every extracted print; an ISO 19794-2 import has none). Versions 1 and 2 are the
/// classical extractor's: they are matched only with each other, with the rules and calibration
/// they were made for, never with version 3 (`MinutiaeSource`).
///
/// Coordinates and angles are quantised when a template is made, so decode(encode(t)) == t.
public struct FingerTemplate: Sendable, Hashable {
    public static let magic: [UInt8] = Array("BMFP".utf8)
    /// Version written for a classical template with an orientation field; one without is written as 1.
    public static let classicalVersion: UInt8 = 2
    static let minutiaeOnlyVersion: UInt8 = 1
    /// Version written for learned minutiae (with or without a field).
    public static let learnedVersion: UInt8 = 3
    /// Versions this build reads.
    public static let supportedVersions: ClosedRange<UInt8> = 1...3
    static let fieldFlag: UInt8 = 2
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
    /// The coarse ridge-orientation field (nil: matched on minutiae alone, as version 1).
    public let orientationField: OrientationField?
    /// Which extractor found the minutiae, hence which rules and calibration match them.
    public let minutiaeSource: MinutiaeSource

    /// The stored format version (1, 2: classical; 3: learned).
    public var version: UInt8 {
        switch minutiaeSource {
        case .learned: Self.learnedVersion
        case .classical: orientationField == nil ? Self.minutiaeOnlyVersion : Self.classicalVersion
        }
    }

    /// Makes a template; minutiae beyond `maxMinutiae` (lowest quality first) are dropped and the
    /// rest quantised to the stored precision. A field whose size does not fit `width` × `height`
    /// is dropped.
    public init(sourcePPI: Int, width: Int, height: Int, quality: Int, position: FingerPosition?, minutiae: [Minutia],
                orientationField: OrientationField? = nil, minutiaeSource: MinutiaeSource = .classical) {
        self.minutiaeSource = minutiaeSource
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
        if let field = orientationField, field.fits(printWidth: self.width, height: self.height) {
            self.orientationField = field
        } else {
            self.orientationField = nil
        }
    }

    /// A copy with another finger position.
    public func with(position: FingerPosition?) -> FingerTemplate {
        FingerTemplate(sourcePPI: sourcePPI, width: width, height: height, quality: quality, position: position, minutiae: minutiae,
                       orientationField: orientationField, minutiaeSource: minutiaeSource)
    }

    /// The same print `factor` times larger (minutiae positions, the print's size and its
    /// orientation field; directions do not change under a uniform scale). The matcher's scale
    /// search (`FingerMatcher.ScaleSearch`) compares a camera print at several sizes this way,
    /// without extracting it again.
    public func scaled(by factor: Double) -> FingerTemplate {
        guard factor.isFinite, factor > 0, factor != 1 else { return self }
        let w = Int((Double(width) * factor).rounded()), h = Int((Double(height) * factor).rounded())
        return FingerTemplate(sourcePPI: sourcePPI, width: w, height: h, quality: quality, position: position,
                              minutiae: minutiae.map { Minutia(x: $0.x * factor, y: $0.y * factor, angle: $0.angle, kind: $0.kind, quality: $0.quality) },
                              orientationField: orientationField?.resampled(by: factor, printWidth: w, height: h),
                              minutiaeSource: minutiaeSource)
    }

    /// A copy without the orientation field (what an ISO 19794-2 round trip gives).
    public func withoutOrientationField() -> FingerTemplate {
        FingerTemplate(sourcePPI: sourcePPI, width: width, height: height, quality: quality, position: position, minutiae: minutiae,
                       minutiaeSource: minutiaeSource)
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
        out.append(version)
        let fieldBit = minutiaeSource == .learned && orientationField != nil ? Self.fieldFlag : 0
        out.append((position == nil ? 0 : 1) | fieldBit)
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
        if let field = orientationField {
            out.appendBE16(field.width)
            out.appendBE16(field.height)
            out.append(contentsOf: field.cells)
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
        let version = bytes[4]
        guard Self.supportedVersions.contains(version) else { throw .unsupportedVersion(version) }
        let flags = bytes[5]
        // Bit 0: position; bit 1 (version 3 only): the orientation field follows the minutiae.
        guard flags & ~(version == Self.learnedVersion ? 3 : 1) == 0 else { throw .invalidField("flags", Int(flags)) }
        let hasField = version == Self.classicalVersion || (version == Self.learnedVersion && flags & Self.fieldFlag != 0)
        let count = bytes.be16(14)
        guard count <= Self.maxMinutiae else { throw .tooManyMinutiae(count) }
        let minutiaeEnd = Self.headerLength + Self.minutiaLength * count
        var expected = minutiaeEnd + 4
        var fieldSize: (width: Int, height: Int)?
        if hasField {
            // The field's size comes first; bound it before it decides how many bytes are expected.
            guard bytes.count >= minutiaeEnd + 4 + 4 else { throw .truncated(needed: minutiaeEnd + 8, got: bytes.count) }
            let fw = bytes.be16(minutiaeEnd), fh = bytes.be16(minutiaeEnd + 2)
            guard fw > 0, fh > 0, fw * fh <= OrientationField.maxCells else { throw .invalidField("orientation field size", fw * fh) }
            fieldSize = (fw, fh)
            expected = minutiaeEnd + 4 + 2 * fw * fh + 4
        }
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
        var field: OrientationField?
        if let size = fieldSize {
            let cells = Array(bytes[(minutiaeEnd + 4)..<(expected - 4)])
            guard let f = OrientationField(width: size.width, height: size.height, cells: cells) else {
                throw .invalidField("orientation field", 0)
            }
            guard f.fits(printWidth: width, height: height) else {
                throw .invalidField("orientation field size", size.width * size.height)
            }
            field = f
        }
        self.init(sourcePPI: ppi, width: width, height: height, quality: quality, position: position, minutiae: minutiae,
                  orientationField: field, minutiaeSource: version == Self.learnedVersion ? .learned : .classical)
    }
}

/// Which extractor found a template's minutiae. The two find different points (the classical
/// one's skeleton ends and forks against the network's learned minutiae), so the matcher only
/// compares templates of the same source, each with its own score calibration
/// (Docs/finger-print.md, "Learned minutiae").
public enum MinutiaeSource: String, Sendable, Hashable {
    /// The classical pipeline (Gabor, thinning, crossing number): template versions 1 and 2.
    case classical
    /// The learned extractor (LEADER), and ISO 19794-2 imports: template version 3.
    case learned
}

/// A print's coarse ridge-orientation field, as the extractor writes it (CVIS_PRINT_FIELD_CELL =
/// 16-px cells of the 500-ppi print, row-major, 2 bytes each: direction in π/256 steps, y down,
/// and strength 1–255; both 0 where the cell is not usable print). The matcher compares two
/// prints' fields over their overlap under its alignment (Docs/finger-print.md, item 9).
public struct OrientationField: Sendable, Hashable {
    /// Cell side in 500-ppi pixels.
    public static let cell = 16
    /// Most cells a field may have: a 6-Mpx print (the extractor's limit) has ≈ 23,400.
    public static let maxCells = 32768
    /// Size in cells.
    public let width: Int
    public let height: Int
    /// 2 × width × height bytes.
    public let cells: [UInt8]

    /// Nil when the size or the bytes are inconsistent (a background cell must be 0, 0).
    public init?(width: Int, height: Int, cells: [UInt8]) {
        guard width > 0, height > 0, width * height <= Self.maxCells, cells.count == 2 * width * height else { return nil }
        for k in stride(from: 0, to: cells.count, by: 2) where cells[k + 1] == 0 && cells[k] != 0 { return nil }
        self.width = width
        self.height = height
        self.cells = cells
    }

    /// Cells of a print `width` × `height` 500-ppi pixels.
    public static func size(printWidth: Int, height: Int) -> (width: Int, height: Int) {
        ((printWidth + cell - 1) / cell, (height + cell - 1) / cell)
    }

    func fits(printWidth: Int, height: Int) -> Bool {
        let s = Self.size(printWidth: printWidth, height: height)
        return s.width == width && s.height == self.height
    }

    /// The field of the print `factor` times larger (`printWidth` × `height` pixels): each new
    /// cell takes the cell its centre falls in (nearest neighbour: a direction is not averaged
    /// across cells).
    func resampled(by factor: Double, printWidth: Int, height printHeight: Int) -> OrientationField? {
        let size = Self.size(printWidth: printWidth, height: printHeight)
        guard size.width * size.height <= Self.maxCells else { return nil }
        var out = [UInt8](repeating: 0, count: 2 * size.width * size.height)
        for cy in 0..<size.height {
            let oy = Int((Double(cy) + 0.5) / factor)
            guard oy < height else { continue }
            for cx in 0..<size.width {
                let ox = Int((Double(cx) + 0.5) / factor)
                guard ox < width else { continue }
                out[2 * (cy * size.width + cx)] = cells[2 * (oy * width + ox)]
                out[2 * (cy * size.width + cx) + 1] = cells[2 * (oy * width + ox) + 1]
            }
        }
        return OrientationField(width: size.width, height: size.height, cells: out)
    }

    /// Cells holding usable print.
    public var usableCells: Int { stride(from: 1, to: cells.count, by: 2).filter { cells[$0] != 0 }.count }
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
        case .unsupportedVersion(let v): "finger template version \(v) is not supported (this build reads 1, 2 and 3)"
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
