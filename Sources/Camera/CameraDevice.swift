import BiometricCore

/// What a camera offers, independent of the wire format.
public struct CameraDescription: Sendable, Equatable {
    public struct Format: Sendable, Equatable {
        public var fourcc: String
        public var width: Int
        public var height: Int
        public var fps: Double
    }

    public var id: String
    public var path: String
    public var name: String
    public var driver: String
    public var bus: String
    public var formats: [Format]
    /// Gives only grey/Y16 frames (an IR camera).
    public var isInfrared: Bool
    /// Where the node sits on USB (sysfs); nil for virtual and non-USB cameras.
    public var usb: USBLocation? = nil
}

/// What a session would like; devices pick the nearest mode they have.
public struct CaptureRequest: Sendable, Equatable {
    public var width: Int
    public var height: Int
    public var fps: Double

    public init(width: Int = 640, height: Int = 480, fps: Double = 30) {
        self.width = width
        self.height = height
        self.fps = fps
    }
}

/// One camera, whatever drives it (libfprint-style: every driver behind one interface, so every
/// path above it is tested with replay cameras and works the same on V4L2 hardware).
public protocol CameraDevice: Sendable {
    var id: String { get }
    var spec: CameraSpec { get }
    var description: CameraDescription { get }
    /// Starts streaming. The source is then used by one capture thread only.
    func open(_ request: CaptureRequest) throws(CameraError) -> FrameSource
    /// Whether the frames are still images (a replay of a folder of photos): a face session may
    /// then take the photos' subject where a live camera refuses an ambiguous scene.
    var playsStillImages: Bool { get }
}

extension CameraDevice {
    public var playsStillImages: Bool { false }
}

/// A started stream of frames. Not thread-safe: owned by one capture thread.
public protocol FrameSource: AnyObject {
    /// Blocks until the next frame, at most `timeoutMs`. Throws `.timeout` when none came,
    /// `.lost` when the device is gone or the replay ended.
    func nextFrame(timeoutMs: Int) throws(CameraError) -> Frame
    func close()
}
