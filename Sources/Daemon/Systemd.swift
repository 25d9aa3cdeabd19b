import CSystemd
import Dispatch
import Foundation

/// sd_notify, watchdog and socket activation. All are no-ops when not run by systemd.
public enum Systemd {
    public static func notify(_ state: String) {
        _ = csd_notify(state)
    }

    /// The listening socket systemd passed (socket activation), if any.
    public static func activatedSocket() -> Int32? {
        let n = csd_listen_fds()
        guard n >= 1 else { return nil }
        let fd = csd_listen_fds_start()
        return csd_is_socket_unix(fd) > 0 ? fd : nil
    }

    /// Pings the watchdog at half its interval while `isHealthy` says so (a hung daemon stops
    /// pinging and systemd restarts it).
    public static func startWatchdog(queue: DispatchQueue, isHealthy: @escaping @Sendable () -> Bool) -> DispatchSourceTimer? {
        let usec = csd_watchdog_usec()
        guard usec > 0 else { return nil }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        let interval = DispatchTimeInterval.microseconds(Int(usec / 2))
        timer.schedule(deadline: .now() + interval, repeating: interval)
        timer.setEventHandler {
            if isHealthy() { notify("WATCHDOG=1") }
        }
        timer.resume()
        return timer
    }
}
