import Logging

#if canImport(Glibc)
import Glibc
#endif

/// The process's own resource limits, raised once at start.
enum ProcessLimits {
    /// Most descriptors the daemon asks for: far more than the connection caps need, far below
    /// the kernel's default hard limit (systemd gives services 1024 soft / 524288 hard).
    static let wantedDescriptors: rlim_t = 16384

    /// Raises the soft RLIMIT_NOFILE towards the hard one (up to `wantedDescriptors`), so that an
    /// unprivileged run and a unit without LimitNOFILE= get the same room; the limit in force.
    static func raiseDescriptorLimit(logger: Logger) -> Int {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        let target = min(limit.rlim_max, wantedDescriptors)
        if limit.rlim_cur < target {
            var raised = limit
            raised.rlim_cur = target
            if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) == 0 {
                limit = raised
            } else {
                logger.warning("cannot raise the descriptor limit from \(limit.rlim_cur) to \(target): errno \(errno)")
            }
        }
        return Int(clamping: limit.rlim_cur)
    }
}
