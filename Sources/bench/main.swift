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
    usage: biometricd-bench [--quick] [--only SECTION]
           biometricd-bench --soak verify|fuzz [--count N]
      Runs the release daemon next to this binary (swift build -c release) on a replay camera of
      ../shared/data and prints one line per measurement, with a baseline from the same run.
      --quick         fewer repetitions (a smoke run)
      --only SECTION  one section: start, rpc, face, auth, memory, gallery
                      (gallery: N sealed face templates [1000000, --count], start, load, identify)
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
let only = value(after: "--only", allowed: ["start", "rpc", "face", "auth", "memory", "gallery"])
let soak = value(after: "--soak", allowed: ["verify", "fuzz"])
let count = value(after: "--count", allowed: nil).map { text -> Int in
    guard let n = Int(text), n > 0 else { fail("--count takes a positive number") }
    return n
}
for (i, a) in arguments.enumerated() where !["--quick", "--only", "--soak", "--count"].contains(a) {
    if i == 0 || !["--only", "--soak", "--count"].contains(arguments[i - 1]) { fail("unknown argument '\(a)'") }
}
@MainActor func wanted(_ section: String) -> Bool { soak == nil && (only == nil || only == section) }

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
final class NotifySocket {
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
    init(notify: NotifySocket?, root existing: String? = nil, extra: [String] = []) throws {
        root = existing ?? Self.newRoot()
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        socket = root + "/s.sock"
        process.executableURL = URL(fileURLWithPath: binDir + "/biometricd")
        process.arguments = ["--socket", socket, "--state-dir", root + "/state", "--models", repo + "/models",
                             "--camera", camera, "--log-level", "warning"] + extra
        var env = ProcessInfo.processInfo.environment
        if let notify { env["NOTIFY_SOCKET"] = notify.path }
        process.environment = env
        process.standardError = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        try process.run()
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
    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: root)
    }
}

// MARK: 1. Start to READY
print("# biometricd-bench (\(quick ? "quick" : "full")), \(ProcessInfo.processInfo.activeProcessorCount) cores")
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

// MARK: 5. Where the megabytes go: a daemon without face, and one with the face models loaded

if wanted("memory") { do {
    let fingerOnly = try Daemon(notify: nil, extra: ["--set", "modalities=finger"])
    fingerOnly.waitForSocket()
    settle(fingerOnly)
    let lean = fingerOnly.memory()
    fingerOnly.stop()
    print("rss_idle_finger_only_kb=\(lean.rss) (no face models: the libraries, Swift runtime and the daemon)")
    let loaded = daemon.memory()
    print("rss_idle_face_models_loaded_kb=\(loaded.rss); the face models (no engine yet): \((loaded.rss - lean.rss) / 1024) MiB")
    // One verify creates the analysis engines (each with its own copy of the ResNet).
    let client = try BiometricClient(socketPath: daemon.socket)
    _ = try client.call(Method.faceEnroll, FaceEnrollParams(user: "mem", camera: "replay0", frames: 2, countdownS: 0, qualityThreshold: 0),
                        as: FaceEnrollResult.self)
    for _ in 0..<4 {
        _ = try client.call(Method.faceVerify, FaceVerifyParams(user: "mem", camera: "replay0", mode: .image, qualityThreshold: 0),
                            as: FaceVerifyResult.self)
    }
    let used = daemon.memory()
    print("rss_after_face_sessions_kb=\(used.rss) peak_kb=\(used.hwm) (limit 250 MiB = \(250 * 1024) kB)")
} catch {
    print("memory: failed (\(error))")
} }

// MARK: 6. A million sealed face templates: start, background load, identify (only with --only gallery)

if only == "gallery" && soak == nil { do {
    let n = count ?? 1_000_000
    let root = Daemon.newRoot()
    let state = root + "/state"
    try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
    var t0 = now()
    do {
        let store = try TemplateStore(directory: state, key: try TemplateKey.load(stateDirectory: state, credentialsDirectory: nil))
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
                try store.addTemplates(batch)
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
