/// An 8-bit grey fingerprint at a known resolution, ridges dark: what the camera side makes of a
/// fingertip (a contact-like print) and what `finger.extract` decodes from an upload. The print
/// side (extraction, matching) takes only this, so contact-sensor images and camera prints share
/// one pipeline.
public struct FingerprintImage: Sendable {
    public let width: Int
    public let height: Int
    /// Row-major, packed (`width` bytes per row).
    public let pixels: [UInt8]
    /// Pixels per inch (FVC2002 DB2: 569; the camera side normalises to 500).
    public let ppi: Int
    /// Foreground mask, same size: non-zero where the finger is. nil: the whole image.
    public let mask: [UInt8]?

    public enum Invalid: Error, Equatable, Sendable {
        case size(width: Int, height: Int)
        case resolution(Int)
        case bufferLength(expected: Int, got: Int)
    }

    /// Accepted resolutions: below 250 ppi ridges (≈0.5 mm apart) blur into each other, above
    /// 1,000 no sensor or camera print we take exists.
    public static let ppiRange = 250...1000
    /// Side limits in pixels: at least ~8 mm at 250 ppi, at most a 1,000 ppi slap.
    public static let sideRange = 64...4096

    public init(width: Int, height: Int, pixels: [UInt8], ppi: Int, mask: [UInt8]? = nil) throws(Invalid) {
        guard Self.sideRange.contains(width), Self.sideRange.contains(height) else {
            throw .size(width: width, height: height)
        }
        guard Self.ppiRange.contains(ppi) else { throw .resolution(ppi) }
        guard pixels.count == width * height else {
            throw .bufferLength(expected: width * height, got: pixels.count)
        }
        if let mask, mask.count != width * height {
            throw .bufferLength(expected: width * height, got: mask.count)
        }
        self.width = width
        self.height = height
        self.pixels = pixels
        self.ppi = ppi
        self.mask = mask
    }
}
