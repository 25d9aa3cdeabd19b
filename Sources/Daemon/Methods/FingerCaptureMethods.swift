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
        let evidence = try await leases.runFinger(session, camera: p.camera, finger: finger, context: context, what: "finger capture",
                                                    preview: p.capture.preview) { _ in
            throw RPCError.internal("finger.capture asks for no prints")
        }
        let finger = self.finger
        var fingers: [CapturedFinger] = []
        let templates = try await finger.batch {
            var templates: [FingerPosition: FingerTemplate] = [:]
            for print in evidence.prints {
                templates[print.position] = try? await finger.run { try finger.extract(print.image, position: print.position) }
            }
            return templates
        }
        for print in evidence.prints.sorted(by: { $0.position.isoCode < $1.position.isoCode }) {
            let template = templates[print.position]
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
        let outcome = try await leases.runFinger(session, camera: p.camera, finger: finger, context: context, what: "finger.enroll",
                                                   preview: p.capture.preview) { prints in
            try await finger.batch {
                var templates: [FingerPosition: FingerTemplate] = [:]
                for print in prints {
                    templates[print.position] = try? await finger.run { try finger.extract(print.image, position: print.position) }
                }
                return templates
            }
        }
        let chosen = outcome.chosen
        let added = try templates.addTemplates(user: p.user, modality: .finger, chosen.map { position, template, captures in
            NewTemplate(position: position.name, quality: Double(template.quality), meta: TemplateMeta(captures: captures, source: .capture),
                        payload: Data(template.encoded()))
        }, quota: quota)
        let enrolled = zip(added, chosen).map { info, item in
            EnrolledFinger(id: info.id, position: item.0.name, quality: item.1.quality)
        }
        logger.notice("finger.enroll \(LogText(p.user)): \(enrolled.count) finger(s), \(outcome.rounds) captures in \(elapsedMilliseconds(since: started)) ms")
        return FingerEnrollResult(templates: enrolled, capturesUsed: outcome.rounds)
    }

    // MARK: finger.verify / finger.identify

    /// The threshold a call runs with (the caller's if it may ask for it, else the configured one).
    func threshold(_ p: FingerAuthParams, _ peer: Peer) -> Double {
        switch limits.callers.threshold(.finger, asked: p.threshold, isAdmin: peer.isAdmin) {
        case .use(let t): t
        case .belowFloor(_, let floor): floor  // refused by the table (the floors); never lower here
        }
    }

    /// Fast authentication against `references`: the improved prints are extracted and ranked, best
    /// quality first. With `stopAtMatch` (finger.verify: one user's fingers, where any finger at
    /// the threshold decides) the rest of a frame's prints are not extracted once one matches —
    /// learned minutiae cost ≈ 0.3–1 s a print on one core (Docs/finger-print.md, "Speed"), so a
    /// genuine verify usually pays for one. Identification ranks every print (another finger could
    /// name another user).
    func authenticate(_ p: FingerAuthParams, references: FingerGallery, context: CallContext, stopAtMatch: Bool = false,
                      admit: (@Sendable (String) throws -> Void)? = nil) async throws -> FingerAuthentication.Outcome
    {
        let finger = self.finger
        let threshold = threshold(p, context.peer)
        let started = monotonicNanoseconds()
        let session = FingerAuthentication(FingerCaptureSpec(p.capture), threshold: threshold, startedAt: started)
        // Past the call's time-out, a frame's remaining prints are not extracted: the call then ends
        // within its time-out plus one print's extraction, well inside the hard deadline's margin.
        let endsAt = started + UInt64(max(0, session.timeLimitMs)) * 1_000_000
        return try await leases.runFinger(session, camera: p.camera, finger: finger, context: context, what: "finger capture",
                                            preview: p.capture.preview, admit: admit) { prints in
            try await finger.batch {
                var matches: [FingerPosition: [FingerMatch]] = [:]
                for print in prints.sorted(by: { $0.quality > $1.quality }) {
                    if !matches.isEmpty, monotonicNanoseconds() >= endsAt { break }
                    guard let ranked = try? await finger.run({
                        finger.rank(try finger.probes(print.image, position: print.position, for: references.sources), among: references,
                                    scale: .fromRidges)
                    }) else { continue }
                    matches[print.position] = ranked.map {
                        FingerMatch(user: $0.reference.user, templateID: $0.reference.templateID, position: $0.reference.position, score: $0.score)
                    }
                    if stopAtMatch, let top = ranked.first, top.score >= threshold { break }
                }
                return matches
            }
        }
    }
}
