/// ISO/IEC 19794-2:2005 finger minutiae record ("FMR\0", version " 20\0"): the interchange
/// format other matchers read. Export maps each template to one finger view; import validates
/// every length and field and converts coordinates to 500 ppi.
///
/// Layout (big-endian): 24-byte record header — "FMR\0", " 20\0", record length (4), capture
/// equipment (4 bits certification + 12 bits device type, 2), image width and height (2 + 2),
/// x and y resolution in pixels per cm (2 + 2), number of views (1), reserved (1); then per view a
/// 4-byte header — finger position (ISO code, 0 unknown), view number (4 bits) + impression type
/// (4 bits), finger quality 0–100, minutia count — and 6 bytes per minutia: type (2 bits: 01
/// ending, 10 bifurcation) + x (14 bits), reserved (2 bits) + y (14 bits), angle in 1.40625°
/// units (counter-clockwise), quality 0–100; then the view's extended data length (2, here 0).
public enum ISO19794_2 {
    public static let formatIdentifier: [UInt8] = [0x46, 0x4D, 0x52, 0x00] // "FMR\0"
    public static let version: [UInt8] = [0x20, 0x32, 0x30, 0x00]          // " 20\0"
    static let headerLength = 24
    static let viewHeaderLength = 4
    static let minutiaLength = 6
    /// 500 ppi in pixels per centimetre (500 / 2.54, rounded), the resolution our coordinates use.
    public static let resolution500 = 197

    /// ISO impression types (4 bits).
    public enum Impression: UInt8, Sendable {
        case liveScanPlain = 0, liveScanRolled = 1, nonLiveScanPlain = 2, nonLiveScanRolled = 3, swipe = 8
    }

    public enum Error: Swift.Error, Equatable, Sendable, CustomStringConvertible {
        case notARecord
        case unsupportedVersion([UInt8])
        case truncated(needed: Int, got: Int)
        case lengthMismatch(declared: Int, actual: Int)
        case invalidField(String, Int)

        public var description: String {
            switch self {
            case .notARecord: "not an ISO 19794-2 record (no FMR header)"
            case .unsupportedVersion(let v): "ISO 19794-2 version \(String(decoding: v.prefix(3), as: UTF8.self)) is not supported (2005, \" 20\")"
            case .truncated(let needed, let got): "ISO 19794-2 record truncated: \(got) bytes, \(needed) needed"
            case .lengthMismatch(let declared, let actual): "ISO 19794-2 record declares \(declared) bytes but has \(actual)"
            case .invalidField(let field, let value): "ISO 19794-2 record has an invalid \(field): \(value)"
            }
        }
    }

    /// True when `bytes` start with the FMR format identifier.
    public static func looksLikeRecord(_ bytes: [UInt8]) -> Bool { bytes.starts(with: formatIdentifier) }

    /// One record holding every template as a finger view (views of the same finger are numbered
    /// 0, 1, …). Image size is the largest template's; resolution is 500 ppi (197 px/cm).
    public static func encode(_ templates: [FingerTemplate], impression: Impression = .liveScanPlain,
                              captureDeviceType: UInt16 = 0) -> [UInt8] {
        let views = Array(templates.prefix(255))
        var body: [UInt8] = []
        var viewNumbers: [UInt8: Int] = [:]
        for t in views {
            let position = t.position?.isoCode ?? 0
            let number = viewNumbers[position, default: 0]
            viewNumbers[position] = number + 1
            body.append(position)
            body.append(UInt8(min(number, 15)) << 4 | impression.rawValue)
            body.append(UInt8(t.quality))
            let minutiae = Array(t.minutiae.prefix(255))
            body.append(UInt8(minutiae.count))
            for m in minutiae {
                let type: Int = m.kind == .ending ? 1 : 2
                let x = min(0x3FFF, max(0, Int(m.x.rounded()))), y = min(0x3FFF, max(0, Int(m.y.rounded())))
                body.appendBE16(type << 14 | x)
                body.appendBE16(y)
                body.append(UInt8(Int((m.angle / (2 * .pi) * 256).rounded()) & 0xFF))
                body.append(UInt8(m.quality))
            }
            body.append(contentsOf: [0, 0]) // this view's extended data block length: none
        }
        var out = formatIdentifier + version
        out.appendBE32(UInt32(headerLength + body.count))
        out.appendBE16(Int(captureDeviceType & 0x0FFF)) // certification flag 0: not certified
        out.appendBE16(views.map(\.width).max() ?? 0)
        out.appendBE16(views.map(\.height).max() ?? 0)
        out.appendBE16(resolution500)
        out.appendBE16(resolution500)
        out.append(UInt8(views.count))
        out.append(0)
        return out + body
    }

    /// The finger views of a record as templates (coordinates converted to 500 ppi).
    /// `source`: which extractor's templates the imported minutiae are to be matched against — an
    /// ISO record says nothing about how its minutiae were found, so they join the extractor the
    /// importing daemon runs (the learned one when its model is installed).
    public static func decode(_ bytes: [UInt8], as source: MinutiaeSource = .classical) throws(Error) -> [FingerTemplate] {
        guard looksLikeRecord(bytes) else { throw .notARecord }
        guard bytes.count >= headerLength else { throw .truncated(needed: headerLength, got: bytes.count) }
        guard Array(bytes[4..<8]) == version else { throw .unsupportedVersion(Array(bytes[4..<8])) }
        let declared = bytes.be16(8) << 16 | bytes.be16(10)
        guard declared == bytes.count else {
            if declared > bytes.count { throw .truncated(needed: declared, got: bytes.count) }
            throw .lengthMismatch(declared: declared, actual: bytes.count)
        }
        let width = bytes.be16(14), height = bytes.be16(16)
        let xRes = bytes.be16(18), yRes = bytes.be16(20)
        guard xRes > 0, xRes == yRes else { throw .invalidField("resolution", xRes) }
        let ppi = Int((Double(xRes) * 2.54).rounded())
        guard FingerprintImage.ppiRange.contains(ppi) else { throw .invalidField("resolution (px/cm)", xRes) }
        let scale = 500.0 / (Double(xRes) * 2.54)
        let viewCount = Int(bytes[22])
        var offset = headerLength
        var templates: [FingerTemplate] = []
        for v in 0..<viewCount {
            guard offset + viewHeaderLength <= bytes.count else {
                throw .truncated(needed: offset + viewHeaderLength, got: bytes.count)
            }
            let code = bytes[offset]
            let position = FingerPosition(isoCode: code)
            guard code == 0 || position != nil else { throw .invalidField("view \(v) finger position", Int(code)) }
            let quality = Int(bytes[offset + 2])
            guard quality <= 100 else { throw .invalidField("view \(v) quality", quality) }
            let count = Int(bytes[offset + 3])
            offset += viewHeaderLength
            let end = offset + count * minutiaLength
            guard end <= bytes.count else { throw .truncated(needed: end, got: bytes.count) }
            var minutiae: [Minutia] = []
            for i in 0..<count {
                let o = offset + i * minutiaLength
                let kind: Minutia.Kind
                switch bytes[o] >> 6 {
                case 1: kind = .ending
                case 2: kind = .bifurcation
                case 0: kind = .ending // "other": kept as an ending (the matcher ignores kinds)
                default: throw .invalidField("minutia \(i) type", Int(bytes[o] >> 6))
                }
                let x = bytes.be16(o) & 0x3FFF, y = bytes.be16(o + 2) & 0x3FFF
                guard (width == 0 || x < width + 1), (height == 0 || y < height + 1) else {
                    throw .invalidField("minutia \(i) position", x)
                }
                let q = Int(bytes[o + 5])
                guard q <= 100 else { throw .invalidField("minutia \(i) quality", q) }
                minutiae.append(Minutia(x: Double(x) * scale, y: Double(y) * scale,
                                        angle: Double(bytes[o + 4]) * 2 * .pi / 256, kind: kind, quality: q))
            }
            // This view's extended data block (ridge counts, cores, deltas): skipped.
            guard end + 2 <= bytes.count else { throw .truncated(needed: end + 2, got: bytes.count) }
            offset = end + 2 + bytes.be16(end)
            guard offset <= bytes.count else { throw .truncated(needed: offset, got: bytes.count) }
            // Rounded up so every rescaled minutia stays inside the template's declared size.
            templates.append(FingerTemplate(sourcePPI: ppi, width: Int((Double(width + 1) * scale).rounded(.up)),
                                            height: Int((Double(height + 1) * scale).rounded(.up)), quality: quality,
                                            position: position, minutiae: minutiae, minutiaeSource: source))
        }
        guard offset == bytes.count else { throw .lengthMismatch(declared: offset, actual: bytes.count) }
        return templates
    }
}
