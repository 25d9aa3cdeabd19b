import Foundation
import Logging

/// swift-log to stderr. Under systemd (JOURNAL_STREAM set) each line starts with the syslog
/// priority `<N>`, which journald turns into the entry's priority; otherwise with a timestamp.
public struct StderrLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    private let label: String
    private let journal: Bool

    public init(label: String, level: Logger.Level) {
        self.label = label
        self.logLevel = level
        self.journal = ProcessInfo.processInfo.environment["JOURNAL_STREAM"] != nil
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(level: Logger.Level, message: Logger.Message, metadata extra: Logger.Metadata?, source: String,
                    file: String, function: String, line: UInt)
    {
        let all = metadata.merging(extra ?? [:]) { $1 }
        let meta = all.isEmpty ? "" : " " + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let text: String
        if journal {
            text = "<\(Self.priority(level))>\(message)\(meta)\n"
        } else {
            let time = Date().formatted(.iso8601.time(includingFractionalSeconds: true))
            text = "\(time) \(level.rawValue.uppercased()) \(label): \(message)\(meta)\n"
        }
        FileHandle.standardError.write(Data(text.utf8))
    }

    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }
}
