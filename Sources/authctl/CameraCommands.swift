import ArgumentParser
import BiometricClient
import BiometricProtocol
import Foundation

/// `authctl camera …`: per-camera IR emitter state and the admin's probe (Docs/ir-emitters.md).
struct CameraGroup: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "camera", abstract: "Camera details: IR emitters.",
                                                    subcommands: [IR.self])

    struct IR: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ir",
            abstract: "Show each camera's IR emitter entry and what the last stream start applied.",
            discussion: """
                --probe (admin) reads the extension-unit controls the camera's USB descriptors declare, writing nothing. \
                --probe --trial also writes each candidate control's own maximum once while frames are measured, then \
                restores the value it read: never a search over unknown controls. Entries: /usr/share/biometricd/ir-emitters.conf, \
                /etc/biometricd/ir-emitters.d/*.conf.
                """)
        @OptionGroup var options: GlobalOptions
        @Option(help: "Camera id, path or spec (default: every camera; required with --probe).") var camera: String?
        @Flag(help: "Read the camera's extension-unit controls (admin).") var probe = false
        @Flag(help: "With --probe: try each candidate once and restore it (admin; the camera streams meanwhile).") var trial = false

        func validate() throws {
            if probe && camera == nil { throw ValidationError("--probe needs --camera (a probe is about one camera)") }
            if trial && !probe { throw ValidationError("--trial goes with --probe") }
        }

        func run() throws {
            let client = try options.connect()
            if probe, let camera {
                let result: CameraIRProbeResult = try client.call(Method.cameraIRProbe, CameraIRProbeParams(camera: camera, trial: trial ? true : nil))
                try options.output(result) { Self.text(result) }
                return
            }
            let result: CameraIRResult = try client.call(Method.cameraIR, CameraIRParams(camera: camera))
            try options.output(result) { Self.text(result) }
        }

        static func text(_ r: CameraIRResult) -> String {
            var lines: [String] = []
            for c in r.cameras {
                let usb = c.usbDevice.map { "usb \($0)" + (c.usbInterface.map { " interface \($0)" } ?? "") } ?? "not on USB"
                lines.append("\(c.camera)\(c.ir ? " [IR]" : "")  \(c.path)  \(usb)")
                guard let e = c.entry else {
                    lines.append(c.usbDevice == nil ? "  no emitter entry (not a USB camera)"
                        : "  no emitter entry for \(c.usbDevice!) — `authctl camera ir --probe --camera \(c.camera)` (admin) shows its controls")
                    continue
                }
                lines.append("  entry: \(e.name)  [\(e.origin)]")
                lines.append("    source: \(e.source)")
                for w in e.writes { lines.append("    write unit \(w.unit) selector \(w.selector): \(w.payload)") }
                guard let last = c.last else {
                    lines.append("  not applied yet (it is applied as each stream starts)")
                    continue
                }
                lines.append(String(format: "  last stream start: %@ in %.2f ms, %.0f s ago — %@ (%d application%@ since the daemon started)",
                                    last.outcome, last.durationMs, last.secondsAgo, last.message, c.applications, c.applications == 1 ? "" : "s"))
                for w in last.writes where w.status != "applied" {
                    lines.append("    unit \(w.unit) selector \(w.selector): \(w.status ?? "")\(w.message.map { " (\($0))" } ?? "")")
                }
            }
            if r.cameras.isEmpty { lines.append("no cameras") }
            lines.append("table: " + (r.tableFiles.isEmpty ? "none installed" : r.tableFiles.joined(separator: ", ")))
            for e in r.tableErrors { lines.append("table file skipped: \(e)") }
            return lines.joined(separator: "\n")
        }

        static func text(_ r: CameraIRProbeResult) -> String {
            var lines = ["\(r.camera)  " + (r.usbDevice.map { "usb \($0)" + (r.usbInterface.map { " interface \($0)" } ?? "") } ?? "not on USB")]
            for c in r.controls {
                var fields = ["unit \(c.unit) selector \(c.selector)"]
                if let info = c.info { fields.append(String(format: "info 0x%02x", info)) }
                if let len = c.length { fields.append("len \(len)") }
                if let cur = c.cur { fields.append("cur [\(cur)]") }
                if let max = c.max { fields.append("max [\(max)]") }
                if let def = c.def { fields.append("def [\(def)]") }
                if let error = c.error { fields.append(error) }
                lines.append("  " + fields.joined(separator: "  ") + (c.guid == "0f3f95dc-2632-4c4e-92c9-a04782f43bc8" ? "  (Microsoft camera XU)" : ""))
            }
            for t in r.trials {
                let light = t.brightnessDuring.map { String(format: "brightness %.1f → %.1f", t.brightnessBefore ?? 0, $0) } ?? "brightness not measured"
                lines.append("  trial unit \(t.unit) selector \(t.selector): wrote [\(t.written)], read back [\(t.readBack ?? "?")], \(light); \(t.message)")
                if let during = t.brightnessDuring, during > (t.brightnessBefore ?? 0) + 20 {
                    lines.append("    to keep it, add to /etc/biometricd/ir-emitters.d/local.conf:\n" + t.suggestion.split(separator: "\n").map { "      " + $0 }.joined(separator: "\n"))
                }
            }
            lines.append(r.summary)
            return lines.joined(separator: "\n")
        }
    }
}
