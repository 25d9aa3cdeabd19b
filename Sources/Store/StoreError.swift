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
    /// Storing more would pass a user's quota: what (`face_templates`, `finger_templates`,
    /// `keys`), the quota, and how many the user has now. Nothing was stored.
    case quotaExceeded(String, max: Int, have: Int)
    /// The key file is missing but the database holds sealed rows: a new key would open none of
    /// them, so none is made (path of the missing key, sealed rows).
    case keyMissing(String, sealedRows: Int)
    /// The key opens nothing in this database (a different key file or credential).
    case keyMismatch(sealedRows: Int)
    /// The key is sealed (systemd-creds, TPM) but was not unsealed: why, in one line. Nothing
    /// is opened or changed.
    case keyUnsealable(String)

    public var description: String {
        switch self {
        case .io(let m): "store I/O error: \(m)"
        case .system(let m, let cause): "store I/O error: \(m): \(cause)"
        case .notFound(let m): "\(m) not found"
        case .conflict(let m): "store conflict: \(m)"
        case .corrupt(let m): "template \(m) fails authentication (tampered, or the key changed)"
        case .badKey(let m): "template key: \(m)"
        case .keyMissing(let path, let rows):
            "the template key \(path) is missing, but the database holds \(rows) sealed row(s); no new key is made. Restore the key file (or its systemd credential) that sealed them, or move the database away to start empty"
        case .keyMismatch(let rows):
            "the template key does not open this database (\(rows) sealed row(s)); nothing was changed. Restore the key (or systemd credential) that sealed them, or move the database away to start empty"
        case .keyUnsealable(let why):
            "the sealed template key cannot be used: \(why). Nothing was changed; templates stay sealed until the key opens (the same TPM, or the key restored)"
        case .quotaExceeded(let what, let max, let have): "quota of \(max) \(what.replacingOccurrences(of: "_", with: " ")) reached (\(have) stored)"
        }
    }
}
