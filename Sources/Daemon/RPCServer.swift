import BiometricProtocol
import Foundation
import Logging
import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// glibc's `struct ucred`, as SO_PEERCRED fills it.
struct PeerCredentials: Sendable {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
}

/// The Unix-socket JSON-RPC server: one event loop for all connections (nothing on it blocks),
/// each call in its own task. Every connection, call and unparsed byte is booked against its
/// uid's share (`UserShares`); a connection over its uid's cap is answered 1009 and closed.
final class RPCServer: Sendable {
    private let group: MultiThreadedEventLoopGroup
    private let methods: MethodTable
    private let policy: AccessPolicy
    let shares: UserShares
    private let logger: Logger
    private let connections = Mutex<[ObjectIdentifier: ClientConnection]>([:])
    private let serverChannel = Mutex<(any Channel)?>(nil)

    init(methods: MethodTable, policy: AccessPolicy, shares: UserShares, logger: Logger) {
        self.group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        self.methods = methods
        self.policy = policy
        self.shares = shares
        self.logger = logger
    }

    /// How long accepting pauses after accept(2) failed (EMFILE, ENFILE, ENOBUFS): without it the
    /// listening socket stays readable and the loop spins on the failing accept, serving nobody.
    /// Connections already open are served meanwhile; new ones wait in the backlog.
    static let acceptBackoff = TimeAmount.milliseconds(200)

    /// Binds `path` (replacing a stale socket file) or adopts systemd's socket `fd`.
    func start(path: String, activatedFD: Int32?) async throws {
        let logger = self.logger
        let acceptFailures = LogThrottle<String>()
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(AcceptBackoffHandler { error in
                        // Logged at most once a minute: an exhausted descriptor table fails every accept.
                        if let unlogged = acceptFailures.admit("accept") {
                            logger.warning("accept failed (\(error)); pausing accepts \(Self.acceptBackoff.nanoseconds / 1_000_000) ms at a time, open connections are still served; \(unlogged) more failed since the last message; logged at most once a minute")
                        }
                        return Self.acceptBackoff
                    })
                }
            }
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 256 * 1024, high: 1024 * 1024))
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    let meter = InputMeter()
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineDecoder(meter: meter)))
                    try channel.pipeline.syncOperations.addHandler(ConnectionHandler(server: self, meter: meter))
                }
            }
        let channel: any Channel
        if let fd = activatedFD {
            channel = try await bootstrap.withBoundSocket(fd).get()
        } else {
            try Self.prepareSocketFolder(path)
            // Anyone may connect; what they may do is decided per call from SO_PEERCRED. The socket
            // is bound (and listening) under a staging name, opened to everyone, then renamed into
            // place: a client never finds the path still root-only (a non-root caller racing the
            // chmod got EACCES, "cannot reach biometricd").
            let staging = path + ".binding"
            channel = try await bootstrap.bind(unixDomainSocketPath: staging, cleanupExistingSocketFile: true).get()
            chmod(staging, 0o666)
            guard rename(staging, path) == 0 else {
                let reason = String(cString: strerror(errno))
                try? await channel.close().get()
                unlink(staging)
                throw SocketPlacementError(description: "cannot put the socket at \(path): \(reason)")
            }
        }
        serverChannel.withLock { $0 = channel }
    }

    /// The listening socket could not be renamed into place (the daemon does not start).
    struct SocketPlacementError: Error, CustomStringConvertible {
        let description: String
    }

    static func prepareSocketFolder(_ path: String) throws {
        let folder = (path as NSString).deletingLastPathComponent
        guard !folder.isEmpty, !FileManager.default.fileExists(atPath: folder) else { return }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o755])
    }

    /// Stops accepting, cancels every client's calls, closes the connections.
    func stop() async {
        let channel = serverChannel.withLock { c in defer { c = nil }; return c }
        try? await channel?.close().get()
        let all = connections.withLock { c in defer { c.removeAll() }; return Array(c.values) }
        all.forEach { $0.closed() }
        try? await group.shutdownGracefully()
    }

    var clientCount: Int { connections.withLock { $0.count } }

    // MARK: Connection bookkeeping (called from the handler)

    /// The peer is known: its connection, or the refusal when its uid holds its share already.
    func accepted(_ channel: any Channel, credentials: PeerCredentials) -> Result<ClientConnection, RPCError> {
        let peer = policy.peer(pid: credentials.pid, uid: credentials.uid, gid: credentials.gid)
        if let refusal = shares.admitConnection(peer).error { return .failure(refusal) }
        let key = ObjectIdentifier(channel)
        let connection = ClientConnection(peer: peer, channel: channel, methods: methods, shares: shares) { [weak self] in
            _ = self?.connections.withLock { $0.removeValue(forKey: key) }
            self?.shares.releaseConnection(peer)
        }
        connections.withLock { $0[key] = connection }
        logger.debug("client connected", metadata: ["pid": "\(peer.pid)", "uid": "\(peer.uid)", "admin": "\(peer.isAdmin)"])
        return .success(connection)
    }
}

/// Per-channel glue on the event loop: resolves the peer, then hands lines to its connection.
final class ConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let server: RPCServer
    private let meter: InputMeter
    private var connection: ClientConnection?
    /// Lines that arrived before the peer credentials were read.
    private var early: [IncomingLine] = []
    private var inactive = false
    private var refused = false

    init(server: RPCServer, meter: InputMeter) {
        self.server = server
        self.meter = meter
    }

    func channelActive(context: ChannelHandlerContext) {
        guard let provider = context.channel as? any SocketOptionProvider else {
            context.close(promise: nil)
            return
        }
        let channel = context.channel
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let future: EventLoopFuture<PeerCredentials> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
        future.whenComplete { result in
            let handler = loopBound.value
            switch result {
            case .success(let credentials):
                let connection: ClientConnection
                switch handler.server.accepted(channel, credentials: credentials) {
                case .success(let c): connection = c
                case .failure(let refusal):
                    // Over the uid's share: one error line, then closed; nothing it sent is read.
                    handler.refuse(channel, refusal)
                    return
                }
                handler.connection = connection
                if handler.inactive {
                    connection.closed()
                    return
                }
                // Input that arrived before the peer was known is booked now.
                let shares = handler.server.shares, peer = connection.peer
                if let refusal = handler.meter.attach({ shares.chargeBytes(peer, delta: $0) })?.error {
                    handler.refuse(channel, refusal)
                    return
                }
                handler.early.forEach { connection.receive($0) }
                handler.early.removeAll()
            case .failure:
                channel.close(promise: nil)  // no credentials, no service
            }
        }
        context.fireChannelActive()
    }

    /// Answers once with `error` and closes; nothing more is read or answered on this channel.
    func refuse(_ channel: any Channel, _ error: RPCError) {
        guard !refused else { return }
        refused = true
        early.removeAll()
        channel.writeAndFlush(ByteBuffer(bytes: RPCCodec.response(id: .null, error: error))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        let line = unwrapInboundIn(data)
        // Parsed in place from the receive buffer; blank lines are skipped.
        let incoming = line.withUnsafeReadableBytes { bytes -> IncomingLine? in
            if bytes.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) { return nil }
            return RPCCodec.parse(bytes: bytes)
        }
        guard let incoming else { return }
        if let connection { connection.receive(incoming) } else { early.append(incoming) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        inactive = true
        meter.release()
        connection?.closed()
        context.fireChannelInactive()
    }

    /// A client that does not read its replies is not read from either: its requests wait in
    /// its own socket buffer, not in our memory (replies are never dropped, so they would pile up).
    func channelWritabilityChanged(context: ChannelHandlerContext) {
        context.channel.setOption(ChannelOptions.autoRead, value: context.channel.isWritable).whenFailure { _ in }
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let limit = error as? InputMeter.OverShare {
            refuse(context.channel, limit.admission.error ?? .invalidRequest("input limit"))
        } else if error is LineDecoder.LineTooLong {
            let reply = RPCCodec.response(
                id: .null, error: .invalidRequest("line longer than \(RPCCodec.maxLineBytes) bytes; the connection is closed"))
            let channel = context.channel
            context.writeAndFlush(NIOAny(ByteBuffer(bytes: reply))).whenComplete { _ in channel.close(promise: nil) }
        } else {
            context.close(promise: nil)
        }
    }
}
