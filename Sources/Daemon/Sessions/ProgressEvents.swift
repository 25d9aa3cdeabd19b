import BiometricCore
import BiometricProtocol

/// A session's progress events: ~15 per second at most, but a change of phase (`key`) always
/// goes out at once. Each carries its frame's size; while the session's preview is on, one
/// event per preview interval also carries the downscaled frame (and goes out even when the
/// plain throttle would hold it, so the preview keeps its rate).
struct ProgressEvents {
    let context: CallContext
    private var lastNs: UInt64 = 0
    private var lastKey: String?
    private var preview: PreviewSchedule?
    static let intervalNs: UInt64 = 66_000_000

    init(context: CallContext, preview: PreviewRequest? = nil) {
        self.context = context
        self.preview = preview.map(PreviewSchedule.init)
    }

    /// `render` makes the preview of `frame` at a width; it is called only when one is due, so
    /// with the preview off the frame is never touched here.
    mutating func send<E: FrameProgressEvent>(_ event: @autoclosure () -> E, frame: Frame, key: String,
                                              render: (Frame, Int) throws -> FramePreview) {
        let now = frame.timestampNs
        let previewDue = preview?.isDue(at: now) ?? false
        guard previewDue || key != lastKey || now &- lastNs >= Self.intervalNs else { return }
        lastNs = now
        lastKey = key
        var e = event()
        e.frame = FrameSize(width: frame.width, height: frame.height)
        if previewDue, let width = preview?.width {
            preview?.taken(at: now)
            // An encoding failure (out of memory) costs the preview of this frame, never the session.
            e.preview = try? render(frame, width)
        }
        context.emit(e)
    }
}

/// When a session's next preview is due: every `1/fps` seconds of frame time, kept on its grid so
/// frames that arrive a little late do not slow the rate (at 30 frames/s and 5 previews/s, exactly
/// every sixth frame on average), and restarted from now after a stall.
struct PreviewSchedule: Equatable {
    let intervalNs: UInt64
    let width: Int
    private(set) var nextNs: UInt64?

    init(_ request: PreviewRequest) {
        intervalNs = request.intervalNs
        width = PreviewRequest.width(request.width)
    }

    func isDue(at now: UInt64) -> Bool { nextNs.map { now >= $0 } ?? true }

    mutating func taken(at now: UInt64) {
        let next = (nextNs ?? now) &+ intervalNs
        nextNs = next > now ? next : now &+ intervalNs
    }
}
