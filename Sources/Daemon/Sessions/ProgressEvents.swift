import BiometricProtocol

/// A session's progress events: ~15 per second at most, but a change of phase (`key`) always
/// goes out at once.
struct ProgressEvents {
    let context: CallContext
    private var lastNs: UInt64 = 0
    private var lastKey: String?
    static let intervalNs: UInt64 = 66_000_000

    init(context: CallContext) {
        self.context = context
    }

    mutating func send<E: EventPayload>(_ event: @autoclosure () -> E, at now: UInt64, key: String) {
        guard key != lastKey || now &- lastNs >= Self.intervalNs else { return }
        lastNs = now
        lastKey = key
        context.emit(event())
    }
}
