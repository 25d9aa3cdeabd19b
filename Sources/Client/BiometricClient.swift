import BiometricProtocol
import Foundation

#if canImport(Glibc)
import Glibc
#endif

public enum ClientError: Error, CustomStringConvertible, Sendable {
    /// The daemon is not running or the socket cannot be opened.
    case unreachable(path: String, reason: String)
    /// The daemon answered with an error.
    case rpc(RPCError)
    /// The daemon's answer was not what the protocol says (or the connection dropped).
    case protocolViolation(String)

    public var description: String {
        switch self {
        case .unreachable(let path, let reason): "cannot reach biometricd at \(path): \(reason)"
        case .rpc(let e): e.message + (e.hint.map { " (\($0))" } ?? "")
        case .protocolViolation(let m): "unexpected answer from biometricd: \(m)"
        }
    }
}

/// A blocking JSON-RPC client for the daemon's socket: one call at a time, events delivered to a
/// callback while the call runs. What `authctl` and the tests use; ten lines for any program.
public final class BiometricClient {
    public static var defaultSocketPath: String {
        ProcessInfo.processInfo.environment["BIOMETRICD_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
            ?? "/run/biometricd/biometricd.sock"
    }

    public let socketPath: String
    private let fd: Int32
    private var buffer = [UInt8]()
    private var nextID: Int64 = 1

    public init(socketPath: String = BiometricClient.defaultSocketPath) throws(ClientError) {
        self.socketPath = socketPath
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .unreachable(path: socketPath, reason: String(cString: strerror(errno))) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(socketPath.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw .unreachable(path: socketPath, reason: "socket path too long")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard rc == 0 else {
            let reason = errno == ENOENT || errno == ECONNREFUSED ? "the daemon is not running (\(String(cString: strerror(errno))))"
                : String(cString: strerror(errno))
            close(fd)
            throw .unreachable(path: socketPath, reason: reason)
        }
    }

    deinit { close(fd) }

    /// Calls `method` and decodes its result as `R`. `onEvent` gets each event of this call.
    public func call<P: Encodable, R: Decodable>(_ method: String, _ params: P, as: R.Type = R.self,
                                                 onEvent: ((JSONValue) -> Void)? = nil) throws(ClientError) -> R
    {
        let (_, line) = try exchange(method, params: params, onEvent: onEvent)
        do {
            // One decoding pass over the reply line (the envelope was checked by `exchange`).
            return try JSONCoding.decoder.decode(ResultOnly<R>.self, from: line).result
        } catch {
            throw .protocolViolation("result of \(method) does not decode: \(error)")
        }
    }

    private struct ResultOnly<R: Decodable>: Decodable {
        let result: R
    }

    public func call<R: Decodable>(_ method: String, as: R.Type = R.self, onEvent: ((JSONValue) -> Void)? = nil)
        throws(ClientError) -> R
    {
        try call(method, [String: String](), as: R.self, onEvent: onEvent)
    }

    /// Calls `method`, returning the raw result.
    public func callRaw<P: Encodable>(_ method: String, params: P?, onEvent: ((JSONValue) -> Void)? = nil)
        throws(ClientError) -> JSONValue
    {
        try exchange(method, params: params, onEvent: onEvent).result
    }

    /// Sends a call and reads up to its reply: the result, and the reply's line.
    private func exchange<P: Encodable>(_ method: String, params: P?, onEvent: ((JSONValue) -> Void)?)
        throws(ClientError) -> (result: JSONValue, line: Data)
    {
        let id = RequestID.int(nextID)
        nextID += 1
        let line: Data
        do {
            line = try RPCCodec.request(method: method, params: params, id: id)
        } catch {
            throw .protocolViolation("params do not encode: \(error)")
        }
        try send(line)
        while true {
            let line = try readLine()
            let message = try parse(line)
            if message["method"] == "event" {
                if let params = message["params"], params["request"] == id.json { onEvent?(params) }
                continue
            }
            guard message["id"] == id.json else { continue }
            if let error = message["error"] {
                guard let rpc = try? error.decode(RPCError.self) else { throw .protocolViolation("malformed error object") }
                throw .rpc(rpc)
            }
            guard let result = message["result"] else { throw .protocolViolation("reply has neither result nor error") }
            return (result, line)
        }
    }

    /// Sends raw bytes (tests use it for malformed input).
    public func send(_ data: Data) throws(ClientError) {
        var offset = 0
        while offset < data.count {
            // MSG_NOSIGNAL: a daemon that closed the connection (a refusal, a restart) is an error
            // here, not a SIGPIPE that kills the program using this library.
            let n = data.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .protocolViolation("write failed: \(String(cString: strerror(errno)))")
            }
            offset += n
        }
    }

    /// Reads the next line and parses it as JSON. Throws when the daemon closes the connection.
    public func readMessage() throws(ClientError) -> JSONValue {
        try parse(try readLine())
    }

    private func parse(_ line: Data) throws(ClientError) -> JSONValue {
        do {
            return try JSONReader.read(line)
        } catch {
            throw .protocolViolation("not JSON: \(String(decoding: line.prefix(200), as: UTF8.self))")
        }
    }

    public func readLine() throws(ClientError) -> Data {
        while true {
            if let nl = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Data(buffer[..<nl])
                buffer.removeSubrange(...nl)
                return line
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw .protocolViolation("the daemon closed the connection") }
            buffer.append(contentsOf: chunk[..<n])
        }
    }

    /// Waits at most `milliseconds` for data; false on timeout.
    public func waitReadable(milliseconds: Int) -> Bool {
        if buffer.contains(UInt8(ascii: "\n")) { return true }
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, Int32(milliseconds)) > 0
    }
}
