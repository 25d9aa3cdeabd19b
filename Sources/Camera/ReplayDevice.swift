import BiometricCore
import CImaging
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A virtual camera that plays a video file or a folder of images (name order) at a fixed fps.
/// It behaves like hardware: frames are paced, it is exclusive, and the end of the file without
/// `loop` is a lost camera.
public struct ReplayDevice: CameraDevice {
    public static let imageExtensions: Set<String> = ["png", "jpg", "jpeg", "pgm", "ppm", "bmp", "tif", "tiff"]
    /// Largest frame a replay accepts (a 4K frame is 8.3 Mpx).
    static let maxPixels: Int64 = 40_000_000

    public let id: String
    public let spec: CameraSpec
    public let description: CameraDescription
    let fps: Double
    let loop: Bool
    /// Image files in play order; nil for a video file.
    let images: [String]?
    /// What pacing reads and waits on (the monotonic clock; a test's own in tests).
    let clock: PacingClock
    public var playsStillImages: Bool { images != nil }

    public init(spec: CameraSpec, id: String, clock: PacingClock = .system) throws(CameraError) {
        self.clock = clock
        guard case .replay(let path, let fps, let loop, _) = spec else {
            throw .invalidSpec(spec.description, reason: "not a replay spec")
        }
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir) else { throw .notFound(path) }
        let first: (width: Int, height: Int, channels: Int)
        let name: String
        if isDir.boolValue {
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
            let files = entries.filter { Self.imageExtensions.contains(($0 as NSString).pathExtension.lowercased()) }
                .sorted().map { path + "/" + $0 }
            guard let firstFile = files.first else {
                throw .invalidSpec(spec.description, reason: "folder \(path) holds no images (png, jpg, pgm, ppm, bmp, tif)")
            }
            first = try Self.probeImage(firstFile, id: id)
            images = files
            name = "Replay of \(files.count) images in \(path)"
        } else {
            var status = CVIS_OK
            guard let video = cvis_video_open(path, &status) else {
                throw .invalidSpec(spec.description, reason: "\(path) is neither a folder of images nor a readable video: \(String(cString: cvis_last_error()))")
            }
            defer { cvis_video_close(video) }
            var frame: OpaquePointer?
            guard cvis_video_next(video, &frame) == CVIS_OK, let frame else {
                throw .invalidSpec(spec.description, reason: "video \(path) has no frames")
            }
            first = (Int(cvis_image_width(frame)), Int(cvis_image_height(frame)), Int(cvis_image_channels(frame)))
            images = nil
            name = "Replay of video \(path)"
        }
        self.id = id
        self.spec = spec
        self.fps = fps
        self.loop = loop
        let fourcc = first.channels == 1 ? "GREY" : "BGR3"
        self.description = CameraDescription(
            id: id, path: path, name: name, driver: "replay", bus: "virtual",
            formats: [.init(fourcc: fourcc, width: first.width, height: first.height, fps: fps)],
            isInfrared: first.channels == 1)
    }

    static func probeImage(_ file: String, id: String) throws(CameraError) -> (width: Int, height: Int, channels: Int) {
        var status = CVIS_OK
        guard let image = cvis_image_read(file, maxPixels, &status) else {
            throw .invalidSpec(file, reason: String(cString: cvis_last_error()))
        }
        defer { cvis_image_free(image) }
        return (Int(cvis_image_width(image)), Int(cvis_image_height(image)), Int(cvis_image_channels(image)))
    }

    public func open(_ request: CaptureRequest) throws(CameraError) -> FrameSource {
        let stream = try ReplayStream(device: self)
        return spec.orientation.isUpright ? stream : OrientedSource(stream, spec.orientation)
    }
}

/// Plays one replay device, pacing frame n at start + n/fps.
final class ReplayStream: FrameSource {
    private let device: ReplayDevice
    private var video: OpaquePointer?
    private var index = 0
    private var sequence: UInt64 = 0
    private let start: UInt64
    private let greyPool = PixelBufferPool()
    private let bgrPool = PixelBufferPool()

    init(device: ReplayDevice) throws(CameraError) {
        self.device = device
        start = device.clock.now()
        if device.images == nil { try openVideo() }
    }

    private func openVideo() throws(CameraError) {
        var status = CVIS_OK
        guard let v = cvis_video_open(device.description.path, &status) else {
            throw .lost(device.id, reason: String(cString: cvis_last_error()))
        }
        video = v
    }

    func nextFrame(timeoutMs: Int) throws(CameraError) -> Frame {
        // Pace: frame `sequence` is due at start + sequence/fps.
        let due = start + UInt64(Double(sequence) / device.fps * 1e9)
        let now = device.clock.now()
        if due > now {
            let wait = due - now
            if wait > UInt64(timeoutMs) * 1_000_000 {
                device.clock.sleep(UInt64(timeoutMs) * 1_000_000)
                throw .timeout(device.id)
            }
            device.clock.sleep(wait)
        }
        let image: OpaquePointer
        var owned = false
        if let files = device.images {
            if index >= files.count {
                guard device.loop else { throw .lost(device.id, reason: "end of replay") }
                index = 0
            }
            var status = CVIS_OK
            guard let img = cvis_image_read(files[index], ReplayDevice.maxPixels, &status) else {
                throw .lost(device.id, reason: "\(files[index]): \(String(cString: cvis_last_error()))")
            }
            index += 1
            image = img
            owned = true
        } else {
            var frame: OpaquePointer?
            if cvis_video_next(video, &frame) != CVIS_OK {
                guard device.loop else { throw .lost(device.id, reason: "end of replay") }
                cvis_video_close(video)
                try openVideo()
                guard cvis_video_next(video, &frame) == CVIS_OK else { throw .lost(device.id, reason: "video has no frames") }
            }
            image = frame!
        }
        defer { if owned { cvis_image_free(image) } }
        sequence += 1
        do {
            return try Frame.copying(image, colour: !device.description.isInfrared, greyPool: greyPool, bgrPool: bgrPool,
                                     sequence: sequence)
        } catch {
            throw .lost(device.id, reason: error.description)
        }
    }

    func close() {
        if let video { cvis_video_close(video) }
        video = nil
    }

    deinit { close() }
}

/// The clock a replay camera paces its frames by: the monotonic clock and nanosleep, or a test's
/// (which then checks the pacing without reading wall-clock time).
public struct PacingClock: Sendable {
    public var now: @Sendable () -> UInt64
    public var sleep: @Sendable (UInt64) -> Void

    public static let system = PacingClock(now: { monotonicNanoseconds() }, sleep: { sleepNanoseconds($0) })
}

func sleepNanoseconds(_ ns: UInt64) {
    var ts = timespec(tv_sec: Int(ns / 1_000_000_000), tv_nsec: Int(ns % 1_000_000_000))
    var remaining = timespec()
    while nanosleep(&ts, &remaining) == -1 && errno == EINTR { ts = remaining }
}
