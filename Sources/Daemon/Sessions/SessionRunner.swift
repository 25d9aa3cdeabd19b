import BiometricCamera
import BiometricFace
import BiometricProtocol
import Foundation

/// The daemon's side of every capture session: a camera lease, capture, a hard deadline, and
/// rate-limited progress events. What a frame means is the session's business (Face/Sessions,
/// Finger/Sessions); this only pumps frames through it.
extension Daemon {
    /// Runs `pump` on a leased, capturing camera. The call fails with `timeout` at `limitMs`
    /// plus a margin (a hung analysis), or at once with the camera's error if it is lost.
    func runCameraSession<T: Sendable>(
        _ camera: String?, request: CaptureRequest = CaptureRequest(), limitMs: Int, what: String,
        _ pump: @escaping @Sendable (CaptureSession, CameraLease) async throws -> T
    ) async throws -> T {
        try await withCameraSession(camera, request: request) { capture, lease in
            try await withDeadline(milliseconds: limitMs + 3000, what, watching: capture) { try await pump(capture, lease) }
        }
    }

    /// Runs a face session to its end: analyse each frame, hand it to the session, compute a
    /// template when asked and `judge` it, show progress, and stop at its decision or failure.
    func runFaceSession<S: FaceSession>(
        _ session: S, camera: String?, pipeline: FacePipeline, context: CallContext, what: String,
        judge: @escaping @Sendable (FaceTemplate) async throws -> S.Judgement
    ) async throws -> S.Outcome {
        try await runCameraSession(camera, limitMs: session.timeLimitMs, what: what) { capture, _ in
            var session = session
            var events = ProgressEvents(context: context, type: "face.frame")
            let tracker = FaceTracker()
            tracker.measureBorders = session.measuresBorders
            while true {
                let frame = try await capture.frames.next()
                tracker.target = session.poseTarget
                let observation = try await pipeline.analyze(frame, tracker: tracker)
                var step = session.observe(observation, at: frame.timestampNs)
                if case .needTemplate = step {
                    let template = try await pipeline.template(of: frame, observation, views: session.embeddingViews)
                    step = session.judged(try await judge(template))
                }
                switch step {
                case .progress(let progress):
                    events.send(progress.eventFields, at: frame.timestampNs, key: progress.throttleKey)
                    if let failure = session.expired(now: max(frame.timestampNs, monotonicNanoseconds())) {
                        throw RPCError(failure)
                    }
                case .decided(let outcome, let progress):
                    events.send(progress.eventFields, at: frame.timestampNs, key: progress.throttleKey)
                    return outcome
                case .failed(let failure):
                    throw RPCError(failure)
                case .needTemplate:
                    throw RPCError.internal("\(what): a template was asked for twice in one frame")
                }
            }
        }
    }
}
