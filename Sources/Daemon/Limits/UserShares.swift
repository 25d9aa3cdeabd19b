import BiometricCore
import BiometricProtocol
import Synchronization

/// The caps on what one uid may hold at once (SPEC §4 "Limits"). The socket is open to every
/// local account, `nobody` included, so each of these is what stops one account's flood from
/// taking the daemon away from the others. Root and the admin group get wider caps, not none.
public struct ShareRules: Sendable, Equatable {
    /// Connections one ordinary uid may hold.
    public var connectionsPerUser = 32
    /// Connections one admin uid (root, the admin group) may hold.
    public var connectionsAdmin = 256
    /// Connections of all non-admin uids together; the rest of `connectionsTotal` stays for admins,
    /// so many accounts together cannot lock root out either.
    public var connectionsTotal = 1024 - 64
    /// Calls running at once on one connection (answered immediately ones, like daemon.status, do not count).
    public var callsPerConnection = 16
    /// Calls running at once over all of one uid's connections.
    public var callsPerUser = 64
    /// Bytes received from one uid and not yet parsed into lines (each line is ≤ 1 MiB, SPEC §3).
    public var bufferedBytesPerUser = 8 << 20
    /// Expensive jobs (Argon2id, image decoding) one uid may have waiting in a fair queue.
    public var queuedPerUser = 16

    public init() {}

    /// Connections reserved for admins above what all other uids together may hold.
    public var adminReserve: Int { max(8, connectionsTotal / 8) }

    /// The total derived from the process's descriptor limit: every connection is a descriptor,
    /// and cameras, models, the database and the journal need some of their own.
    public static func connectionsTotal(descriptorLimit: Int) -> Int {
        max(16, descriptorLimit - 64)
    }
}

/// Which cap refused something: `data.limit` of error 1009 (limit_reached).
public enum ShareLimit: String, Sendable, Equatable, CaseIterable {
    case connectionsPerUser = "connections_per_user"
    case connectionsTotal = "connections_total"
    case callsPerConnection = "calls_per_connection"
    case callsPerUser = "calls_per_user"
    case bufferedBytesPerUser = "buffered_bytes_per_user"
    case queuePerUser = "queue_per_user"
}

/// The decision on one request for a share: a typed value, decided in one place (`ShareLedger`).
public enum Admission: Sendable, Equatable {
    case admitted
    case refused(ShareLimit, max: Int)

    /// The error a refused client sees: 1009 with the limit and its value; retrying later may work.
    public var error: RPCError? {
        guard case .refused(let limit, let max) = self else { return nil }
        return RPCError.app(.limitReached, Self.message(limit, max),
                            hint: "close idle connections or wait for running calls; an administrator can raise the limit in biometricd.conf",
                            details: ["limit": .string(limit.rawValue), "max": .int(Int64(max))])
    }

    static func message(_ limit: ShareLimit, _ max: Int) -> String {
        switch limit {
        case .connectionsPerUser: "too many connections from this user (at most \(max))"
        case .connectionsTotal: "the daemon holds as many connections as it can (\(max)); try again shortly"
        case .callsPerConnection: "too many calls running on this connection (at most \(max))"
        case .callsPerUser: "too many calls running for this user (at most \(max))"
        case .bufferedBytesPerUser: "too much unparsed input from this user (at most \(max) bytes); the connection is closed"
        case .queuePerUser: "too many expensive calls waiting for this user (at most \(max))"
        }
    }
}

/// What every uid holds now, and the rules: each `admit…` answers with an `Admission` and, when
/// admitted, books the share; `release…` gives it back. A value type, so each branch is unit tested;
/// `UserShares` puts it behind a lock for the server.
public struct ShareLedger: Sendable, Equatable {
    public struct Held: Sendable, Equatable {
        public var connections = 0
        public var calls = 0
        public var bufferedBytes = 0
        var isEmpty: Bool { connections == 0 && calls == 0 && bufferedBytes == 0 }
    }

    public let rules: ShareRules
    public private(set) var held: [UInt32: Held] = [:]
    public private(set) var connections = 0
    public private(set) var adminConnections = 0

    public init(rules: ShareRules) { self.rules = rules }

    public mutating func admitConnection(uid: UInt32, isAdmin: Bool) -> Admission {
        let mine = held[uid]?.connections ?? 0
        if isAdmin {
            guard mine < rules.connectionsAdmin else { return .refused(.connectionsPerUser, max: rules.connectionsAdmin) }
            guard connections < rules.connectionsTotal else { return .refused(.connectionsTotal, max: rules.connectionsTotal) }
            adminConnections += 1
        } else {
            guard mine < rules.connectionsPerUser else { return .refused(.connectionsPerUser, max: rules.connectionsPerUser) }
            let othersLimit = max(1, rules.connectionsTotal - rules.adminReserve)
            guard connections - adminConnections < othersLimit else { return .refused(.connectionsTotal, max: othersLimit) }
        }
        connections += 1
        held[uid, default: Held()].connections += 1
        return .admitted
    }

    public mutating func releaseConnection(uid: UInt32, isAdmin: Bool) {
        guard var h = held[uid], h.connections > 0 else { return }
        h.connections -= 1
        connections -= 1
        if isAdmin { adminConnections -= 1 }
        store(h, uid)
    }

    /// A call about to run on a connection that already runs `onConnection` calls.
    public mutating func admitCall(uid: UInt32, isAdmin: Bool, onConnection: Int) -> Admission {
        let perConnection = isAdmin ? rules.callsPerConnection * 4 : rules.callsPerConnection
        let perUser = isAdmin ? rules.callsPerUser * 4 : rules.callsPerUser
        guard onConnection < perConnection else { return .refused(.callsPerConnection, max: perConnection) }
        guard (held[uid]?.calls ?? 0) < perUser else { return .refused(.callsPerUser, max: perUser) }
        held[uid, default: Held()].calls += 1
        return .admitted
    }

    public mutating func releaseCall(uid: UInt32) {
        guard var h = held[uid], h.calls > 0 else { return }
        h.calls -= 1
        store(h, uid)
    }

    /// A connection of `uid` now holds `delta` more (or, negative, fewer) unparsed bytes.
    public mutating func chargeBytes(uid: UInt32, isAdmin: Bool, delta: Int) -> Admission {
        var h = held[uid] ?? Held()
        let limit = isAdmin ? rules.bufferedBytesPerUser * 4 : rules.bufferedBytesPerUser
        if delta > 0, h.bufferedBytes + delta > limit { return .refused(.bufferedBytesPerUser, max: limit) }
        h.bufferedBytes = max(0, h.bufferedBytes + delta)
        store(h, uid)
        return .admitted
    }

    private mutating func store(_ h: Held, _ uid: UInt32) {
        if h.isEmpty { held[uid] = nil } else { held[uid] = h }
    }
}

/// The ledger behind a lock, shared by the server's connections. A cap reached is logged once
/// a minute at most (with the number refused since), not once per refusal: a flood must not
/// become a flood of the journal.
final class UserShares: Sendable {
    private let ledger: Mutex<ShareLedger>
    private let throttle = LogThrottle<ShareLimit>()
    private let warn: @Sendable (String) -> Void

    init(rules: ShareRules, warn: @escaping @Sendable (String) -> Void) {
        ledger = Mutex(ShareLedger(rules: rules))
        self.warn = warn
    }

    func admitConnection(_ peer: Peer) -> Admission {
        noted(ledger.withLock { $0.admitConnection(uid: peer.uid, isAdmin: peer.isAdmin) }, peer)
    }
    func releaseConnection(_ peer: Peer) {
        ledger.withLock { $0.releaseConnection(uid: peer.uid, isAdmin: peer.isAdmin) }
    }
    func admitCall(_ peer: Peer, onConnection: Int) -> Admission {
        noted(ledger.withLock { $0.admitCall(uid: peer.uid, isAdmin: peer.isAdmin, onConnection: onConnection) }, peer)
    }
    func releaseCall(_ peer: Peer) { ledger.withLock { $0.releaseCall(uid: peer.uid) } }
    func chargeBytes(_ peer: Peer, delta: Int) -> Admission {
        noted(ledger.withLock { $0.chargeBytes(uid: peer.uid, isAdmin: peer.isAdmin, delta: delta) }, peer)
    }

    @discardableResult
    func noted(_ admission: Admission, _ peer: Peer) -> Admission {
        guard case .refused(let limit, let max) = admission else { return admission }
        if let suppressed = throttle.admit(limit) {
            warn("limit reached: \(limit.rawValue) (\(max)) by uid \(peer.uid)"
                 + (suppressed > 0 ? "; \(suppressed) more refused since the last message" : "")
                 + "; logged at most once a minute")
        }
        return admission
    }
}
