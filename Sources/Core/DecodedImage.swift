import CImaging
import Foundation

/// Why an image did not become a frame (the message says what was wrong with it).
public struct ImageDecodeError: Error, Sendable, CustomStringConvertible {
    public let description: String
}

extension Frame {
    /// Copies an image decoded by CImaging into planes from the pools: grey always, BGR when
    /// `colour` (otherwise an IR frame). The one place images become frames: replay cameras,
    /// uploaded photos and the benchmarks all go through it.
    public static func copying(_ image: OpaquePointer, colour: Bool, greyPool: PixelBufferPool, bgrPool: PixelBufferPool,
                               sequence: UInt64) throws(ImageDecodeError) -> Frame
    {
        let width = Int(cvis_image_width(image)), height = Int(cvis_image_height(image))
        let grey = greyPool.buffer(count: width * height)
        let bgr = colour ? bgrPool.buffer(count: width * height * 3) : nil
        guard cvis_image_copy(image, grey.pointer, bgr?.pointer) == CVIS_OK else {
            throw ImageDecodeError(description: String(cString: cvis_last_error()))
        }
        return Frame(width: width, height: height, grey: grey, bgr: bgr, timestampNs: monotonicNanoseconds(),
                     sequence: sequence, isInfrared: !colour)
    }

    /// A frame from encoded bytes (PNG, JPEG, PGM, TIFF, BMP); a grey image gives an IR frame.
    public init(encoded data: Data, maxPixels: Int64) throws(ImageDecodeError) {
        guard !data.isEmpty else { throw ImageDecodeError(description: "image is empty") }
        var status = CVIS_OK
        let decoded = data.withUnsafeBytes {
            cvis_image_decode($0.baseAddress!.assumingMemoryBound(to: UInt8.self), $0.count, maxPixels, &status)
        }
        guard let decoded else { throw ImageDecodeError(description: String(cString: cvis_last_error())) }
        defer { cvis_image_free(decoded) }
        self = try Self.copying(decoded, colour: cvis_image_channels(decoded) == 3, greyPool: PixelBufferPool(limit: 0),
                                bgrPool: PixelBufferPool(limit: 0), sequence: 1)
    }

    /// A frame from an image file.
    public init(contentsOfFile path: String, maxPixels: Int64 = 0) throws(ImageDecodeError) {
        var status = CVIS_OK
        guard let image = cvis_image_read(path, maxPixels, &status) else {
            throw ImageDecodeError(description: String(cString: cvis_last_error()))
        }
        defer { cvis_image_free(image) }
        self = try Self.copying(image, colour: cvis_image_channels(image) == 3, greyPool: PixelBufferPool(limit: 0),
                                bgrPool: PixelBufferPool(limit: 0), sequence: 1)
    }
}
