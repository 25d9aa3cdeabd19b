import BiometricCamera
import BiometricCore
import BiometricFace
import BiometricFinger
import BiometricProtocol
import Foundation

/// The frame pumps of face and finger sessions: frames in, analysis, the session's step, progress
/// events out. What a frame means is the session's business (Face/Sessions, Finger/Sessions).
extension CameraSessions {
    /// Runs a face session to its end: analyse each frame, hand it to the session, compute a
    /// template when asked and `judge` it, show progress, and stop at its decision or failure.
    func runFace<S: FaceSession>(
        _ session: S, camera: String?, pipeline: FacePipeline, context: CallContext, what: String,
        preview: PreviewRequest? = nil, admit: (@Sendable (String) throws -> Void)? = nil,
        judge: @escaping @Sendable (FaceTemplate) async throws -> S.Judgement
    ) async throws -> S.Outcome {
        try await run(camera, purpose: .face, limitMs: session.timeLimitMs, what: what, admit: admit) { capture, _ in
            var session = session
            var events = ProgressEvents(context: context, preview: preview)
            let tracker = FaceTracker()
            tracker.measureBorders = session.measuresBorders
            tracker.measurePassive = session.measuresPassive
            while true {
                let frame = try await capture.frames.next()
                tracker.target = session.poseTarget
                let observation = try await pipeline.analyze(frame, tracker: tracker)
                var step = session.observe(observation, at: frame.timestampNs)
                if case .needTemplate = step {
                    let template = try await pipeline.template(of: frame, observation, views: session.embeddingViews,
                                                                second: session.secondEmbedding)
                    step = session.judged(try await judge(template))
                }
                switch step {
                case .progress(let progress):
                    events.send(progress.event, frame: frame, key: progress.throttleKey) { try observation.preview(of: $0, width: $1) }
                    if let failure = session.expired(now: max(frame.timestampNs, monotonicNanoseconds())) {
                        throw SessionFailure.face(failure)
                    }
                case .decided(let outcome, let progress):
                    events.send(progress.event, frame: frame, key: progress.throttleKey) { try observation.preview(of: $0, width: $1) }
                    return outcome
                case .failed(let failure):
                    throw SessionFailure.face(failure)
                case .needTemplate:
                    throw RPCError.internal("\(what): a template was asked for twice in one frame")
                }
            }
        }
    }

    /// Runs a finger session to its end: analyse each frame, hand what the analyser holds to the
    /// session, process the prints it asks for with `judge`, and stop at its decision or failure.
    func runFinger<S: FingerSession>(
        _ session: S, camera: String?, finger: FingerService, context: CallContext, what: String,
        preview: PreviewRequest? = nil, admit: (@Sendable (String) throws -> Void)? = nil,
        judge: @escaping @Sendable ([CapturedPrint]) async throws -> S.Judgement
    ) async throws -> S.Outcome {
        try await run(camera, purpose: .finger, request: fingerCaptureRequest, limitMs: session.timeLimitMs, what: what, admit: admit) { capture, lease in
            var session = session
            var options = session.spec.options
            options.distance = finger.optics(for: lease.device)
            // Loaded on the pool the first time (they wait for their checksums).
            let mode = options.mode
            let models = try await finger.run { try finger.handModels(for: mode) }
            let analyser = UncheckedSendable(FingerCapture(options: options, models: models))
            var round = session.round
            var events = ProgressEvents(context: context, preview: preview)
            while true {
                let frame = try await capture.frames.next()
                let current = analyser
                let analysis = try await finger.run { current.value.analyse(frame) }
                let (captured, needed) = session.progress
                events.send(analysis.event(captured: captured, needed: needed), frame: frame,
                            key: "\(analysis.feedback)\(analysis.fingers.count)\(captured)") { try analysis.preview(of: $0, width: $1) }
                let sighting = FingerSighting(analysis: analysis, prints: current.value.bestPrints(),
                                              liveness: current.value.livenessVerdict())
                var step = session.observe(sighting, at: monotonicNanoseconds())
                if case .needPrints(let prints) = step { step = session.judged(try await judge(prints)) }
                switch step {
                case .progress:
                    if session.round != round {
                        // A new capture (enrolment round) starts with no prints and no liveness
                        // evidence; the hand stays followed.
                        round = session.round
                        let current = analyser
                        try await finger.run { current.value.startNewCapture() }
                    }
                case .decided(let outcome):
                    return outcome
                case .failed(let failure):
                    throw SessionFailure.finger(failure)
                case .needPrints:
                    throw RPCError.internal("\(what): prints were asked for twice in one frame")
                }
            }
        }
    }
}
