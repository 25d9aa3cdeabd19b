import BiometricCamera
import BiometricFinger
import BiometricProtocol
import BiometricStore
import Foundation

extension FingerCaptureSpec {
    /// The wire settings, with SPEC defaults.
    init(_ s: FingerCaptureSettings) {
        let hand = Hand(rawValue: s.hand ?? "right") ?? .right
        let mode = CaptureMode(rawValue: s.mode ?? "fingers") ?? .fingers
        let amputated = Set((s.amputated ?? []).compactMap(Digit.init(rawValue:)))
        self.init(options: FingerCaptureOptions(mode: mode, hand: hand, amputated: amputated, distance: nil,
                                                liveness: LivenessLevel(rawValue: s.liveness ?? "low") ?? .low),
                  qualityThreshold: s.qualityThreshold ?? 40, timeoutMs: (s.timeoutS ?? 10) * 1000)
    }
}

/// The resolution finger sessions ask for: ridges need pixels (Docs/finger-camera.md).
let fingerCaptureRequest = CaptureRequest(width: 1280, height: 720, fps: 30)

/// finger.capture, finger.enroll, finger.verify and finger.identify: resolve the params, run the
/// session (Finger/Sessions) on a camera, and apply what the daemon owns (the store, encoding).
extension Daemon {
    /// Runs a finger session to its end: analyse each frame, hand what the analyser holds to the
    /// session, process the prints it asks for with `judge`, and stop at its decision or failure.
    func runFingerSession<S: FingerSession>(
        _ session: S, camera: String?, context: CallContext, what: String,
        judge: @escaping @Sendable ([CapturedPrint]) async throws -> S.Judgement
    ) async throws -> S.Outcome {
        let finger = self.finger
        return try await runCameraSession(camera, request: fingerCaptureRequest, limitMs: session.timeLimitMs, what: what) { capture, lease in
            var session = session
            var options = session.spec.options
            options.distance = finger.optics(for: lease.device)
            var analyser = UncheckedSendable(FingerCapture(options: options))
            var round = session.round
            var events = ProgressEvents(context: context, type: "finger.frame")
            while true {
                let frame = try await capture.frames.next()
                let current = analyser
                let analysis = try await finger.run { current.value.analyse(frame) }
                let (captured, needed) = session.progress
                events.send(analysis.eventFields(captured: captured, needed: needed), at: frame.timestampNs,
                            key: "\(analysis.feedback)\(analysis.fingers.count)\(captured)")
                let sighting = FingerSighting(analysis: analysis, prints: current.value.bestPrints(),
                                              liveness: current.value.livenessVerdict())
                var step = session.observe(sighting, at: monotonicNanoseconds())
                if case .needPrints(let prints) = step { step = session.judged(try await judge(prints)) }
                switch step {
                case .progress:
                    if session.round != round {
                        // A new capture (enrolment round) starts with no prints and no liveness evidence.
                        round = session.round
                        analyser = UncheckedSendable(FingerCapture(options: options))
                    }
                case .decided(let outcome):
                    return outcome
                case .failed(let failure):
                    throw RPCError(failure)
                case .needPrints:
                    throw RPCError.internal("\(what): prints were asked for twice in one frame")
                }
            }
        }
    }

    // MARK: finger.capture

    func fingerCapture(_ p: FingerCaptureRequest, _ context: CallContext) async throws -> FingerCaptureResult {
        let started = monotonicNanoseconds()
        let spec = FingerCaptureSpec(p.capture)
        let format = p.imageFormat ?? "none"
        let session = FingerCaptureSession(spec, startedAt: started)
        let evidence = try await runFingerSession(session, camera: p.camera, context: context, what: "finger capture") { _ in
            throw RPCError.internal("finger.capture asks for no prints")
        }
        let finger = self.finger
        var fingers: [CapturedFinger] = []
        for print in evidence.prints.sorted(by: { $0.position.isoCode < $1.position.isoCode }) {
            let template = try? await finger.run { try finger.extract(print.image, position: print.position) }
            var image: String?
            if format != "none" {
                do { image = try print.image.encoded(as: format == "jpeg" ? .jpeg : .png).base64EncodedString() }
                catch { throw RPCError.internal("print image encoding failed: \(error.description)") }
            }
            fingers.append(CapturedFinger(position: print.position.name, quality: print.quality, box: print.box.wire,
                                          image: image, template: template.map { Data($0.encoded()).base64EncodedString() },
                                          minutiae: template?.minutiae.count))
        }
        return FingerCaptureResult(fingers: fingers, liveness: spec.checksLiveness ? evidence.liveness.rawValue : "no_decision",
                                   imageFormat: format == "none" ? nil : format, durationMs: Self.milliseconds(since: started))
    }

    // MARK: finger.enroll

    func fingerEnroll(_ p: FingerEnrollParams, _ context: CallContext) async throws -> FingerEnrollResult {
        let started = monotonicNanoseconds()
        let finger = self.finger
        let session = FingerEnrolment(FingerCaptureSpec(p.capture), rounds: p.captures ?? 3, matcher: finger.matcher, startedAt: started)
        let outcome = try await runFingerSession(session, camera: p.camera, context: context, what: "finger.enroll") { prints in
            var templates: [FingerPosition: FingerTemplate] = [:]
            for print in prints {
                templates[print.position] = try? await finger.run { try finger.extract(print.image, position: print.position) }
            }
            return templates
        }
        var enrolled: [EnrolledFinger] = []
        for (position, template, captures) in outcome.chosen {
            let info = try templates.addTemplate(user: p.user, modality: .finger, position: position.name, quality: Double(template.quality),
                                             meta: "{\"captures\":\(captures)}", payload: Data(template.encoded()))
            enrolled.append(EnrolledFinger(id: info.id, position: position.name, quality: template.quality))
        }
        logger.notice("finger.enroll \(p.user): \(enrolled.count) finger(s), \(outcome.rounds) captures in \(Self.milliseconds(since: started)) ms")
        return FingerEnrollResult(templates: enrolled, capturesUsed: outcome.rounds)
    }

    // MARK: finger.verify / finger.identify

    /// Fast authentication against `references`: every improved print is extracted and ranked.
    func fingerAuthenticate(_ p: FingerAuthParams, references: FingerGallery, context: CallContext)
        async throws -> FingerAuthentication.Outcome
    {
        let finger = self.finger
        let session = FingerAuthentication(FingerCaptureSpec(p.capture), threshold: p.threshold ?? 48, startedAt: monotonicNanoseconds())
        return try await runFingerSession(session, camera: p.camera, context: context, what: "finger capture") { prints in
            var matches: [FingerPosition: [FingerMatch]] = [:]
            for print in prints {
                guard let ranked = try? await finger.run({
                    finger.rank(try finger.extract(print.image, position: print.position), among: references)
                }) else { continue }
                matches[print.position] = ranked.map {
                    FingerMatch(user: $0.reference.user, templateID: $0.reference.templateID, position: $0.reference.position, score: $0.score)
                }
            }
            return matches
        }
    }
}
