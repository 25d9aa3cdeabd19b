import Foundation

/// An RGB/IR pair the configuration declares (`camera_pair = rgb=<camera> ir=<camera>`), for
/// the modules sysfs cannot show as one device: platform (MIPI) cameras, two USB devices sold
/// as one, vivid and v4l2loopback. It names which node is IR — whatever its formats say — and
/// makes each the other's `sibling` in `camera.list`; the face default then picks its IR node.
public struct CameraPair: Sendable, Equatable, CustomStringConvertible {
    /// The colour node: a camera id, path (e.g. /dev/v4l/by-id/…) or spec, as `camera=` takes.
    public var colour: String
    /// The IR node, named the same ways.
    public var infrared: String

    public init(colour: String, infrared: String) {
        self.colour = colour
        self.infrared = infrared
    }

    /// `rgb=<camera> ir=<camera>`, in either order, separated by white space. Each camera must be
    /// given once, non-empty, and the two must differ; anything else is refused with the reason.
    public init(parsing text: String) throws(CameraPairError) {
        var colour: String?, infrared: String?
        for word in text.split(whereSeparator: { $0 == " " || $0 == "\t" }) {
            let pair = word.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            guard pair.count == 2 else { throw CameraPairError(text: text, reason: "'\(word)' is not rgb=<camera> or ir=<camera>") }
            let name = pair[1]
            guard !name.isEmpty, name.utf8.count <= 4096, !name.contains("\0") else {
                throw CameraPairError(text: text, reason: "'\(pair[0])=' needs a camera id, path or spec")
            }
            switch pair[0].lowercased() {
            case "rgb":
                guard colour == nil else { throw CameraPairError(text: text, reason: "rgb= is given twice") }
                colour = name
            case "ir":
                guard infrared == nil else { throw CameraPairError(text: text, reason: "ir= is given twice") }
                infrared = name
            default:
                throw CameraPairError(text: text, reason: "unknown role '\(pair[0])' (rgb or ir)")
            }
        }
        guard let colour, let infrared else { throw CameraPairError(text: text, reason: "both rgb=<camera> and ir=<camera> are needed") }
        guard colour != infrared else { throw CameraPairError(text: text, reason: "the RGB and the IR camera are the same ('\(colour)')") }
        self.init(colour: colour, infrared: infrared)
    }

    /// Refuses a camera named in two pairs (it would have two siblings, or two roles).
    public static func validate(_ pairs: [CameraPair]) throws(CameraPairError) {
        var seen: Set<String> = []
        for p in pairs {
            for name in [p.colour, p.infrared] where !seen.insert(name).inserted {
                throw CameraPairError(text: p.description, reason: "camera '\(name)' is already in another pair")
            }
        }
    }

    public var description: String { "rgb=\(colour) ir=\(infrared)" }
}

/// A `camera_pair` value that does not parse; `description` says why.
public struct CameraPairError: Error, Sendable, Equatable, CustomStringConvertible {
    public var text: String
    public var reason: String
    public var description: String { "must be 'rgb=<camera> ir=<camera>': \(reason); got '\(text)'" }
}
