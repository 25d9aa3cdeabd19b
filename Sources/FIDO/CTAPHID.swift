/// CTAPHID framing (CTAP 2.1 §11.2 "USB Human Interface Device (USB HID)").
///
/// A state machine with no I/O: the transport (uhid, or the test socket) feeds it each 64-byte
/// output report and carries out the actions it returns. It owns channel allocation, message
/// reassembly from an initialization packet and up to 128 continuation packets (7609 bytes), the
/// single transaction the device runs at a time, and every CTAPHID error. CBOR and MSG messages
/// leave it as `.process`; the transport answers with `respond(…)` when the authenticator is done,
/// sending `keepalive(…)` reports meanwhile.

public enum CTAPHIDCommand: UInt8, Sendable {
    case ping = 0x01
    case msg = 0x03
    case lock = 0x04
    case initialize = 0x06
    case wink = 0x08
    case cbor = 0x10
    case cancel = 0x11
    case keepalive = 0x3b
    case error = 0x3f
}

/// CTAPHID_ERROR codes (§11.2.9.1.6).
public enum CTAPHIDError: UInt8, Sendable {
    case invalidCommand = 0x01
    case invalidParameter = 0x02
    case invalidLength = 0x03
    case invalidSequence = 0x04
    case messageTimeout = 0x05
    case channelBusy = 0x06
    case lockRequired = 0x0a
    case invalidChannel = 0x0b
    case other = 0x7f
}

/// CTAPHID_KEEPALIVE status bytes (§11.2.9.2.1).
public enum CTAPHIDKeepaliveStatus: UInt8, Sendable {
    case processing = 1
    case userPresenceNeeded = 2
}

public enum CTAPHIDAction: Sendable, Equatable {
    /// Write these 64-byte input reports, in order.
    case send([[UInt8]])
    /// Run this CBOR (or MSG) request and answer with `respond`; the channel is busy until then.
    case process(channel: UInt32, command: CTAPHIDCommand, payload: [UInt8])
    /// The host cancelled the request in progress on this channel (CTAPHID_CANCEL, or INIT
    /// resynchronising the channel): stop waiting for the user and answer KEEPALIVE_CANCEL.
    case cancel(channel: UInt32)
    /// Show the user which device this is (CTAPHID_WINK).
    case wink
}

public struct CTAPHIDState: Sendable {
    public static let reportSize = 64
    public static let initDataSize = reportSize - 7
    public static let continuationDataSize = reportSize - 5
    /// 57 bytes in the initialization packet plus 128 continuation packets of 59.
    public static let maxMessageSize = initDataSize + 128 * continuationDataSize
    public static let broadcastChannel: UInt32 = 0xffff_ffff
    /// CAPABILITY_WINK | CAPABILITY_CBOR | CAPABILITY_NMSG: CTAP1/U2F MSG is not implemented.
    public static let capabilities: UInt8 = 0x01 | 0x04 | 0x08
    /// Channels kept allocated; beyond this the oldest is forgotten (a host that lost it INITs again).
    public static let maxChannels = 256

    /// How long the device waits for the next continuation packet before MSG_TIMEOUT.
    public var transactionTimeout: Duration
    public var deviceVersion: (major: UInt8, minor: UInt8, build: UInt8)

    private var channels: [UInt32] = []
    private var nextChannel: UInt32 = 1
    private var assembly: Assembly?
    /// The channel whose CBOR/MSG request the authenticator is running.
    public private(set) var busyChannel: UInt32?

    private struct Assembly: Sendable {
        var channel: UInt32
        var command: CTAPHIDCommand
        var length: Int
        var data: [UInt8]
        var nextSequence: UInt8
        var deadline: ContinuousClock.Instant
    }

    public init(transactionTimeout: Duration = .milliseconds(500), deviceVersion: (UInt8, UInt8, UInt8) = (1, 0, 0)) {
        self.transactionTimeout = transactionTimeout
        self.deviceVersion = deviceVersion
    }

    public func isAllocated(_ channel: UInt32) -> Bool { channels.contains(channel) }

    /// Handles one output report from the host.
    public mutating func receive(_ report: [UInt8], now: ContinuousClock.Instant) -> [CTAPHIDAction] {
        var actions = expire(now: now)
        // Reports are 64 bytes; a shorter write is read as zero-padded (hidraw allows it), and
        // fewer than 5 bytes carry no channel and command to answer on.
        guard report.count >= 5 else { return actions }
        var packet = Array(report.prefix(Self.reportSize))
        if packet.count < Self.reportSize { packet += [UInt8](repeating: 0, count: Self.reportSize - packet.count) }
        let channel = UInt32(packet[0]) << 24 | UInt32(packet[1]) << 16 | UInt32(packet[2]) << 8 | UInt32(packet[3])
        if packet[4] & 0x80 != 0 {
            actions += initialization(packet, channel: channel, now: now)
        } else {
            actions += continuation(packet, channel: channel, now: now)
        }
        return actions
    }

    /// Times out a half-received message; the transport calls this periodically.
    public mutating func expire(now: ContinuousClock.Instant) -> [CTAPHIDAction] {
        guard let pending = assembly, now >= pending.deadline else { return [] }
        assembly = nil
        return [error(.messageTimeout, channel: pending.channel)]
    }

    /// The authenticator's answer to the `.process` request on `channel`; frees the channel.
    public mutating func respond(channel: UInt32, command: CTAPHIDCommand, payload: [UInt8]) -> [CTAPHIDAction] {
        guard busyChannel == channel else { return [] }  // cancelled by INIT meanwhile: drop
        busyChannel = nil
        guard payload.count <= Self.maxMessageSize else { return [error(.other, channel: channel)] }
        return [.send(Self.frame(channel: channel, command: command, payload: payload))]
    }

    /// A KEEPALIVE report for the request in progress, or nothing when none is.
    public func keepalive(_ status: CTAPHIDKeepaliveStatus) -> [CTAPHIDAction] {
        guard let channel = busyChannel else { return [] }
        return [.send(Self.frame(channel: channel, command: .keepalive, payload: [status.rawValue]))]
    }

    // MARK: Packets

    private mutating func initialization(_ packet: [UInt8], channel: UInt32, now: ContinuousClock.Instant) -> [CTAPHIDAction] {
        let rawCommand = packet[4] & 0x7f
        let length = Int(packet[5]) << 8 | Int(packet[6])
        let command = CTAPHIDCommand(rawValue: rawCommand)
        if channel == 0 { return [error(.invalidChannel, channel: channel)] }
        if command == .initialize { return initialize(packet, channel: channel, length: length) }
        guard channel != Self.broadcastChannel, isAllocated(channel) else {
            return [error(.invalidChannel, channel: channel)]
        }
        if command == .cancel {
            // No response of its own: the cancelled request answers KEEPALIVE_CANCEL.
            if assembly?.channel == channel { assembly = nil }
            return busyChannel == channel ? [.cancel(channel: channel)] : []
        }
        if let pending = assembly {
            guard pending.channel == channel else { return [error(.channelBusy, channel: channel)] }
            // A new request on the channel mid-message: the old one is abandoned.
            assembly = nil
            return [error(.invalidSequence, channel: channel)]
        }
        if busyChannel != nil { return [error(.channelBusy, channel: channel)] }
        guard let command, [.ping, .cbor, .wink].contains(command) else {
            return [error(.invalidCommand, channel: channel)]
        }
        guard length <= Self.maxMessageSize else { return [error(.invalidLength, channel: channel)] }
        let first = Array(packet[7..<7 + min(length, Self.initDataSize)])
        if first.count == length { return dispatch(channel: channel, command: command, payload: first) }
        assembly = Assembly(channel: channel, command: command, length: length, data: first, nextSequence: 0,
                            deadline: now.advanced(by: transactionTimeout))
        return []
    }

    private mutating func continuation(_ packet: [UInt8], channel: UInt32, now: ContinuousClock.Instant) -> [CTAPHIDAction] {
        // A continuation packet outside the transaction it belongs to is ignored (§11.2.4).
        guard var pending = assembly, pending.channel == channel else { return [] }
        let sequence = packet[4]
        guard sequence == pending.nextSequence else {
            assembly = nil
            return [error(.invalidSequence, channel: channel)]
        }
        let take = min(pending.length - pending.data.count, Self.continuationDataSize)
        pending.data += packet[5..<5 + take]
        pending.nextSequence += 1
        pending.deadline = now.advanced(by: transactionTimeout)
        if pending.data.count == pending.length {
            assembly = nil
            return dispatch(channel: channel, command: pending.command, payload: pending.data)
        }
        assembly = pending
        return []
    }

    private mutating func initialize(_ packet: [UInt8], channel: UInt32, length: Int) -> [CTAPHIDAction] {
        guard length == 8 else { return [error(.invalidLength, channel: channel)] }
        let nonce = Array(packet[7..<15])
        var actions: [CTAPHIDAction] = []
        let assigned: UInt32
        if channel == Self.broadcastChannel {
            assigned = allocate()
        } else {
            guard isAllocated(channel) else { return [error(.invalidChannel, channel: channel)] }
            // Resynchronise: abandon whatever this channel had in flight.
            if assembly?.channel == channel { assembly = nil }
            if busyChannel == channel {
                busyChannel = nil
                actions.append(.cancel(channel: channel))
            }
            assigned = channel
        }
        let payload = nonce + Self.bigEndian(assigned) + [2, deviceVersion.major, deviceVersion.minor, deviceVersion.build, Self.capabilities]
        actions.append(.send(Self.frame(channel: channel, command: .initialize, payload: payload)))
        return actions
    }

    private mutating func dispatch(channel: UInt32, command: CTAPHIDCommand, payload: [UInt8]) -> [CTAPHIDAction] {
        switch command {
        case .ping:
            return [.send(Self.frame(channel: channel, command: .ping, payload: payload))]
        case .wink:
            guard payload.isEmpty else { return [error(.invalidLength, channel: channel)] }
            return [.wink, .send(Self.frame(channel: channel, command: .wink, payload: []))]
        case .cbor:
            guard !payload.isEmpty else { return [error(.invalidLength, channel: channel)] }
            busyChannel = channel
            return [.process(channel: channel, command: command, payload: payload)]
        default:
            return [error(.invalidCommand, channel: channel)]
        }
    }

    private mutating func allocate() -> UInt32 {
        while nextChannel == 0 || nextChannel == Self.broadcastChannel || isAllocated(nextChannel) { nextChannel &+= 1 }
        let channel = nextChannel
        nextChannel &+= 1
        channels.append(channel)
        if channels.count > Self.maxChannels { channels.removeFirst() }
        return channel
    }

    private func error(_ code: CTAPHIDError, channel: UInt32) -> CTAPHIDAction {
        .send(Self.frame(channel: channel, command: .error, payload: [code.rawValue]))
    }

    // MARK: Framing

    /// Splits a message into an initialization packet and continuation packets, zero-padded.
    public static func frame(channel: UInt32, command: CTAPHIDCommand, payload: [UInt8]) -> [[UInt8]] {
        precondition(payload.count <= maxMessageSize, "a CTAPHID message is at most 7609 bytes")
        let header = bigEndian(channel)
        var reports: [[UInt8]] = []
        var first = header + [0x80 | command.rawValue, UInt8(payload.count >> 8), UInt8(payload.count & 0xff)]
        first += payload.prefix(initDataSize)
        reports.append(padded(first))
        var offset = min(payload.count, initDataSize)
        var sequence: UInt8 = 0
        while offset < payload.count {
            let end = min(offset + continuationDataSize, payload.count)
            reports.append(padded(header + [sequence] + payload[offset..<end]))
            offset = end
            sequence += 1
        }
        return reports
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }

    private static func padded(_ report: [UInt8]) -> [UInt8] {
        report + [UInt8](repeating: 0, count: reportSize - report.count)
    }
}
