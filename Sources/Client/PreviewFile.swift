import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Keeps the latest preview JPEG of a session in one file for a greeter or kiosk UI to show
/// (`authctl face verify --preview FILE`). Each frame is written to a temporary file in the same
/// directory and renamed over the target, so a reader never sees a half-written image.
public struct PreviewFile: Sendable {
    public let path: String

    public init(path: String) { self.path = path }

    /// Where a frame is written before the rename: beside the target (rename(2) is atomic only
    /// within one file system), hidden, and distinct per process.
    var temporaryPath: String {
        let url = URL(fileURLWithPath: path)
        return url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(getpid()).tmp").path
    }

    public struct WriteError: Error, CustomStringConvertible {
        public let description: String
    }

    public func write(_ jpeg: Data) throws(WriteError) {
        let temp = temporaryPath
        let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else { throw WriteError(description: "cannot write \(temp): \(String(cString: strerror(errno)))") }
        let written = jpeg.withUnsafeBytes { raw -> Bool in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 { if errno == EINTR { continue }; return false }
                offset += n
            }
            return true
        }
        let writeErrno = errno
        close(fd)
        guard written else {
            unlink(temp)
            throw WriteError(description: "cannot write \(temp): \(String(cString: strerror(writeErrno)))")
        }
        guard rename(temp, path) == 0 else {
            let e = errno
            unlink(temp)
            throw WriteError(description: "cannot replace \(path): \(String(cString: strerror(e)))")
        }
    }
}
