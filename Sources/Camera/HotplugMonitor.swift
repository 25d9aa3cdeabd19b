import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Calls `onChange` (debounced) when entries named `prefix*` appear, vanish or change owner/mode
/// in `directory`. udev creates /dev/videoN, then sets its group and mode: both count.
final class HotplugMonitor: @unchecked Sendable {
    // Mutated only on `queue`.
    private let fd: Int32
    private let source: DispatchSourceRead?
    private var pending: DispatchWorkItem?

    init(directory: String, prefix: String, queue: DispatchQueue, debounceMs: Int = 300,
         onChange: @escaping @Sendable () -> Void)
    {
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0,
              inotify_add_watch(fd, directory, UInt32(IN_CREATE | IN_DELETE | IN_ATTRIB | IN_MOVED_TO | IN_MOVED_FROM)) >= 0
        else {
            source = nil
            return
        }
        let src = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source = src
        let fd = self.fd
        src.setEventHandler { [weak self] in
            var buffer = [UInt8](repeating: 0, count: 8192)
            var relevant = false
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                var offset = 0
                while offset + MemoryLayout<inotify_event>.size <= n {
                    let (len, name) = buffer.withUnsafeBytes { raw -> (Int, String) in
                        let event = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                        let start = offset + MemoryLayout<inotify_event>.size
                        let nameBytes = raw[start..<min(start + Int(event.len), n)].prefix(while: { $0 != 0 })
                        return (Int(event.len), String(decoding: nameBytes, as: UTF8.self))
                    }
                    if name.hasPrefix(prefix) { relevant = true }
                    offset += MemoryLayout<inotify_event>.size + len
                }
            }
            guard relevant, let self else { return }
            self.pending?.cancel()
            let work = DispatchWorkItem(block: onChange)
            self.pending = work
            queue.asyncAfter(deadline: .now() + .milliseconds(debounceMs), execute: work)
        }
        src.setCancelHandler { close(fd) }
        src.resume()
    }

    deinit {
        pending?.cancel()
        if let source { source.cancel() } else if fd >= 0 { close(fd) }
    }
}
