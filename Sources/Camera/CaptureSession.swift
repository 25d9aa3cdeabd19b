import Foundation
import Synchronization

/// A camera streaming for one session: a dedicated capture thread reads frames from the device
/// and pushes them into a bounded `FrameQueue`; analysis takes them from there on its own pool.
public final class CaptureSession: Sendable {
    public let cameraID: String
    public let frames: FrameQueue
    private let stopRequested = Atomic<Bool>(false)
    private let finished = Mutex<[CheckedContinuation<Void, Never>]?>([])

    /// A device that gives no frame for this long is treated as lost.
    static let stallTimeoutMs = 5000

    init(device: any CameraDevice, request: CaptureRequest, queueCapacity: Int) throws(CameraError) {
        cameraID = device.id
        frames = FrameQueue(capacity: queueCapacity)
        let source = try device.open(request)
        // The thread owns the source; only it touches it.
        let box = UncheckedBox(source)
        let thread = Thread { [self] in
            self.run(box.value)
        }
        thread.name = "capture-\(device.id)"
        thread.start()
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
                    frames.finish(.lost(cameraID, reason: "no frame for \(Self.stallTimeoutMs / 1000) s"))
                    return
                }
            } catch {
                frames.finish(error)
                return
            }
        }
        frames.finish(.lost(cameraID, reason: "capture stopped"))
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
