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
    public static func guidance(_ feedback: Feedback) -> String {
        switch feedback {
        case .noFace: "Look at the camera"
        case .multipleFaces: "Only one face, please"
        case .moveCloser: "Move closer"
        case .moveBack: "Move back"
        case .centerFace: "Center your face"
        case .tooDark: "Too dark: add light"
        case .tooBright: "Too bright"
        case .blurry: "Hold still (blurry)"
        case .faceForward: "Face the camera"
        case .turnLeft: "Turn your head left"
        case .turnRight: "Turn your head right"
        case .lookUp: "Look up"
        case .lookDown: "Look down"
        case .noFingers: "Show your fingers"
        case .tooClose: "Move back"
        case .tooFar: "Move closer"
        case .optimal: "Hold still"
        case .holdStill: "Hold still (ridges blurred)"
        case .focus: "Out of focus: move a little back or closer"
        case .showPalm: "Show your palm (fingertips toward the camera)"
        }
    }

    /// Guidance for the liveness step asked for.
    public static func guidance(_ action: LivenessAction) -> String {
        switch action {
        case .keepStill: "Keep still"
        case .blink: "Blink now"
        case .turnLeft: "Turn your head left"
        case .turnRight: "Turn your head right"
        case .lookUp: "Look up"
        case .nod: "Nod: head down, then back"
        }
    }

    /// Guidance for a code as sent: one this client does not know (a newer daemon) as its words.
    public static func guidance(code: String) -> String {
        if let feedback = Feedback(rawValue: code) { return guidance(feedback) }
        if let action = LivenessAction(rawValue: code) { return guidance(action) }
        return code.replacingOccurrences(of: "_", with: " ")
    }

    /// The line to show for one event: words for every kind of SPEC §5 (`EventKind`), and for a
    /// kind or value from a newer daemon, its common fields read as sent.
    public static func describe(_ event: JSONValue) -> String {
        let type = event["type"]?.stringValue ?? "event"
        guard let kind = EventKind(rawValue: type) else { return describeUntyped(event, type: type) }
        switch kind {
        case .faceFrame:
            if let frame = try? event.decode(FaceFrameEvent.self) { return describe(frame) }
        case .fingerFrame:
            if let frame = try? event.decode(FingerFrameEvent.self) { return describe(frame) }
        case .authFactor:
            if let factor = try? event.decode(AuthFactorEvent.self) { return describe(factor) }
        case .cameraAdded, .cameraRemoved:
            if let change = try? event.decode(CameraChangeEvent.self) {
                return "\(change.change == .added ? "Camera added" : "Camera removed"): \(change.camera.id) \(change.camera.name)"
            }
        }
        return describeUntyped(event, type: type)
    }

    public static func describe(_ frame: FaceFrameEvent) -> String {
        var parts: [String] = []
        if let countdown = frame.countdownS, countdown > 0 { parts.append("Starting in \(countdown)…") }
        if let action = frame.livenessAction { parts.append(guidance(action)) }
        parts.append(contentsOf: frame.feedback.map(guidance))
        switch frame.extraction {
        case .extracting?: parts.append("Reading the face…")
        case .failed?: parts.append("The face could not be read")
        case .success?, nil: break
        }
        if parts.isEmpty {
            // Nothing asked of the person (no liveness step, no feedback): say what the camera sees.
            parts.append(frame.box == nil ? "Looking for a face…" : "Face found (quality \(frame.quality))")
        }
        if frame.framesNeeded > 0 { parts.append("\(frame.framesCaptured)/\(frame.framesNeeded)") }
        return parts.joined(separator: " · ")
    }

    public static func describe(_ factor: AuthFactorEvent) -> String {
        factor.of > 1 ? "Step \(factor.index + 1) of \(factor.of): \(factor.name)" : factor.name
    }

    public static func describe(_ frame: FingerFrameEvent) -> String {
        var parts = [guidance(frame.feedback)]
        if !frame.fingers.isEmpty {
            let levels = frame.fingers.map(\.quality.rawValue)
            parts.append("\(frame.fingers.count) finger\(frame.fingers.count == 1 ? "" : "s") (\(levels.joined(separator: " ")))")
        }
        if frame.framesNeeded > 0 { parts.append("\(frame.framesCaptured)/\(frame.framesNeeded)") }
        return parts.joined(separator: " · ")
    }

    /// An event of a type (or with values) this client does not know: the common fields, read as sent.
    private static func describeUntyped(_ event: JSONValue, type: String) -> String {
        var parts: [String] = []
        if let countdown = event["countdown_s"]?.intValue, countdown > 0 { parts.append("Starting in \(countdown)…") }
        if let action = event["liveness_action"]?.stringValue { parts.append(guidance(code: action)) }
        if let feedback = event["feedback"]?.arrayValue {
            parts.append(contentsOf: feedback.compactMap(\.stringValue).map { guidance(code: $0) })
        } else if let feedback = event["feedback"]?.stringValue {
            parts.append(guidance(code: feedback))
        }
        if let captured = event["frames_captured"]?.intValue, let needed = event["frames_needed"]?.intValue, needed > 0 {
            parts.append("\(captured)/\(needed)")
        }
        // A kind this client does not know at all: its name as words ("auth.done" → "auth done").
        return parts.isEmpty ? type.replacingOccurrences(of: ".", with: " ").replacingOccurrences(of: "_", with: " ")
            : parts.joined(separator: " · ")
    }

    /// Where the latest preview image goes (`--preview FILE`), when the session has a preview on.
    public var previewFile: PreviewFile?
    private var previewFailed = false

    public func render(_ event: JSONValue) {
        if let previewFile, let image = event["preview"]?["jpeg"]?.stringValue, let jpeg = Data(base64Encoded: image) {
            do { try previewFile.write(jpeg) } catch {
                // Said once: the session goes on without its preview file.
                if !previewFailed { FileHandle.standardError.write(Data("authctl: preview: \(error)\n".utf8)) }
                previewFailed = true
            }
        }
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
