import CFingerVision
import Foundation

/// Why the hand models cannot be used.
public enum HandModelError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A model file is missing or does not load (the daemon answers not_initialized).
    case unavailable(String)

    public var description: String {
        switch self {
        case .unavailable(let why): why
        }
    }
}

/// MediaPipe's palm detector and 21-point hand landmark model (ONNX, from ../shared/models/hands,
/// installed by scripts/fetch-models.sh), loaded once per process and shared by every capture.
///
/// Sendable: the native networks are only run under their own locks (cvision_hand_models.h), and
/// nothing else in them changes after loading.
public final class HandModels: @unchecked Sendable {
    let pointer: OpaquePointer

    public static let palmFile = "palm_detection_lite.onnx"
    public static let landmarkFile = "hand_landmark_lite_cv46.onnx"

    public init(palm: String, landmark: String) throws(HandModelError) {
        var status = CVIS_OK
        guard let models = cvis_hand_models_load(palm, landmark, &status) else {
            throw .unavailable("the hand models do not load: \(String(cString: cvis_last_error()))")
        }
        pointer = models
    }

    /// Both files in `folder`.
    public convenience init(folder: String) throws(HandModelError) {
        try self.init(palm: folder + "/" + Self.palmFile, landmark: folder + "/" + Self.landmarkFile)
    }

    deinit { cvis_hand_models_free(pointer) }
}
