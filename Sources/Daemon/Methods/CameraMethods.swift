import BiometricCamera
import BiometricCore
import BiometricFace
import BiometricProtocol
import Foundation

extension CameraDescription {
    func wire(busy: Bool) -> CameraInfo {
        CameraInfo(id: id, path: path, name: name, driver: driver, bus: bus,
                   formats: formats.map { CameraFormatInfo(fourcc: $0.fourcc.trimmingCharacters(in: .whitespaces), width: $0.width, height: $0.height, fps: $0.fps) },
                   ir: isInfrared, busy: busy)
    }
}

/// camera.*: the cameras, their hot-plug events, and snapshots (SPEC §4).
struct CameraMethods: MethodGroup {
    let sessions: CameraSessions
    let face: FaceService
    let policy: AccessPolicy

    var cameras: CameraRegistry { sessions.cameras }

    func register(in table: inout MethodTable) {
        table.register(Method.cameraList, .anyone) { [self] (_, _: NoParams) in
            cameras.devices.map { $0.description.wire(busy: cameras.isBusy($0.id)) }
        }

        // Answers with the cameras now, then sends camera.added / camera.removed events tied to
        // this request until session.cancel or disconnect.
        table.register(Method.cameraWatch, .anyone) { [self] (context, _: NoParams) in
            guard let request = context.request else {
                throw RPCError.invalidRequest("camera.watch needs an id: its events are tied to it")
            }
            let token = cameras.watch { change in
                switch change {
                case .added(let d): context.emit(CameraChangeEvent(.added, camera: d.wire(busy: false)))
                case .removed(let d): context.emit(CameraChangeEvent(.removed, camera: d.wire(busy: false)))
                }
            }
            context.connection.addWatch(request, token)
            return WatchResult(cameras: cameras.devices.map { $0.description.wire(busy: cameras.isBusy($0.id)) })
        }

        // Howdy's snapshot: lets an admin see what the camera sees (exposure, IR emitter, framing).
        table.register(Method.cameraSnapshot, .admin("camera.snapshot")) { [self] (context, params: SnapshotParams) in
            let warmup = SnapshotParams.warmupFrames(params.warmupFrames)
            let timeout = SnapshotParams.timeoutMs(params.timeoutMs)
            return try await sessions.withSession(params.camera) { capture, lease in
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
              observation.draw(on: frame)
        else { return 0 }
        return observation.faceCount
    }

    static func encodePNG(_ frame: Frame) throws -> Data {
        do {
            return try frame.encoded(as: .png)
        } catch {
            throw RPCError.internal("PNG encoding failed: \(error.description)")
        }
    }
}
