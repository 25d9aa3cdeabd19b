import Foundation

/// A camera as named on the command line or in the config file (SPEC §2):
/// `v4l2:/dev/video0[?rotate=90&mirror=true]` or `replay:PATH[?fps=30&loop=true&rotate=…&mirror=…]`.
public enum CameraSpec: Sendable, Equatable, CustomStringConvertible {
    case v4l2(path: String, orientation: CameraOrientation = .upright)
    case replay(path: String, fps: Double, loop: Bool, orientation: CameraOrientation = .upright)

    public static let defaultReplayFPS = 30.0

    public init(parsing text: String) throws(CameraError) {
        let isV4L2 = text.hasPrefix("v4l2:")
        guard isV4L2 || text.hasPrefix("replay:") else {
            throw .invalidSpec(text, reason: "use v4l2:/dev/videoN[?rotate=90&mirror=true] or replay:PATH[?fps=30&loop=true]")
        }
        var rest = String(text.dropFirst(isV4L2 ? 5 : 7))
        var fps = Self.defaultReplayFPS
        var loop = false
        var orientation = CameraOrientation.upright
        if let q = rest.firstIndex(of: "?") {
            let query = rest[rest.index(after: q)...]
            rest = String(rest[..<q])
            for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2 else { throw .invalidSpec(text, reason: "'\(pair)' is not key=value") }
                switch parts[0] {
                case "rotate":
                    guard let v = Int(parts[1]), [0, 90, 180, 270].contains(v) else {
                        throw .invalidSpec(text, reason: "rotate must be 0, 90, 180 or 270 (degrees clockwise)")
                    }
                    orientation.rotate = v
                case "mirror":
                    guard let v = Bool(parts[1]) else { throw .invalidSpec(text, reason: "mirror must be true or false") }
                    orientation.mirror = v
                case "fps" where !isV4L2:
                    guard let v = Double(parts[1]), v.isFinite, v > 0, v <= 240 else {
                        throw .invalidSpec(text, reason: "fps must be a number in (0, 240]")
                    }
                    fps = v
                case "loop" where !isV4L2:
                    guard let v = Bool(parts[1]) else { throw .invalidSpec(text, reason: "loop must be true or false") }
                    loop = v
                default:
                    throw .invalidSpec(text, reason: "unknown option '\(parts[0])' (\(isV4L2 ? "rotate, mirror" : "fps, loop, rotate, mirror"))")
                }
            }
        }
        if isV4L2 {
            guard rest.hasPrefix("/"), rest.count > 1 else {
                throw .invalidSpec(text, reason: "v4l2: needs an absolute device path, e.g. v4l2:/dev/video0")
            }
            self = .v4l2(path: rest, orientation: orientation)
            return
        }
        guard !rest.isEmpty else { throw .invalidSpec(text, reason: "replay: needs a video file or a folder of images") }
        self = .replay(path: rest, fps: fps, loop: loop, orientation: orientation)
    }

    public var description: String {
        switch self {
        case .v4l2(let path, let o): "v4l2:\(path)" + (o.isUpright ? "" : "?" + o.query.dropFirst())
        case .replay(let path, let fps, let loop, let o): "replay:\(path)?fps=\(fps.formatted())&loop=\(loop)\(o.query)"
        }
    }

    public var path: String {
        switch self {
        case .v4l2(let path, _), .replay(let path, _, _, _): path
        }
    }

    /// How frames of this camera are turned upright.
    public var orientation: CameraOrientation {
        switch self {
        case .v4l2(_, let o), .replay(_, _, _, let o): o
        }
    }
}

extension Double {
    fileprivate func formatted() -> String {
        self == rounded() ? String(Int(self)) : String(self)
    }
}
