import BiometricCamera
import BiometricFinger
import BiometricProtocol
import BiometricStore
import CVision
import Foundation

/// A finger capture request, resolved: which fingers to expect and when to give up.
struct FingerCaptureSpec: Sendable {
    var options: FingerCaptureOptions
    var expected: [FingerPosition]
    var qualityThreshold: Int
    var timeoutMs: Int

    init(_ s: FingerCaptureSettings) {
        let hand = Hand(rawValue: s.hand ?? "right") ?? .right
        let mode = CaptureMode(rawValue: s.mode ?? "fingers") ?? .fingers
        let amputated = Set((s.amputated ?? []).compactMap(Digit.init(rawValue:)))
        options = FingerCaptureOptions(mode: mode, hand: hand, amputated: amputated, distance: nil,
                                       liveness: LivenessLevel(rawValue: s.liveness ?? "low") ?? .low)
        expected = options.expectedDigits.map { FingerPosition(hand, $0) }
        qualityThreshold = s.qualityThreshold ?? 40
        timeoutMs = (s.timeoutS ?? 10) * 1000
    }

    var checksLiveness: Bool { options.liveness != .none }
}

/// What the capture loop hands to a decision: the best prints so far (each at or above the
/// quality threshold) and the liveness verdict of the frames seen.
struct FingerEvidence: Sendable {
    var prints: [CapturedPrint]
    var liveness: LivenessVerdict
    var frames: Int
}

/// The resolution finger sessions ask for: ridges need pixels (Docs/finger-camera.md).
let fingerCaptureRequest = CaptureRequest(width: 1280, height: 720, fps: 30)

extension Daemon {
    /// Runs frames through the finger analyser until `decide` returns a value or the deadline
    /// passes. `decide` is asked after every frame on which all expected fingers were usable.
    func fingerSession<T: Sendable>(
        _ spec: FingerCaptureSpec, capture: CaptureSession, lease: CameraLease, context: CallContext, progress: @escaping @Sendable () -> (Int, Int) = { (0, 0) },
        decide: @escaping @Sendable (FingerEvidence) async throws -> T?
    ) async throws -> T {
        var options = spec.options
        options.distance = finger.optics(for: lease.device)
        let analyser = UncheckedSendable(FingerCapture(options: options))
        let finger = self.finger
        let deadline = monotonicNanoseconds() + UInt64(spec.timeoutMs) * 1_000_000
        return try await withDeadline(milliseconds: spec.timeoutMs + 3000, "finger capture", watching: capture) {
            var throttle = EventThrottle()
            var sawFingers = false
            var frames = 0
            var lastFeedback = DistanceFeedback.noFingers
            var lastQualities: [Int] = []
            while true {
                let frame = try await capture.frames.next()
                frames += 1
                let analysis = try await finger.run { analyser.value.analyse(frame) }
                lastFeedback = analysis.feedback
                if !analysis.fingers.isEmpty {
                    sawFingers = true
                    lastQualities = analysis.fingers.map(\.quality)
                }
                let (captured, needed) = progress()
                if throttle.allow(now: frame.timestampNs, key: "\(analysis.feedback)\(analysis.fingers.count)\(captured)") {
                    context.emit("finger.frame", analysis.eventFields(captured: captured, needed: needed))
                }
                let usable = analyser.value.bestPrints().filter { $0.quality >= spec.qualityThreshold }
                if Set(usable.map(\.position)).isSuperset(of: spec.expected) {
                    let evidence = FingerEvidence(prints: usable, liveness: analyser.value.livenessVerdict(), frames: frames)
                    if let result = try await decide(evidence) { return result }
                }
                if monotonicNanoseconds() >= deadline {
                    // Partial captures still count at the end (a finger may stay below par).
                    if !usable.isEmpty {
                        let evidence = FingerEvidence(prints: usable, liveness: analyser.value.livenessVerdict(), frames: frames)
                        if let result = try await decide(evidence) { return result }
                    }
                    guard sawFingers else {
                        throw RPCError.app(.timeout, "no fingers seen within \(spec.timeoutMs / 1000) s",
                                           hint: "hold your hand in front of the camera, fingers together and pointing up")
                    }
                    throw RPCError.app(.badCapture, "no usable fingers found (best quality \(lastQualities.max() ?? 0), needed \(spec.qualityThreshold))",
                                       hint: ProgressGuidance.finger(lastFeedback),
                                       details: ["feedback": .string(lastFeedback.rawValue)])
                }
            }
        }
    }

    /// Refuses a fake finger when liveness was asked for.
    static func checkLiveness(_ spec: FingerCaptureSpec, _ verdict: LivenessVerdict) throws {
        guard spec.checksLiveness, verdict == .fake else { return }
        throw RPCError.app(.spoofDetected, "the fingers look like a print or a screen, not a live hand",
                           hint: "present your real fingers to the camera", details: ["liveness": "fake", "spoof_attempt": true])
    }

    // MARK: finger.capture

    func fingerCapture(_ p: FingerCaptureRequest, _ context: CallContext) async throws -> FingerCaptureResult {
        let started = monotonicNanoseconds()
        let spec = FingerCaptureSpec(p.capture)
        let format = p.imageFormat ?? "none"
        let evidence: FingerEvidence = try await withCameraSession(p.camera, request: fingerCaptureRequest) { capture, lease in
            try await fingerSession(spec, capture: capture, lease: lease, context: context) { evidence in
                // With liveness asked for, wait (until the deadline) for a verdict.
                if spec.checksLiveness && evidence.liveness == .noDecision
                    && monotonicNanoseconds() < started + UInt64(spec.timeoutMs) * 1_000_000 {
                    return nil
                }
                return evidence
            }
        }
        let finger = self.finger
        var fingers: [CapturedFinger] = []
        for print in evidence.prints.sorted(by: { $0.position.isoCode < $1.position.isoCode }) {
            let template = try? await finger.run { try finger.extract(print.image, position: print.position) }
            var image: String?
            if format != "none" { image = try Self.encodePrint(print.image, format: format).base64EncodedString() }
            fingers.append(CapturedFinger(position: print.position.name, quality: print.quality, box: print.box.wire,
                                          image: image, template: template.map { Data($0.encoded()).base64EncodedString() },
                                          minutiae: template?.minutiae.count))
        }
        return FingerCaptureResult(fingers: fingers, liveness: spec.checksLiveness ? evidence.liveness.rawValue : "no_decision",
                                   imageFormat: format == "none" ? nil : format,
                                   durationMs: Int((monotonicNanoseconds() - started) / 1_000_000))
    }

    /// A print as PNG or JPEG (quality 95: ridges survive; WSQ is not offered, see Docs).
    static func encodePrint(_ image: FingerprintImage, format: String) throws -> Data {
        var out: UnsafeMutablePointer<UInt8>?
        var length = 0
        let status = image.pixels.withUnsafeBufferPointer { p in
            format == "jpeg"
                ? cvis_encode_jpeg(p.baseAddress, Int32(image.width), Int32(image.height), 1, 95, &out, &length)
                : cvis_encode_png(p.baseAddress, Int32(image.width), Int32(image.height), 1, &out, &length)
        }
        guard status == CVIS_OK, let out else {
            throw RPCError.internal("print image encoding failed: \(String(cString: cvis_last_error()))")
        }
        defer { cvis_free(out) }
        return Data(bytes: out, count: length)
    }

    // MARK: finger.enroll

    func fingerEnroll(_ p: FingerEnrollParams, _ context: CallContext) async throws -> FingerEnrollResult {
        let started = monotonicNanoseconds()
        let spec = FingerCaptureSpec(p.capture)
        let rounds = p.captures ?? 3
        let finger = self.finger
        let done = UncheckedSendable(Counter())
        // captures[position] = one template per round.
        let captures: [FingerPosition: [FingerTemplate]] = try await withCameraSession(p.camera, request: fingerCaptureRequest) { capture, lease in
            var all: [FingerPosition: [FingerTemplate]] = [:]
            for _ in 0..<rounds {
                let round: [FingerPosition: FingerTemplate] = try await fingerSession(
                    spec, capture: capture, lease: lease, context: context, progress: { (done.value.count, rounds) }
                ) { evidence in
                    try Self.checkLiveness(spec, evidence.liveness)
                    if spec.checksLiveness && evidence.liveness == .noDecision { return nil }
                    var templates: [FingerPosition: FingerTemplate] = [:]
                    for print in evidence.prints {
                        templates[print.position] = try? await finger.run { try finger.extract(print.image, position: print.position) }
                    }
                    // Every expected finger must give a template, else keep capturing.
                    return Set(templates.keys).isSuperset(of: spec.expected) ? templates : nil
                }
                for (position, template) in round { all[position, default: []].append(template) }
                done.value.count += 1
            }
            return all
        }
        // Per finger keep the capture that agrees best with the others (then the best quality).
        var enrolled: [EnrolledFinger] = []
        for position in spec.expected {
            guard let candidates = captures[position], !candidates.isEmpty else { continue }
            let scored = candidates.enumerated().map { i, t in
                (t, candidates.enumerated().filter { $0.offset != i }.map { finger.matcher.score(probe: t, reference: $0.element) }.reduce(0, +))
            }
            let best = scored.max { ($0.1, $0.0.quality) < ($1.1, $1.0.quality) }!.0
            let info = try store.addTemplate(user: p.user, modality: .finger, position: position.name, quality: Double(best.quality),
                                             meta: "{\"captures\":\(candidates.count)}", payload: Data(best.encoded()))
            enrolled.append(EnrolledFinger(id: info.id, position: position.name, quality: best.quality))
        }
        finger.invalidateGallery()
        logger.notice("finger.enroll \(p.user): \(enrolled.count) finger(s), \(rounds) captures in \((monotonicNanoseconds() - started) / 1_000_000) ms")
        return FingerEnrollResult(templates: enrolled, capturesUsed: rounds)
    }

    // MARK: finger.verify / finger.identify

    /// Fast authentication: keep capturing, extract each finger when its print improves, and
    /// match it until a match or the deadline.
    func fingerAuthenticate(_ p: FingerAuthParams, references: FingerService.FingerGallery, context: CallContext)
        async throws -> FingerAuthOutcome
    {
        let spec = FingerCaptureSpec(p.capture)
        let threshold = p.threshold ?? 48
        let finger = self.finger
        let state = UncheckedSendable(AuthState())
        return try await withCameraSession(p.camera, request: fingerCaptureRequest) { capture, lease in
            do {
                return try await fingerSession(spec, capture: capture, lease: lease, context: context) { evidence in
                    try Self.checkLiveness(spec, evidence.liveness)
                    for print in evidence.prints where print.quality >= (state.value.extractedQuality[print.position] ?? -100) + 5 {
                        state.value.extractedQuality[print.position] = print.quality
                        guard let ranked = try? await finger.run({
                            finger.rank(try finger.extract(print.image, position: print.position), among: references)
                        }) else { continue }
                        state.value.captures += 1
                        for (reference, score) in ranked where score > state.value.bestPerUser[reference.user] ?? -1 {
                            state.value.bestPerUser[reference.user] = score
                        }
                        if let (reference, score) = ranked.first, score > state.value.score {
                            (state.value.score, state.value.reference, state.value.position) = (score, reference, print.position)
                        }
                    }
                    guard state.value.score >= threshold else { return nil }
                    if spec.checksLiveness && evidence.liveness != .live { return nil }
                    return FingerAuthOutcome(state.value, liveness: evidence.liveness, matched: true)
                }
            } catch let error as RPCError where error.errorReason == .badCapture && state.value.captures > 0 {
                // Prints were matched but none well enough: a negative match is a result.
                return FingerAuthOutcome(state.value, liveness: .noDecision, matched: false)
            } catch let error as RPCError where error.errorReason == .timeout && state.value.captures > 0 {
                return FingerAuthOutcome(state.value, liveness: .noDecision, matched: false)
            }
        }
    }
}

/// How a finger verify or identify ended.
struct FingerAuthOutcome: Sendable {
    var score: Double
    var best: FingerService.FingerReference?
    var position: FingerPosition?
    var candidates: [Candidate]
    var liveness: LivenessVerdict
    var captures: Int
    var matched: Bool

    init(_ state: AuthState, liveness: LivenessVerdict, matched: Bool) {
        (score, best, position, candidates, captures) = (state.score, state.reference, state.position, state.candidates, state.captures)
        self.liveness = liveness
        self.matched = matched
    }
}

/// Mutable state of one authentication, touched only by its own capture loop.
final class AuthState {
    var score = 0.0
    var reference: FingerService.FingerReference?
    var position: FingerPosition?
    var captures = 0
    var extractedQuality: [FingerPosition: Int] = [:]
    /// Best score per user over all probes (identify's candidates).
    var bestPerUser: [String: Double] = [:]

    /// The best five users, best first.
    var candidates: [Candidate] {
        bestPerUser.map { Candidate(user: $0.key, score: $0.value) }
            .sorted { $0.score != $1.score ? $0.score > $1.score : $0.user < $1.user }
            .prefix(5).map { $0 }
    }
}

final class Counter {
    var count = 0
}

extension FingerBox {
    var wire: FingerBoxWire {
        FingerBoxWire(x: Int(x.rounded()), y: Int(y.rounded()), width: Int(width.rounded()), height: Int(height.rounded()),
                      angle: (angle * 10).rounded() / 10)
    }
}

extension FingerFrameAnalysis {
    /// The SPEC §5 finger.frame fields.
    func eventFields(captured: Int, needed: Int) -> [String: JSONValue] {
        let r = distanceRange
        return [
            "fingers": .array(fingers.map { f in
                let b = f.box.wire
                return .object([
                    "position": .string(f.position.name),
                    "box": .object(["x": .int(Int64(b.x)), "y": .int(Int64(b.y)), "width": .int(Int64(b.width)), "height": .int(Int64(b.height))]),
                    "angle": .double(b.angle),
                    "quality": .string(f.level.rawValue),
                ])
            }),
            "distance": distance.map { .double(($0 * 1000).rounded() / 1000) } ?? .null,
            "distance_range": .object(["min": .double(r.min), "optimal_min": .double(r.optimalMin),
                                       "optimal_max": .double(r.optimalMax), "max": .double(r.max)]),
            "feedback": .string(feedback.rawValue),
            "frames_captured": .int(Int64(captured)),
            "frames_needed": .int(Int64(needed)),
        ]
    }
}

enum ProgressGuidance {
    static func finger(_ feedback: DistanceFeedback) -> String {
        switch feedback {
        case .noFingers: "hold your fingers in front of the camera"
        case .tooClose: "move your hand back from the camera"
        case .tooFar: "move your hand closer to the camera"
        case .optimal: "hold still, with your fingers in focus and well lit"
        }
    }
}
