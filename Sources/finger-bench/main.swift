// biometricd-finger-bench: fingerprint accuracy on FVC2002 (FVC protocol and all pairs), print
// speed (extraction, 1:1, 1:N), and the camera side (per-frame cost, detection on real photos).
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "print": runPrintBench(Array(arguments.dropFirst()))
case "camera": runCameraBench(Array(arguments.dropFirst()))
default:
    print("usage: biometricd-finger-bench print <subcommand> | camera <subcommand>")
    exit(2)
}
