import Dispatch
import Foundation
import Logging
import Synchronization

/// All cameras the daemon may use, who holds which, and hot-plug.
///
/// Replay cameras are fixed. V4L2 cameras come from explicit specs (kept even while unplugged,
/// and picked up again when the node returns) or, with no specs, from every capture node in /dev.
public final class CameraRegistry: Sendable {
    public enum Change: Sendable {
        case added(CameraDescription)
        case removed(CameraDescription)
    }

    private struct State {
        var devices: [any CameraDevice] = []
        var busy: Set<String> = []
        var watchers: [UInt64: @Sendable (Change) -> Void] = [:]
        var nextWatcher: UInt64 = 0
    }

    private let state = Mutex(State())
    private let replays: [any CameraDevice]
    /// Explicit V4L2 paths; empty with auto-discovery.
    private let wantedV4L2: [String]
    /// The orientation each explicit V4L2 spec gives (`?rotate=…&mirror=…`).
    private let orientations: [String: CameraOrientation]
    private let autoDiscover: Bool
    private let logger: Logger
    private let rescanQueue = DispatchQueue(label: "biometricd.camera.rescan")
    private let monitor = Mutex<HotplugMonitor?>(nil)
    /// IR emitter entries, applied by each V4L2 stream as it starts (Docs/ir-emitters.md).
    public let emitters: IREmitterController
    /// The configured camera per modality (`face_camera=`, `finger_camera=`); absent: the default.
    public let choices: [CameraPurpose: CameraChoice]
    /// RGB/IR pairs the configuration declares (`camera_pair=`), for nodes sysfs cannot pair.
    public let pairs: [CameraPair]

    /// Validates every spec. A V4L2 path that exists but is no capture device, an unreadable
    /// replay, or a malformed spec is an error; a V4L2 path that is absent is waited for.
    /// `emitters` defaults to the packaged table plus /etc/biometricd/ir-emitters.d.
    public init(specs: [CameraSpec], logger: Logger, emitters: IREmitterController? = nil,
                choices: [CameraPurpose: CameraChoice] = [:], pairs: [CameraPair] = []) throws(CameraError) {
        self.logger = logger
        self.emitters = emitters ?? .installed(logger: logger)
        self.choices = choices
        self.pairs = pairs
        var replays: [any CameraDevice] = []
        var wanted: [String] = []
        var orientations: [String: CameraOrientation] = [:]
        for spec in specs {
            switch spec {
            case .replay:
                replays.append(try ReplayDevice(spec: spec, id: "replay\(replays.count)"))
            case .v4l2(let path, let orientation):
                orientations[path] = orientation
                do {
                    _ = try V4L2Device(path: path)
                } catch .notFound {
                    logger.warning("camera \(path) is not present yet; it will be used when it appears")
                }
                wanted.append(path)
            }
        }
        self.replays = replays
        self.wantedV4L2 = wanted
        self.orientations = orientations
        self.autoDiscover = specs.isEmpty
        let found = scan()
        state.withLock { $0.devices = replays + found }
    }

    /// Fixed devices, for tests of selection and roles.
    init(devices: [any CameraDevice], logger: Logger, emitters: IREmitterController, choices: [CameraPurpose: CameraChoice] = [:],
         pairs: [CameraPair] = []) {
        self.logger = logger
        self.emitters = emitters
        self.choices = choices
        self.pairs = pairs
        self.replays = devices
        self.wantedV4L2 = []
        self.orientations = [:]
        self.autoDiscover = false
        state.withLock { $0.devices = devices }
    }

    private func scan() -> [any CameraDevice] {
        let found = autoDiscover ? discoverV4L2Devices() : wantedV4L2.compactMap { try? V4L2Device(path: $0) }
        return found.map { d in
            var d = d
            d.emitters = emitters
            if let o = orientations[d.spec.path] { d.spec = .v4l2(path: d.spec.path, orientation: o) }
            return d
        }
    }

    /// Watches /dev for video nodes appearing and vanishing (udev creates and removes them).
    public func startHotplug() {
        guard autoDiscover || !wantedV4L2.isEmpty else { return }
        let m = HotplugMonitor(directory: "/dev", prefix: "video", queue: rescanQueue) { [weak self] in
            self?.rescan()
        }
        monitor.withLock { $0 = m }
    }

    public func stopHotplug() {
        monitor.withLock { $0 = nil }
    }

    /// Re-reads the V4L2 devices and tells watchers what changed. Safe to call any time.
    public func rescan() {
        let found = scan()
        let (changes, watchers) = state.withLock { s -> ([Change], [@Sendable (Change) -> Void]) in
            let old = s.devices.filter { !($0 is ReplayDevice) }
            let oldIDs = Set(old.map(\.id))
            let newIDs = Set(found.map(\.id))
            var changes: [Change] = []
            for d in old where !newIDs.contains(d.id) { changes.append(.removed(d.description)) }
            for d in found where !oldIDs.contains(d.id) { changes.append(.added(d.description)) }
            s.devices = s.devices.filter { $0 is ReplayDevice } + found
            return (changes, Array(s.watchers.values))
        }
        for change in changes {
            switch change {
            case .added(let d): logger.info("camera added: \(d.id) (\(d.path), \(d.name))")
            case .removed(let d):
                logger.info("camera removed: \(d.id) (\(d.path))")
                emitters.cameraRemoved(d.id)
            }
            watchers.forEach { $0(change) }
        }
    }

    /// After a resume (logind's PrepareForSleep(false)): every V4L2 camera is looked up again
    /// and opened afresh at its next stream — a USB camera may have been re-enumerated, a
    /// device object may hold state the sleep made stale — and its IR emitter entry is applied
    /// and logged again at that stream's start (issue 36).
    public func resumed() {
        let fresh = scan()
        let (changes, watchers) = state.withLock { s -> ([Change], [@Sendable (Change) -> Void]) in
            let old = s.devices.filter { !($0 is ReplayDevice) }
            let newIDs = Set(fresh.map(\.id)), oldIDs = Set(old.map(\.id))
            var changes: [Change] = []
            for d in old where !newIDs.contains(d.id) { changes.append(.removed(d.description)) }
            for d in fresh where !oldIDs.contains(d.id) { changes.append(.added(d.description)) }
            s.devices = s.devices.filter { $0 is ReplayDevice } + fresh
            return (changes, Array(s.watchers.values))
        }
        for d in fresh { emitters.cameraRemoved(d.id) }
        logger.notice("resumed from sleep: \(fresh.count) camera(s) looked up again (\(fresh.map(\.id).joined(separator: ", "))); each opens afresh, IR emitter entries re-applied at the next stream")
        for change in changes { watchers.forEach { $0(change) } }
    }

    public var devices: [any CameraDevice] { state.withLock { $0.devices } }

    public func isBusy(_ id: String) -> Bool { state.withLock { $0.busy.contains(id) } }

    /// Tells `handler` about every later change until the returned token is cancelled.
    public func watch(_ handler: @escaping @Sendable (Change) -> Void) -> WatchToken {
        let key = state.withLock { s in
            s.nextWatcher += 1
            s.watchers[s.nextWatcher] = handler
            return s.nextWatcher
        }
        return WatchToken { [weak self] in
            _ = self?.state.withLock { $0.watchers.removeValue(forKey: key) }
        }
    }

    /// Finds a camera by id, path, node or spec; the first free one when `name` is nil.
    public func find(_ name: String?) throws(CameraError) -> any CameraDevice {
        let devices = self.devices
        guard let name else {
            guard let first = devices.first(where: { !isBusy($0.id) }) ?? devices.first else {
                throw .notFound("(any)")
            }
            return first
        }
        if let d = devices.first(where: { Self.matches($0, name) }) {
            return d
        }
        throw .notFound(name)
    }

    /// Whether `name` (an id, spec, path or node, as `camera=` takes) names `d`.
    static func matches(_ d: any CameraDevice, _ name: String) -> Bool {
        d.id == name || d.spec.description == name || d.description.path == name
            || (d as? V4L2Device)?.node == name || "v4l2:\((d as? V4L2Device)?.node ?? "")" == name
    }

    /// Reserves a camera for one session: a second caller gets `.busy` until the lease ends.
    /// With `purpose` and no name, the modality's camera (`find(_:for:choice:)`).
    public func acquire(_ name: String?, for purpose: CameraPurpose? = nil) throws(CameraError) -> CameraLease {
        let device: any CameraDevice
        if let purpose { device = try find(name, for: purpose, choice: choices[purpose]) } else { device = try find(name) }
        let ok = state.withLock { $0.busy.insert(device.id).inserted }
        guard ok else { throw .busy(device.id) }
        if let purpose, name == nil {
            // The daemon chose: say which, so a wrong pick (RGB for IR) shows in the journal.
            let how = choices[purpose].map { "\(purpose.rawValue)_camera=\($0)" } ?? "default"
            logger.info("\(purpose.rawValue) session uses camera \(device.id) (\(device.description.path), \(isInfrared(device) ? "IR" : "colour"), \(how))")
        }
        return CameraLease(device: device, registry: self)
    }

    fileprivate func release(_ id: String) {
        _ = state.withLock { $0.busy.remove(id) }
    }
}

/// One session's exclusive hold on a camera. Released explicitly or when it goes away.
public final class CameraLease: Sendable {
    public let device: any CameraDevice
    private weak let registry: CameraRegistry?
    private let released = Atomic<Bool>(false)

    init(device: any CameraDevice, registry: CameraRegistry) {
        self.device = device
        self.registry = registry
    }

    /// Starts streaming into a bounded queue (`queueCapacity` frames, oldest dropped).
    public func start(_ request: CaptureRequest = CaptureRequest(), queueCapacity: Int = 3) throws(CameraError)
        -> CaptureStream
    {
        try CaptureStream(device: device, request: request, queueCapacity: queueCapacity)
    }

    public func release() {
        if !released.exchange(true, ordering: .relaxed) { registry?.release(device.id) }
    }

    deinit { release() }
}

/// Cancels a `CameraRegistry.watch` subscription.
public final class WatchToken: Sendable {
    private let cancelAction: Mutex<(@Sendable () -> Void)?>
    init(_ cancel: @escaping @Sendable () -> Void) { cancelAction = Mutex(cancel) }
    public func cancel() {
        let action = cancelAction.withLock { a in defer { a = nil }; return a }
        action?()
    }
    deinit { cancel() }
}
