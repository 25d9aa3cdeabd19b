import BiometricCore
import Foundation

extension FingerprintImage {
    /// File formats a print is exported in through OpenCV (WSQ has its own codec: `wsqEncoded()`).
    public enum ExportFormat: String, Sendable {
        case png
        /// Baseline JPEG at `jpegQuality`.
        case jpeg
    }

    /// JPEG quality of exported prints: at 95 the ridges survive.
    public static let jpegQuality = 95

    /// The print (grey) as an image file.
    public func encoded(as format: ExportFormat) throws(ImageEncodeError) -> Data {
        let file: ImageFileFormat = format == .jpeg ? .jpeg(quality: Self.jpegQuality) : .png
        let result = pixels.withUnsafeBufferPointer { p in
            Result { () throws(ImageEncodeError) in
                try encodeImage(p.baseAddress, width: width, height: height, channels: 1, as: file)
            }
        }
        return try result.get()
    }
}
