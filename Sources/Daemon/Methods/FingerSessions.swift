import BiometricAuth
import BiometricCamera
import BiometricCore
import BiometricFinger
import BiometricProtocol
import BiometricStore
import Foundation

extension FingerCaptureSpec {
    /// The wire settings, with SPEC defaults.
    init(_ s: FingerCaptureSettings) {
        self.init(options: FingerCaptureOptions(mode: s.mode ?? .default, finger: s.finger ?? .index, hand: s.hand ?? .default,
                                                amputated: Set(s.amputated ?? []), distance: nil, liveness: s.liveness ?? .default),
                  qualityThreshold: FingerCaptureSettings.qualityThreshold(s.qualityThreshold),
                  timeoutMs: FingerCaptureSettings.timeoutS(s.timeoutS) * 1000)
    }
}

/// The resolution finger sessions ask for: ridges need pixels (Docs/finger-camera.md).
let fingerCaptureRequest = CaptureRequest(width: 1280, height: 720, fps: 30)

/// finger.capture, finger.enroll, finger.verify and finger.identify: resolve the params, run the
/// session (Finger/Sessions) on a camera, and apply what the daemon owns (the store, encoding).
extension FingerMethods {
    // MARK: finger.capture

    func capture(_ p: FingerCaptureRequest, _ context: CallContext) async throws -> FingerCaptureResult {
        let started = monotonicNanoseconds()
        let spec = FingerCaptureSpec(p.capture)
        let format = p.imageFormat ?? .default
        let session = FingerCaptureSession(spec, startedAt: started)
        let evidence = try await sessions.runFinger(session, camera: p.camera, finger: finger, context: context, what: "finger capture",
                                                    preview: p.capture.preview) { _ in
            throw RPCError.internal("finger.capture asks for no prints")
        }
        let finger = self.finger
        var fingers: [CapturedFinger] = []
        for print in evidence.prints.sorted(by: { $0.position.isoCode < $1.position.isoCode }) {
            let template = try? await finger.run { try finger.extract(print.image, position: print.position) }
            var image: String?
            if format != .none {
                do {
                    let file: Data = switch format {
                    case .wsq: Data(try print.image.wsqEncoded()) // FBI WSQ at 0.75 bpp (Docs/finger-print.md)
                    case .jpeg: try print.image.encoded(as: .jpeg)
                    default: try print.image.encoded(as: .png)
                    }
                    image = file.base64EncodedString()
                } catch { throw RPCError.internal("print image encoding failed: \(error)") }
            }
            fingers.append(CapturedFinger(position: print.position.name, quality: print.quality, box: print.box.wire,
                                          image: image, template: template.map { Data($0.encoded()).base64EncodedString() },
                                          minutiae: template?.minutiae.count))
        }
        return FingerCaptureResult(fingers: fingers, liveness: spec.checksLiveness ? evidence.liveness : .noDecision,
                                   imageFormat: format == .none ? nil : format, durationMs: elapsedMilliseconds(since: started))
    }

    // MARK: finger.enroll

    func enroll(_ p: FingerEnrollParams, _ context: CallContext) async throws -> FingerEnrollResult {
        let started = monotonicNanoseconds()
        let finger = self.finger
        // A full quota is refused before anyone holds a hand up (a slap is up to four fingers).
        let quota = limits.quotas.templates(.finger, isAdmin: context.peer.isAdmin)
        try templates.checkQuota(user: p.user, modality: .finger, adding: 1, quota: quota)
        let session = FingerEnrolment(FingerCaptureSpec(p.capture), rounds: FingerEnrollParams.captures(p.captures),
                                      matcher: finger.matcher, startedAt: started)
        let outcome = try await sessions.runFinger(session, camera: p.camera, finger: finger, context: context, what: "finger.enroll",
                                                   preview: p.capture.preview) { prints in
            var templates: [FingerPosition: FingerTemplate] = [:]
            for print in prints {
                templates[print.position] = try? await finger.run { try finger.extract(print.image, position: print.position) }
            }
            return templates
        }
        let chosen = outcome.chosen
        let added = try templates.addTemplates(user: p.user, modality: .finger, chosen.map { position, template, captures in
            NewTemplate(position: position.name, quality: Double(template.quality), meta: "{\"captures\":\(captures)}",
                        payload: Data(template.encoded()))
        }, quota: quota)
        let enrolled = zip(added, chosen).map { info, item in
            EnrolledFinger(id: info.id, position: item.0.name, quality: item.1.quality)
        }
        logger.notice("finger.enroll \(p.user): \(enrolled.count) finger(s), \(outcome.rounds) captures in \(elapsedMilliseconds(since: started)) ms")
        return FingerEnrollResult(templates: enrolled, capturesUsed: outcome.rounds)
    }

    // MARK: finger.verify / finger.identify

    /// A threshold under the floor, or liveness none, from a caller who is not an admin:
    /// refused where the call enters (CallerLimits decides).
    func checkCallerMay(_ p: FingerAuthParams, _ peer: Peer) throws {
        if case .belowFloor(let asked, let floor) = limits.callers.threshold(.finger, asked: p.threshold, isAdmin: peer.isAdmin) {
            throw RPCError.app(.permissionDenied, "threshold \(asked) is below \(floor): only an administrator may lower it",
                               hint: "leave it out, or ask for \(floor) or more", details: ["field": "threshold", "floor": .double(floor)])
        }
        if limits.callers.liveness(skipped: p.capture.liveness == LivenessLevel.none, isAdmin: peer.isAdmin) == .livenessRequired {
            throw RPCError.app(.permissionDenied, "liveness none needs an administrator",
                               hint: "leave liveness out (low)", details: ["field": "liveness"])
        }
    }

    /// The threshold a call runs with (the caller's if it may ask for it, else the configured one).
    func threshold(_ p: FingerAuthParams, _ peer: Peer) -> Double {
        switch limits.callers.threshold(.finger, asked: p.threshold, isAdmin: peer.isAdmin) {
        case .use(let t): t
        case .belowFloor(_, let floor): floor  // refused at the edge; never lower here
        }
    }

    /// Fast authentication against `references`: every improved print is extracted and ranked.
    func authenticate(_ p: FingerAuthParams, references: FingerGallery, context: CallContext,
                      admit: (@Sendable (String) throws -> Void)? = nil) async throws -> FingerAuthentication.Outcome
    {
        let finger = self.finger
        let session = FingerAuthentication(FingerCaptureSpec(p.capture), threshold: threshold(p, context.peer), startedAt: monotonicNanoseconds())
        return try await sessions.runFinger(session, camera: p.camera, finger: finger, context: context, what: "finger capture",
                                            preview: p.capture.preview, admit: admit) { prints in
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
