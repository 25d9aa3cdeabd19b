import ArgumentParser
import BiometricCamera
import BiometricDaemon
import Foundation
import Logging

@main
struct BiometricdCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "biometricd",
        abstract: "On-device face and finger authentication daemon (JSON-RPC over a Unix socket).",
        discussion: """
            Run by systemd with no arguments, or unprivileged for development and tests:
              biometricd --socket /tmp/b.sock --state-dir /tmp/state --models ./models --camera replay:./faces?fps=15
            Flags override /etc/biometricd/biometricd.conf.
            """,
        version: biometricdVersion)

    @Option(help: "Config file (default \(DaemonConfiguration.defaultConfigPath), read when it exists).")
    var config: String?

    @Option(help: "Unix socket to listen on (ignored under socket activation).")
    var socket: String?

    @Option(name: .customLong("state-dir"), help: "Folder for the database and key.")
    var stateDir: String?

    @Option(help: "Models folder; repeat to search several in order.")
    var models: [String] = []

    @Option(help: "Camera spec: v4l2:/dev/videoN or replay:PATH[?fps=30&loop=true]; repeat for more. None: every V4L2 capture device, with hot-plug.")
    var camera: [String] = []

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String?

    @Option(name: .customLong("set"), help: "Any config key, as KEY=VALUE (e.g. --set lockout_seconds=60); repeatable.")
    var settingsOverrides: [String] = []

    mutating func run() async throws {
        var settings = DaemonConfiguration()
        do {
            let file = config ?? DaemonConfiguration.defaultConfigPath
            if config != nil || FileManager.default.fileExists(atPath: file) {
                try settings.load(file: file)
            }
            if let socket { try settings.apply(key: "socket", value: socket, appendLists: false) }
            if let stateDir { try settings.apply(key: "state_dir", value: absolute(stateDir), appendLists: false) }
            for (i, m) in models.enumerated() { try settings.apply(key: "models", value: absolute(m), appendLists: i > 0) }
            for (i, c) in camera.enumerated() { try settings.apply(key: "camera", value: c, appendLists: i > 0) }
            if let logLevel { try settings.apply(key: "log_level", value: logLevel, appendLists: false) }
            for item in settingsOverrides {
                guard let eq = item.firstIndex(of: "=") else { throw ConfigError(message: "--set takes KEY=VALUE, got '\(item)'") }
                try settings.apply(key: String(item[..<eq]), value: String(item[item.index(after: eq)...]), appendLists: false)
            }
            if let hook = settings.testHooks.first, settings.isProductionInstance {
                throw ConfigError(key: hook, message: "is a test hook: refused when running as root, on the system paths or under systemd")
            }
        } catch {
            throw ValidationError((error as? ConfigError)?.description ?? "\(error)")
        }
        let level = settings.logLevel
        LoggingSystem.bootstrap { StderrLogHandler(label: $0, level: level) }
        let logger = Logger(label: "biometricd")
        do {
            let daemon = try Daemon(configuration: settings, logger: logger)
            try await daemon.run()
        } catch let error as StartupError {
            guard let refusal = error.storeRefusal else {
                logger.critical("cannot start: \(error.description)")
                throw ExitCode(1)
            }
            // The key is missing or wrong: nothing is served, nothing is overwritten, and
            // daemon.status says why (exiting would only show "connection refused").
            try await StoreRefusalDaemon(configuration: settings, refusal: refusal, logger: logger).run()
        }
    }

    /// Relative paths are taken from the working directory (they end up in logs and status).
    private func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }
}
