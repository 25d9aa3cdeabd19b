import Foundation

/// Runs a CTAP2 authenticator behind CTAPHID for one report stream: feeds output reports to the
/// framing state machine, runs CBOR requests as tasks (one at a time), sends KEEPALIVE every
/// 100 ms while one runs (UPNEEDED while the user is being asked), cancels on CTAPHID_CANCEL, and
/// times out half-sent messages. The transport (uhid, or the test socket) only moves reports.
public actor CTAPHIDDevice {
    public typealias Output = @Sendable ([UInt8]) -> Void

    private var state: CTAPHIDState
    private let authenticator: CTAP2Authenticator
    private let output: Output
    private var running: (channel: UInt32, generation: Int, task: Task<Void, Never>)?
    /// The newest request task, even one whose answer is no longer wanted: the next request waits
    /// for it, so two requests never run inside the authenticator at once.
    private var lastTask: Task<Void, Never>?
    private var generation = 0
    private var ticker: Task<Void, Never>?
    /// WINK requests seen (the daemon may show them; counted for tests).
    public private(set) var winks = 0

    public init(authenticator: CTAP2Authenticator, transactionTimeout: Duration = .milliseconds(500), output: @escaping Output) {
        self.state = CTAPHIDState(transactionTimeout: transactionTimeout)
        self.authenticator = authenticator
        self.output = output
    }

    /// Starts the keepalive and timeout ticker (every 100 ms, as CTAP 2.1 §11.2.9.2.1 asks).
    public func start() {
        guard ticker == nil else { return }
        ticker = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(100))
                await self?.tick()
            }
        }
    }

    public func stop() {
        ticker?.cancel()
        ticker = nil
        running?.task.cancel()
        running = nil
    }

    /// One output report from the host.
    public func receive(_ report: [UInt8]) {
        perform(state.receive(report, now: .now))
    }

    private func tick() async {
        perform(state.expire(now: .now))
        guard running != nil else { return }
        let waiting = await authenticator.isWaitingForUser
        perform(state.keepalive(waiting ? .userPresenceNeeded : .processing))
    }

    private func perform(_ actions: [CTAPHIDAction]) {
        for action in actions {
            switch action {
            case .send(let reports):
                for report in reports { output(report) }
            case .process(let channel, let command, let payload):
                generation += 1
                let mine = generation
                let authenticator = self.authenticator
                let previous = lastTask
                let task = Task { [weak self] in
                    await previous?.value
                    let response = await authenticator.handle(payload)
                    await self?.finish(channel: channel, command: command, generation: mine, response: response)
                }
                running = (channel, mine, task)
                lastTask = task
            case .cancel(let channel):
                guard let current = running, current.channel == channel else { continue }
                current.task.cancel()
                // INIT resynchronised the channel: the request's answer is no longer wanted.
                if state.busyChannel != channel { running = nil }
            case .wink:
                winks += 1
            }
        }
    }

    private func finish(channel: UInt32, command: CTAPHIDCommand, generation: Int, response: [UInt8]) {
        guard running?.generation == generation else { return }
        running = nil
        perform(state.respond(channel: channel, command: command, payload: response))
    }
}

/// Which transport the FIDO device uses, decided in one place: the kernel's uhid normally, the
/// test socket only in a test instance — never in a daemon started as a system service (root,
/// the system paths, or systemd's environment), where a socket would let any process that can
/// reach it act as the USB host.
public enum FIDOTransportChoice: Sendable, Equatable {
    case uhid
    case testSocket(path: String)

    public enum Refusal: Error, Sendable, Equatable {
        case testSocketInSystemService
    }

    public static func decide(testSocketPath: String?, systemService: Bool) throws(Refusal) -> FIDOTransportChoice {
        guard let testSocketPath else { return .uhid }
        guard !systemService else { throw .testSocketInSystemService }
        return .testSocket(path: testSocketPath)
    }

    /// The environment systemd gives a service it starts.
    public static func startedBySystemd(_ environment: [String: String]) -> Bool {
        environment["INVOCATION_ID"] != nil || environment["NOTIFY_SOCKET"] != nil || environment["LISTEN_FDS"] != nil
    }
}
