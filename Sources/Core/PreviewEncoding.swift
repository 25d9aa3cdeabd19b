import CImaging
import Foundation

extension Frame {
    /// The frame downscaled to `width` x `height` (at most its own size) as a JPEG: the live
    /// preview of face and finger sessions. One C call reads the frame's colour plane (grey on IR
    /// cameras) in place, resizes with area averaging and encodes; the frame is not copied.
    public func previewJPEG(width: Int, height: Int, quality: Int = 70) throws(ImageEncodeError) -> Data {
        let plane = bgr ?? grey
        var out: UnsafeMutablePointer<UInt8>?
        var length = 0
        let status = cvis_encode_jpeg_scaled(plane.pointer, Int32(self.width), Int32(self.height), bgr == nil ? 1 : 3,
                                             Int32(width), Int32(height), Int32(quality), &out, &length)
        guard status == CVIS_OK, let out else { throw ImageEncodeError(description: String(cString: cvis_last_error())) }
        defer { cvis_free(out) }
        return Data(bytes: out, count: length)
    }
}
