import BiometricCamera
import BiometricCore
import BiometricFace
import BiometricFinger
import BiometricProtocol
import Foundation

/// The frame pumps of face and finger sessions: frames in, analysis, the session's step, progress
/// events out. What a frame means is the session's business (Face/Sessions, Finger/Sessions).
extension CameraLeases {
    /// Runs a face session to its end: analyse each frame, hand it to the session, compute a
    /// template when asked and `judge` it, show progress, and stop at its decision or failure.
    func runFace<S: FaceSession>(
        _ session: S, camera: String?, pipeline: FacePipeline, context: CallContext, what: String,
        preview: PreviewRequest? = nil, admit: (@Sendable (String) throws -> Void)? = nil,
        judge: @escaping @Sendable (FaceTemplate) async throws -> S.Judgement
    ) async throws -> S.Outcome {
        try await runFace(loading: { pipeline }, limitMs: session.timeLimitMs, session: { _ in session }, camera: camera,
                          context: context, what: what, preview: preview, admit: admit, judge: judge).outcome
    }

    /// The same, with the camera opened while the models are still loading: the session is made
    /// (by `session`) once `loading` gives the pipeline, after capture started, so a real camera's
    /// open (0.3–1.4 s) overlaps the model load of a daemon that was just started (the first
    /// login after boot). `limitMs` bounds the call as the session's own limit would.
    func runFace<S: FaceSession>(
        loading: @escaping @Sendable () async throws -> FacePipeline, limitMs: Int,
        session make: @escaping @Sendable (FacePipeline) throws -> S, camera: String?, context: CallContext, what: String,
        preview: PreviewRequest? = nil, admit: (@Sendable (String) throws -> Void)? = nil,
        judge: @escaping @Sendable (FaceTemplate) async throws -> S.Judgement
    ) async throws -> (outcome: S.Outcome, session: S, timing: FaceSessionTiming) {
        let called = FaceSessionTiming(called: monotonicNanoseconds())
        context.run.leased(nil)
        let admitting: @Sendable (String) throws -> Void = { [self] id in
            try judgeCamera(id, context: context)
            try admit?(id)
        }
        return try await run(camera, purpose: .face, limitMs: limitMs, what: what, admit: admitting) { capture, lease in
            var timing = called
            timing.cameraOpen = monotonicNanoseconds()
            let pipeline = try await loading()
            timing.modelsReady = monotonicNanoseconds()
            var session = try make(pipeline)
            var events = ProgressEvents(context: context, preview: preview)
            let tracker = FaceTracker()
            tracker.measureBorders = session.measuresBorders
            tracker.measurePassive = session.measuresPassive
            tracker.subjectRule = session.subjectRule(stillImages: lease.device.playsStillImages)
            // The next frame is analysed while this one's template is computed (the two run on the
            // pool's two threads): the session still sees observe(k), judged(k), observe(k + 1) in
            // that order, but an attempt's three embeddings no longer hold up the frames after them.
            var prefetched: Task<(Frame, FaceObservation), any Error>?
            defer { prefetched?.cancel() }
            while true {
                let frame: Frame
                var observation: FaceObservation
                if let ahead = prefetched {
                    (frame, observation) = try await ahead.value
                    prefetched = nil
                } else {
                    frame = try await capture.frames.next()
                    tracker.target = session.poseTarget
                    observation = try await pipeline.analyze(frame, tracker: tracker)
                }
                if timing.firstFrame == nil { timing.firstFrame = monotonicNanoseconds() }
                if observation.box == nil { observation.frameBrightness = frame.meanBrightness }
                var step = session.observe(observation, at: frame.timestampNs)
                if case .needTemplate = step {
                    tracker.target = session.poseTarget
                    prefetched = Task {
                        let next = try await capture.frames.next()
                        return (next, try await pipeline.analyze(next, tracker: tracker))
                    }
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
                    timing.decided = monotonicNanoseconds()
                    return (outcome, session, timing)
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
        context.run.leased(nil)
        let admitting: @Sendable (String) throws -> Void = { [self] id in
            try judgeCamera(id, context: context)
            try admit?(id)
        }
        return try await run(camera, purpose: .finger, request: fingerCaptureRequest, limitMs: session.timeLimitMs, what: what,
                             admit: admitting) { capture, lease in
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

/// Where a face session's time went (monotonic ns), for the log: the camera opened while the
/// models loaded, then the frames were judged.
struct FaceSessionTiming: Sendable {
    var called: UInt64
    var cameraOpen: UInt64?
    var modelsReady: UInt64?
    var firstFrame: UInt64?
    var decided: UInt64?

    /// "camera open 112 ms, waited for the models 430 ms, judging 251 ms (first frame +20 ms)".
    var summary: String {
        func ms(_ a: UInt64?, _ b: UInt64?) -> String {
            guard let a, let b else { return "-" }
            return String(Int((Double(b) - Double(a)) / 1e6))
        }
        return "camera open \(ms(called, cameraOpen)) ms, waited for the models \(ms(cameraOpen, modelsReady)) ms, judging \(ms(modelsReady, decided)) ms (first frame +\(ms(modelsReady, firstFrame.map { max($0, modelsReady ?? $0) })) ms)"
    }
}
