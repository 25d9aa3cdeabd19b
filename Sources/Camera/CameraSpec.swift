import Foundation

/// A camera as named on the command line or in the config file (SPEC §2):
/// `v4l2:/dev/video0` or `replay:PATH[?fps=30&loop=true]`.
public enum CameraSpec: Sendable, Equatable, CustomStringConvertible {
    case v4l2(path: String)
    case replay(path: String, fps: Double, loop: Bool)

    public static let defaultReplayFPS = 30.0

    public init(parsing text: String) throws(CameraError) {
        if text.hasPrefix("v4l2:") {
            let path = String(text.dropFirst(5))
            guard path.hasPrefix("/"), path.count > 1 else {
                throw .invalidSpec(text, reason: "v4l2: needs an absolute device path, e.g. v4l2:/dev/video0")
            }
            self = .v4l2(path: path)
            return
        }
        guard text.hasPrefix("replay:") else {
            throw .invalidSpec(text, reason: "use v4l2:/dev/videoN or replay:PATH[?fps=30&loop=true]")
        }
        var rest = String(text.dropFirst(7))
        var fps = Self.defaultReplayFPS
        var loop = false
        if let q = rest.firstIndex(of: "?") {
            let query = rest[rest.index(after: q)...]
            rest = String(rest[..<q])
            for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2 else { throw .invalidSpec(text, reason: "'\(pair)' is not key=value") }
                switch parts[0] {
                case "fps":
                    guard let v = Double(parts[1]), v.isFinite, v > 0, v <= 240 else {
                        throw .invalidSpec(text, reason: "fps must be a number in (0, 240]")
                    }
                    fps = v
                case "loop":
                    guard let v = Bool(parts[1]) else { throw .invalidSpec(text, reason: "loop must be true or false") }
                    loop = v
                default:
                    throw .invalidSpec(text, reason: "unknown option '\(parts[0])' (fps, loop)")
                }
            }
        }
        guard !rest.isEmpty else { throw .invalidSpec(text, reason: "replay: needs a video file or a folder of images") }
        self = .replay(path: rest, fps: fps, loop: loop)
    }

    public var description: String {
        switch self {
        case .v4l2(let path): "v4l2:\(path)"
        case .replay(let path, let fps, let loop): "replay:\(path)?fps=\(fps.formatted())&loop=\(loop)"
        }
    }

    public var path: String {
        switch self {
        case .v4l2(let path), .replay(let path, _, _): path
        }
    }
}

extension Double {
    fileprivate func formatted() -> String {
        self == rounded() ? String(Int(self)) : String(self)
    }
}
