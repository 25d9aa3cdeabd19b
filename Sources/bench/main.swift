// biometricd-bench: start-up, RPC throughput/latency, memory, face verify and the auth layer's
// costs of the real daemon. Prints numbers with a baseline measured in the same run (ratios,
// not absolute claims).
import BiometricAuth
import BiometricClient
import BiometricFace
import BiometricProtocol
import BiometricStore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

let usage = """
    usage: biometricd-bench [--quick] [--only SECTION] [--baseline DIR] [--verifies N] [--runs N] [--warm]
           biometricd-bench --soak verify|fuzz [--count N]
      Runs the release daemon next to this binary (swift build -c release) on a replay camera of
      ../shared/data and prints one line per measurement, with a baseline from the same run.
      --quick         fewer repetitions (a smoke run)
      --only SECTION  one section: start, rpc, face, auth, memory, live, first-login, gallery, params
                      params: in-process, no daemon: decoding a call's params with the one-pass
                        JSONValueDecoder against the former path (JSONEncoder writes the params,
                        JSONDecoder reads them), same bodies, ratio old/new
                      memory: RSS of a finger-only daemon (idle, then after 8 finger.extract)
                        and of one with every model loaded: after enrolment, --verifies
                        face.verify sessions [1000] and 8 finger.extract (the finger extractor
                        and its learned network load at the first finger call)
                      live: face.verify (passive liveness, the default) request to match on
                        replay cameras of the live clips, p50/p95; the screen replay and a still
                        photo must be refused
                      first-login: a daemon that has not run yet, started by socket activation
                        (systemd-socket-activate) at the first connection, to the first live match
                        on a replay camera of a live clip; --runs N [5]; the model files are
                        evicted from the page cache first unless --warm
                      lfw: LFW View-2 10-fold through the daemon's API: face.extract of every image
                        named by pairs.txt, then face.match of all 6,000 pairs (template against
                        template, and template against the other image as a live probe)
                      (gallery: N sealed face templates [1000000, --count], start, load, identify)
      --baseline DIR  a folder holding another build's biometricd (e.g. main's .build/release):
                      memory, live and first-login measure it too, in the same run, alternating,
                      and print the ratio of this build to it; lfw measures it after this build
      --soak verify   N face.verify sessions (image mode) back to back [10000]; RSS sampled
                      every 10 %, drift from the first sample after warm-up
      --soak fuzz     N fuzzed lines on 8 connections (mutated requests, garbage, deep nesting,
                      long strings, batches) [1000000]; RSS as above; the daemon must still answer
      -h, --help      this text
    """
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains("-h") || arguments.contains("--help") {
    print(usage)
    exit(0)
}
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("biometricd-bench: \(message)\n\(usage)\n".utf8))
    exit(2)
}
/// The value after `flag`, checked against `allowed` (any when nil).
func value(after flag: String, allowed: [String]?) -> String? {
    guard let i = arguments.firstIndex(of: flag) else { return nil }
    guard i + 1 < arguments.count, allowed.map({ $0.contains(arguments[i + 1]) }) ?? true else { fail("\(flag) needs a value") }
    return arguments[i + 1]
}
func number(after flag: String) -> Int? {
    value(after: flag, allowed: nil).map { text -> Int in
        guard let n = Int(text), n > 0 else { fail("\(flag) takes a positive number") }
        return n
    }
}
let only = value(after: "--only", allowed: ["start", "rpc", "face", "auth", "memory", "live", "first-login", "gallery", "lfw", "params"])
let soak = value(after: "--soak", allowed: ["verify", "fuzz"])
let count = number(after: "--count")
let verifyCount = number(after: "--verifies")
let runCount = number(after: "--runs")
let baselineDir = value(after: "--baseline", allowed: nil)
let valued = ["--only", "--soak", "--count", "--baseline", "--verifies", "--runs"]
for (i, a) in arguments.enumerated() where !(["--quick", "--warm"] + valued).contains(a) {
    if i == 0 || !valued.contains(arguments[i - 1]) { fail("unknown argument '\(a)'") }
}
if let baselineDir, !FileManager.default.isExecutableFile(atPath: baselineDir + "/biometricd") {
    fail("--baseline \(baselineDir): no biometricd there")
}
/// Sections run without --only (live and first-login take minutes: asked for by name).
@MainActor func wanted(_ section: String) -> Bool {
    soak == nil && (only == nil ? !["live", "first-login", "gallery", "lfw"].contains(section) : only == section)
}

let binDir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
let quick = arguments.contains("--quick")
let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
let camera = "replay:\(repo)/../shared/data/faces/lfw/images/Tony_Blair?fps=15&loop=true"

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    let s = values.sorted()
    return s[min(s.count - 1, Int(Double(s.count - 1) * p))]
}

func fmt(_ v: Double, _ digits: Int = 2) -> String { String(format: "%.\(digits)f", v) }

/// Runs `body` (bind or connect) with `path` as a sockaddr_un.
func withUnixAddress(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
    var a = sockaddr_un()
    a.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &a.sun_path) { raw in
        let b = Array(path.utf8)
        raw.copyBytes(from: b)
        raw[b.count] = 0
    }
    return withUnsafePointer(to: &a) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
}

/// A datagram socket standing in for systemd's NOTIFY_SOCKET.
final class NotifySocket: @unchecked Sendable {
    let fd: Int32
    let path: String
    init() {
        path = "/tmp/bench-notify-\(getpid())-\(Int.random(in: 0..<1_000_000)).sock"
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        _ = withUnixAddress(path) { bind(fd, $0, $1) }
    }
    /// Waits for a datagram containing `word`.
    func wait(for word: String, timeout: Double) -> Bool {
        let end = now() + timeout
        var buf = [UInt8](repeating: 0, count: 4096)
        while now() < end {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 100) > 0 else { continue }
            let n = recv(fd, &buf, buf.count, 0)
            if n > 0, String(decoding: buf[..<n], as: UTF8.self).contains(word) { return true }
        }
        return false
    }
    deinit {
        close(fd)
        unlink(path)
    }
}

final class Daemon {
    let process = Process()
    let root: String
    let socket: String
    /// `binary`: a biometricd build (this one's by default); `cameras` replace the LFW folder's;
    /// `log`: the daemon's stderr goes there (info level) instead of nowhere.
    init(notify: NotifySocket?, root existing: String? = nil, extra: [String] = [], binary: String = binDir + "/biometricd",
         cameras: [String] = [camera], log: String? = nil) throws {
        root = existing ?? Self.newRoot()
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        socket = root + "/s.sock"
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["--socket", socket, "--state-dir", root + "/state", "--models", repo + "/models",
                             "--log-level", log == nil ? "warning" : "info"] + cameras.flatMap { ["--camera", $0] } + extra
        var env = ProcessInfo.processInfo.environment
        if let notify { env["NOTIFY_SOCKET"] = notify.path }
        process.environment = env
        if let log {
            FileManager.default.createFile(atPath: log, contents: nil)
            process.standardError = FileHandle(forWritingAtPath: log)
        } else {
            process.standardError = FileHandle.nullDevice
        }
        process.standardOutput = FileHandle.nullDevice
        try process.run()
    }
    /// The shared libraries mapped into the daemon, and whether GDAL, poppler or FFmpeg are among them.
    func libraries() -> (count: Int, heavy: [String]) {
        // /proc files have no size: read until the end (String(contentsOfFile:) stops early).
        var bytes: [UInt8] = []
        let fd = open("/proc/\(process.processIdentifier)/maps", O_RDONLY)
        if fd >= 0 {
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = read(fd, &chunk, chunk.count)
                if n <= 0 { break }
                bytes += chunk[0..<n]
            }
            close(fd)
        }
        let maps = String(decoding: bytes, as: UTF8.self)
        let libs = Set(maps.split(separator: "\n").compactMap { line -> String? in
            guard let path = line.split(separator: " ", omittingEmptySubsequences: true).last, path.contains(".so") else { return nil }
            return String(path)
        })
        let heavy = ["libgdal", "libpoppler", "libavcodec", "libavformat", "libgstreamer", "libopencv_imgcodecs", "libopencv_videoio"]
            .filter { name in libs.contains { $0.contains("/" + name) } }
        return (libs.count, heavy)
    }
    static func newRoot() -> String { "/tmp/bench-\(getpid())-\(Int.random(in: 0..<1_000_000))" }

    /// SIGTERM, then waits up to 20 s. Polls `isRunning`: Foundation's waitUntilExit can miss a
    /// child's exit on Linux and wait for ever (seen here).
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        for _ in 0..<2000 where process.isRunning { usleep(10_000) }
    }
    func waitForSocket() {
        for _ in 0..<500 {
            if (try? BiometricClient(socketPath: socket)) != nil { return }
            usleep(10_000)
        }
        fatalError("daemon did not start")
    }
    func memory() -> (rss: Int, hwm: Int) {
        let text = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        func kb(_ key: String) -> Int {
            text.split(separator: "\n").first { $0.hasPrefix(key) }.flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") } ?? 0
        }
        return (kb("VmRSS:"), kb("VmHWM:"))
    }
    /// Keep the folder (state, key) when the object goes: a later daemon starts on it.
    var keep = false
    deinit {
        stop()
        if !keep { try? FileManager.default.removeItem(atPath: root) }
    }
}

print("# biometricd-bench (\(quick ? "quick" : "full")), \(ProcessInfo.processInfo.activeProcessorCount) cores")

// MARK: 0. Params decoding, in-process (issue 38)
// Every call's params go from the request's JSONValue to the method's type. The former path wrote
// the value back to bytes (JSONEncoder) and parsed them again (JSONDecoder); JSONValueDecoder reads
// the value directly. Both run here on the same bodies, alternating, best of two rounds each;
// `RPCParams.decode(from:)` in full (the unknown-field check, decoding, validate).
if wanted("params") {
    let n = quick ? 10_000 : 100_000
    func read(_ text: String) -> JSONValue {
        do { return try JSONReader.read(Data(text.utf8)) } catch { fatalError("bench body: \(error)") }
    }
    func perCallMicros(_ body: () -> Bool) -> (us: Double, ok: Int) {
        var ok = 0
        let t = now()
        for _ in 0..<n where body() { ok += 1 }
        return ((now() - t) / Double(n) * 1e6, ok)
    }
    func measure<P: RPCParams>(_ name: String, _ type: P.Type, _ text: String) {
        let params = read(text)
        var old = Double.infinity, new = Double.infinity
        var accepted = (0, 0)
        for _ in 0..<2 {
            let o = perCallMicros { (try? P.decode(from: params, through: .foundation)) != nil }
            let d = perCallMicros { (try? P.decode(from: params, through: .direct)) != nil }
            old = min(old, o.us)
            new = min(new, d.us)
            accepted = (o.ok, d.ok)
        }
        print("params_decode \(name) n=\(n) foundation_us=\(fmt(old, 2)) direct_us=\(fmt(new, 2)) ratio=\(fmt(old / new, 1))x accepted=\(accepted.0)/\(accepted.1)")
        // The decoding step alone (JSONValue.decode), without the field check and validate.
        var oldDecode = Double.infinity, newDecode = Double.infinity
        for _ in 0..<2 {
            oldDecode = min(oldDecode, perCallMicros { (try? params.decode(P.self, through: .foundation)) != nil }.us)
            newDecode = min(newDecode, perCallMicros { (try? params.decode(P.self, through: .direct)) != nil }.us)
        }
        print("params_decode_only \(name) n=\(n) foundation_us=\(fmt(oldDecode, 2)) direct_us=\(fmt(newDecode, 2)) ratio=\(fmt(oldDecode / newDecode, 1))x")
    }
    // The other direction: a result and an event written on the one path (Encodable →
    // JSONValueEncoder → JSONWriter) against JSONEncoder's bytes of the same value.
    func measureWrite(_ name: String, _ value: some Encodable) {
        var foundation = Double.infinity, direct = Double.infinity
        for _ in 0..<2 {
            foundation = min(foundation, perCallMicros { (try? JSONCoding.encoder.encode(value)) != nil }.us)
            direct = min(direct, perCallMicros { (try? JSONValueEncoder.encode(value)).map { JSONWriter.write($0) } != nil }.us)
        }
        print("result_write \(name) n=\(n) jsonencoder_us=\(fmt(foundation, 2)) direct_us=\(fmt(direct, 2)) ratio=\(fmt(foundation / direct, 1))x")
    }
    let models = ModelStatus(loaded: ["dlib_face_recognition_resnet_model_v1.dat", "shape_predictor_68_face_landmarks.dat"], missing: [],
                             corrupt: [], folders: ["/usr/share/biometricd/models"])
    measureWrite("daemon.status", DaemonStatus(version: "0.1.0", uptimeS: 12.345, pid: 4242, cameras: ["replay0"], models: models, users: 7,
                                               activeSessions: 1, clients: 64, socketActivated: false, privileged: true,
                                               faceGallery: GalleryStatus(state: "ready", templates: 3, loaded: 3, total: 3, refreshing: false),
                                               store: StoreStatus(state: "open", key: "credential", protection: "tpm2")))
    var frame = FaceFrameEvent(box: PixelRect(x: 10, y: 20, width: 120, height: 130), yaw: 4.5, pitch: -2, roll: 0.1, quality: 71,
                               brightness: 120, sharpness: 88, feedback: [.turnLeft], livenessAction: .nod, livenessScore: 60,
                               framesCaptured: 1, framesNeeded: 4)
    frame.frame = FrameSize(width: 640, height: 480)
    measureWrite("face.frame", Event(request: .int(7), frame))
    measure("face.verify", FaceVerifyParams.self,
            #"{"user":"ana","camera":"c0","mode":"liveness","liveness_mode":"passive","matching_threshold":48.5,"quality_threshold":48,"timeout_ms":30000,"preview":{"fps":10,"width":640}}"#)
    measure("auth.authenticate", AuthenticateParams.self,
            #"{"user":"ana","factors":["face","finger","pin"],"pin":"482915","camera":"c0","timeout_ms":30000,"require_arrival":true}"#)
    measure("finger.capture", FingerCaptureRequest.self,
            #"{"mode":"fingers","hand":"left","amputated":["ring"],"liveness":"very_low","image_format":"jpeg","quality_threshold":40}"#)
    measure("user", UserParams.self, #"{"user":"ana"}"#)
    // A refused body: a fraction for an integer (the error path finds the field by re-decoding).
    measure("face.verify_refused", FaceVerifyParams.self, #"{"user":"ana","mode":"image","quality_threshold":2.5,"timeout_ms":30000}"#)
    if only == "params" { exit(0) }
}

// MARK: 1. Start to READY
let runs = wanted("start") ? (quick ? 3 : 10) : 0
var readyTimes: [Double] = []
var spawnTimes: [Double] = []
for _ in 0..<runs {
    // Baseline: spawning a process that exits at once (/bin/true), same Process API.
    let t0 = now()
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/bin/true")
    try p.run()
    p.waitUntilExit()
    spawnTimes.append((now() - t0) * 1000)

    let notify = NotifySocket()
    let t1 = now()
    let d = try Daemon(notify: notify)
    guard notify.wait(for: "READY=1", timeout: 20) else { fatalError("no READY=1") }
    readyTimes.append((now() - t1) * 1000)
    _ = d
}
if runs > 0 {
    let readyMedian = percentile(readyTimes, 0.5)
    let spawnMedian = percentile(spawnTimes, 0.5)
    print("start_to_ready_ms median=\(fmt(readyMedian, 1)) min=\(fmt(readyTimes.min()!, 1)) max=\(fmt(readyTimes.max()!, 1)) (n=\(runs))")
    print("baseline_spawn_true_ms median=\(fmt(spawnMedian, 1)); ratio=\(fmt(readyMedian / spawnMedian, 1))x")
}

// MARK: 2. daemon.status throughput and latency
let daemon = try Daemon(notify: nil)
daemon.waitForSocket()
// Steady state: the face models load in the background after start (seconds of one core).
settle(daemon)
let idle = daemon.memory()

/// In-process baseline: a Unix socketpair ping-pong of a status-sized reply (kernel round trip).
func echoBaselineMicros(_ n: Int) -> Double {
    var fds: [Int32] = [0, 0]
    socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds)
    let serverFD = fds[1]
    let reply = [UInt8](repeating: 65, count: 420)
    let server = Thread {
        var buf = [UInt8](repeating: 0, count: 4096)
        while read(serverFD, &buf, buf.count) > 0 { _ = write(serverFD, reply, reply.count) }
    }
    server.start()
    var buf = [UInt8](repeating: 0, count: 4096)
    let request = [UInt8]("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"daemon.status\"}\n".utf8)
    let t = now()
    for _ in 0..<n {
        _ = write(fds[0], request, request.count)
        var got = 0
        while got < reply.count { got += read(fds[0], &buf, buf.count) }
    }
    let micros = (now() - t) / Double(n) * 1e6
    close(fds[0])
    close(fds[1])
    return micros
}
let echo = echoBaselineMicros(quick ? 2000 : 20000)
print("baseline_socketpair_roundtrip_us=\(fmt(echo))")

/// Median round trip of daemon.status on one connection: the per-call floor of the socket path.
func statusRoundTripMicros(_ n: Int, socket: String) -> Double {
    guard let c = try? BiometricClient(socketPath: socket) else { return .nan }
    var t: [Double] = []
    for _ in 0..<n {
        let s = now()
        _ = try? c.call(Method.daemonStatus, as: DaemonStatus.self)
        t.append((now() - s) * 1e6)
    }
    return percentile(t, 0.5)
}

/// Latencies from many threads.
final class Collected: @unchecked Sendable {
    private let lock = NSLock()
    private var all: [Double] = []
    func add(_ v: [Double]) { lock.lock(); all += v; lock.unlock() }
    var values: [Double] { lock.lock(); defer { lock.unlock() }; return all }
}

/// A minimal client for load: one request line out, one reply line in, checked by its prefix.
/// Cheaper than BiometricClient (no Codable), so the 64-client runs measure the daemon rather than
/// 64 JSON encoders sharing its two cores; like wrk, the load generator stays out of the way.
final class RawStatusClient {
    let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 65536)
    private var filled = 0
    private var nextID = 1

    init?(socket path: String) {
        fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        if withUnixAddress(path, { connect(fd, $0, $1) }) != 0 {
            close(fd)
            return nil
        }
    }

    deinit { close(fd) }

    /// Sends a sync call and reads (and drops) every line until its reply: the fuzz soak's flow
    /// control, so the lines sent before it were all handled.
    func drainUntilSync() -> Bool {
        let id = nextID
        nextID += 1
        let request = Array("{\"jsonrpc\":\"2.0\",\"id\":\"sync-\(id)\",\"method\":\"daemon.status\"}\n".utf8)
        guard write(fd, request, request.count) == request.count else { return false }
        let expected = Array("{\"id\":\"sync-\(id)\",".utf8)
        while true {
            while let newline = buffer[0..<filled].firstIndex(of: 10) {
                let found = newline >= expected.count && Array(buffer[0..<expected.count]) == expected
                buffer.replaceSubrange(0...newline, with: [])
                buffer.append(contentsOf: [UInt8](repeating: 0, count: newline + 1))
                filled -= newline + 1
                if found { return true }
            }
            if filled == buffer.count { filled = 0 }  // a line longer than the buffer: drop it
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, $0.count - filled) }
            guard n > 0 else { return false }
            filled += n
        }
    }

    private var pending = 0

    /// Sends one daemon.status request (the reply is read by `receive`).
    func send() -> Bool {
        pending = nextID
        nextID += 1
        let request = Array("{\"jsonrpc\":\"2.0\",\"id\":\(pending),\"method\":\"daemon.status\"}\n".utf8)
        return write(fd, request, request.count) == request.count
    }

    /// Reads what is available: nil until the whole reply is in, then whether it is the result.
    func receive() -> Bool? {
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, $0.count - filled) }
        if n <= 0 { return false }
        filled += n
        guard let newline = buffer[0..<filled].firstIndex(of: 10) else { return nil }
        let expected = Array("{\"id\":\(pending),\"jsonrpc\":\"2.0\",\"result\":".utf8)
        let ok = newline >= expected.count && Array(buffer[0..<expected.count]) == expected
        buffer.replaceSubrange(0...newline, with: [])
        buffer.append(contentsOf: [UInt8](repeating: 0, count: newline + 1))
        filled -= newline + 1
        return ok
    }

    /// One daemon.status call; false when the reply is not its result.
    func call() -> Bool {
        let id = nextID
        nextID += 1
        let request = Array("{\"jsonrpc\":\"2.0\",\"id\":\(id),\"method\":\"daemon.status\"}\n".utf8)
        guard write(fd, request, request.count) == request.count else { return false }
        while true {
            if let newline = buffer[0..<filled].firstIndex(of: 10) {
                let expected = Array("{\"id\":\(id),\"jsonrpc\":\"2.0\",\"result\":".utf8)
                let ok = newline >= expected.count && Array(buffer[0..<expected.count]) == expected
                buffer.replaceSubrange(0...newline, with: [])
                buffer.append(contentsOf: [UInt8](repeating: 0, count: newline + 1))
                filled -= newline + 1
                return ok
            }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, $0.count - filled) }
            guard n > 0 else { return false }
            filled += n
        }
    }
}

func sleepUntil(_ t: Double) {
    let d = t - now()
    guard d > 0 else { return }
    var ts = timespec(tv_sec: Int(d), tv_nsec: Int((d - Double(Int(d))) * 1e9))
    nanosleep(&ts, nil)
}

/// `clients` connections calling daemon.status, driven by two threads with poll(2) as wrk does
/// (64 client threads on two cores would mostly measure the scheduler): back to back (`rate`
/// nil: the most the daemon can take) or, open loop, at `rate` calls/s in all, with latency
/// counted from each call's planned start (so a stall is not hidden by the calls it delays;
/// wrk2's correction).
func statusLoad(clients: Int, calls: Int, rate: Double?, socket: String) -> (perSecond: Double, latencies: [Double], failed: Int) {
    let threads = min(2, clients)
    let collected = Collected()
    let failures = Collected()
    let group = DispatchGroup()
    let start = now() + 0.05
    let interval = rate.map { Double(clients) / $0 } ?? 0
    for k in 0..<threads {
        group.enter()
        let thread = Thread {
            defer { group.leave() }
            let mine = Array(stride(from: k, to: clients, by: threads))
            let perClient = max(1, calls / clients)
            var conns: [RawStatusClient] = []
            for _ in mine { if let c = RawStatusClient(socket: socket) { conns.append(c) } }
            guard conns.count == mine.count else { failures.add([Double(calls)]); return }
            var done = [Int](repeating: 0, count: conns.count)
            var sentAt = [Double](repeating: 0, count: conns.count)
            var inFlight = [Bool](repeating: false, count: conns.count)
            var latencies: [Double] = []
            latencies.reserveCapacity(perClient * conns.count)
            var failed = 0.0
            func planned(_ i: Int) -> Double { start + interval * (Double(done[i]) + Double(mine[i]) / Double(clients)) }
            sleepUntil(start)
            var fds = conns.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
            while done.reduce(0, +) < perClient * conns.count {
                let t = now()
                var wait = 1000.0
                for i in conns.indices where !inFlight[i] && done[i] < perClient {
                    let due = rate == nil ? t : planned(i)
                    if due <= t {
                        sentAt[i] = rate == nil ? t : due
                        if !conns[i].send() { failed += 1 }
                        inFlight[i] = true
                    } else {
                        wait = min(wait, due - t)
                    }
                }
                // poll's timeout is in whole milliseconds: wait that long rounded down, then poll
                // without waiting and yield the CPU until the planned time (a rounded-up timeout
                // would send calls late and count the lateness as latency).
                let ms = Int32(max(0, min(1000, wait * 1000)).rounded(.down))
                let ready = poll(&fds, nfds_t(fds.count), ms)
                guard ready >= 0 else { break }
                if ready == 0 && ms == 0 { sched_yield() }
                for i in fds.indices where fds[i].revents != 0 {
                    fds[i].revents = 0
                    guard let ok = conns[i].receive() else { continue }
                    if !ok { failed += 1 }
                    latencies.append((now() - sentAt[i]) * 1e6)
                    done[i] += 1
                    inFlight[i] = false
                }
            }
            collected.add(latencies)
            failures.add([failed])
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    group.wait()
    let elapsed = now() - start
    let all = collected.values
    return (Double(all.count) / elapsed, all, Int(failures.values.reduce(0, +)))
}

if wanted("rpc") {
    // What a program sees through the client library (Codable on both sides).
    let library = statusRoundTripMicros(quick ? 500 : 5000, socket: daemon.socket)
    print("daemon.status via BiometricClient clients=1 p50_us=\(fmt(library, 0)) p50_vs_socketpair=\(fmt(library / echo, 1))x")
    for clients in [1, 8, 64] {
        let r = statusLoad(clients: clients, calls: quick ? 4000 : 64000, rate: nil, socket: daemon.socket)
        let p50 = percentile(r.latencies, 0.5)
        print("daemon.status clients=\(clients) calls=\(r.latencies.count) calls_per_s=\(fmt(r.perSecond, 0)) p50_us=\(fmt(p50, 0)) p99_us=\(fmt(percentile(r.latencies, 0.99), 0)) p50_vs_socketpair=\(fmt(p50 / echo, 1))x failed=\(r.failed)")
    }
    for rate in [10_000.0, 20_000.0] {
        let r = statusLoad(clients: 64, calls: Int(rate) * (quick ? 1 : 4), rate: rate, socket: daemon.socket)
        print("daemon.status clients=64 open_loop_target_per_s=\(fmt(rate, 0)) achieved_per_s=\(fmt(r.perSecond, 0)) p50_us=\(fmt(percentile(r.latencies, 0.5), 0)) p99_us=\(fmt(percentile(r.latencies, 0.99), 0)) p999_us=\(fmt(percentile(r.latencies, 0.999), 0)) failed=\(r.failed)")
    }
}
let after = daemon.memory()
if soak == nil { print("rss_idle_kb=\(idle.rss) peak_rss_idle_kb=\(idle.hwm) rss_after_load_kb=\(after.rss) peak_rss_after_load_kb=\(after.hwm)") }

// MARK: 3. face.verify latency, image mode, warm daemon (request to result)
if wanted("face") { do {
    let client = try BiometricClient(socketPath: daemon.socket)
    _ = try client.call(Method.faceEnroll, FaceEnrollParams(user: "bench", camera: "replay0", frames: 2, countdownS: 0, qualityThreshold: 0),
                        as: FaceEnrollResult.self)
    var times: [Double] = []
    var inside: [Double] = []
    for _ in 0..<(quick ? 5 : 30) {
        let t = now()
        let r = try client.call(Method.faceVerify, FaceVerifyParams(user: "bench", camera: "replay0", mode: .image, qualityThreshold: 0),
                                as: FaceVerifyResult.self)
        times.append((now() - t) * 1000)
        inside.append(Double(r.durationMs))
        if !r.match { print("warning: no match (score \(r.score))") }
    }
    print("face.verify image mode: p50=\(fmt(percentile(times, 0.5), 1)) ms p99=\(fmt(percentile(times, 0.99), 1)) ms (daemon-side duration p50 \(fmt(percentile(inside, 0.5), 1)) ms; includes opening the camera and waiting for its next frame at 15 fps)")
    let loaded = daemon.memory()
    print("rss_with_face_models_kb=\(loaded.rss) peak_kb=\(loaded.hwm)")
} catch {
    print("face.verify: skipped (\(error))")
} }

// MARK: 4. The auth layer: Argon2id per PIN check, key.sign without the biometric step
if wanted("auth") { do {
    let n = quick ? 5 : 20
    // In process: the hash alone at the shipped parameters, and SHA-256 of the same PIN as the floor.
    let hasher = PINHasher()
    let stored = try hasher.hash("4711")
    var argon: [Double] = []
    for _ in 0..<n {
        let t = now()
        _ = try PINHasher.verify("4711", against: stored)
        argon.append((now() - t) * 1000)
    }
    print("argon2id_verify_ms (\(hasher.parameters)) p50=\(fmt(percentile(argon, 0.5), 1)) min=\(fmt(argon.min()!, 1)) max=\(fmt(argon.max()!, 1)) (n=\(n))")
    // Through the socket: pin.verify (serialised Argon2id + the stored count) vs daemon.status.
    let client = try BiometricClient(socketPath: daemon.socket)
    _ = try client.call(Method.pinSet, PINSetParams(user: "bench-pin", pin: "4711"), as: PINResult.self)
    var pin: [Double] = []
    for _ in 0..<n {
        let t = now()
        let r = try client.call(Method.pinVerify, PINVerifyParams(user: "bench-pin", pin: "4711"), as: PINResult.self)
        pin.append((now() - t) * 1000)
        if !r.ok { print("warning: PIN refused") }
    }
    let status = statusRoundTripMicros(200, socket: daemon.socket)
    print("pin.verify_ms p50=\(fmt(percentile(pin, 0.5), 1)) p99=\(fmt(percentile(pin, 0.99), 1)); daemon.status_us p50=\(fmt(status, 0)); ratio=\(fmt(percentile(pin, 0.5) * 1000 / status, 0))x")
    // key.sign with policy "none": ECDSA P-256 + the counter's durable write, no factor.
    let key = try client.call(Method.keyRegister, KeyRegisterParams(user: "bench-key", appID: "https://bench.example", aaid: "4242#0001"),
                              as: KeyInfo.self)
    _ = try client.call(Method.authPolicySet, PolicySetParams(user: "bench-key", mode: PolicyMode.none), as: PolicyResult.self)
    var sign: [Double] = []
    for _ in 0..<(quick ? 20 : 200) {
        let t = now()
        let r = try client.call(Method.keySign, KeySignParams(user: "bench-key", keyHandle: key.keyHandle, challenge: "Y2hhbGxlbmdl"),
                                as: KeySignResult.self)
        sign.append((now() - t) * 1000)
        if !r.ok { print("warning: not signed") }
    }
    print("key.sign_ms (no factor: ECDSA + counter fsync) p50=\(fmt(percentile(sign, 0.5), 2)) p99=\(fmt(percentile(sign, 0.99), 2)); ratio to daemon.status=\(fmt(percentile(sign, 0.5) * 1000 / status, 1))x")
} catch {
    print("auth: failed (\(error))")
} }

// MARK: 5. Where the megabytes go: a finger-only daemon, and one with every model after 1,000 verifies

/// The builds measured: this one, and --baseline's.
let builds: [(label: String, binary: String)] = [("this build", binDir + "/biometricd")]
    + (baselineDir.map { [("baseline", $0 + "/biometricd")] } ?? [])

func mib(_ kb: Int) -> String { fmt(Double(kb) / 1024, 1) + " MiB" }

/// A few FVC prints, extracted through finger.extract: the finger extractor (and with it the
/// learned minutiae network, leader_cv46.onnx, when installed) loads at the first finger call, not
/// at start, so "every model loaded" needs finger calls.
func extractPrints(_ client: BiometricClient, count: Int = 8) throws -> Int {
    let folder = repo + "/../shared/data/fingers/fvc2002_db2_b/images"
    let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasSuffix(".tif") }.sorted().prefix(count)
    var extracted = 0
    for name in names {
        guard let data = FileManager.default.contents(atPath: folder + "/" + name) else { continue }
        if (try? client.call(Method.fingerExtract, FingerExtractParams(image: data.base64EncodedString(), dpi: 569), as: FingerExtractResult.self)) != nil {
            extracted += 1
        }
    }
    return extracted
}

if wanted("memory") { do {
    let verifies = verifyCount ?? (quick ? 50 : 1000)
    var results: [String: (lean: Int, leanUsed: Int, leanIdle: Int, full: Int, peak: Int, idle: Int, faceOnly: Int)] = [:]
    for build in builds {
        let fingerOnly = try Daemon(notify: nil, extra: ["--set", "modalities=finger"], binary: build.binary)
        fingerOnly.waitForSocket()
        settle(fingerOnly)
        let lean = fingerOnly.memory()
        let leanLibs = fingerOnly.libraries()
        print("[\(build.label)] rss_idle_finger_only_kb=\(lean.rss) (\(mib(lean.rss))): \(leanLibs.count) shared libraries mapped\(leanLibs.heavy.isEmpty ? "" : ", among them " + leanLibs.heavy.joined(separator: " "))")
        let leanExtracted = try extractPrints(try BiometricClient(socketPath: fingerOnly.socket))
        let leanUsed = fingerOnly.memory()
        print("[\(build.label)] finger only, after \(leanExtracted) finger.extract (the finger models loaded): rss_kb=\(leanUsed.rss) (\(mib(leanUsed.rss))) peak_kb=\(leanUsed.hwm) (\(mib(leanUsed.hwm)))")
        // The daemon frees the learned extractor's networks after 30 s without finger work
        // (FingerService.idleReleaseSeconds): what a daemon between logins holds.
        Thread.sleep(forTimeInterval: 35)
        let leanIdle = fingerOnly.memory()
        fingerOnly.stop()
        print("[\(build.label)] finger only, 35 s after the last finger.extract: rss_kb=\(leanIdle.rss) (\(mib(leanIdle.rss)))")
        let full = try Daemon(notify: nil, binary: build.binary)
        full.waitForSocket()
        settle(full)
        let idle = full.memory()
        print("[\(build.label)] rss_idle_face_models_loaded_kb=\(idle.rss) (\(mib(idle.rss))); the face models and their first engine: \((idle.rss - lean.rss) / 1024) MiB")
        let client = try BiometricClient(socketPath: full.socket)
        _ = try client.call(Method.faceEnroll, FaceEnrollParams(user: "mem", camera: "replay0", frames: 2, countdownS: 0, qualityThreshold: 0),
                            as: FaceEnrollResult.self)
        var matched = 0
        let t0 = now()
        for _ in 0..<verifies {
            let r = try client.call(Method.faceVerify, FaceVerifyParams(user: "mem", camera: "replay0", mode: .image, qualityThreshold: 0),
                                    as: FaceVerifyResult.self)
            if r.match { matched += 1 }
        }
        let faceOnly = full.memory()
        print("[\(build.label)] after enrolment and \(verifies) face.verify (\(matched) matched, \(fmt((now() - t0) / Double(verifies) * 1000, 1)) ms each): rss_kb=\(faceOnly.rss) (\(mib(faceOnly.rss))) peak_kb=\(faceOnly.hwm) (\(mib(faceOnly.hwm)))")
        let extracted = try extractPrints(client)
        let used = full.memory()
        let libs = full.libraries()
        full.stop()
        print("[\(build.label)] then \(extracted) finger.extract (every face and finger model loaded): rss_kb=\(used.rss) (\(mib(used.rss))) peak_kb=\(used.hwm) (\(mib(used.hwm))); \(libs.count) shared libraries\(libs.heavy.isEmpty ? ", no GDAL/poppler/FFmpeg/GStreamer" : ": " + libs.heavy.joined(separator: " "))")
        results[build.label] = (lean.rss, leanUsed.rss, leanIdle.rss, used.rss, used.hwm, idle.rss, faceOnly.rss)
    }
    if let a = results["this build"] {
        print("memory: every face and finger model loaded, after enrolment, \(verifies) verifies and the finger extractions: \(mib(a.full)) (peak \(mib(a.peak))), limit 180 MiB: \(a.full <= 180 * 1024 ? "met" : "NOT met"); finger only: idle \(mib(a.lean)), right after the extractions \(mib(a.leanUsed)), 35 s later \(mib(a.leanIdle)); limit 70 MiB: idle \(a.lean <= 70 * 1024 ? "met" : "NOT met"), right after \(a.leanUsed <= 70 * 1024 ? "met" : "NOT met"), 35 s later \(a.leanIdle <= 70 * 1024 ? "met" : "NOT met")")
        if let b = results["baseline"] {
            print("memory vs baseline (same run): every model \(fmt(Double(a.full) / Double(b.full), 2))x (\(mib(b.full)) before), peak \(fmt(Double(a.peak) / Double(b.peak), 2))x (\(mib(b.peak)) before), after the face verifies \(fmt(Double(a.faceOnly) / Double(b.faceOnly), 2))x (\(mib(b.faceOnly)) before), idle with face models \(fmt(Double(a.idle) / Double(b.idle), 2))x (\(mib(b.idle)) before), finger only after extractions \(fmt(Double(a.leanUsed) / Double(b.leanUsed), 2))x (\(mib(b.leanUsed)) before), finger only idle \(fmt(Double(a.lean) / Double(b.lean), 2))x (\(mib(b.lean)) before)")
        }
    }
} catch {
    print("memory: failed (\(error))")
} }

// MARK: Live faces: request to match with passive liveness, on replay cameras of the live clips

let clips = repo + "/../shared/data/video"

/// A folder holding one LFW photo (a still picture a replay camera repeats), made once.
func stillPhotoFolder() throws -> String {
    let folder = "/tmp/bench-still-\(getpid())"
    if !FileManager.default.fileExists(atPath: folder + "/photo.jpg") {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: folder + "/photo.jpg",
                                                   withDestinationPath: repo + "/../shared/data/faces/lfw/images/Tony_Blair/Tony_Blair_0018.jpg")
    }
    return folder
}

/// The outcome of one call: "match", "no match", or the error's reason (with its cue).
func outcome(_ body: () throws -> FaceVerifyResult) -> (String, FaceVerifyResult?) {
    do {
        let r = try body()
        return (r.match ? "match" : "no match", r)
    } catch ClientError.rpc(let e) {
        return ("\(e.code)" + (e.data?["cue"]?.stringValue.map { " " + $0 } ?? ""), nil)
    } catch {
        return ("\(error)", nil)
    }
}

if wanted("live") { do {
    let n = runCount ?? (quick ? 5 : 20)
    let cameras = ["replay:\(clips)/tran_live/video.mp4?fps=30&loop=true", "replay:\(clips)/grid_face_blink_a/video.mp4?fps=25&loop=true",
                   "replay:\(clips)/tran_replay_screen/video.mp4?fps=30&loop=true", "replay:\(try stillPhotoFolder())?fps=15&loop=true"]
    var daemons: [(label: String, daemon: Daemon, client: BiometricClient)] = []
    for build in builds {
        let d = try Daemon(notify: nil, binary: build.binary, cameras: cameras)
        d.waitForSocket()
        settle(d)
        let c = try BiometricClient(socketPath: d.socket)
        for (user, camera) in [("tran", "replay0"), ("grid", "replay1"), ("tony", "replay3")] {
            _ = try c.call(Method.faceEnroll, FaceEnrollParams(user: user, camera: camera, frames: 2, countdownS: 0, qualityThreshold: 20),
                           as: FaceEnrollResult.self)
        }
        daemons.append((build.label, d, c))
    }
    print("live faces: face.verify, the default liveness mode (passive), quality_threshold 20, \(n) calls per clip and build, builds alternating")
    var times: [String: [String: [Double]]] = [:]
    var outcomes: [String: [String: [String: Int]]] = [:]
    let cases = [("tran_live", "tran", "replay0"), ("grid_face_blink_a", "grid", "replay1"),
                 ("tran_replay_screen (the live clip replayed on a screen)", "tran", "replay2"), ("a still photo (Tony_Blair_0018 repeated)", "tony", "replay3")]
    for _ in 0..<n {
        for (name, user, camera) in cases {
            for d in daemons {
                let t = now()
                let (what, _) = outcome { try d.client.call(Method.faceVerify, FaceVerifyParams(user: user, camera: camera, qualityThreshold: 20, timeoutMs: 10000), as: FaceVerifyResult.self) }
                let ms = (now() - t) * 1000
                // The refused attempts would lock the user out after five: cleared as an admin would.
                if what != "match" { _ = try? d.client.callRaw(Method.authLockoutClear, params: LockoutClearParams(user: user)) }
                outcomes[d.label, default: [:]][name, default: [:]][what, default: 0] += 1
                if what == "match" { times[d.label, default: [:]][name, default: []].append(ms) }
            }
        }
    }
    for d in daemons {
        for (name, _, _) in cases {
            let o = (outcomes[d.label]?[name] ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
            let t = times[d.label]?[name] ?? []
            print("[\(d.label)] \(name): \(o)\(t.isEmpty ? "" : "; request to match p50 \(fmt(percentile(t, 0.5), 0)) ms, p95 \(fmt(percentile(t, 0.95), 0)) ms")")
        }
        let live = ["tran_live", "grid_face_blink_a"].flatMap { times[d.label]?[$0] ?? [] }
        if !live.isEmpty { print("[\(d.label)] over the live clips: p50 \(fmt(percentile(live, 0.5), 0)) ms, p95 \(fmt(percentile(live, 0.95), 0)) ms (n=\(live.count))") }
    }
    if daemons.count == 2 {
        let a = ["tran_live", "grid_face_blink_a"].flatMap { times["this build"]?[$0] ?? [] }
        let b = ["tran_live", "grid_face_blink_a"].flatMap { times["baseline"]?[$0] ?? [] }
        if !a.isEmpty, !b.isEmpty {
            print("live vs baseline (same run): p50 \(fmt(percentile(a, 0.5) / percentile(b, 0.5), 2))x, p95 \(fmt(percentile(a, 0.95) / percentile(b, 0.95), 2))x")
        }
    }
    for d in daemons { d.daemon.stop() }
} catch {
    print("live: failed (\(error))")
} }

// MARK: LFW through the daemon's API: face.extract + face.match over the socket

/// 10-fold accuracy of `scored` (per fold: (score, same person)): the threshold that is best on the
/// nine other folds, applied to the tenth; mean and standard deviation over the folds.
func tenFold(_ scored: [[(Double, Bool)]]) -> (mean: Double, sd: Double) {
    var accuracies: [Double] = []
    for k in scored.indices {
        let train = scored.enumerated().filter { $0.offset != k }.flatMap(\.element)
        let values = Array(Set(train.map(\.0))).sorted()
        var best = (t: 0.0, acc: -1.0)
        // Thresholds between consecutive distinct scores (a score at or above matches).
        for i in 0...values.count {
            let t = i == 0 ? values[0] - 1 : i == values.count ? values[i - 1] + 1 : (values[i - 1] + values[i]) / 2
            let acc = Double(train.filter { ($0.0 >= t) == $0.1 }.count) / Double(train.count)
            if acc > best.acc { best = (t, acc) }
        }
        accuracies.append(Double(scored[k].filter { ($0.0 >= best.t) == $0.1 }.count) / Double(scored[k].count))
    }
    let mean = accuracies.reduce(0, +) / Double(accuracies.count)
    let sd = (accuracies.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(accuracies.count)).squareRoot()
    return (mean, sd)
}

/// What the LFW section needs of face.extract's result. Its own type, not FaceExtractResult: a
/// build from before issue 37 (--baseline) sends neither `subject` nor `faces_seen`.
struct ExtractedTemplate: Decodable {
    var template: String
    var facesSeen: Int?
    var subject: String?
    enum CodingKeys: String, CodingKey {
        case template, subject
        case facesSeen = "faces_seen"
    }
}

if only == "lfw" && soak == nil { do {
    let lfwDir = repo + "/../shared/data/faces/lfw"
    let text = try String(contentsOfFile: lfwDir + "/pairs.txt", encoding: .utf8)
    var lines = text.split(separator: "\n").map { $0.split(whereSeparator: { $0 == "\t" || $0 == " " }).map(String.init) }
    let header = lines.removeFirst()
    let folds = Int(header[0])!, per = Int(header[1])!
    func file(_ name: String, _ n: String) -> String { String(format: "%@/%@_%04d.jpg", name, name, Int(n)!) }
    var pairs: [[(a: String, b: String, same: Bool)]] = []
    var i = 0
    for _ in 0..<folds {
        var fold: [(a: String, b: String, same: Bool)] = []
        for _ in 0..<per { let l = lines[i]; i += 1; fold.append((file(l[0], l[1]), file(l[0], l[2]), true)) }
        for _ in 0..<per { let l = lines[i]; i += 1; fold.append((file(l[0], l[1]), file(l[2], l[3]), false)) }
        pairs.append(fold)
    }
    let images = Array(Set(pairs.flatMap { $0.flatMap { [$0.a, $0.b] } })).sorted()
    for build in builds {
        let d = try Daemon(notify: nil, binary: build.binary, cameras: [])
        d.waitForSocket()
        settle(d)
        let socket = d.socket
        // Phase 1: every image's template through face.extract, on two connections.
        final class Results: @unchecked Sendable {
            let lock = NSLock()
            var templates: [String: String] = [:]
            var refused: [String: String] = [:]
            var subjects: [String: Int] = [:]
            var scores: [String: Double] = [:]
        }
        let results = Results()
        let t0 = now()
        let group = DispatchGroup()
        for k in 0..<2 {
            group.enter()
            Thread {
                defer { group.leave() }
                guard let client = try? BiometricClient(socketPath: socket) else { return }
                for (j, name) in images.enumerated() where j % 2 == k {
                    guard let data = FileManager.default.contents(atPath: lfwDir + "/images/" + name) else { continue }
                    do {
                        let r = try client.call(Method.faceExtract, FaceExtractParams(image: data.base64EncodedString()), as: ExtractedTemplate.self)
                        results.lock.lock()
                        results.templates[name] = r.template
                        results.subjects["\(r.subject ?? "unsaid") of \(r.facesSeen.map(String.init) ?? "?")", default: 0] += 1
                        results.lock.unlock()
                    } catch {
                        results.lock.lock(); results.refused[name] = "\(error)"; results.lock.unlock()
                    }
                }
            }.start()
        }
        group.wait()
        print("[\(build.label)] face.extract of the \(images.count) LFW images named by pairs.txt: \(results.templates.count) templates, \(results.refused.count) refused, \(fmt(now() - t0, 0)) s; faces: \(results.subjects.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", "))")
        for (name, why) in results.refused.sorted(by: { $0.key < $1.key }).prefix(5) { print("    refused \(name): \(why)") }
        // Phase 2: face.match of every pair, (a) stored template against stored template, (b) the
        // shipped pairing: a stored template (reference) against the other image as a live probe.
        for variant in ["template vs template", "template vs image (probe embedded as a live frame)"] {
            let t1 = now()
            let flat = pairs.flatMap { $0 }
            let scores = Results()
            let g = DispatchGroup()
            for k in 0..<2 {
                g.enter()
                Thread {
                    defer { g.leave() }
                    guard let client = try? BiometricClient(socketPath: socket) else { return }
                    for (j, p) in flat.enumerated() where j % 2 == k {
                        guard let reference = results.templates[p.a] else { continue }
                        let probe: String? = variant.hasPrefix("template vs template") ? results.templates[p.b]
                            : FileManager.default.contents(atPath: lfwDir + "/images/" + p.b)?.base64EncodedString()
                        guard let probe, let r = try? client.call(Method.faceMatch, FaceMatchParams(probe: probe, reference: reference), as: MatchResult.self)
                        else { continue }
                        scores.lock.lock(); scores.scores["\(j)"] = r.score; scores.lock.unlock()
                    }
                }.start()
            }
            g.wait()
            var index = 0
            var missing = 0
            let scored: [[(Double, Bool)]] = pairs.map { fold in
                fold.map { p in
                    defer { index += 1 }
                    guard let score = scores.scores["\(index)"] else { missing += 1; return (-1, p.same) }  // counted as an error
                    return (score, p.same)
                }
            }
            let acc = tenFold(scored)
            print("[\(build.label)] LFW 10-fold through face.extract + face.match, \(variant): \(fmt(acc.mean * 100, 2)) % ± \(fmt(acc.sd * 100, 2)) over \(flat.count) pairs, \(missing) without a score (counted as errors); \(fmt(now() - t1, 0)) s")
        }
        d.stop()
    }
} catch {
    print("lfw: failed (\(error))")
} }

// MARK: The first login after boot: socket activation to the first live match

/// Drops a file's pages from the page cache (those not mapped by a running process): the model
/// files as they are after a boot.
func evict(_ path: String) {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return }
    _ = posix_fadvise(fd, 0, 0, Int32(POSIX_FADV_DONTNEED))
    close(fd)
}

if wanted("first-login") { do {
    let runs = runCount ?? (quick ? 2 : 5)
    let cold = !arguments.contains("--warm")
    let clip = "replay:\(clips)/tran_live/video.mp4?fps=30&loop=true"
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-socket-activate") else { fail("first-login needs systemd-socket-activate (package systemd)") }
    print("first login: a daemon that has not run yet, exec'd by systemd-socket-activate at the first connection, to the first live match (face.verify, passive liveness, quality_threshold 20) on a replay camera of tran_live; \(cold ? "model files evicted from the page cache before each run" : "page cache warm")")
    // One enrolled store per build, made by a daemon that is then stopped.
    var roots: [String: String] = [:]
    for build in builds {
        let d = try Daemon(notify: nil, binary: build.binary, cameras: [clip])
        d.waitForSocket()
        let c = try BiometricClient(socketPath: d.socket)
        _ = try c.call(Method.faceEnroll, FaceEnrollParams(user: "tran", camera: "replay0", frames: 2, countdownS: 0, qualityThreshold: 20),
                       as: FaceEnrollResult.self)
        d.stop()
        d.keep = true
        roots[build.label] = d.root
    }
    let modelFiles = ((try? FileManager.default.contentsOfDirectory(atPath: repo + "/models")) ?? []).map { repo + "/models/" + $0 }
    var totals: [String: [Double]] = [:]
    for run in 0..<runs {
        for build in builds {
            if cold { modelFiles.forEach(evict) }
            let root = roots[build.label]!
            let socket = root + "/activated.sock"
            unlink(socket)
            let log = root + "/first-login-\(run).log"
            let notify = NotifySocket()
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/systemd-socket-activate")
            // systemd-socket-activate passes on no environment but LISTEN_* and what -E names.
            p.arguments = ["-l", socket, "-E", "NOTIFY_SOCKET=" + notify.path, "--", build.binary, "--socket", socket, "--state-dir", root + "/state", "--models", repo + "/models",
                           "--camera", clip, "--log-level", "info"]
            var env = ProcessInfo.processInfo.environment
            env["NOTIFY_SOCKET"] = notify.path
            p.environment = env
            FileManager.default.createFile(atPath: log, contents: nil)
            p.standardError = FileHandle(forWritingAtPath: log)
            p.standardOutput = FileHandle.nullDevice
            try p.run()
            while !FileManager.default.fileExists(atPath: socket) { usleep(2000) }
            usleep(50_000)  // systemd-socket-activate is listening (it binds, then prints)
            let t0 = now()
            let client = try BiometricClient(socketPath: socket)  // this connection starts the daemon
            let readyAt = Collected()
            let waiter = Thread { if notify.wait(for: "READY=1", timeout: 30) { readyAt.add([now()]) } }
            waiter.start()
            let (what, result) = outcome { try client.call(Method.faceVerify, FaceVerifyParams(user: "tran", camera: "replay0", qualityThreshold: 20, timeoutMs: 10000), as: FaceVerifyResult.self) }
            let total = (now() - t0) * 1000
            while readyAt.values.isEmpty && now() - t0 < 30 { usleep(1000) }
            let ready = readyAt.values.first ?? .nan
            p.terminate()
            for _ in 0..<2000 where p.isRunning { usleep(10_000) }
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            let loaded = text.split(separator: "\n").first { $0.contains("face models loaded in") }.map { String($0.suffix(from: $0.range(of: "face models loaded in")!.lowerBound)).prefix(160) } ?? "-"
            let split = text.split(separator: "\n").first { $0.contains("face.verify tran:") }.map { String($0.suffix(from: $0.range(of: "face.verify tran:")!.lowerBound)) } ?? "-"
            if what == "match" { totals[build.label, default: []].append(total) }
            print("[\(build.label)] run \(run + 1): \(what) \(fmt(total, 0)) ms from the connection that started the daemon (READY at \(fmt((ready - t0) * 1000, 0)) ms; daemon side \(result.map { "\($0.durationMs)" } ?? "-") ms)")
            print("    \(loaded)")
            print("    \(split)")
        }
    }
    for build in builds {
        let t = totals[build.label] ?? []
        guard !t.isEmpty else { continue }
        print("[\(build.label)] first login: median \(fmt(percentile(t, 0.5), 0)) ms, min \(fmt(t.min()!, 0)), max \(fmt(t.max()!, 0)) (n=\(t.count)); limit 800 ms")
    }
    if let a = totals["this build"], let b = totals["baseline"], !a.isEmpty, !b.isEmpty {
        print("first login vs baseline (same run): \(fmt(percentile(a, 0.5) / percentile(b, 0.5), 2))x")
    }
    for root in roots.values { try? FileManager.default.removeItem(atPath: root) }
} catch {
    print("first-login: failed (\(error))")
} }

// MARK: 6. A million sealed face templates: start, background load, identify (only with --only gallery)

if only == "gallery" && soak == nil { do {
    let n = count ?? 1_000_000
    let root = Daemon.newRoot()
    let state = root + "/state"
    try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
    var t0 = now()
    do {
        let store = try Store(directory: state, key: try TemplateKey.load(stateDirectory: state, credentialsDirectory: nil))
        var rng: UInt64 = 99
        func gaussian() -> Float {
            rng = rng &* 6364136223846793005 &+ 1442695040888963407
            let u1 = Float(rng >> 40) / Float(1 << 24) + 1e-7
            rng = rng &* 6364136223846793005 &+ 1442695040888963407
            return (-2 * log(u1)).squareRoot() * cos(2 * .pi * Float(rng >> 40) / Float(1 << 24))
        }
        let bases = (0..<1000).map { _ in (0..<128).map { _ in gaussian() } }
        var batch: [(user: String, modality: Modality, quality: Double, payload: Data)] = []
        for i in 0..<n {
            let v = bases[i % bases.count].map { $0 + 0.8 * gaussian() }
            batch.append(("user\(i)", .face, 60, FaceTemplate(embedding: v, quality: 60).data))
            if batch.count == 50_000 || i == n - 1 {
                try store.templates.add(batch)
                batch.removeAll(keepingCapacity: true)
            }
        }
        store.flush()
    }
    let size = ((try? FileManager.default.attributesOfItem(atPath: state + "/biometricd.sqlite")[.size]) as? Int) ?? 0
    print("gallery: \(n) sealed face templates written in \(fmt(now() - t0, 1)) s (\(size / 1_048_576) MiB on disk)")
    let notify = NotifySocket()
    t0 = now()
    let big = try Daemon(notify: notify, root: root)
    guard notify.wait(for: "READY=1", timeout: 60) else { fatalError("no READY=1") }
    let ready = now() - t0
    print("start_to_ready_ms with \(n) templates: \(fmt(ready * 1000, 1)) (the gallery loads after READY)")
    let client = try BiometricClient(socketPath: big.socket)
    var status: DaemonStatus = try client.call(Method.daemonStatus, as: DaemonStatus.self)
    print("  at READY: face_gallery \(status.faceGallery.map { "\($0.state) \($0.loaded)/\($0.total)" } ?? "-")")
    do {
        _ = try client.call(Method.faceIdentify, FaceIdentifyParams(camera: "replay0", mode: .image), as: FaceIdentifyResult.self)
        print("  identify while loading: answered (the load had already ended)")
    } catch {
        print("  identify while loading: \(error)")
    }
    var maxStatusUs = 0.0
    while status.faceGallery?.state != "ready" {
        usleep(200_000)
        let s0 = now()
        status = try client.call(Method.daemonStatus, as: DaemonStatus.self)
        maxStatusUs = max(maxStatusUs, (now() - s0) * 1e6)
        if now() - t0 > 600 { fatalError("gallery not loaded in 10 min") }
    }
    let loadedAt = now() - t0
    let mem = big.memory()
    print("  gallery ready \(fmt(loadedAt, 1)) s after start (\(fmt(Double(n) / loadedAt / 1000, 0)) k templates/s); daemon.status answered in ≤ \(fmt(maxStatusUs / 1000, 2)) ms while loading; rss_kb \(mem.rss)")
    var took: [Double] = []
    var inside: [Double] = []
    for _ in 0..<(quick ? 3 : 10) {
        let s0 = now()
        let r = try client.call(Method.faceIdentify, FaceIdentifyParams(camera: "replay0", mode: .image, qualityThreshold: 0),
                                as: FaceIdentifyResult.self)
        took.append((now() - s0) * 1000)
        inside.append(Double(r.durationMs))
    }
    print("  face.identify image mode over \(n): p50 \(fmt(percentile(took, 0.5), 1)) ms (daemon-side \(fmt(percentile(inside, 0.5), 1)) ms; includes waiting for a frame and the embedding)")
    big.stop()
} catch {
    print("gallery: failed (\(error))")
} }

// MARK: 5. Soak runs (only with --soak): RSS must stay flat

/// RSS samples every 10 % of a run; drift is measured from the first sample (after warm-up).
struct RSSTrack {
    var samples: [Int] = []
    mutating func sample(_ d: Daemon) { samples.append(d.memory().rss) }
    func report(_ label: String) {
        guard let first = samples.first, let last = samples.last else { return }
        let drift = Double(last - first) / Double(first) * 100
        let spread = Double(samples.max()! - samples.min()!) / Double(first) * 100
        print("\(label): rss_kb after warm-up \(first), end \(last), min \(samples.min()!), max \(samples.max()!); drift \(fmt(drift, 1)) %, spread \(fmt(spread, 1)) % (limit ±5 %): \(abs(drift) <= 5 ? "flat" : "GROWS")")
        print("    samples_kb \(samples.map(String.init).joined(separator: " "))")
    }
}

/// Waits until the daemon's RSS holds still for 2 s (the face models load in the background
/// after start), so that a soak measures the run, not the start.
func settle(_ d: Daemon) {
    var last = d.memory().rss
    var still = 0.0
    let t0 = now()
    while still < 2, now() - t0 < 60 {
        usleep(250_000)
        let rss = d.memory().rss
        still = abs(rss - last) * 200 <= last ? still + 0.25 : 0
        last = rss
    }
    print("settled at rss_kb \(last) after \(fmt(now() - t0, 1)) s")
}

if soak == "verify" { do {
    let n = count ?? 10_000
    let client = try BiometricClient(socketPath: daemon.socket)
    _ = try client.call(Method.faceEnroll, FaceEnrollParams(user: "soak", camera: "replay0", frames: 2, countdownS: 0, qualityThreshold: 0),
                        as: FaceEnrollResult.self)
    var track = RSSTrack()
    var matched = 0
    let warm = max(1, n / 10)
    let t0 = now()
    for i in 0..<(warm + n) {
        let r = try client.call(Method.faceVerify, FaceVerifyParams(user: "soak", camera: "replay0", mode: .image, qualityThreshold: 0),
                                as: FaceVerifyResult.self)
        if r.match { matched += 1 }
        if i >= warm, (i - warm) % max(1, n / 10) == 0 { track.sample(daemon) }
    }
    track.sample(daemon)
    print("soak verify: \(n) face.verify sessions after \(warm) warm-up ones, \(matched) matched, \(fmt((now() - t0) / Double(warm + n) * 1000, 1)) ms each")
    track.report("soak verify")
} catch {
    print("soak verify: failed (\(error))")
    exit(1)
} }

if soak == "fuzz" {
    let n = count ?? 1_000_000
    let seedLines: [String] = [
        #"{"jsonrpc":"2.0","id":1,"method":"daemon.status"}"#,
        #"{"jsonrpc":"2.0","id":"x","method":"camera.list","params":{}}"#,
        #"{"jsonrpc":"2.0","id":2,"method":"user.get","params":{"user":"ann"}}"#,
        #"{"jsonrpc":"2.0","id":3,"method":"face.verify","params":{"user":"ann","camera":"replay0","timeout_ms":-5}}"#,
        #"{"jsonrpc":"2.0","id":4,"method":"finger.match","params":{"probe":"AAAA","reference":"=="}}"#,
        #"{"jsonrpc":"2.0","id":5,"method":"pin.verify","params":{"user":"ann","pin":"12a"}}"#,
        #"{"jsonrpc":"2.0","id":6,"method":"session.cancel","params":{"request":99}}"#,
        #"{"jsonrpc":"2.0","id":7,"method":"face.match","params":{"probe":"@$%","reference":"AAAA"}}"#,
        #"[{"jsonrpc":"2.0","id":8,"method":"daemon.status"},{"jsonrpc":"2.0","method":"nope"},7]"#,
        #"{"jsonrpc":"2.0","id":9,"method":"auth.status","params":{"user":"bad\u0001name"}}"#,
    ]
    let seeds = seedLines.map { Array($0.utf8) }
    let connections = 8
    let perConnection = n / connections
    let done = Collected()
    let group = DispatchGroup()
    var track = RSSTrack()
    let progress = Collected()
    let t0 = now()
    for c in 0..<connections {
        group.enter()
        let socketPath = daemon.socket
        let thread = Thread {
            defer { group.leave() }
            var state: UInt64 = 0x9E37_79B9_7F4A_7C15 &+ UInt64(c) &* 0x1234_5678_9ABC
            func next() -> UInt64 {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                return state
            }
            guard let raw = RawStatusClient(socket: socketPath) else { return }
            var out: [UInt8] = []
            var sent = 0
            while sent < perConnection {
                // A batch of 64 fuzzed lines, then a sync call whose reply ends the batch.
                out.removeAll(keepingCapacity: true)
                for _ in 0..<64 {
                    var line: [UInt8]
                    switch next() % 16 {
                    case 0: line = (0..<Int(next() % 200)).map { _ in UInt8(truncatingIfNeeded: next()) }
                    case 1: line = Array(repeating: UInt8(ascii: "["), count: Int(next() % 5000))
                    case 2: line = Array(#"{"jsonrpc":"2.0","id":1,"method":"user.get","params":{"user":""#.utf8)
                        + Array(repeating: UInt8(ascii: "a"), count: Int(next() % 65536)) + Array(#""}}"#.utf8)
                    default:
                        line = seeds[Int(next() % UInt64(seeds.count))]
                        for _ in 0..<Int(next() % 4) where !line.isEmpty {
                            let at = Int(next() % UInt64(line.count))
                            switch next() % 3 {
                            case 0: line[at] = UInt8(truncatingIfNeeded: next())
                            case 1: line.remove(at: at)
                            default: line.insert(UInt8(truncatingIfNeeded: next()), at: at)
                            }
                        }
                    }
                    for k in line.indices where line[k] == 10 { line[k] = 32 }
                    out += line
                    out.append(10)
                }
                sent += 64
                guard write(raw.fd, out, out.count) == out.count else { return }
                guard raw.drainUntilSync() else { return }
                progress.add([64])
            }
            done.add([Double(sent)])
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    // Sample RSS every 10 % of the lines sent.
    var nextMark = 0.1
    while group.wait(timeout: DispatchTime.now() + 0.2) == .timedOut {
        let sent = progress.values.reduce(0, +)
        if sent >= Double(n) * nextMark {
            track.sample(daemon)
            nextMark += 0.1
        }
    }
    track.sample(daemon)
    let total = Int(done.values.reduce(0, +))
    let alive = RawStatusClient(socket: daemon.socket)?.call() == true
    print("soak fuzz: \(total) fuzzed lines on \(connections) connections in \(fmt(now() - t0, 1)) s (\(fmt(Double(total) / (now() - t0), 0)) lines/s); daemon \(alive ? "still answers daemon.status" : "DOES NOT ANSWER")")
    track.report("soak fuzz")
    if !alive || total < n - connections * 64 { exit(1) }
}

// Globals are not deinitialised at exit: stop the daemon explicitly.
daemon.stop()
