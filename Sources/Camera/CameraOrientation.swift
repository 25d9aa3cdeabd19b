import BiometricCore
import CImaging

/// How to turn a camera mounted rotated or mirrored (a kiosk or door panel camera on its side)
/// upright: `rotate=0|90|180|270` degrees clockwise, then `mirror=true` flips left and right.
/// Given per camera in its spec: `v4l2:/dev/video2?rotate=90&mirror=true`.
public struct CameraOrientation: Sendable, Equatable {
    public var rotate: Int
    public var mirror: Bool

    public static let upright = CameraOrientation(rotate: 0, mirror: false)

    public var isUpright: Bool { rotate == 0 && !mirror }

    /// `&rotate=90&mirror=true` for a spec's text, empty when upright (so specs read as before).
    var query: String { (rotate != 0 ? "&rotate=\(rotate)" : "") + (mirror ? "&mirror=true" : "") }
}

/// Frames of `inner`, turned upright: per plane one OpenCV rotate (or flip) into a plane of this
/// source's own pool; the device's plane goes back to its pool as the original frame is dropped.
/// Owned by the capture thread, like the source it wraps.
final class OrientedSource: FrameSource {
    private let inner: FrameSource
    private let orientation: CameraOrientation
    private let greyPool = PixelBufferPool()
    private let bgrPool = PixelBufferPool()

    init(_ inner: FrameSource, _ orientation: CameraOrientation) {
        self.inner = inner
        self.orientation = orientation
    }

    func nextFrame(timeoutMs: Int) throws(CameraError) -> Frame {
        let frame = try inner.nextFrame(timeoutMs: timeoutMs)
        return orient(frame, orientation, greyPool: greyPool, bgrPool: bgrPool) ?? frame
    }

    func close() { inner.close() }
}

/// `frame` turned upright into planes of the pools; nil when OpenCV refuses (never expected:
/// the geometry comes from a frame), and the caller keeps the frame as it was.
func orient(_ frame: Frame, _ o: CameraOrientation, greyPool: PixelBufferPool, bgrPool: PixelBufferPool) -> Frame? {
    let quarter = o.rotate == 90 || o.rotate == 270
    let (w, h) = quarter ? (frame.height, frame.width) : (frame.width, frame.height)
    let grey = greyPool.buffer(count: w * h)
    guard cvis_orient_plane(frame.grey.pointer, Int32(frame.width), Int32(frame.height), 1, Int32(o.rotate), o.mirror ? 1 : 0,
                            grey.pointer) == CVIS_OK
    else { return nil }
    var bgr: PixelBuffer?
    if let source = frame.bgr {
        let plane = bgrPool.buffer(count: w * h * 3)
        guard cvis_orient_plane(source.pointer, Int32(frame.width), Int32(frame.height), 3, Int32(o.rotate), o.mirror ? 1 : 0,
                                plane.pointer) == CVIS_OK
        else { return nil }
        bgr = plane
    }
    return Frame(width: w, height: h, grey: grey, bgr: bgr, timestampNs: frame.timestampNs, sequence: frame.sequence,
                 isInfrared: frame.isInfrared)
}
