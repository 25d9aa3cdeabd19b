import BiometricCore
import CV4L2
import CImaging
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Pixel formats we can convert, best first: cheap lossless YUYV, then MJPEG (needs a decode),
/// then IR/grey formats, then the rest.
let supportedFourccs = ["YUYV", "MJPG", "GREY", "Y16 ", "NV12", "UYVY", "RGB3", "BGR3", "JPEG"]
let infraredFourccs: Set<String> = ["GREY", "Y16 "]

func fourccString(_ value: UInt32) -> String {
    // Bit 31 is V4L2_PIX_FMT_FLAG_BE (the big-endian twin, e.g. Y16_BE): name it "-BE" rather than
    // letting the byte 0x80+ turn into U+FFFD ("Y16\u{FFFD}") in camera.list.
    let bytes = (0..<4).map { UInt8((value >> (8 * $0)) & ($0 == 3 ? 0x7F : 0xFF)) }
    let name = String(decoding: bytes, as: UTF8.self)
    return value & (1 << 31) != 0 ? name + "-BE" : name
}

func fourccValue(_ text: String) -> UInt32 {
    text.utf8.prefix(4).enumerated().reduce(UInt32(0)) { $0 | (UInt32($1.element) << (8 * UInt32($1.offset))) }
}

private func cString<T>(_ tuple: T) -> String {
    withUnsafeBytes(of: tuple) { raw in
        let bytes = raw.prefix(while: { $0 != 0 })
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// A V4L2 video-capture node, driven through libv4l2 with mmap streaming.
public struct V4L2Device: CameraDevice {
    public let id: String
    /// `.v4l2(path:orientation:)`; the registry sets the orientation a configured spec gives.
    public var spec: CameraSpec
    public let description: CameraDescription
    /// The resolved device node (e.g. /dev/video0), even when the spec names a by-id link.
    public let node: String
    /// Applies the camera's IR emitter entry before each stream starts (set by the registry).
    public var emitters: IREmitterController?

    /// Probes `path` (QUERYCAP and format enumeration). Throws when it is not a capture device.
    public init(path: String, id: String? = nil) throws(CameraError) {
        var st = stat()
        guard stat(path, &st) == 0 else { throw .notFound(path) }
        guard (st.st_mode & S_IFMT) == S_IFCHR else {
            throw .notACaptureDevice(path, reason: "not a character device")
        }
        let node = (try? FileManager.default.destinationOfSymbolicLink(atPath: path)).map {
            $0.hasPrefix("/") ? $0 : URL(fileURLWithPath: path).deletingLastPathComponent().appendingPathComponent($0).standardized.path
        } ?? path
        let fd = cv4l2_open(path)
        guard fd >= 0 else {
            let reason = String(cString: strerror(-fd))
            if -fd == ENOENT || -fd == ENODEV || -fd == ENXIO { throw .notFound(path) }
            // libv4l2 asks for the capabilities while opening: a non-V4L2 device fails here.
            if -fd == ENOTTY || -fd == EINVAL { throw .notACaptureDevice(path, reason: "VIDIOC_QUERYCAP failed: \(reason)") }
            throw .openFailed(path, reason: reason)
        }
        defer { cv4l2_close(fd) }
        var cap = v4l2_capability()
        let r = cv4l2_ioctl(fd, cv4l2_VIDIOC_QUERYCAP(), &cap)
        guard r == 0 else {
            throw .notACaptureDevice(path, reason: "VIDIOC_QUERYCAP failed: \(String(cString: strerror(-r)))")
        }
        let caps = (cap.capabilities & UInt32(V4L2_CAP_DEVICE_CAPS)) != 0 ? cap.device_caps : cap.capabilities
        guard (caps & UInt32(V4L2_CAP_VIDEO_CAPTURE)) != 0 else {
            throw .notACaptureDevice(path, reason: "no single-planar video capture (metadata or output node?)")
        }
        guard (caps & UInt32(V4L2_CAP_STREAMING)) != 0 else {
            throw .notACaptureDevice(path, reason: "no streaming I/O")
        }
        let formats = Self.enumerateFormats(fd)
        // IR is judged on the driver's own formats: libv4l2 adds converted ones (RGB3, BGR3,
        // YU12, YV12 from GREY), so a GREY-only IR node would otherwise look colour.
        let usable = Self.nativeFourccs(fd).intersection(supportedFourccs)
        let stableID = id ?? Self.stableID(node: node)
        self.id = stableID
        self.node = node
        self.spec = .v4l2(path: path)
        self.description = CameraDescription(
            id: stableID, path: path, name: cString(cap.card), driver: cString(cap.driver), bus: cString(cap.bus_info),
            formats: formats, isInfrared: !usable.isEmpty && usable.isSubset(of: infraredFourccs),
            usb: SysfsVideo.usbLocation(ofNode: node))
    }

    /// A name that survives reboots and re-plugging: the /dev/v4l/by-id link, else by-path, else videoN.
    static func stableID(node: String) -> String {
        for folder in ["/dev/v4l/by-id", "/dev/v4l/by-path"] {
            guard let links = try? FileManager.default.contentsOfDirectory(atPath: folder) else { continue }
            for link in links.sorted() {
                let full = folder + "/" + link
                if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: full),
                   URL(fileURLWithPath: folder).appendingPathComponent(target).standardized.path == node
                {
                    return link
                }
            }
        }
        return URL(fileURLWithPath: node).lastPathComponent
    }

    /// The formats the driver itself offers (not V4L2_FMT_FLAG_EMULATED by libv4lconvert).
    static func nativeFourccs(_ fd: Int32) -> Set<String> {
        var result: Set<String> = []
        var desc = v4l2_fmtdesc()
        desc.type = UInt32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
        while cv4l2_ioctl(fd, cv4l2_VIDIOC_ENUM_FMT(), &desc) == 0, desc.index < 64 {
            if desc.flags & UInt32(V4L2_FMT_FLAG_EMULATED) == 0 { result.insert(fourccString(desc.pixelformat)) }
            desc.index += 1
        }
        return result
    }

    static func enumerateFormats(_ fd: Int32) -> [CameraDescription.Format] {
        var result: [CameraDescription.Format] = []
        let captureType = UInt32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
        var desc = v4l2_fmtdesc()
        desc.type = captureType
        while cv4l2_ioctl(fd, cv4l2_VIDIOC_ENUM_FMT(), &desc) == 0, desc.index < 64 {
            let fourcc = fourccString(desc.pixelformat)
            var size = v4l2_frmsizeenum()
            size.pixel_format = desc.pixelformat
            var sizes: [(Int, Int)] = []
            while cv4l2_ioctl(fd, cv4l2_VIDIOC_ENUM_FRAMESIZES(), &size) == 0, size.index < 128 {
                if size.type == UInt32(V4L2_FRMSIZE_TYPE_DISCRETE.rawValue) {
                    sizes.append((Int(size.discrete.width), Int(size.discrete.height)))
                } else {
                    // Stepwise/continuous: report the common sizes inside the range.
                    let s = size.stepwise
                    for (w, h) in [(320, 240), (640, 480), (1280, 720), (1920, 1080)]
                    where w >= s.min_width && w <= s.max_width && h >= s.min_height && h <= s.max_height {
                        sizes.append((w, h))
                    }
                    break
                }
                size.index += 1
            }
            for (w, h) in sizes {
                result.append(.init(fourcc: fourcc, width: w, height: h, fps: maxFPS(fd, desc.pixelformat, w, h)))
            }
            desc.index += 1
        }
        return result
    }

    static func maxFPS(_ fd: Int32, _ pixelFormat: UInt32, _ width: Int, _ height: Int) -> Double {
        var ival = v4l2_frmivalenum()
        ival.pixel_format = pixelFormat
        ival.width = UInt32(width)
        ival.height = UInt32(height)
        var best = 0.0
        while cv4l2_ioctl(fd, cv4l2_VIDIOC_ENUM_FRAMEINTERVALS(), &ival) == 0, ival.index < 64 {
            let f = ival.type == UInt32(V4L2_FRMIVAL_TYPE_DISCRETE.rawValue) ? ival.discrete : ival.stepwise.min
            if f.numerator > 0 { best = max(best, Double(f.denominator) / Double(f.numerator)) }
            if ival.type != UInt32(V4L2_FRMIVAL_TYPE_DISCRETE.rawValue) { break }
            ival.index += 1
        }
        return (best * 100).rounded() / 100
    }

    /// The mode to ask for: the preferred pixel format whose size is nearest to the request.
    static func chooseMode(_ formats: [CameraDescription.Format], _ request: CaptureRequest) -> CameraDescription.Format? {
        let usable = formats.filter { supportedFourccs.contains($0.fourcc) }
        func cost(_ f: CameraDescription.Format) -> Double {
            let rank = Double(supportedFourccs.firstIndex(of: f.fourcc) ?? 99)
            let sizeCost = abs(Double(f.width * f.height - request.width * request.height)) / Double(request.width * request.height)
            let fpsCost = f.fps > 0 && f.fps < request.fps ? (request.fps - f.fps) / request.fps : 0
            return sizeCost * 4 + fpsCost * 2 + rank * 0.1
        }
        return usable.min { cost($0) < cost($1) }
    }

    public func open(_ request: CaptureRequest) throws(CameraError) -> FrameSource {
        guard let mode = Self.chooseMode(description.formats, request) else {
            throw .openFailed(id, reason: "offers no pixel format we can convert (have: \(Set(description.formats.map(\.fourcc)).sorted().joined(separator: ", ")))")
        }
        let stream = try V4L2Stream(device: self, mode: mode)
        return spec.orientation.isUpright ? stream : OrientedSource(stream, spec.orientation)
    }
}

/// An mmap streaming session on one V4L2 node.
final class V4L2Stream: FrameSource {
    private let id: String
    private var fd: Int32
    private var buffers: [(pointer: UnsafeMutableRawPointer, length: Int)] = []
    private let width: Int
    private let height: Int
    private let stride: Int
    private let pixelFormat: UInt32
    private let isInfrared: Bool
    private let greyPool = PixelBufferPool()
    private let bgrPool = PixelBufferPool()
    private var sequence: UInt64 = 0
    private let captureType = UInt32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)

    init(device: V4L2Device, mode: CameraDescription.Format) throws(CameraError) {
        id = device.id
        let fd = cv4l2_open(device.node)
        guard fd >= 0 else {
            let errno = -fd
            if errno == ENOENT || errno == ENODEV || errno == ENXIO { throw .notFound(device.id) }
            throw .openFailed(device.id, reason: String(cString: strerror(errno)))
        }
        self.fd = fd
        // The emitter entry goes on this descriptor, before streaming: every stream start (so
        // also the first after a re-plug or resume) applies it; its outcome never fails the stream.
        device.emitters?.streamStarting(cameraID: device.id, location: device.description.usb,
                                        channel: DescriptorControlChannel(fd: fd))
        var format = v4l2_format()
        format.type = captureType
        format.fmt.pix.width = UInt32(mode.width)
        format.fmt.pix.height = UInt32(mode.height)
        format.fmt.pix.pixelformat = fourccValue(mode.fourcc)
        format.fmt.pix.field = UInt32(V4L2_FIELD_NONE.rawValue)
        var r = cv4l2_ioctl(fd, cv4l2_VIDIOC_S_FMT(), &format)
        if r != 0 {
            cv4l2_close(fd)
            throw r == -EBUSY ? .busy(device.id) : .openFailed(device.id, reason: "VIDIOC_S_FMT: \(String(cString: strerror(-r)))")
        }
        width = Int(format.fmt.pix.width)
        height = Int(format.fmt.pix.height)
        stride = Int(format.fmt.pix.bytesperline)
        pixelFormat = format.fmt.pix.pixelformat
        isInfrared = infraredFourccs.contains(fourccString(pixelFormat))
        if mode.fps > 0 {
            var parm = v4l2_streamparm()
            parm.type = captureType
            parm.parm.capture.timeperframe = v4l2_fract(numerator: 1000, denominator: UInt32(min(mode.fps, 60) * 1000))
            _ = cv4l2_ioctl(fd, cv4l2_VIDIOC_S_PARM(), &parm)  // best effort: not every driver sets fps
        }
        var req = v4l2_requestbuffers()
        req.count = 4
        req.type = captureType
        req.memory = UInt32(V4L2_MEMORY_MMAP.rawValue)
        r = cv4l2_ioctl(fd, cv4l2_VIDIOC_REQBUFS(), &req)
        guard r == 0, req.count >= 2 else {
            close()
            throw r == -EBUSY ? .busy(device.id) : .openFailed(device.id, reason: "VIDIOC_REQBUFS: \(String(cString: strerror(-r)))")
        }
        for index in 0..<req.count {
            var buf = v4l2_buffer()
            buf.type = captureType
            buf.memory = UInt32(V4L2_MEMORY_MMAP.rawValue)
            buf.index = index
            guard cv4l2_ioctl(fd, cv4l2_VIDIOC_QUERYBUF(), &buf) == 0,
                  let p = cv4l2_mmap(fd, Int(buf.length), Int64(buf.m.offset))
            else {
                close()
                throw .openFailed(device.id, reason: "cannot map capture buffer \(index)")
            }
            buffers.append((p, Int(buf.length)))
            guard cv4l2_ioctl(fd, cv4l2_VIDIOC_QBUF(), &buf) == 0 else {
                close()
                throw .openFailed(device.id, reason: "cannot queue capture buffer \(index)")
            }
        }
        var type = Int32(captureType)
        r = cv4l2_ioctl(fd, cv4l2_VIDIOC_STREAMON(), &type)
        guard r == 0 else {
            close()
            throw .openFailed(device.id, reason: "VIDIOC_STREAMON: \(String(cString: strerror(-r)))")
        }
    }

    func nextFrame(timeoutMs: Int) throws(CameraError) -> Frame {
        guard fd >= 0 else { throw .lost(id, reason: "stream closed") }
        let deadline = monotonicNanoseconds() + UInt64(max(timeoutMs, 0)) * 1_000_000
        while true {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let now = monotonicNanoseconds()
            guard now < deadline else { throw .timeout(id) }
            let n = poll(&pfd, 1, Int32((deadline - now) / 1_000_000) + 1)
            if n < 0 {
                if errno == EINTR { continue }
                throw .lost(id, reason: "poll: \(String(cString: strerror(errno)))")
            }
            if n == 0 { throw .timeout(id) }
            if pfd.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 && pfd.revents & Int16(POLLIN) == 0 {
                throw .lost(id, reason: "device reported an error (unplugged?)")
            }
            var buf = v4l2_buffer()
            buf.type = captureType
            buf.memory = UInt32(V4L2_MEMORY_MMAP.rawValue)
            let r = cv4l2_ioctl(fd, cv4l2_VIDIOC_DQBUF(), &buf)
            if r == -EAGAIN { continue }
            guard r == 0 else { throw .lost(id, reason: "VIDIOC_DQBUF: \(String(cString: strerror(-r)))") }
            defer { _ = cv4l2_ioctl(fd, cv4l2_VIDIOC_QBUF(), &buf) }
            if buf.flags & UInt32(V4L2_BUF_FLAG_ERROR) != 0 || buf.bytesused == 0 { continue }
            let grey = greyPool.buffer(count: width * height)
            let bgr = isInfrared ? nil : bgrPool.buffer(count: width * height * 3)
            let source = buffers[Int(buf.index)]
            let status = cvis_convert_frame(pixelFormat, source.pointer.assumingMemoryBound(to: UInt8.self),
                                            Int(buf.bytesused), Int32(width), Int32(height), Int32(stride),
                                            grey.pointer, bgr?.pointer)
            if status != CVIS_OK { continue }  // a corrupt MJPEG frame: skip it, the next one is fine
            sequence += 1
            return Frame(width: width, height: height, grey: grey, bgr: bgr, timestampNs: monotonicNanoseconds(),
                         sequence: sequence, isInfrared: isInfrared)
        }
    }

    func close() {
        guard fd >= 0 else { return }
        var type = Int32(captureType)
        _ = cv4l2_ioctl(fd, cv4l2_VIDIOC_STREAMOFF(), &type)
        for b in buffers { cv4l2_munmap(b.pointer, b.length) }
        buffers.removeAll()
        cv4l2_close(fd)
        fd = -1
    }

    deinit { close() }
}

/// Every V4L2 capture node under /dev now.
public func discoverV4L2Devices() -> [V4L2Device] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: "/dev")) ?? []
    let nodes = names.filter { $0.hasPrefix("video") && Int($0.dropFirst(5)) != nil }
        .sorted { Int($0.dropFirst(5))! < Int($1.dropFirst(5))! }
    return nodes.compactMap { try? V4L2Device(path: "/dev/" + $0) }
}
