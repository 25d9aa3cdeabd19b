import ArgumentParser
import BiometricClient
import BiometricProtocol
import Foundation

struct Face: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Enrol, verify and identify faces.",
        subcommands: [Enroll.self, Verify.self, Identify.self, List.self, Remove.self])

    struct Enroll: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Enrol a face (guided: look at the camera).")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "User name (default: you).") var user: String = currentUser()
        @Option(help: "Camera id, path or spec.") var camera: String?
        @Flag(help: "Full mode: front, left, right, up, down.") var full = false
        @Option(help: "Good frames per pose (1-10).") var frames: Int?
        @Option(help: "Seconds to get ready (0-30).") var countdown: Int?
        @Option(help: "Minimum frame quality (0-100).") var quality: Int?
        @Option(help: "Give up after this many ms (1000-300000).") var timeout: Int?
        @OptionGroup var preview: PreviewOptions

        func run() throws {
            let result: FaceEnrollResult = try options.change(Method.faceEnroll, FaceEnrollParams(
                user: user, camera: camera, mode: full ? .full : nil, frames: frames, countdownS: countdown, qualityThreshold: quality,
                timeoutMs: timeout, preview: preview.request), user: user, live: true, preview: preview.file)
            try options.output(result) { "enrolled \(user): \(result.templates.count) template(s) from \(result.framesUsed) frames" }
        }
    }

    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Verify a face (look at the camera; liveness as the daemon's default, passive unless configured). Exit 0 on match, 1 otherwise.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "User name (default: you).") var user: String = currentUser()
        @Option(help: "Camera id, path or spec.") var camera: String?
        @Flag(help: "Skip liveness (image mode).") var noLiveness = false
        @Flag(help: "Challenge-response liveness: follow random head moves (\"Turn your head left\"), and blink.") var challenge = false
        @Option(help: "Liveness mode: passive (no action asked), blink, challenge or passive+blink (default: the daemon's face_liveness_mode).")
        var liveness: LivenessMode?
        @Option(help: "Matching threshold (0-72; 48 = FAR 0.01%).") var threshold: Double?
        @Option(help: "Give up after this many ms.") var timeout: Int?
        @OptionGroup var preview: PreviewOptions

        func run() throws {
            var params = FaceVerifyParams(
                user: user, camera: camera, mode: noLiveness ? .image : nil, matchingThreshold: threshold, timeoutMs: timeout,
                livenessMode: challenge ? .challenge : liveness)
            params.capture.preview = preview.request
            let result: FaceVerifyResult = try options.live(Method.faceVerify, params, preview: preview.file)
            try options.output(result) {
                "\(result.match ? "match" : "no match") for \(user): score \(result.score) (threshold \(result.threshold)), liveness \(result.liveness), \(result.durationMs) ms"
                    + (result.reenrollHint.map { "\nnote: \($0)" } ?? "")
            }
            if !result.match { throw ExitCode(Exit.refused) }
        }
    }

    struct Identify: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Who is this? (admin or login group)")
        @OptionGroup var options: GlobalOptions
        @Option(help: "Camera id, path or spec.") var camera: String?
        @Flag(help: "Skip liveness (image mode).") var noLiveness = false
        @Flag(help: "Challenge-response liveness (random head moves, and a blink).") var challenge = false
        @Option(help: "Liveness mode: passive, blink, challenge or passive+blink (default: the daemon's).") var liveness: LivenessMode?
        @Option(help: "Matching threshold (0-72).") var threshold: Double?
        @OptionGroup var preview: PreviewOptions

        func run() throws {
            var params = FaceIdentifyParams(camera: camera, mode: noLiveness ? .image : nil, matchingThreshold: threshold,
                                            livenessMode: challenge ? .challenge : liveness)
            params.capture.preview = preview.request
            let result: FaceIdentifyResult = try options.live(Method.faceIdentify, params, preview: preview.file)
            try options.output(result) {
                let who = result.user.map { "\($0) (score \(result.score))" } ?? "nobody recognised"
                return who + (result.stepUpRequired ? " — step-up required: another user is too close" : "")
                    + "\n" + result.candidates.map { "  \($0.user) \($0.score)" }.joined(separator: "\n")
            }
            if result.user == nil { throw ExitCode(Exit.refused) }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List face templates (one user, or all with --all).")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "User name (default: you).") var user: String = currentUser()
        @Flag(help: "Every user's templates (admin).") var all = false

        func run() throws {
            let result: FaceListResult = try options.connect().call(Method.faceList, FaceListParams(user: all ? nil : user))
            try options.output(result) {
                result.templates.isEmpty ? "no face templates" : result.templates.map {
                    "\($0.id)  \($0.user)  \($0.pose)  quality \($0.quality)  \($0.created)\($0.version.map { "  v\($0)" } ?? "")"
                }.joined(separator: "\n")
            }
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove one face template, or all of a user's.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "User name (default: you).") var user: String = currentUser()
        @Option(help: "Template id (default: all of the user's).") var template: String?

        func run() throws {
            let result: RemovedResult = try options.connect().call(Method.faceRemove, FaceRemoveParams(user: user, templateID: template))
            try options.output(result) { "removed \(result.removed) face template(s) of \(user)" }
        }
    }
}

/// The login name of the caller (the daemon decides from SO_PEERCRED anyway).
func currentUser() -> String {
    if let pw = getpwuid(geteuid()), let name = pw.pointee.pw_name { return String(cString: name) }
    return ProcessInfo.processInfo.environment["USER"] ?? "unknown"
}
