#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// The test transport: the CTAPHID report stream over a Unix SOCK_SEQPACKET socket, one 64-byte
/// report per packet each way — what a host reads and writes on the hidraw node. Like hidraw,
/// every connected client reads every input report. Used by the python-fido2 tests in CI, where
/// there is no /dev/uhid; `FIDOTransportChoice` refuses it in a system service.
public final class TestSocketTransport: Sendable {
    public enum Failure: Error, Sendable, Equatable {
        case pathTooLong
        case socket(Int32)
    }

    private let listener: Int32
    private let clients = Mutex<Set<Int32>>([])
    private let reports: AsyncStream<[UInt8]>
    private let sink: AsyncStream<[UInt8]>.Continuation
    public let path: String

    /// Binds and listens at `path` (owner-only permissions, the old socket replaced).
    public init(path: String) throws(Failure) {
        self.path = path
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.utf8.count < capacity else { throw .pathTooLong }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: Array(path.utf8) + [0])
        }
        let fd = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .socket(errno) }
        unlink(path)
        let previous = umask(0o077)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        umask(previous)
        guard bound == 0, listen(fd, 8) == 0 else {
            let code = errno
            Glibc.close(fd)
            throw .socket(code)
        }
        listener = fd
        (reports, sink) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .unbounded)
    }

    /// Writes one input report to every connected client.
    public func send(_ report: [UInt8]) {
        // Under the lock: a client's fd is closed under it too, so its number is never reused here.
        clients.withLock { fds in
            for fd in fds {
                _ = report.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
            }
        }
    }

    /// Accepts clients on a thread and delivers their output reports, in order, to `device`.
    public func run(device: CTAPHIDDevice) async {
        let listener = self.listener
        let sink = self.sink
        let acceptor = Thread { [self] in
            while true {
                let fd = accept(listener, nil, nil)
                if fd < 0 {
                    if errno == EINTR { continue }
                    return
                }
                self.clients.withLock { _ = $0.insert(fd) }
                let reader = Thread { [self] in
                    var buffer = [UInt8](repeating: 0, count: 128)
                    while true {
                        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                        if n < 0 && errno == EINTR { continue }
                        if n <= 0 { break }
                        sink.yield(Array(buffer[..<n]))
                    }
                    self.clients.withLock {
                        $0.remove(fd)
                        Glibc.close(fd)
                    }
                }
                reader.start()
            }
        }
        acceptor.start()
        for await report in reports { await device.receive(report) }
    }

    /// Stops accepting and ends `run`.
    public func close() {
        shutdown(listener, Int32(SHUT_RDWR))
        Glibc.close(listener)
        clients.withLock { fds in
            for fd in fds { shutdown(fd, Int32(SHUT_RDWR)) }
        }
        sink.finish()
        unlink(path)
    }
}
