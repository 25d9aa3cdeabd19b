import CImaging
import Foundation

/// Why pixels did not encode (the message is CImaging's).
public struct ImageEncodeError: Error, Sendable, CustomStringConvertible {
    public let description: String
}

/// File formats images are exported in.
public enum ImageFileFormat: Sendable, Equatable {
    case png
    /// Baseline JPEG, quality 1–100.
    case jpeg(quality: Int)
}

/// Encodes packed 8-bit pixels: grey (`channels` 1) or BGR (`channels` 3), `width × channels` bytes
/// per row. The one place the Swift side turns pixels into an image file (snapshots, print export).
public func encodeImage(_ pixels: UnsafePointer<UInt8>?, width: Int, height: Int, channels: Int,
                        as format: ImageFileFormat) throws(ImageEncodeError) -> Data {
    var out: UnsafeMutablePointer<UInt8>?
    var length = 0
    let status = switch format {
    case .png: cvis_encode_png(pixels, Int32(width), Int32(height), Int32(channels), &out, &length)
    case .jpeg(let quality):
        cvis_encode_jpeg(pixels, Int32(width), Int32(height), Int32(channels), Int32(quality), &out, &length)
    }
    guard status == CVIS_OK, let out else { throw ImageEncodeError(description: String(cString: cvis_last_error())) }
    defer { cvis_free(out) }
    return Data(bytes: out, count: length)
}

extension Frame {
    /// The frame as an image file: its colour plane, or the grey plane when it has none (IR).
    public func encoded(as format: ImageFileFormat = .png) throws(ImageEncodeError) -> Data {
        let plane = bgr ?? grey
        return try encodeImage(plane.pointer, width: width, height: height, channels: bgr == nil ? 1 : 3, as: format)
    }
}
