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
/// each call in its own task.
final class RPCServer: Sendable {
    private let group: MultiThreadedEventLoopGroup
    private let methods: MethodTable
    private let policy: AccessPolicy
    private let logger: Logger
    private let connections = Mutex<[ObjectIdentifier: ClientConnection]>([:])
    private let serverChannel = Mutex<(any Channel)?>(nil)

    init(methods: MethodTable, policy: AccessPolicy, logger: Logger) {
        self.group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        self.methods = methods
        self.policy = policy
        self.logger = logger
    }

    /// Binds `path` (replacing a stale socket file) or adopts systemd's socket `fd`.
    func start(path: String, activatedFD: Int32?) async throws {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 256 * 1024, high: 1024 * 1024))
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineDecoder()))
                    try channel.pipeline.syncOperations.addHandler(ConnectionHandler(server: self))
                }
            }
        let channel: any Channel
        if let fd = activatedFD {
            channel = try await bootstrap.withBoundSocket(fd).get()
        } else {
            try Self.prepareSocketFolder(path)
            channel = try await bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true).get()
            // Anyone may connect; what they may do is decided per call from SO_PEERCRED.
            chmod(path, 0o666)
        }
        serverChannel.withLock { $0 = channel }
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

    func accepted(_ channel: any Channel, credentials: PeerCredentials) -> ClientConnection {
        let peer = policy.peer(pid: credentials.pid, uid: credentials.uid, gid: credentials.gid)
        let key = ObjectIdentifier(channel)
        let connection = ClientConnection(peer: peer, channel: channel, methods: methods) { [weak self] in
            _ = self?.connections.withLock { $0.removeValue(forKey: key) }
        }
        connections.withLock { $0[key] = connection }
        logger.debug("client connected", metadata: ["pid": "\(peer.pid)", "uid": "\(peer.uid)", "admin": "\(peer.isAdmin)"])
        return connection
    }
}

/// Per-channel glue on the event loop: resolves the peer, then hands lines to its connection.
final class ConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let server: RPCServer
    private var connection: ClientConnection?
    /// Lines that arrived before the peer credentials were read.
    private var early: [IncomingLine] = []
    private var inactive = false

    init(server: RPCServer) { self.server = server }

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
                let connection = handler.server.accepted(channel, credentials: credentials)
                handler.connection = connection
                if handler.inactive {
                    connection.closed()
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

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
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
        connection?.closed()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is LineDecoder.LineTooLong {
            let reply = RPCCodec.response(
                id: .null, error: .invalidRequest("line longer than \(RPCCodec.maxLineBytes) bytes; the connection is closed"))
            let channel = context.channel
            context.writeAndFlush(NIOAny(ByteBuffer(bytes: reply))).whenComplete { _ in channel.close(promise: nil) }
        } else {
            context.close(promise: nil)
        }
    }
}
