import BiometricCamera
import BiometricCore
import BiometricFace
import BiometricProtocol
import Foundation

extension CameraDescription {
    /// `roles` among the cameras present (a removed camera's event has only its description).
    func wire(busy: Bool, roles: CameraRoles? = nil) -> CameraInfo {
        CameraInfo(id: id, path: path, name: name, driver: driver, bus: bus,
                   formats: formats.map { CameraFormatInfo(fourcc: $0.fourcc.trimmingCharacters(in: .whitespaces), width: $0.width, height: $0.height, fps: $0.fps) },
                   ir: roles?.isInfrared ?? isInfrared, busy: busy, virtual: roles?.isVirtual ?? CameraRoles.isVirtualDriver(driver),
                   device: roles?.physicalDevice, sibling: roles?.sibling)
    }
}

extension CameraRegistry {
    /// camera.list's view of every camera now, roles included.
    var wire: [CameraInfo] {
        let all = devices
        return all.map { $0.description.wire(busy: isBusy($0.id), roles: roles(of: $0, among: all)) }
    }
}

/// camera.*: the cameras, their hot-plug events, and snapshots (SPEC §4).
struct CameraMethods: MethodGroup {
    let leases: CameraLeases
    let face: FaceService
    let policy: AccessPolicy

    var cameras: CameraRegistry { leases.cameras }

    func register(in table: inout MethodTable) {
        table.register(Method.cameraList, .anyone, cameraList)

        // Answers with the cameras now, then sends camera.added / camera.removed events tied to
        // this request until session.cancel or disconnect.
        table.register(Method.cameraWatch, .anyone, cameraWatch)

        // What is known about each camera's IR emitter and what the last stream start applied
        // (Docs/ir-emitters.md). Anyone: it says no more about the devices than camera.list.
        table.register(Method.cameraIR, .anyone, cameraIR)

        // The opt-in probe: reads the controls the camera's descriptors declare; with trial, writes
        // each candidate's own GET_MAX once while frames are measured, then restores the original.
        // Admin only: it changes a device's state, however briefly.
        table.register(Method.cameraIRProbe, .admin("camera.ir.probe"), cameraIRProbe)

        // authctl doctor's camera check: opens the camera, drops the warm-up frames, and reports
        // how bright the next few are (numbers, no image). Admin: it holds the camera for up to a
        // second and tells the light level of the room; an unprivileged doctor says it could not check.
        table.register(Method.cameraCheck, .admin("camera.check"), cameraCheck)

        // Howdy's snapshot: lets an admin see what the camera sees (exposure, IR emitter, framing).
        table.register(Method.cameraSnapshot, .admin("camera.snapshot"), cameraSnapshot)
    }

    // MARK: Handlers, one per method, named after it

    /// camera.list
    func cameraList(_ context: CallContext, _ params: NoParams) async throws -> [CameraInfo] {
        cameras.wire
    }

    /// camera.watch
    func cameraWatch(_ context: CallContext, _ params: NoParams) async throws -> WatchResult {
        guard let request = context.request else {
            throw RPCError.invalidRequest("camera.watch needs an id: its events are tied to it")
        }
        let token = cameras.watch { change in
            switch change {
            case .added(let d):
                let roles = cameras.devices.first { $0.id == d.id }.map { cameras.roles(of: $0) }
                context.emit(CameraChangeEvent(.added, camera: d.wire(busy: false, roles: roles)))
            case .removed(let d): context.emit(CameraChangeEvent(.removed, camera: d.wire(busy: false)))
            }
        }
        context.connection.addWatch(request, token)
        return WatchResult(cameras: cameras.wire)
    }

    /// camera.i.r
    func cameraIR(_ context: CallContext, _ params: CameraIRParams) async throws -> CameraIRResult {
        let devices = try params.camera.map { [try cameras.find($0)] } ?? cameras.devices
        let emitters = cameras.emitters
        return CameraIRResult(cameras: devices.map { Self.irInfo($0, emitters: emitters) }, tableFiles: emitters.table.files,
                              tableErrors: emitters.tableErrors.map(\.description))
    }

    /// camera.i.r.probe
    func cameraIRProbe(_ context: CallContext, _ params: CameraIRProbeParams) async throws -> CameraIRProbeResult {
        guard let device = try cameras.find(params.camera) as? V4L2Device else {
            throw RPCError.invalidParams(field: "camera", "'\(params.camera)' is not a V4L2 camera: the probe reads USB extension units")
        }
        guard params.trial == true else {
            let found = try await device.probeEmitter(trial: false) { nil }
            return Self.probeResult(device, found, before: nil)
        }
        return try await leases.withLease(params.camera) { capture, _ in
            let before = await Self.meanBrightness(capture, skip: 5, count: 5)
            let found = try await device.probeEmitter(trial: true) { await Self.meanBrightness(capture, skip: 3, count: 5) }
            return Self.probeResult(device, found, before: before)
        }
    }

    /// camera.check
    func cameraCheck(_ context: CallContext, _ params: CameraCheckParams) async throws -> CameraCheckResult {
        let warmup = CameraCheckParams.warmupFrames(params.warmupFrames)
        let count = CameraCheckParams.frames(params.frames)
        let timeout = CameraCheckParams.timeoutMs(params.timeoutMs)
        let started = monotonicNanoseconds()
        return try await leases.withLease(params.camera) { capture, lease in
            let frames = try await withDeadline(milliseconds: timeout, "camera.check", watching: capture) {
                for _ in 0..<warmup { _ = try await capture.frames.next() }
                var measured: [(width: Int, height: Int, ir: Bool, brightness: Double)] = []
                for _ in 0..<count {
                    let f = try await capture.frames.next()
                    measured.append((f.width, f.height, f.isInfrared, (f.meanBrightness * 10).rounded() / 10))
                }
                return measured
            }
            let last = frames[frames.count - 1]
            return CameraCheckResult(camera: lease.device.id, width: last.width, height: last.height, ir: last.ir,
                                     brightness: frames.map(\.brightness), durationMs: elapsedMilliseconds(since: started))
        }
    }

    /// camera.snapshot
    func cameraSnapshot(_ context: CallContext, _ params: SnapshotParams) async throws -> SnapshotResult {
        let warmup = SnapshotParams.warmupFrames(params.warmupFrames)
        let timeout = SnapshotParams.timeoutMs(params.timeoutMs)
        return try await leases.withLease(params.camera) { capture, lease in
            let frame = try await withDeadline(milliseconds: timeout, "camera.snapshot") {
                var frame = try await capture.frames.next()
                for _ in 0..<warmup { frame = try await capture.frames.next() }
                return frame
            }
            let faces = await drawFaces(on: frame)
            let png = try Self.encodePNG(frame)
            return SnapshotResult(camera: lease.device.id, width: frame.width, height: frame.height,
                                  ir: frame.isInfrared, image: png.base64EncodedString(), faces: faces)
        }
    }

    /// Draws the face box and landmarks into the frame's colour plane when the face models are
    /// loaded (the snapshot then shows what the pipeline sees). Returns the number of faces.
    func drawFaces(on frame: Frame) async -> Int {
        guard let pipeline = try? await face.pipeline(),
              let observation = try? await pipeline.analyze(frame, tracker: FaceTracker()),
              observation.draw(on: frame)
        else { return 0 }
        return observation.faceCount
    }

    static func hex(_ bytes: [UInt8]?) -> String? { bytes.map { $0.map { String(format: "%02x", $0) }.joined(separator: " ") } }

    static func irInfo(_ device: any CameraDevice, emitters: IREmitterController) -> CameraIRInfo {
        let d = device.description
        let entry = emitters.entry(for: d.usb)
        let state = emitters.state(of: device.id)
        let now = monotonicNanoseconds()
        return CameraIRInfo(
            camera: device.id, path: d.path, ir: d.isInfrared, usbDevice: d.usb?.device.description, usbInterface: d.usb?.interface,
            entry: entry.map { e in
                IREntryInfo(device: e.device.description, interface: e.interface, name: e.name, source: e.source, origin: e.origin,
                            writes: e.writes.map { UVCWriteInfo(unit: Int($0.unit), selector: Int($0.selector), payload: $0.payloadHex) })
            },
            applications: state?.applications ?? 0,
            last: state?.last.map { r in
                IRApplicationInfo(
                    outcome: r.outcome.rawValue, message: r.message, durationMs: Double(r.durationNs / 1000) / 1000,
                    secondsAgo: (Double((now - min(now, r.startedNs)) / 1_000_000) / 1000),
                    writes: r.writes.map {
                        UVCWriteInfo(unit: Int($0.write.unit), selector: Int($0.write.selector), payload: $0.write.payloadHex,
                                     status: $0.status.rawValue, readBack: hex($0.readBack), message: $0.message)
                    })
            })
    }

    /// Mean grey level of `count` frames after dropping `skip` (auto-exposure and the emitter settle).
    static func meanBrightness(_ capture: CaptureStream, skip: Int, count: Int) async -> Double? {
        for _ in 0..<skip { _ = try? await capture.frames.next() }
        var sum = 0.0
        for _ in 0..<count {
            guard let frame = try? await capture.frames.next() else { return nil }
            sum += frame.meanBrightness
        }
        return (sum / Double(count) * 10).rounded() / 10
    }

    static func probeResult(_ device: V4L2Device,
                            _ found: (units: [UVCExtensionUnit], controls: [IREmitterProbe.Control], trials: [IREmitterProbe.Trial]),
                            before: Double?) -> CameraIRProbeResult {
        let usb = device.description.usb
        let trials = found.trials.map { t in
            ProbeTrialInfo(unit: Int(t.unit), selector: Int(t.selector), original: hex(t.original) ?? "", written: hex(t.written) ?? "",
                           readBack: hex(t.readBack), brightnessBefore: before, brightnessDuring: t.brightnessDuring, restored: t.restored,
                           message: t.message,
                           suggestion: "[\(usb.map { "\($0.device) interface=\($0.interface)" } ?? "vid:pid")]\nsource = camera.ir.probe on this machine\nwrite = unit=\(t.unit) selector=\(t.selector) payload=\(hex(t.written) ?? "")")
        }
        let summary: String
        if found.units.isEmpty {
            summary = "no extension units declared (not a USB UVC camera, or its sysfs descriptors are unreadable)"
        } else if found.trials.isEmpty {
            let candidates = IREmitterProbe.candidates(found.controls).count
            summary = "\(found.controls.count) controls in \(found.units.count) extension units read, nothing written; \(candidates) candidate\(candidates == 1 ? "" : "s") for a trial"
        } else {
            let lit = trials.filter { t in (t.brightnessDuring ?? 0) > (before ?? 0) + 20 }
            summary = lit.isEmpty
                ? "\(trials.count) trial\(trials.count == 1 ? "" : "s"), none made the frames brighter"
                : "unit \(lit[0].unit) selector \(lit[0].selector) made the frames brighter (\(before ?? 0) → \(lit[0].brightnessDuring ?? 0)): add the suggestion to /etc/biometricd/ir-emitters.d/local.conf"
        }
        return CameraIRProbeResult(
            camera: device.id, usbDevice: usb?.device.description, usbInterface: usb?.interface,
            controls: found.controls.map { c in
                ProbedControlInfo(unit: Int(c.unit), selector: Int(c.selector), guid: c.guid, info: c.info.map(Int.init), length: c.length,
                                  cur: hex(c.cur), min: hex(c.min), max: hex(c.max), def: hex(c.def), res: hex(c.res), error: c.error)
            },
            trials: trials, summary: summary)
    }

    static func encodePNG(_ frame: Frame) throws -> Data {
        do {
            return try frame.encoded(as: .png)
        } catch {
            throw RPCError.internal("PNG encoding failed: \(error.description)")
        }
    }
}
