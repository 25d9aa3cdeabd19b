import BiometricCamera
import BiometricProtocol
import BiometricFace
import CFaceVision
import CImaging
import Foundation

extension CameraDescription {
    func wire(busy: Bool) -> CameraInfo {
        CameraInfo(id: id, path: path, name: name, driver: driver, bus: bus,
                   formats: formats.map { CameraFormatInfo(fourcc: $0.fourcc.trimmingCharacters(in: .whitespaces), width: $0.width, height: $0.height, fps: $0.fps) },
                   ir: isInfrared, busy: busy)
    }
}

extension Daemon {
    func registerCameraMethods(_ table: inout MethodTable) {
        table.register(Method.cameraList) { [self] (_, _: NoParams) in
            cameras.devices.map { $0.description.wire(busy: cameras.isBusy($0.id)) }
        }

        // Answers with the cameras now, then sends camera.added / camera.removed events tied to
        // this request until session.cancel or disconnect.
        table.register(Method.cameraWatch) { [self] (context, _: NoParams) in
            guard let request = context.request else {
                throw RPCError.invalidRequest("camera.watch needs an id: its events are tied to it")
            }
            let token = cameras.watch { change in
                switch change {
                case .added(let d): context.emit("camera.added", ["camera": (try? JSONValue(encoding: d.wire(busy: false))) ?? .null])
                case .removed(let d): context.emit("camera.removed", ["camera": (try? JSONValue(encoding: d.wire(busy: false))) ?? .null])
                }
            }
            context.connection.addWatch(request, token)
            return WatchResult(cameras: cameras.devices.map { $0.description.wire(busy: cameras.isBusy($0.id)) })
        }

        // Howdy's snapshot: lets an admin see what the camera sees (exposure, IR emitter, framing).
        table.register(Method.cameraSnapshot) { [self] (context, params: SnapshotParams) in
            try policy.requireAdmin(context.peer, "camera.snapshot")
            let warmup = params.warmupFrames ?? 3
            let timeout = params.timeoutMs ?? 5000
            return try await withCameraSession(params.camera) { capture, lease in
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
    }

    /// Draws the face box and landmarks into the frame's colour plane when the face models are
    /// loaded (the snapshot then shows what the pipeline sees). Returns the number of faces.
    func drawFaces(on frame: Frame) async -> Int {
        guard let pipeline = try? await face.pipeline(),
              let observation = try? await pipeline.analyze(frame, tracker: FaceTracker()),
              let box = observation.box, let bgr = frame.bgr
        else { return 0 }
        let b = cvis_face_box(x: Float(box.x), y: Float(box.y), width: Float(box.width), height: Float(box.height), score: 1)
        let flat = observation.landmarks?.flat
        _ = flat.withUnsafeBufferPointerIfPresent { cvis_face_draw(bgr.pointer, Int32(frame.width), Int32(frame.height), b, $0) }
        return observation.faceCount
    }

    static func encodePNG(_ frame: Frame) throws -> Data {
        var out: UnsafeMutablePointer<UInt8>?
        var length = 0
        let plane = frame.bgr ?? frame.grey
        let status = cvis_encode_png(plane.pointer, Int32(frame.width), Int32(frame.height), frame.bgr == nil ? 1 : 3,
                                     &out, &length)
        guard status == CVIS_OK, let out else {
            throw RPCError.internal("PNG encoding failed: \(String(cString: cvis_last_error()))")
        }
        defer { cvis_free(out) }
        return Data(bytes: out, count: length)
    }
}

extension Optional where Wrapped == [Float] {
    func withUnsafeBufferPointerIfPresent<R>(_ body: (UnsafePointer<Float>?) -> R) -> R {
        switch self {
        case .some(let array): array.withUnsafeBufferPointer { body($0.baseAddress) }
        case .none: body(nil)
        }
    }
}
