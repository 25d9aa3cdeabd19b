import BiometricCore
import CV4L2
import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The UVC class-specific requests a control query may carry (USB Video Class 1.5, A.8).
public enum UVCRequest: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case setCur = 0x01
    case getCur = 0x81
    case getMin = 0x82
    case getMax = 0x83
    case getRes = 0x84
    case getLen = 0x85
    case getInfo = 0x86
    case getDef = 0x87

    public var description: String {
        switch self {
        case .setCur: "SET_CUR"
        case .getCur: "GET_CUR"
        case .getMin: "GET_MIN"
        case .getMax: "GET_MAX"
        case .getRes: "GET_RES"
        case .getLen: "GET_LEN"
        case .getInfo: "GET_INFO"
        case .getDef: "GET_DEF"
        }
    }
}

/// The one way emitter code reaches a camera's extension units: `UVCIOC_CTRL_QUERY` on the real
/// node, a recording fake in tests. Everything above it (order, size checks, read-back, what a
/// re-plug does) is tested without hardware through this seam.
public protocol UVCControlChannel {
    /// One request on control `selector` of unit `unit`. `buffer` holds the bytes to send
    /// (SET_CUR) or receives the answer (its count is the size asked for). Returns 0 or an errno.
    func query(unit: UInt8, selector: UInt8, request: UVCRequest, buffer: inout [UInt8]) -> Int32
}

/// The real channel: the stream's own descriptor (some cameras reset the control when the
/// descriptor that set it is closed, so the write must go through the one that streams).
struct DescriptorControlChannel: UVCControlChannel {
    let fd: Int32

    func query(unit: UInt8, selector: UInt8, request: UVCRequest, buffer: inout [UInt8]) -> Int32 {
        let count = UInt16(clamping: buffer.count)
        let r = buffer.withUnsafeMutableBufferPointer { cv4l2_uvc_xu_query(fd, unit, selector, request.rawValue, count, $0.baseAddress) }
        return -r
    }
}

/// What happened to one write of an entry.
public struct UVCWriteResult: Sendable, Equatable {
    public enum Status: String, Sendable {
        /// Written, and GET_CUR read back the same bytes.
        case applied
        /// Written; GET_CUR answers other bytes (some firmwares report a mode, not the value set).
        case readBackDiffers = "read_back_differs"
        /// Not written: GET_INFO or GET_LEN says the entry does not fit this device.
        case refused
        /// The ioctl failed.
        case failed
        /// Not tried, because an earlier check or write of the entry did not pass.
        case notAttempted = "not_attempted"
    }

    public var write: UVCWrite
    public var status: Status
    public var readBack: [UInt8]?
    public var message: String?
}

/// One application of an entry to a camera, as `camera.ir` reports it.
public struct IREmitterReport: Sendable, Equatable {
    public enum Outcome: String, Sendable {
        case applied
        case readBackDiffers = "read_back_differs"
        case refused
        case failed
    }

    public var entry: IREmitterEntry
    public var outcome: Outcome
    /// One line: what was done, or why not.
    public var message: String
    public var writes: [UVCWriteResult]
    /// Monotonic time the application started, and how long it took.
    public var startedNs: UInt64
    public var durationNs: UInt64
}

/// Applies one table entry through a control channel. The checks come first for every write of
/// the entry, so an entry that does not fit (a unit or selector the device lacks, a payload of
/// the wrong size, a read-only control) is refused before anything is written: a half-applied
/// entry could leave a camera in a mode nobody chose.
public enum IREmitterApplier {
    /// GET_INFO bits (UVC 1.5 §4.1.2): D0 supports GET, D1 supports SET.
    static let infoGet: UInt8 = 0x01
    static let infoSet: UInt8 = 0x02

    public static func apply(_ entry: IREmitterEntry, over channel: some UVCControlChannel) -> IREmitterReport {
        let started = monotonicNanoseconds()
        var results = entry.writes.map { UVCWriteResult(write: $0, status: .notAttempted) }
        func report(_ outcome: IREmitterReport.Outcome, _ message: String) -> IREmitterReport {
            IREmitterReport(entry: entry, outcome: outcome, message: message, writes: results, startedNs: started,
                            durationNs: monotonicNanoseconds() - started)
        }
        var readable: [Bool] = []
        // 1. Checks, for every write, before any SET_CUR.
        for (i, w) in entry.writes.enumerated() {
            let at = "unit \(w.unit) selector \(w.selector)"
            var info: [UInt8] = [0]
            var e = channel.query(unit: w.unit, selector: w.selector, request: .getInfo, buffer: &info)
            guard e == 0 else {
                results[i].status = e == ENOENT ? .refused : .failed
                results[i].message = "GET_INFO: \(errnoText(e))"
                return report(e == ENOENT ? .refused : .failed,
                              "\(at): GET_INFO failed (\(errnoText(e)))\(e == ENOENT ? ": the device has no such control" : ""); nothing written")
            }
            guard info[0] & infoSet != 0 else {
                results[i].status = .refused
                results[i].message = String(format: "GET_INFO 0x%02x: SET not supported", info[0])
                return report(.refused, "\(at) does not accept SET_CUR (GET_INFO 0x\(String(format: "%02x", info[0]))); nothing written")
            }
            readable.append(info[0] & infoGet != 0)
            var len: [UInt8] = [0, 0]
            e = channel.query(unit: w.unit, selector: w.selector, request: .getLen, buffer: &len)
            guard e == 0 else {
                results[i].status = .failed
                results[i].message = "GET_LEN: \(errnoText(e))"
                return report(.failed, "\(at): GET_LEN failed (\(errnoText(e))); nothing written")
            }
            let size = Int(len[0]) | Int(len[1]) << 8
            guard size == w.payload.count else {
                results[i].status = .refused
                results[i].message = "GET_LEN \(size), payload \(w.payload.count) bytes"
                return report(.refused, "\(at): the device's control is \(size) bytes, the entry's payload \(w.payload.count); nothing written")
            }
        }
        // 2. The writes, in order, each read back.
        var differs = false
        for (i, w) in entry.writes.enumerated() {
            var payload = w.payload
            let e = channel.query(unit: w.unit, selector: w.selector, request: .setCur, buffer: &payload)
            guard e == 0 else {
                results[i].status = .failed
                results[i].message = "SET_CUR: \(errnoText(e))"
                let done = i == 0 ? "nothing written" : "\(i) of \(entry.writes.count) writes done"
                return report(.failed, "unit \(w.unit) selector \(w.selector): SET_CUR failed (\(errnoText(e))); \(done)")
            }
            guard readable[i] else {
                results[i].status = .applied
                results[i].message = "written; the control cannot be read back"
                continue
            }
            var back = [UInt8](repeating: 0, count: w.payload.count)
            let r = channel.query(unit: w.unit, selector: w.selector, request: .getCur, buffer: &back)
            if r == 0 && back == w.payload {
                results[i].status = .applied
                results[i].readBack = back
            } else {
                differs = true
                results[i].status = .readBackDiffers
                results[i].readBack = r == 0 ? back : nil
                results[i].message = r == 0 ? "GET_CUR answers \(back.map { String(format: "%02x", $0) }.joined(separator: " "))" : "GET_CUR: \(errnoText(r))"
            }
        }
        return differs
            ? report(.readBackDiffers, "written; a read-back differs from the payload")
            : report(.applied, "\(entry.writes.count) write\(entry.writes.count == 1 ? "" : "s") applied and read back")
    }

    static func errnoText(_ e: Int32) -> String { String(cString: strerror(e)) }
}

/// The daemon's emitter state: the table, and per camera the last application. A stream start
/// of a camera with an entry applies it (again after every re-plug or resume, since the daemon
/// re-opens the node for each stream); a failure never fails the stream.
public final class IREmitterController: Sendable {
    public let table: IREmitterTable
    /// Table files skipped because they did not parse (shown by `camera.ir`).
    public let tableErrors: [IREmitterTableError]
    private let logger: Logger
    private let state = Mutex<[String: CameraState]>([:])

    public struct CameraState: Sendable {
        public var last: IREmitterReport?
        /// Applications since the daemon started (re-plugs included).
        public var applications = 0
        /// The outcome already logged since the camera last appeared: the same one again is
        /// logged at debug level only, so a camera that refuses its entry logs once, not per stream.
        var logged: String?
    }

    public init(table: IREmitterTable, tableErrors: [IREmitterTableError] = [], logger: Logger) {
        self.table = table
        self.tableErrors = tableErrors
        self.logger = logger
        for error in tableErrors { logger.error("IR emitter table: \(error.description) (file skipped)") }
    }

    /// The packaged table and the admin's drop-ins.
    public static func installed(logger: Logger) -> IREmitterController {
        let (table, errors) = IREmitterTable.load()
        return IREmitterController(table: table, tableErrors: errors, logger: logger)
    }

    /// The entry for a camera at `location`, if the table has one.
    public func entry(for location: USBLocation?) -> IREmitterEntry? {
        location.flatMap { table.entry(for: $0.device, interface: $0.interface) }
    }

    /// Called by a stream before it starts. Nil (and no request at all) when the camera has no
    /// entry.
    @discardableResult
    public func streamStarting(cameraID: String, location: USBLocation?, channel: some UVCControlChannel) -> IREmitterReport? {
        guard let entry = entry(for: location) else { return nil }
        let report = IREmitterApplier.apply(entry, over: channel)
        let line = "IR emitter entry \(entry.key) (\(entry.name)) on \(cameraID): \(report.outcome.rawValue): \(report.message)"
        let first = state.withLock { s -> Bool in
            var c = s[cameraID] ?? CameraState()
            c.last = report
            c.applications += 1
            let key = "\(report.outcome.rawValue) \(report.message)"
            defer { c.logged = key; s[cameraID] = c }
            return c.logged != key
        }
        if !first {
            logger.debug("\(line)")
        } else if report.outcome == .applied || report.outcome == .readBackDiffers {
            logger.info("\(line)")
        } else {
            logger.warning("\(line) (the stream goes on without it)")
        }
        return report
    }

    /// The camera went away: its next application (after a re-plug) is logged again.
    public func cameraRemoved(_ id: String) {
        state.withLock { s in s[id]?.logged = nil }
    }

    public func state(of cameraID: String) -> CameraState? { state.withLock { $0[cameraID] } }
}
