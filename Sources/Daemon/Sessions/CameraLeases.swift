import BiometricAuth
import BiometricCamera
import BiometricCore
import BiometricProtocol
import CSystemd
import Synchronization

/// The camera side of every call that uses one: a lease on the camera (one call at a time),
/// capture started and always stopped, the count of leases held, and a hard deadline that also
/// ends the call at once when the camera is lost.
final class CameraLeases: Sendable {
    let cameras: CameraRegistry
    /// Which runs may use a virtual camera, and what such a run proves (`refuse_virtual_cameras`).
    let virtualCameras: VirtualCameraRule
    private let active = Atomic<Int>(0)

    init(cameras: CameraRegistry, virtualCameras: VirtualCameraRule) {
        self.cameras = cameras
        self.virtualCameras = virtualCameras
    }

    /// Judges the camera a biometric run leased against what its method requires
    /// (`VirtualCameraRule`), records the trust on the call (`CallRun`), and refuses a virtual
    /// camera the method may not use (`TrustRefusal`) before capture starts.
    func judgeCamera(_ id: String, context: CallContext) throws(TrustRefusal) {
        guard let device = cameras.devices.first(where: { $0.id == id }) else {
            context.run.leased(nil)
            return
        }
        let camera = VirtualCameraRule.Camera(isVirtual: cameras.roles(of: device).isVirtual, isReplay: device is ReplayDevice,
                                              driver: device.description.driver)
        let trust = virtualCameras.decide(camera, requirement: context.security.requires.camera)
        context.run.leased(trust)
        if case .refused(let driver) = trust { throw .virtualCamera(driver: driver) }
    }

    /// Sessions holding a camera now.
    var activeCount: Int { active.load(ordering: .relaxed) }

    /// Runs `body` as a camera session: holds the lease, counts the session, always stops capture.
    /// `admit` sees the leased camera's id before capture starts, and may refuse (a camera locked
    /// for 1:N). With no `camera` named, `purpose` picks the modality's camera (face: an IR node
    /// first; finger: a colour one; or `face_camera=` / `finger_camera=`); `camera` overrides it.
    func withLease<T: Sendable>(
        _ camera: String?, purpose: CameraPurpose? = nil, request: CaptureRequest = CaptureRequest(),
        admit: (@Sendable (String) throws -> Void)? = nil,
        _ body: (CaptureStream, CameraLease) async throws -> T
    ) async throws -> T {
        let lease = try cameras.acquire(camera, for: purpose)
        defer { lease.release() }
        try admit?(lease.device.id)
        active.add(1, ordering: .relaxed)
        defer {
            // The last session out hands the frames' and the analysis's freed memory back to
            // the system (glibc keeps it otherwise): RSS between sessions stays at the idle level.
            if active.subtract(1, ordering: .relaxed).newValue == 0 { _ = csd_release_free_memory() }
        }
        let capture = try lease.start(request)
        do {
            let result = try await body(capture, lease)
            await capture.stop()
            return result
        } catch {
            await capture.stop()
            throw error
        }
    }

    /// Runs `pump` on a leased, capturing camera. The call fails with `timeout` at `limitMs`
    /// plus a margin (a hung analysis), or at once with the camera's error if it is lost.
    func run<T: Sendable>(
        _ camera: String?, purpose: CameraPurpose? = nil, request: CaptureRequest = CaptureRequest(), limitMs: Int, what: String,
        admit: (@Sendable (String) throws -> Void)? = nil,
        _ pump: @escaping @Sendable (CaptureStream, CameraLease) async throws -> T
    ) async throws -> T {
        try await withLease(camera, purpose: purpose, request: request, admit: admit) { capture, lease in
            try await withDeadline(milliseconds: limitMs + 3000, what, watching: capture) { try await pump(capture, lease) }
        }
    }
}

/// The camera a session leased, as `admit` saw it (for what is counted against that camera afterwards).
final class LeasedCamera: Sendable {
    private let id = Mutex<String?>(nil)
    func set(_ value: String) { id.withLock { $0 = value } }
    var value: String? { id.withLock { $0 } }
}

/// Milliseconds since `start` (monotonic nanoseconds).
func elapsedMilliseconds(since start: UInt64) -> Int {
    Int((monotonicNanoseconds() - start) / 1_000_000)
}

/// A call's hard deadline passed (a hung analysis): timeout (1007) at the edge.
struct Deadline: Error, Sendable, Equatable {
    var what: String
    var milliseconds: Int
}

/// Runs `operation`, failing with `Deadline` (timeout 1007) after `milliseconds`. With `camera`, a device
/// that fails meanwhile ends the call at once with its camera error: a lost camera is reported
/// as lost even while an analysis is still running or the deadline is near.
func withDeadline<T: Sendable>(milliseconds: Int, _ what: String, watching camera: CaptureStream? = nil,
                               _ operation: @escaping @Sendable () async throws -> T) async throws -> T
{
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(nanoseconds: UInt64(milliseconds) * 1_000_000)
            if let failure = camera?.endedWith { throw failure }
            throw Deadline(what: what, milliseconds: milliseconds)
        }
        if let camera {
            group.addTask {
                if let failure = await camera.failure() { throw failure }
                // Stopped normally: nothing to report; wait to be canceled with the others.
                while !Task.isCancelled { try await Task.sleep(nanoseconds: 1_000_000_000) }
                throw CancellationError()
            }
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}
