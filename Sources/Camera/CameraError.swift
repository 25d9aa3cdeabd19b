/// Why a camera could not be used. The daemon maps these to SPEC §6 codes: `notFound` and
/// `invalidSpec` → no_camera (2001), `busy` → busy (1005), the rest → camera_error (2002).
public enum CameraError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The spec string does not parse.
    case invalidSpec(String, reason: String)
    /// No such camera, or the path does not exist.
    case notFound(String)
    /// The path exists but is not a V4L2 video capture device.
    case notACaptureDevice(String, reason: String)
    /// Another session holds the camera.
    case busy(String)
    /// Opening failed (permissions, driver refused the format, ...).
    case openFailed(String, reason: String)
    /// The device went away or failed during streaming; a replay without loop reached its end.
    case lost(String, reason: String)
    /// No frame within the wait.
    case timeout(String)

    public var description: String {
        switch self {
        case .invalidSpec(let spec, let reason): "camera spec '\(spec)' is invalid: \(reason)"
        case .notFound(let id): "camera '\(id)' does not exist"
        case .notACaptureDevice(let path, let reason): "\(path) is not a V4L2 capture device: \(reason)"
        case .busy(let id): "camera '\(id)' is in use by another session"
        case .openFailed(let id, let reason): "camera '\(id)' cannot be opened: \(reason)"
        case .lost(let id, let reason): "camera '\(id)' was lost: \(reason)"
        case .timeout(let id): "camera '\(id)' gave no frame in time"
        }
    }
}
