#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// The kernel's uhid protocol (linux/uhid.h), as bytes: `struct uhid_event` is a packed 4-byte type
/// followed by a 4372-byte union. Encoding and decoding are pure so they are tested without
/// /dev/uhid.
public enum UHIDEvent: Sendable, Equatable {
    /// UHID_CREATE2: make the device.
    case create(name: String, vendor: UInt32, product: UInt32, version: UInt32, descriptor: [UInt8])
    case destroy
    /// UHID_INPUT2: an input report (device → host).
    case input([UInt8])
    /// UHID_OUTPUT: an output report (host → device), as the host wrote it.
    case output([UInt8])
    /// UHID_GET_REPORT / UHID_SET_REPORT: the kernel waits for a reply; FIDO uses neither.
    case getReport(id: UInt32)
    case setReport(id: UInt32)
    case getReportReply(id: UInt32, error: UInt16)
    case setReportReply(id: UInt32, error: UInt16)
    /// UHID_START, UHID_STOP, UHID_OPEN, UHID_CLOSE and anything newer: nothing to do.
    case other(type: UInt32)

    public static let size = 4 + 4372
    static let dataMax = 4096
    static let busUSB: UInt16 = 0x03

    enum Kind: UInt32 {
        case destroy = 1, start = 2, stop = 3, open = 4, close = 5, output = 6
        case getReport = 9, getReportReply = 10, create2 = 11, input2 = 12, setReport = 13, setReportReply = 14
    }

    /// The event as written to /dev/uhid (always the full struct size).
    public func encoded() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Self.size)
        func put16(_ v: UInt16, _ at: Int) { out[at] = UInt8(v & 0xff); out[at + 1] = UInt8(v >> 8) }
        func put32(_ v: UInt32, _ at: Int) { for i in 0..<4 { out[at + i] = UInt8(v >> (8 * UInt32(i)) & 0xff) } }
        switch self {
        case .create(let name, let vendor, let product, let version, let descriptor):
            put32(Kind.create2.rawValue, 0)
            let nameBytes = Array(name.utf8.prefix(127))
            out.replaceSubrange(4..<4 + nameBytes.count, with: nameBytes)
            // phys (64) and uniq (64) stay empty.
            put16(UInt16(min(descriptor.count, Self.dataMax)), 260)
            put16(Self.busUSB, 262)
            put32(vendor, 264)
            put32(product, 268)
            put32(version, 272)
            put32(0, 276)  // country
            out.replaceSubrange(280..<280 + min(descriptor.count, Self.dataMax), with: descriptor.prefix(Self.dataMax))
        case .destroy:
            put32(Kind.destroy.rawValue, 0)
        case .input(let report):
            put32(Kind.input2.rawValue, 0)
            put16(UInt16(min(report.count, Self.dataMax)), 4)
            out.replaceSubrange(6..<6 + min(report.count, Self.dataMax), with: report.prefix(Self.dataMax))
        case .output(let report):
            put32(Kind.output.rawValue, 0)
            out.replaceSubrange(4..<4 + min(report.count, Self.dataMax), with: report.prefix(Self.dataMax))
            put16(UInt16(min(report.count, Self.dataMax)), 4 + Self.dataMax)
            out[4 + Self.dataMax + 2] = 1  // UHID_OUTPUT_REPORT
        case .getReport(let id):
            put32(Kind.getReport.rawValue, 0)
            put32(id, 4)
        case .setReport(let id):
            put32(Kind.setReport.rawValue, 0)
            put32(id, 4)
        case .getReportReply(let id, let error):
            put32(Kind.getReportReply.rawValue, 0)
            put32(id, 4)
            put16(error, 8)
        case .setReportReply(let id, let error):
            put32(Kind.setReportReply.rawValue, 0)
            put32(id, 4)
            put16(error, 8)
        case .other(let type):
            put32(type, 0)
        }
        return out
    }

    /// Decodes what read(2) on /dev/uhid returned; nil when it is too short to be an event.
    public static func decode(_ bytes: [UInt8]) -> UHIDEvent? {
        guard bytes.count >= 4 else { return nil }
        func get16(_ at: Int) -> UInt16 { at + 1 < bytes.count ? UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8 : 0 }
        func get32(_ at: Int) -> UInt32 {
            (0..<4).reduce(UInt32(0)) { at + $1 < bytes.count ? $0 | UInt32(bytes[at + $1]) << (8 * UInt32($1)) : $0 }
        }
        let type = get32(0)
        switch Kind(rawValue: type) {
        case .output:
            guard bytes.count >= 4 + dataMax + 2 else { return nil }
            let size = min(Int(get16(4 + dataMax)), dataMax)
            return .output(Array(bytes[4..<4 + size]))
        case .getReport: return .getReport(id: get32(4))
        case .setReport: return .setReport(id: get32(4))
        case .destroy: return .destroy
        default: return .other(type: type)
        }
    }

    /// The FIDO HID report descriptor (CTAP 2.1 §11.2.8.1): usage page 0xF1D0, usage 0x01, one
    /// 64-byte input and one 64-byte output report, no report IDs.
    public static let fidoReportDescriptor: [UInt8] = [
        0x06, 0xd0, 0xf1,  // Usage Page (FIDO Alliance)
        0x09, 0x01,  // Usage (CTAPHID)
        0xa1, 0x01,  // Collection (Application)
        0x09, 0x20,  //   Usage (Input Report Data)
        0x15, 0x00,  //   Logical Minimum (0)
        0x26, 0xff, 0x00,  //   Logical Maximum (255)
        0x75, 0x08,  //   Report Size (8)
        0x95, 0x40,  //   Report Count (64)
        0x81, 0x02,  //   Input (Data, Var, Abs)
        0x09, 0x21,  //   Usage (Output Report Data)
        0x15, 0x00,  //   Logical Minimum (0)
        0x26, 0xff, 0x00,  //   Logical Maximum (255)
        0x75, 0x08,  //   Report Size (8)
        0x95, 0x40,  //   Report Count (64)
        0x91, 0x02,  //   Output (Data, Var, Abs)
        0xc0,  // End Collection
    ]

    /// The CTAPHID report inside an output event: hidraw hands over the report-number byte (0,
    /// as the descriptor has no report IDs) in front of the 64 bytes; it is dropped here.
    public static func report(fromOutput data: [UInt8]) -> [UInt8] {
        data.count == CTAPHIDState.reportSize + 1 && data[0] == 0 ? Array(data.dropFirst()) : data
    }
}

/// The FIDO device through the kernel's uhid: creates a USB-HID device with the FIDO report
/// descriptor (its hidraw node is what clients open), carries reports both ways, and destroys
/// the device on `close`. Takes any file descriptor that speaks the uhid protocol, so the tests
/// drive it through a socketpair.
public final class UHIDTransport: Sendable {
    public enum Failure: Error, Sendable, Equatable {
        case open(Int32)
        case write(Int32)
    }

    public struct Identity: Sendable {
        public var name = "biometricd FIDO2 authenticator"
        /// pid.codes test vendor and product; to be replaced by an allocated pair before release.
        public var vendor: UInt32 = 0x1209
        public var product: UInt32 = 0x000b
        public var version: UInt32 = 0x0100
        public init() {}
    }

    private let fd: Int32
    /// Held for every write and for closing the fd; true once closed, so a late `send` can never
    /// write into a descriptor number that another open has reused.
    private let fdClosed = Mutex<Bool>(false)
    /// `closed` is asked for by `close`; the reader thread, while active, owns closing the fd
    /// (closing it under a blocked reader could hand its number to another open).
    private let state = Mutex<(closing: Bool, closed: Bool, readerActive: Bool)>((false, false, false))
    private let reports: AsyncStream<[UInt8]>
    private let sink: AsyncStream<[UInt8]>.Continuation

    /// Opens /dev/uhid and creates the device.
    public convenience init(path: String = "/dev/uhid", identity: Identity = Identity()) throws(Failure) {
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw .open(errno) }
        try self.init(fd: fd, identity: identity)
    }

    /// Creates the device over an already open uhid descriptor (owned from here on).
    public init(fd: Int32, identity: Identity = Identity()) throws(Failure) {
        self.fd = fd
        (reports, sink) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .unbounded)
        do {
            try write(.create(name: identity.name, vendor: identity.vendor, product: identity.product,
                              version: identity.version, descriptor: UHIDEvent.fidoReportDescriptor))
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    private func write(_ event: UHIDEvent) throws(Failure) {
        let bytes = event.encoded()
        let (written, code) = fdClosed.withLock { closed -> (Int, Int32) in
            guard !closed else { return (-1, EBADF) }
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            return (n, errno)
        }
        guard written == bytes.count else { throw .write(code) }
    }

    /// Writes one input report (device → host).
    public func send(_ report: [UInt8]) {
        try? write(.input(report))
    }

    /// Reads events on a thread and delivers output reports, in order, to `device`, until `close`.
    public func run(device: CTAPHIDDevice) async {
        let started = state.withLock { state -> Bool in
            guard !state.closed, !state.readerActive else { return false }
            state.readerActive = true
            return true
        }
        guard started else { return }
        let reader = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: UHIDEvent.size)
            while !state.withLock({ $0.closed }) {
                var waiting = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let ready = poll(&waiting, 1, 200)
                if ready < 0 && errno != EINTR { break }
                if ready <= 0 { continue }
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
                if n <= 0 { break }
                switch UHIDEvent.decode(Array(buffer[..<n])) {
                case .output(let data)?: sink.yield(UHIDEvent.report(fromOutput: data))
                case .getReport(let id)?: try? write(.getReportReply(id: id, error: UInt16(EIO)))
                case .setReport(let id)?: try? write(.setReportReply(id: id, error: UInt16(EIO)))
                default: break
                }
            }
            sink.finish()
            state.withLock { $0.readerActive = false }
            closeDescriptor()
        }
        reader.start()
        for await report in reports { await device.receive(report) }
    }

    /// Destroys the device (its hidraw node disappears) and ends `run`.
    public func close() {
        let first = state.withLock { state -> Bool in
            defer { state.closing = true }
            return !state.closing
        }
        guard first else { return }
        try? write(.destroy)
        let closeNow = state.withLock { state -> Bool in
            state.closed = true
            return !state.readerActive
        }
        sink.finish()
        if closeNow { closeDescriptor() }
    }

    private func closeDescriptor() {
        fdClosed.withLock { closed in
            guard !closed else { return }
            closed = true
            Glibc.close(fd)
        }
    }
}
