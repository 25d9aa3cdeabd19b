import CSystemd
import Foundation
import Logging
import Synchronization

/// What logind says about the machine's lid and sleep (issue 36): a closed lid hides the
/// built-in camera, so a face attempt on it is skipped at once; a resume re-opens the cameras.
/// Both come from the system bus (libsystemd's sd-bus); with no bus or no logind (a container, a
/// test run) the lid is "not known" and no sleep is ever seen.
struct LidSensor: Sendable {
    /// true closed, false open, nil unknown.
    let read: @Sendable () -> Bool?

    /// logind's LidClosed property (one short bus connection per call, only for face attempts
    /// of the login path).
    static let logind = LidSensor {
        let r = csd_lid_closed()
        return r < 0 ? nil : r == 1
    }

    /// For tests and for daemons that should not ask (no lid known).
    static let unknown = LidSensor { nil }
}

/// Watches logind's PrepareForSleep on a thread of its own (sd-bus blocks): on a resume, the
/// camera registry looks every camera up again (`CameraRegistry.resumed`), so the first login
/// after a suspend opens it afresh and re-applies its IR emitter entry.
final class SleepWatcher: Sendable {
    private let stopped = Atomic<Bool>(false)
    private let logger: Logger

    /// Starts the thread; nil (logged at debug level) when the system bus cannot be reached.
    static func start(logger: Logger, onSleep: @escaping @Sendable () -> Void,
                      onResume: @escaping @Sendable () -> Void) -> SleepWatcher? {
        let watcher = SleepWatcher(logger: logger)
        let opened = Mutex<Int32?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let thread = Thread {
            var watch = csd_sleep_watch()
            let r = csd_sleep_open(&watch)
            opened.withLock { $0 = r }
            ready.signal()
            guard r >= 0 else { return }
            defer { csd_sleep_close(&watch) }
            while !watcher.stopped.load(ordering: .relaxed) {
                let event = csd_sleep_wait(&watch, 1_000_000)
                if event < 0 {
                    logger.warning("logind's sleep signals lost (sd-bus error \(event)): cameras are not re-opened after a resume")
                    return
                }
                if event == 1 { onSleep() }
                if event == 2 { onResume() }
            }
        }
        thread.name = "biometricd.logind"
        thread.start()
        ready.wait()
        let r = opened.withLock { $0 } ?? -1
        guard r >= 0 else {
            logger.debug("no system bus (\(r)): not watching logind's PrepareForSleep")
            watcher.stop()
            return nil
        }
        logger.info("watching logind's PrepareForSleep: cameras are re-opened after a resume")
        return watcher
    }

    private init(logger: Logger) {
        self.logger = logger
    }

    func stop() {
        stopped.store(true, ordering: .relaxed)
    }
}
