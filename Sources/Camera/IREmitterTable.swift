import Foundation

/// A USB camera function as the kernel shows it in sysfs: the device's VID:PID and the number of
/// the interface the video node is bound to (an RGB+IR module often has one VideoControl
/// interface per sensor, so VID:PID alone does not say which node the emitter belongs to).
public struct USBDeviceID: Sendable, Hashable, CustomStringConvertible {
    public var vendor: UInt16
    public var product: UInt16

    /// `04f2:b6d9`, as lsusb prints it.
    public var description: String { String(format: "%04x:%04x", vendor, product) }
}

/// One UVC extension-unit write: SET_CUR of `payload` on control `selector` of unit `unit`.
public struct UVCWrite: Sendable, Equatable {
    public var unit: UInt8
    public var selector: UInt8
    public var payload: [UInt8]

    /// `01 03 03 00`, the form the table and the tools it cites use.
    public var payloadHex: String { payload.map { String(format: "%02x", $0) }.joined(separator: " ") }
}

/// What switches one camera's IR emitter (or IR mode) on, and where that fact comes from.
public struct IREmitterEntry: Sendable, Equatable {
    public var device: USBDeviceID
    /// The USB interface (bInterfaceNumber) of the node the entry is for; nil: any node of the device.
    public var interface: Int?
    public var name: String
    /// Where the values were published (a repository file at a commit, an issue thread).
    public var source: String
    /// Applied in this order.
    public var writes: [UVCWrite]
    /// An admin's entry that switches a shipped one off (`disabled = yes`): nothing is written.
    public var disabled: Bool
    /// `file:line` of the entry's header, so a report says which file an applied entry came from.
    public var origin: String

    /// `04f2:b6d9` or `04f2:b6d9 interface=2`, as in the header.
    public var key: String { interface.map { "\(device) interface=\($0)" } ?? device.description }
}

/// A line of a table file that does not parse, with where it is.
public struct IREmitterTableError: Error, Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var message: String
    public var description: String { "\(file):\(line): \(message)" }
}

/// The per-device table of emitter writes: the packaged file plus an admin's drop-ins.
///
/// The format (Docs/ir-emitters.md) is an INI-like file an admin can read and extend without a
/// tool: one `[vid:pid]` or `[vid:pid interface=N]` header per entry, then `name =`, `source =`
/// (required: no entry without a published origin), and one `write = unit=U selector=S
/// payload=HH HH ...` per UVC write, applied in order. `#` starts a comment line.
public struct IREmitterTable: Sendable, Equatable {
    /// The packaged table (scripts/package.sh installs share/ir-emitters.conf here).
    public static let packagedPath = "/usr/share/biometricd/ir-emitters.conf"
    /// An admin's entries: `*.conf` read in name order after the packaged file; an entry for the
    /// same device and interface replaces the packaged one.
    public static let dropInDirectory = "/etc/biometricd/ir-emitters.d"
    /// The longest payload accepted. The Windows Hello controls the sources name are 2–9 bytes;
    /// this only keeps a typo (a pasted hex dump) from becoming a huge SET_CUR.
    static let maxPayload = 64

    public private(set) var entries: [IREmitterEntry] = []
    /// The files read, in order (a missing packaged file is not listed).
    public private(set) var files: [String] = []

    public init(entries: [IREmitterEntry] = []) { self.entries = entries }

    /// The entry for a node of `device` on USB interface `interface`: one naming that interface
    /// first, else one for the whole device. A disabled entry answers nil.
    public func entry(for device: USBDeviceID, interface: Int?) -> IREmitterEntry? {
        let found = entries.first { $0.device == device && $0.interface != nil && $0.interface == interface }
            ?? entries.first { $0.device == device && $0.interface == nil }
        return found?.disabled == true ? nil : found
    }

    /// Adds the entries of one file's text; a later entry for the same key replaces an earlier
    /// one from another file. The whole file is refused at its first error (a half-read file
    /// would apply some of an admin's writes and not others).
    public mutating func add(text: String, file: String) throws(IREmitterTableError) {
        let parsed = try Self.parse(text, file: file)
        for entry in parsed {
            entries.removeAll { $0.key == entry.key }
            entries.append(entry)
        }
        files.append(file)
    }

    /// The packaged table and the drop-ins. A file that cannot be read or parsed is skipped and
    /// returned with its error, so one typo in /etc does not take the other entries away (and the
    /// daemon still starts: emitters are a convenience, not a reason to refuse face login).
    public static func load(packaged: String = packagedPath, dropIns: String = dropInDirectory)
        -> (table: IREmitterTable, errors: [IREmitterTableError])
    {
        var table = IREmitterTable()
        var errors: [IREmitterTableError] = []
        var paths: [String] = []
        if FileManager.default.fileExists(atPath: packaged) { paths.append(packaged) }
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: dropIns)) ?? []).filter { $0.hasSuffix(".conf") }.sorted()
        paths += names.map { dropIns + "/" + $0 }
        for path in paths {
            guard let data = FileManager.default.contents(atPath: path) else {
                errors.append(.init(file: path, line: 0, message: "cannot be read"))
                continue
            }
            do throws(IREmitterTableError) {
                try table.add(text: String(decoding: data, as: UTF8.self), file: path)
            } catch {
                errors.append(error)
            }
        }
        return (table, errors)
    }

    /// Parses one file. Every error names the file and line and what was expected.
    static func parse(_ text: String, file: String) throws(IREmitterTableError) -> [IREmitterEntry] {
        struct Pending {
            var device: USBDeviceID
            var interface: Int?
            var line: Int
            var name: String?
            var source: String?
            var writes: [UVCWrite] = []
            var disabled = false
        }
        var result: [IREmitterEntry] = []
        var seen: [String: Int] = [:]
        var current: Pending?

        func finish(_ p: Pending) throws(IREmitterTableError) {
            let key = p.interface.map { "\(p.device) interface=\($0)" } ?? p.device.description
            guard p.source?.isEmpty == false else {
                throw .init(file: file, line: p.line, message: "[\(key)] has no 'source =': every entry says where its values were published")
            }
            if !p.disabled && p.writes.isEmpty {
                throw .init(file: file, line: p.line, message: "[\(key)] has no 'write =' (or 'disabled = yes' to switch a packaged entry off)")
            }
            if let earlier = seen[key] {
                throw .init(file: file, line: p.line, message: "[\(key)] is already defined at line \(earlier)")
            }
            seen[key] = p.line
            result.append(IREmitterEntry(device: p.device, interface: p.interface, name: p.name ?? key, source: p.source ?? "",
                                         writes: p.writes, disabled: p.disabled, origin: "\(file):\(p.line)"))
        }

        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let lineNumber = index + 1
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            func fail(_ message: String) -> IREmitterTableError { .init(file: file, line: lineNumber, message: message) }

            if line.hasPrefix("[") {
                guard line.hasSuffix("]") else { throw fail("a header is '[vid:pid]' or '[vid:pid interface=N]', got '\(line)'") }
                if let p = current { try finish(p) }
                let inner = line.dropFirst().dropLast().split(separator: " ", omittingEmptySubsequences: true)
                guard let first = inner.first, let device = parseDeviceID(String(first)) else {
                    throw fail("a header is '[vid:pid]' with 4 hex digits each (as lsusb prints them, e.g. [04f2:b6d9]), got '\(line)'")
                }
                var interface: Int?
                for option in inner.dropFirst() {
                    guard option.hasPrefix("interface="), let n = Int(option.dropFirst(10)), (0...255).contains(n) else {
                        throw fail("unknown header option '\(option)' (interface=N, N the USB bInterfaceNumber 0–255)")
                    }
                    interface = n
                }
                current = Pending(device: device, interface: interface, line: lineNumber)
                continue
            }
            guard let eq = line.firstIndex(of: "=") else { throw fail("expected 'key = value' or a '[vid:pid]' header, got '\(line)'") }
            let key = line[..<eq].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            guard current != nil else { throw fail("'\(key) =' before any '[vid:pid]' header") }
            switch key {
            case "name":
                current!.name = value
            case "source":
                guard !value.isEmpty else { throw fail("'source =' is empty") }
                current!.source = value
            case "disabled":
                switch value.lowercased() {
                case "yes", "true", "1": current!.disabled = true
                case "no", "false", "0": current!.disabled = false
                default: throw fail("disabled is yes or no, got '\(value)'")
                }
            case "write":
                current!.writes.append(try parseWrite(value, fail: fail))
            default:
                throw fail("unknown key '\(key)' (name, source, write, disabled)")
            }
        }
        if let p = current { try finish(p) }
        return result
    }

    static func parseDeviceID(_ text: String) -> USBDeviceID? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ $0.count == 4 }),
              let v = UInt16(parts[0], radix: 16), let p = UInt16(parts[1], radix: 16)
        else { return nil }
        return USBDeviceID(vendor: v, product: p)
    }

    /// `unit=14 selector=6 payload=01 03 03 00 00 00 00 00 00` (unit and selector decimal or 0x
    /// hex; the payload is hex bytes, space- or colon-separated, and runs to the end of the line).
    static func parseWrite(_ value: String, fail: (String) -> IREmitterTableError) throws(IREmitterTableError) -> UVCWrite {
        let usage = "expected 'write = unit=<1-255> selector=<1-255> payload=<hex bytes>', got '\(value)'"
        guard let payloadRange = value.range(of: "payload=") else { throw fail(usage) }
        let head = value[..<payloadRange.lowerBound].split(separator: " ", omittingEmptySubsequences: true)
        var unit: UInt8?
        var selector: UInt8?
        for item in head {
            let kv = item.split(separator: "=", maxSplits: 1).map(String.init)
            guard kv.count == 2, let n = parseByte(kv[1]), n > 0 else { throw fail(usage) }
            switch kv[0] {
            case "unit": unit = n
            case "selector": selector = n
            default: throw fail(usage)
            }
        }
        guard let unit, let selector else { throw fail(usage) }
        let bytesText = value[payloadRange.upperBound...].replacingOccurrences(of: ":", with: " ")
        var payload: [UInt8] = []
        for token in bytesText.split(separator: " ", omittingEmptySubsequences: true) {
            let digits = token.hasPrefix("0x") || token.hasPrefix("0X") ? token.dropFirst(2) : Substring(token)
            guard digits.count == 2, let b = UInt8(digits, radix: 16) else {
                throw fail("payload bytes are two hex digits each ('01 03 03 00'), got '\(token)'")
            }
            payload.append(b)
        }
        guard !payload.isEmpty else { throw fail("payload is empty") }
        guard payload.count <= maxPayload else { throw fail("payload has \(payload.count) bytes, at most \(maxPayload)") }
        return UVCWrite(unit: unit, selector: selector, payload: payload)
    }

    static func parseByte(_ text: String) -> UInt8? {
        text.hasPrefix("0x") || text.hasPrefix("0X") ? UInt8(text.dropFirst(2), radix: 16) : UInt8(text)
    }
}
