import BiometricAuth
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
        case let refusal as LockoutRefusal:
            return RPCError(refusal)
        case let refusal as PINRefusal:
            return RPCError(refusal)
        case let refusal as FloorRefusal:
            return RPCError(refusal)
        case TrustRefusal.virtualCamera(let driver):
            return .app(.spoofDetected, "the camera is a virtual capture device (driver \(driver)): its frames never passed a sensor",
                        hint: "use a real camera (refuse_virtual_cameras)",
                        details: ["cue": "virtual_camera", "driver": .string(driver), "liveness_score": 0, "spoof_attempt": true])
        case let deadline as Deadline:
            return .app(.timeout, "\(deadline.what) took longer than \(deadline.milliseconds) ms",
                        details: ["timeout_ms": .int(Int64(deadline.milliseconds))])
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

    /// locked_out (5001): a user's biometrics (`data.user`, `retry_after_s`, `requires_pin`,
    /// `biometric_failures`, `pin_fallback` when the PIN could stand in) or a camera's 1:N
    /// (`data.camera`, `requires_admin`, `failures`).
    init(_ refusal: LockoutRefusal) {
        let retry: JSONValue = refusal.retryAfterSeconds.map { .int(Int64($0)) } ?? .null
        switch refusal.subject {
        case .user(let user):
            var details: [String: JSONValue] = ["retry_after_s": retry, "user": .string(user),
                                                "biometric_failures": .int(Int64(refusal.failures))]
            if refusal.pinFallback { details["pin_fallback"] = true }
            if let seconds = refusal.retryAfterSeconds {
                self = .app(.lockedOut, "too many failed attempts: biometrics are locked for \(seconds) s",
                            hint: "wait, or use your PIN", details: details)
            } else {
                details["requires_pin"] = true
                self = .app(.lockedOut, "too many failed attempts: biometrics are locked until a correct PIN",
                            hint: "enter your PIN (authctl pin verify), or ask an administrator (pin.reset)", details: details)
            }
        case .camera(let camera):
            var details: [String: JSONValue] = ["retry_after_s": retry, "camera": .string(camera),
                                                "failures": .int(Int64(refusal.failures))]
            if let seconds = refusal.retryAfterSeconds {
                self = .app(.lockedOut, "too many unrecognised faces or fingers on camera '\(camera)': identification is locked for \(seconds) s",
                            hint: "wait, or sign in another way", details: details)
            } else {
                details["requires_admin"] = true
                self = .app(.lockedOut, "too many unrecognised faces or fingers on camera '\(camera)': identification is locked until an administrator clears it",
                            hint: "an administrator: authctl auth unlock --camera \(camera)", details: details)
            }
        }
    }

    /// pin_not_set (5004), pin_locked (5002), pin_format (5003 with `data.field`).
    init(_ refusal: PINRefusal) {
        switch refusal {
        case .notSet(let user):
            self = .app(.pinNotSet, "user '\(user)' has no PIN", hint: "set one with authctl pin set", details: ["user": .string(user)])
        case .locked(let failures):
            self = .app(.pinLocked, "the PIN is locked after \(failures) wrong attempts",
                        hint: "an administrator must reset it (authctl pin reset)", details: ["retries_left": 0])
        case .format(let violation, let field):
            let (message, details): (String, [String: JSONValue]) = switch violation {
            case .notDigits: ("the PIN must be digits only", [:])
            case .tooShort(let min): ("the PIN must have at least \(min) digits", ["min_length": .int(Int64(min))])
            case .tooLong(let max): ("the PIN must have at most \(max) digits", ["max_length": .int(Int64(max))])
            }
            var all = details
            all["field"] = .string(field)
            self = .app(.pinFormat, message, details: all)
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
