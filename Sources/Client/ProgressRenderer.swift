import BiometricProtocol
import Foundation

/// Turns live events into short guidance on a terminal ("Keep still", "Blink now",
/// "Move closer"), rewriting one status line; with `json`, prints each event as one JSON line.
public final class ProgressRenderer {
    private let json: Bool
    private let isTerminal: Bool
    private var lastLine = ""

    public init(json: Bool, isTerminal: Bool = isatty(STDERR_FILENO) != 0) {
        self.json = json
        self.isTerminal = isTerminal
    }

    /// Guidance for one feedback code of SPEC §5.
    public static func guidance(_ code: String) -> String {
        switch code {
        case "no_face": "Look at the camera"
        case "multiple_faces": "Only one face, please"
        case "move_closer": "Move closer"
        case "move_back": "Move back"
        case "center_face": "Center your face"
        case "too_dark": "Too dark: add light"
        case "too_bright": "Too bright"
        case "blurry": "Hold still (blurry)"
        case "face_forward": "Face the camera"
        case "turn_left": "Turn your head left"
        case "turn_right": "Turn your head right"
        case "look_up": "Look up"
        case "look_down": "Look down"
        case "nod": "Nod: head down, then back"
        case "keep_still": "Keep still"
        case "blink": "Blink now"
        case "no_fingers": "Show your fingers"
        case "too_close": "Move back"
        case "too_far": "Move closer"
        case "optimal": "Hold still"
        default: code.replacingOccurrences(of: "_", with: " ")
        }
    }

    /// The line to show for one event.
    public static func describe(_ event: JSONValue) -> String {
        let type = event["type"]?.stringValue ?? "event"
        switch type {
        case "camera.added", "camera.removed":
            let camera = event["camera"]
            let id = camera?["id"]?.stringValue ?? "?"
            let name = camera?["name"]?.stringValue ?? ""
            return "\(type == "camera.added" ? "+" : "-") \(id) \(name)"
        default:
            var parts: [String] = []
            if let countdown = event["countdown_s"]?.intValue, countdown > 0 { parts.append("Starting in \(countdown)…") }
            if let action = event["liveness_action"]?.stringValue { parts.append(guidance(action)) }
            if let feedback = event["feedback"]?.arrayValue {
                parts.append(contentsOf: feedback.compactMap(\.stringValue).map(guidance))
            } else if let feedback = event["feedback"]?.stringValue {
                parts.append(guidance(feedback))  // finger.frame: one distance verdict
            }
            if type == "finger.frame", let fingers = event["fingers"]?.arrayValue, !fingers.isEmpty {
                let levels = fingers.compactMap { $0["quality"]?.stringValue }
                parts.append("\(fingers.count) finger\(fingers.count == 1 ? "" : "s") (\(levels.joined(separator: " ")))")
            }
            if let captured = event["frames_captured"]?.intValue, let needed = event["frames_needed"]?.intValue, needed > 0 {
                parts.append("\(captured)/\(needed)")
            }
            return parts.isEmpty ? type : parts.joined(separator: " · ")
        }
    }

    public func render(_ event: JSONValue) {
        if json {
            if let data = try? JSONCoding.encoder.encode(event) {
                FileHandle.standardOutput.write(data + Data("\n".utf8))
            }
            return
        }
        let line = Self.describe(event)
        guard line != lastLine else { return }
        lastLine = line
        let out = isTerminal ? "\r\u{1B}[2K" + line : line + "\n"
        FileHandle.standardError.write(Data(out.utf8))
    }

    /// Ends the status line before the result is printed.
    public func finish() {
        if isTerminal && !json && !lastLine.isEmpty { FileHandle.standardError.write(Data("\n".utf8)) }
        lastLine = ""
    }
}
