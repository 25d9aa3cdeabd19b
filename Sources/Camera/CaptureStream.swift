import Foundation
import Synchronization

/// A camera streaming for one call's lease: a dedicated capture thread reads frames from the device
/// and pushes them into a bounded `FrameQueue`; analysis takes them from there on its own pool.
public final class CaptureStream: Sendable {
    public let cameraID: String
    public let frames: FrameQueue
    private let stopRequested = Atomic<Bool>(false)
    private let finished = Mutex<[CheckedContinuation<Void, Never>]?>([])
    /// Why the stream ended on its own (device lost, I/O error), and who waits to hear of it.
    private let failureState = Mutex<FailureState>(FailureState())

    private struct FailureState {
        var error: CameraError?
        var ended = false
        var waiters: [Int: CheckedContinuation<CameraError?, Never>] = [:]
        var nextWaiter = 0
    }

    /// A device that gives no frame for this long is treated as lost.
    static let stallTimeoutMs = 5000

    init(device: any CameraDevice, request: CaptureRequest, queueCapacity: Int) throws(CameraError) {
        cameraID = device.id
        frames = FrameQueue(capacity: queueCapacity)
        let source = try device.open(request)
        // The thread owns the source; only it touches it.
        let box = UncheckedBox(source)
        CaptureThread.for(device.id).run { [self] in self.run(box.value) }
    }

    private func run(_ source: FrameSource) {
        defer {
            source.close()
            let waiters = finished.withLock { w in defer { w = nil }; return w ?? [] }
            waiters.forEach { $0.resume() }
        }
        var waitedMs = 0
        while !stopRequested.load(ordering: .relaxed) {
            do throws(CameraError) {
                let frame = try source.nextFrame(timeoutMs: 200)
                waitedMs = 0
                frames.push(frame)
            } catch .timeout {
                waitedMs += 200
                if waitedMs >= Self.stallTimeoutMs {
                    fail(.lost(cameraID, reason: "no frame for \(Self.stallTimeoutMs / 1000) s"))
                    return
                }
            } catch {
                fail(error)
                return
            }
        }
        frames.finish(.lost(cameraID, reason: "capture stopped"))
        endFailureWatch(nil)
    }

    private func fail(_ error: CameraError) {
        frames.finish(error)
        endFailureWatch(error)
    }

    private func endFailureWatch(_ error: CameraError?) {
        let waiters = failureState.withLock { s in
            s.ended = true
            s.error = error
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        waiters.forEach { $0.resume(returning: error) }
    }

    /// The failure the stream ended with, if it has ended on its own.
    public var endedWith: CameraError? { failureState.withLock { $0.error } }

    /// Waits until the device fails (lost, I/O error) and returns why; nil when capture was
    /// stopped normally or the waiting task was canceled. Sessions race this against their own
    /// work, so a lost camera is reported at once, even while a slow analysis is still running.
    public func failure() async -> CameraError? {
        let id = failureState.withLock { s -> Int in
            s.nextWaiter += 1
            return s.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<CameraError?, Never>) in
                let done: CameraError?? = failureState.withLock { s in
                    if s.ended { return .some(s.error) }
                    if Task.isCancelled { return .some(nil) }
                    s.waiters[id] = c
                    return .none
                }
                if let result = done { c.resume(returning: result) }
            }
        } onCancel: {
            let waiter = failureState.withLock { s in s.waiters.removeValue(forKey: id) }
            waiter?.resume(returning: nil)
        }
    }

    /// Stops capture and waits until the device is closed.
    public func stop() async {
        stopRequested.store(true, ordering: .relaxed)
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let done = finished.withLock { w -> Bool in
                guard w != nil else { return true }
                w!.append(c)
                return false
            }
            if done { c.resume() }
        }
    }
}

/// Moves a non-Sendable value to the one thread that will own it.
struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// One long-lived capture thread per camera, reused by its sessions (a lease makes them one at a
/// time). A thread per session leaked ~0.8 kB each: OpenCV's per-thread storage is not freed when
/// a thread exits (measured: 3,000 short-lived threads decoding a JPEG +2.4 MB, one thread doing
/// the same 3,000 decodes +64 kB). Not named through Foundation either: Thread.name leaks too.
final class CaptureThread: @unchecked Sendable {
    private static let all = Mutex<[String: CaptureThread]>([:])

    /// The thread of camera `id`, started on first use.
    static func `for`(_ id: String) -> CaptureThread {
        all.withLock { threads in
            if let t = threads[id] { return t }
            let t = CaptureThread()
            threads[id] = t
            return t
        }
    }

    // Guarded by `condition`.
    private let condition = NSCondition()
    private var jobs: [() -> Void] = []

    private init() {
        let thread = Thread { [self] in loop() }
        thread.start()
    }

    /// Runs `job` on this camera's thread, after any job already queued.
    func run(_ job: @escaping () -> Void) {
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func loop() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            condition.unlock()
            job()
        }
    }
}
