#if canImport(Glibc)
import Glibc
#endif

/// One camera frame, converted once from the device format: an 8-bit grey plane always, and a
/// BGR plane for colour cameras (nil on IR cameras, which only give grey).
public struct Frame: Sendable {
    public let width: Int
    public let height: Int
    public let grey: PixelBuffer
    public let bgr: PixelBuffer?
    /// Monotonic capture time in nanoseconds.
    public let timestampNs: UInt64
    /// Frame number since the stream opened.
    public let sequence: UInt64
    public let isInfrared: Bool

    public init(width: Int, height: Int, grey: PixelBuffer, bgr: PixelBuffer?, timestampNs: UInt64, sequence: UInt64,
                isInfrared: Bool) {
        self.width = width
        self.height = height
        self.grey = grey
        self.bgr = bgr
        self.timestampNs = timestampNs
        self.sequence = sequence
        self.isInfrared = isInfrared
    }
}

/// Monotonic clock in nanoseconds.
public func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}
