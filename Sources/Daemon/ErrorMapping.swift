import BiometricCamera
import BiometricProtocol
import BiometricStore

extension RPCError {
    /// Maps any failure of a method to the error the client sees: stable codes and a hint.
    static func from(_ error: any Error) -> RPCError {
        switch error {
        case let e as RPCError:
            return e
        case SessionFailure.face(let failure):
            return RPCError(failure)
        case SessionFailure.finger(let failure):
            return RPCError(failure)
        case is CancellationError:
            return .app(.canceled, "the call was canceled")
        case let e as CameraError:
            return from(camera: e)
        case let e as StoreError:
            if case .notFound(let what) = e { return .app(.notFound, "\(what) not found") }
            if case .conflict(let what) = e { return .invalidParams(field: "template_id", what) }
            if case .quotaExceeded(let what, let max, let have) = e {
                return .app(.quotaExceeded, e.description, hint: "remove templates or keys you no longer use, or ask an administrator",
                            details: ["quota": .string(what), "max": .int(Int64(max)), "have": .int(Int64(have))])
            }
            return .internal("\(e)")
        default:
            return .internal("internal error: \(error)")
        }
    }

    /// not_found (1002) for a user name with no record.
    static func userNotEnrolled(_ user: String) -> RPCError {
        .app(.notFound, "user '\(user)' is not enrolled", details: ["user": .string(user)])
    }

    static func from(camera error: CameraError) -> RPCError {
        switch error {
        case .notFound(let id):
            return .app(.noCamera, "no camera '\(id)'", hint: "list cameras with `authctl cameras` (camera.list)",
                        details: ["camera": .string(id)])
        case .invalidSpec(let spec, let reason):
            return .app(.noCamera, "camera '\(spec)' is not usable: \(reason)", details: ["camera": .string(spec)])
        case .busy(let id):
            return .app(.busy, "camera '\(id)' is in use by another session",
                        hint: "wait for the other session to end, or cancel it", details: ["camera": .string(id)])
        case .notACaptureDevice(let path, let reason):
            return .app(.noCamera, "\(path) is not a video capture device: \(reason)", details: ["camera": .string(path)])
        case .openFailed(let id, let reason):
            return .app(.cameraError, "camera '\(id)' cannot be opened: \(reason)",
                        hint: "check that the daemon's user may open the device (udev rule) and no other program holds it",
                        details: ["camera": .string(id)])
        case .lost(let id, let reason):
            return .app(.cameraError, "camera '\(id)' was lost: \(reason)", hint: "reconnect the camera and try again",
                        details: ["camera": .string(id)])
        case .timeout(let id):
            return .app(.cameraError, "camera '\(id)' gave no frame in time", details: ["camera": .string(id)])
        }
    }
}
