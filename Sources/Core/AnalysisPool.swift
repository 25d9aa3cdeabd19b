import Dispatch
import Synchronization

/// A bounded pool for frame analysis: a concurrent Dispatch queue whose width is limited by a
/// semaphore. Waiting for a job is cancellable: a canceled session gets `CancellationError` at
/// once instead of waiting seconds for native code that cannot be interrupted (that job runs to
/// its end in the background and its result is dropped; a job not yet started is skipped).
public final class AnalysisPool: Sendable {
    private let queue: DispatchQueue
    private let slots: DispatchSemaphore

    public init(label: String, threads: Int) {
        queue = DispatchQueue(label: label, qos: .userInitiated, attributes: .concurrent)
        slots = DispatchSemaphore(value: max(1, threads))
    }

    public func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        let pending = Mutex<CheckedContinuation<T, any Error>?>(nil)
        let canceled = Atomic<Bool>(false)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                pending.withLock { $0 = continuation }
                if Task.isCancelled {
                    canceled.store(true, ordering: .relaxed)
                    pending.withLock { p in defer { p = nil }; return p }?.resume(throwing: CancellationError())
                    return
                }
                queue.async { [slots] in
                    slots.wait()
                    defer { slots.signal() }
                    guard !canceled.load(ordering: .relaxed) else { return }
                    let result = Result { try work() }
                    pending.withLock { p in defer { p = nil }; return p }?.resume(with: result)
                }
            }
        } onCancel: {
            canceled.store(true, ordering: .relaxed)
            pending.withLock { p in defer { p = nil }; return p }?.resume(throwing: CancellationError())
        }
    }
}
