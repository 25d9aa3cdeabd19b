import CFingerVision
import CImaging
import Foundation

/// Why a print could not be turned into a template.
public enum FingerprintError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No print-like ridge area was found (blank, blurred, or not a fingerprint).
    case noRidges(foreground: Double)
    /// Ridges were found but too few reliable minutiae to match on.
    case tooFewMinutiae(found: Int, required: Int)
    /// Uploaded bytes were empty.
    case emptyImage
    /// Uploaded bytes are not PNG, JPEG or TIFF.
    case unsupportedFormat
    /// PNG/JPEG/TIFF bytes that do not decode.
    case corruptImage(String)
    /// The image exceeds the pixel limit or the side limits of `FingerprintImage`, or is more
    /// than 6 Mpx once rescaled to 500 ppi (extraction time and memory grow with it).
    case imageTooLarge(width: Int, height: Int)
    /// Decoded fine but not a usable print geometry (too small, bad resolution).
    case invalidImage(FingerprintImage.Invalid)
    /// OpenCV failed or memory ran out: a bug or an exhausted machine, not the user's capture.
    case internalError(String)
    /// WSQ bytes that do not decode (truncated, oversized, bad markers or tables).
    case wsq(WSQ.Error)

    /// The capture is at fault (the daemon answers bad_capture 4001): try again with a better print.
    public var isUnusablePrint: Bool {
        switch self {
        case .noRidges, .tooFewMinutiae: true
        default: false
        }
    }

    public var description: String {
        switch self {
        case .wsq(let e): "\(e)"
        case .noRidges(let f): "no usable ridges (print area \(Int(f * 100)) % of the image)"
        case .tooFewMinutiae(let found, let required): "only \(found) reliable minutiae found (at least \(required) needed to match reliably)"
        case .emptyImage: "the image is empty"
        case .unsupportedFormat: "not a PNG, JPEG or TIFF image"
        case .corruptImage(let why): "the image does not decode: \(why)"
        case .imageTooLarge(let w, let h): "a \(w)×\(h) image is larger than allowed"
        case .invalidImage(let why): "not a usable print image: \(why)"
        case .internalError(let why): "fingerprint extraction failed: \(why)"
        }
    }
}

/// Turns a fingerprint image into a template (the C++ stages in CFingerVision/print_extract.cpp: segmentation,
/// normalisation, orientation, ridge period, Gabor enhancement, thinning, minutiae, clean-up).
/// Stateless, so one extractor may serve every thread.
public struct FingerprintExtractor: Sendable {
    /// Fewer minutiae than this cannot give a trustworthy match: the matcher sums the 12 most
    /// consistent pairs, so a template needs a margin above 12 minutiae with a valid cylinder for
    /// a genuine mate to stand out (FVC2002 DB1_B 103_4, 14 minutiae, was the worst impostor of
    /// four sensors). Such prints are refused as bad captures, with the count, instead of matching weakly.
    public static let defaultMinimumMinutiae = 15
    /// The same floor for learned minutiae: 12, the matcher's number of summed pairs. The network
    /// finds few spurious minutiae, so a small print's 12–14 are real ones; refusing them cost
    /// FVC2002 DB1_B 103_4 (14 learned minutiae) all its genuine comparisons (EER 0.35 → 2.50 %)
    /// while the ÷12 similarity and the calibration already keep sparse templates low
    /// (ScoreMeaningTests: no impostor ≥ 60, 12-minutiae templates below 48 against other fingers).
    public static let defaultMinimumLearnedMinutiae = 12
    public var minimumMinutiae: Int
    /// Usable print below this fraction of the image is treated as "no ridges".
    public var minimumForeground: Double

    /// Fraction of the print area whose oriented grey-level profile must show a clean ridge
    /// period: FVC prints reach ≥ 0.89, white noise ≈ 0.3. Below it the image is not a print.
    public var minimumPeriodic: Double

    /// The learned minutiae extractor, when its model is installed: templates are then version 3
    /// (learned minutiae). nil: the classical stages, version 2.
    public let learned: LearnedMinutiae?

    /// `minimumMinutiae` nil: 15 for the classical stages, 12 for learned minutiae.
    public init(minimumMinutiae: Int? = nil, minimumForeground: Double = 0.03, minimumPeriodic: Double = 0.6,
                learned: LearnedMinutiae? = nil) {
        self.minimumMinutiae = minimumMinutiae ?? (learned == nil ? Self.defaultMinimumMinutiae : Self.defaultMinimumLearnedMinutiae)
        self.minimumForeground = minimumForeground
        self.minimumPeriodic = minimumPeriodic
        self.learned = learned
    }

    /// Which extractor's templates this one makes.
    public var minutiaeSource: MinutiaeSource { learned == nil ? .classical : .learned }

    /// The same extractor with the classical minutiae stages (for matching against version-1/2
    /// templates, which are only ever compared with classical minutiae).
    public var classical: FingerprintExtractor {
        FingerprintExtractor(minimumMinutiae: learned == nil ? minimumMinutiae : Self.defaultMinimumMinutiae,
                             minimumForeground: minimumForeground, minimumPeriodic: minimumPeriodic)
    }

    /// An extractor whose templates are of `source` (self when it already is; nil when `source` is
    /// learned and no learned model is loaded).
    public func producing(_ source: MinutiaeSource) -> FingerprintExtractor? {
        source == minutiaeSource ? self : source == .classical ? classical : nil
    }

    /// The template of `image`; `position` is recorded in it when known.
    public func extract(_ image: FingerprintImage, position: FingerPosition? = nil) throws(FingerprintError) -> FingerTemplate {
        try run(image, position: position, debug: false).template
    }

    /// Debug views at 500 ppi: the Gabor-enhanced print and the ridge skeleton (grey, width × height).
    public struct Stages: Sendable {
        public let template: FingerTemplate
        public let width: Int
        public let height: Int
        public let enhanced: [UInt8]
        public let skeleton: [UInt8]
        /// Median ridge period in 500-ppi pixels.
        public let ridgePeriod: Double
    }

    /// Like `extract`, also returning the intermediate images (for inspection and tuning); always
    /// the classical stages, whose images these are.
    public func extractStages(_ image: FingerprintImage, position: FingerPosition? = nil) throws(FingerprintError) -> Stages {
        try run(image, position: position, debug: true)
    }

    private func run(_ image: FingerprintImage, position: FingerPosition?, debug: Bool) throws(FingerprintError) -> Stages {
        var info = cvis_print_info()
        var raw = [cvis_minutia](repeating: cvis_minutia(), count: Int(CVIS_PRINT_MAX_MINUTIAE))
        let scaled = debug ? cvis_print_scaled_size(Int32(image.width), Int32(image.height), Int32(image.ppi)) : 0
        var enhanced = [UInt8](repeating: 0, count: scaled)
        var skeleton = [UInt8](repeating: 0, count: scaled)
        var field = [UInt8](repeating: 0, count: cvis_print_field_size(Int32(image.width), Int32(image.height), Int32(image.ppi)))
        let mask = image.mask ?? []
        let learned = debug ? nil : self.learned
        let status = image.pixels.withUnsafeBufferPointer { pixels in
            mask.withUnsafeBufferPointer { maskPixels in
                raw.withUnsafeMutableBufferPointer { out in
                    enhanced.withUnsafeMutableBufferPointer { e in
                        skeleton.withUnsafeMutableBufferPointer { s in
                            field.withUnsafeMutableBufferPointer { f in
                                if let learned {
                                    cvis_print_extract_learned(pixels.baseAddress, Int32(image.width), Int32(image.height), Int32(image.ppi),
                                                               image.mask == nil ? nil : maskPixels.baseAddress, learned.model,
                                                               learned.threshold, out.baseAddress, Int32(out.count), &info, f.baseAddress)
                                } else {
                                    cvis_print_extract(pixels.baseAddress, Int32(image.width), Int32(image.height), Int32(image.ppi),
                                                       image.mask == nil ? nil : maskPixels.baseAddress, out.baseAddress,
                                                       Int32(out.count), &info, debug ? e.baseAddress : nil,
                                                       debug ? s.baseAddress : nil, f.baseAddress)
                                }
                            }
                        }
                    }
                }
            }
        }
        guard status == CVIS_OK else {
            let message = String(cString: cvis_last_error())
            if status == CVIS_ERR_ARGUMENT, message.contains("too large") {
                throw .imageTooLarge(width: image.width, height: image.height)
            }
            throw .internalError(message)
        }
        let foreground = Double(info.foreground)
        guard foreground >= minimumForeground, Double(info.periodic) >= minimumPeriodic else {
            throw .noRidges(foreground: foreground)
        }
        let count = min(Int(info.count), raw.count)
        guard count >= minimumMinutiae else { throw .tooFewMinutiae(found: count, required: minimumMinutiae) }
        let minutiae = raw.prefix(count).map {
            Minutia(x: Double($0.x), y: Double($0.y), angle: Double($0.angle),
                    kind: $0.kind == UInt8(CVIS_MINUTIA_ENDING.rawValue) ? .ending : .bifurcation, quality: Int($0.quality))
        }
        let cells = OrientationField.size(printWidth: Int(info.width), height: Int(info.height))
        let template = FingerTemplate(sourcePPI: image.ppi, width: Int(info.width), height: Int(info.height),
                                      quality: Int(info.quality), position: position, minutiae: minutiae,
                                      orientationField: OrientationField(width: cells.width, height: cells.height, cells: field),
                                      minutiaeSource: learned == nil ? .classical : .learned)
        return Stages(template: template, width: Int(info.width), height: Int(info.height),
                      enhanced: debug ? enhanced : [], skeleton: debug ? skeleton : [],
                      ridgePeriod: Double(info.ridge_period))
    }

    // MARK: Uploaded images

    /// Largest upload decoded: a 1,000-ppi slap (4096 × 4096). Checked from the header before
    /// the pixels are decoded.
    public static let maxPixels = FingerprintImage.sideRange.upperBound * FingerprintImage.sideRange.upperBound

    /// Decodes PNG, JPEG or TIFF bytes (grey or colour; colour is converted to grey) into a print
    /// at `ppi`. Ridges must be dark, as on every contact sensor.
    public static func decodeImage(_ bytes: [UInt8], ppi: Int = 500) throws(FingerprintError) -> FingerprintImage {
        guard !bytes.isEmpty else { throw .emptyImage }
        if WSQ.looksLikeWSQ(bytes) { return try FingerprintImage(wsq: bytes, ppi: ppi) }
        guard ImageFormat(sniffing: bytes) != nil else { throw .unsupportedFormat }
        var status = CVIS_OK
        let decoded = bytes.withUnsafeBufferPointer { cvis_image_decode($0.baseAddress, $0.count, Int64(maxPixels), &status) }
        guard let decoded, status == CVIS_OK else {
            let message = String(cString: cvis_last_error())
            switch status {
            case CVIS_ERR_ARGUMENT where message.contains("larger"):
                let (w, h) = Self.declaredSize(message)
                throw .imageTooLarge(width: w, height: h)
            case CVIS_ERR_INTERNAL where message.contains("out of memory"): throw .internalError(message)
            default: throw .corruptImage(message)
            }
        }
        defer { cvis_image_free(decoded) }
        let width = Int(cvis_image_width(decoded)), height = Int(cvis_image_height(decoded))
        guard FingerprintImage.sideRange.upperBound >= max(width, height) else {
            throw .imageTooLarge(width: width, height: height)
        }
        var grey = [UInt8](repeating: 0, count: width * height)
        let copied = grey.withUnsafeMutableBufferPointer { cvis_image_copy(decoded, $0.baseAddress, nil) }
        guard copied == CVIS_OK else { throw .internalError(String(cString: cvis_last_error())) }
        do {
            return try FingerprintImage(width: width, height: height, pixels: grey, ppi: ppi)
        } catch {
            throw .invalidImage(error)
        }
    }

    /// The "W×H" CImaging reports for an oversized header ("image is 5000x5000, larger …"); 0 × 0
    /// when the message has none (a file beyond the byte limit).
    static func declaredSize(_ message: String) -> (Int, Int) {
        guard let word = message.split(separator: " ").first(where: { $0.contains("x") && $0.first?.isNumber == true }) else {
            return (0, 0)
        }
        let parts = word.trimmingCharacters(in: CharacterSet(charactersIn: ",")).split(separator: "x").compactMap { Int($0) }
        return parts.count == 2 ? (parts[0], parts[1]) : (0, 0)
    }

    /// Container formats accepted for uploads, recognised by their signatures.
    enum ImageFormat {
        case png, jpeg, tiff

        init?(sniffing b: [UInt8]) {
            if b.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { self = .png }
            else if b.starts(with: [0xFF, 0xD8, 0xFF]) { self = .jpeg }
            else if b.starts(with: [0x49, 0x49, 0x2A, 0x00]) || b.starts(with: [0x4D, 0x4D, 0x00, 0x2A]) { self = .tiff }
            else { return nil }
        }
    }
}
