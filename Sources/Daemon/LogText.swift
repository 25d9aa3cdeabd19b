/// A value from outside (a user name, a camera id from the socket) as it may appear in the log:
/// letters, digits and ASCII punctuation as they are; everything else — spaces, `=`, quotes,
/// backslashes, control and format characters such as U+202E — as `\u{XXXX}`. A user named
/// `bob outcome=success factor=face` cannot forge a field of a log line, and one holding a
/// right-to-left override cannot reorder what an administrator reads (issue 33, item 8).
struct LogText: CustomStringConvertible, Sendable {
    let raw: String
    init(_ raw: String) { self.raw = raw }

    var description: String { Self.escape(raw) }

    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            if isPlain(scalar) {
                out.unicodeScalars.append(scalar)
            } else {
                out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            }
        }
        return out
    }

    private static func isPlain(_ s: Unicode.Scalar) -> Bool {
        if s.isASCII {
            return s.value > 0x20 && s.value < 0x7F && !"=\"'\\`".unicodeScalars.contains(s)
        }
        switch s.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
             .nonspacingMark, .spacingMark, .decimalNumber, .letterNumber, .otherNumber:
            return true
        default:
            return false
        }
    }
}
