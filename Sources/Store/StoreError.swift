import SystemPackage

/// Store failures. The daemon maps `notFound` to not_found (1002); the rest are internal errors
/// that name the file and the cause.
public enum StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    case io(String)
    /// A system call failed: what was being done, and the errno (callers may switch on it, e.g.
    /// `.permissionDenied` for a state folder the daemon's user may not write).
    case system(String, Errno)
    case notFound(String)
    case conflict(String)
    /// A sealed template does not open with this key and its ids (tampered or wrong key).
    case corrupt(String)
    case badKey(String)

    public var description: String {
        switch self {
        case .io(let m): "store I/O error: \(m)"
        case .system(let m, let cause): "store I/O error: \(m): \(cause)"
        case .notFound(let m): "\(m) not found"
        case .conflict(let m): "store conflict: \(m)"
        case .corrupt(let m): "template \(m) fails authentication (tampered, or the key changed)"
        case .badKey(let m): "template key: \(m)"
        }
    }
}
