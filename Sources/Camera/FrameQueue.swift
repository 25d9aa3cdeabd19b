import BiometricCore
import Synchronization

/// The bounded hand-off from a capture thread to analysis. When analysis falls behind, the
/// oldest frame is dropped: capture never waits, memory never grows, and analysis always works
/// on the freshest frames.
public final class FrameQueue: Sendable {
    private struct State {
        var frames: [Frame] = []
        var end: CameraError?
        var waiter: CheckedContinuation<Frame, any Error>?
        var canceled = false
        var dropped = 0
        var delivered = 0
    }
    private let state = Mutex(State())
    public let capacity: Int

    public init(capacity: Int = 3) {
        precondition(capacity > 0)
        self.capacity = capacity
    }

    /// Called by the producer. Never blocks.
    public func push(_ frame: Frame) {
        let waiter: CheckedContinuation<Frame, any Error>? = state.withLock { s in
            guard s.end == nil, !s.canceled else { return nil }
            if let w = s.waiter {
                s.waiter = nil
                s.delivered += 1
                return w
            }
            if s.frames.count == capacity {
                s.frames.removeFirst()
                s.dropped += 1
            }
            s.frames.append(frame)
            return nil
        }
        waiter?.resume(returning: frame)
    }

    /// Ends the stream: the consumer gets `error` once the queued frames are taken.
    public func finish(_ error: CameraError) {
        let waiter: CheckedContinuation<Frame, any Error>? = state.withLock { s in
            guard s.end == nil else { return nil }
            s.end = error
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(throwing: error)
    }

    /// The next frame; throws the stream's CameraError at its end, CancellationError on cancel.
    public func next() async throws -> Frame {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Frame, any Error>) in
                enum Outcome { case frame(Frame), error(any Error), wait }
                let outcome: Outcome = state.withLock { s in
                    if s.canceled { return .error(CancellationError()) }
                    if !s.frames.isEmpty {
                        s.delivered += 1
                        return .frame(s.frames.removeFirst())
                    }
                    if let end = s.end { return .error(end) }
                    s.waiter = c
                    return .wait
                }
                switch outcome {
                case .frame(let f): c.resume(returning: f)
                case .error(let e): c.resume(throwing: e)
                case .wait: break
                }
            }
        } onCancel: {
            let waiter = state.withLock { s in
                s.canceled = true
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    /// Frames dropped because the consumer was slower than the camera.
    public var droppedCount: Int { state.withLock { $0.dropped } }
    public var deliveredCount: Int { state.withLock { $0.delivered } }
}
