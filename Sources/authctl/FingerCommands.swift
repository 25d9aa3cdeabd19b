import ArgumentParser
import BiometricClient
import BiometricProtocol
import Foundation

struct Finger: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Capture, enrol, verify and identify fingers (contactless, in front of a camera).",
        subcommands: [Capture.self, Enroll.self, Verify.self, Identify.self, List.self, Remove.self])

    /// How the hand is shown; the same options for every capturing command.
    struct HandOptions: ParsableArguments {
        @Option(help: "Camera id, path or spec.") var camera: String?
        @Option(help: "Which hand.") var hand: Hand?
        @Flag(help: "Capture the thumb instead of the four fingers.") var thumb = false
        @Flag(help: "Capture one finger held close to the camera (name it with --finger).") var single = false
        // Any digit (the thumb too): not Digit's own argument parsing, which lists only the
        // fingers --amputated accepts.
        @Option(help: "The finger shown with --single (thumb, index, middle, ring, little; default index).",
                transform: { name in
                    guard let digit = Digit(rawValue: name) else {
                        throw ValidationError("--finger: '\(name)' is not a finger (thumb, index, middle, ring, little)")
                    }
                    return digit
                }) var finger: Digit?
        @Option(help: "A finger that is missing (repeat for each).") var amputated: [Digit] = []
        @Option(help: "How hard to look for a fake finger.") var liveness: LivenessLevel?
        @Option(help: "Minimum print quality (0-100).") var quality: Int?
        @Option(help: "Give up after this many seconds (1-120).") var timeout: Int?
        @OptionGroup var preview: PreviewOptions

        var settings: FingerCaptureSettings {
            FingerCaptureSettings(mode: single ? .single : thumb ? .thumb : nil, finger: finger, hand: hand,
                                  amputated: amputated.isEmpty ? nil : amputated, liveness: liveness, qualityThreshold: quality,
                                  timeoutS: timeout, preview: preview.request)
        }
    }

    struct Capture: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Capture fingerprints; -o DIR writes each print as an image (admin).")
        @OptionGroup var options: GlobalOptions
        @OptionGroup var hand: HandOptions
        @Option(name: .shortAndLong, help: "Folder to write the prints to (<position>.<format>).") var output: String?
        @Option(help: "Image format of the prints: png, jpeg or wsq (FBI WSQ, 0.75 bpp).") var format: ImageFormat = .png

        func run() throws {
            let wantsImages = output != nil
            var result: FingerCaptureResult = try options.live(Method.fingerCapture, FingerCaptureRequest(
                camera: hand.camera, capture: hand.settings, imageFormat: wantsImages ? format : nil), preview: hand.preview.file)
            if let output {
                try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
                for (i, finger) in result.fingers.enumerated() {
                    guard let image = finger.image, let data = Data(base64Encoded: image) else { continue }
                    let path = "\(output)/\(finger.position).\(format == .jpeg ? "jpg" : format.rawValue)"
                    try data.write(to: URL(fileURLWithPath: path))
                    result.fingers[i].image = path
                }
            }
            try options.output(result) {
                (["captured \(result.fingers.count) finger(s), liveness \(result.liveness), \(result.durationMs) ms"]
                    + result.fingers.map { "  \($0.position)  quality \($0.quality)" + ($0.image.map { "  \($0)" } ?? "") })
                    .joined(separator: "\n")
            }
            if result.fingers.isEmpty { throw ExitCode(Exit.refused) }
        }
    }

    struct Enroll: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Enrol the fingers of a hand (several captures, best kept).")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "User name (default: you).") var user: String = currentUser()
        @OptionGroup var hand: HandOptions
        @Option(help: "Captures per finger (1-10).") var captures: Int?

        func run() throws {
            let result: FingerEnrollResult = try options.change(Method.fingerEnroll, FingerEnrollParams(
                user: user, camera: hand.camera, capture: hand.settings, captures: captures), user: user, live: true,
                preview: hand.preview.file)
            try options.output(result) {
                (["enrolled \(user): \(result.templates.count) finger(s) from \(result.capturesUsed) captures"]
                    + result.templates.map { "  \($0.position)  quality \($0.quality)  \($0.id)" }).joined(separator: "\n")
            }
        }
    }

    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Verify a user's finger. Exit 0 on match, 1 otherwise.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "User name (default: you).") var user: String = currentUser()
        @OptionGroup var hand: HandOptions
        @Option(help: "Score threshold (0-100; 48 = FAR 0.01%).") var threshold: Double?

        func run() throws {
            let result: FingerVerifyResult = try options.live(Method.fingerVerify, FingerAuthParams(
                user: user, camera: hand.camera, capture: hand.settings, threshold: threshold), preview: hand.preview.file)
            try options.output(result) {
                "\(result.match ? "match" : "no match") for \(user): score \(result.score) (threshold \(result.threshold))"
                    + (result.position.map { ", \($0)" } ?? "") + ", liveness \(result.liveness), \(result.durationMs) ms"
                    + (result.reenrollHint.map { "\nnote: \($0)" } ?? "")
            }
            if !result.match { throw ExitCode(Exit.refused) }
        }
    }

    struct Identify: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Whose finger is this? (admin or login group)")
        @OptionGroup var options: GlobalOptions
        @OptionGroup var hand: HandOptions
        @Option(help: "Score threshold (0-100).") var threshold: Double?

        func run() throws {
            let result: FingerIdentifyResult = try options.live(Method.fingerIdentify, FingerAuthParams(
                camera: hand.camera, capture: hand.settings, threshold: threshold), preview: hand.preview.file)
            try options.output(result) {
                (result.user.map { "\($0) (score \(result.score)\(result.position.map { ", \($0)" } ?? ""))" } ?? "nobody recognised")
                    + "\n" + result.candidates.map { "  \($0.user) \($0.score)" }.joined(separator: "\n")
            }
            if result.user == nil { throw ExitCode(Exit.refused) }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List finger templates (one user, or all with --all).")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "User name (default: you).") var user: String = currentUser()
        @Flag(help: "Every user's templates (admin).") var all = false

        func run() throws {
            let result: FingerListResult = try options.connect().call(Method.fingerList, FingerListParams(user: all ? nil : user))
            try options.output(result) {
                result.templates.isEmpty ? "no finger templates" : result.templates.map {
                    "\($0.id)  \($0.user)  \($0.position)  quality \($0.quality)  \($0.created)"
                }.joined(separator: "\n")
            }
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove one finger template, or all of a user's.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "User name (default: you).") var user: String = currentUser()
        @Option(help: "Template id (default: all of the user's).") var template: String?

        func run() throws {
            let result: RemovedResult = try options.connect().call(Method.fingerRemove, FingerRemoveParams(user: user, templateID: template))
            try options.output(result) { "removed \(result.removed) finger template(s) of \(user)" }
        }
    }
}

// The protocol's vocabularies as command-line values: a typo is refused before any call, with
// the accepted names listed.
extension Hand: ExpressibleByArgument {
    public static var allValueStrings: [String] { wireNames }
}
extension Digit: ExpressibleByArgument {
    /// Only fingers can be amputated: the thumb is its own mode (--thumb).
    public static var allValueStrings: [String] { FingerCaptureSettings.amputatable.map(\.rawValue) }
    public init?(argument: String) {
        guard let digit = Digit(rawValue: argument), FingerCaptureSettings.amputatable.contains(digit) else { return nil }
        self = digit
    }
}
extension LivenessLevel: ExpressibleByArgument {}
extension LivenessMode: ExpressibleByArgument {
    public static var allValueStrings: [String] { wireNames }
}
extension ImageFormat: ExpressibleByArgument {
    public static var allValueStrings: [String] { ["png", "jpeg"] }
}
