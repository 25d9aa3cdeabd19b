/// What a PIN may look like: digits only, between `minLength` and `maxLength` (0 = no upper
/// limit). As the Acceptto PIN authenticator does, a minimum ≤ 0 means 4, and a maximum below the
/// minimum puts both back to their defaults instead of making every PIN impossible.
public struct PINRules: Sendable, Equatable {
    public static let defaultMinLength = 4
    public static let defaultMaxLength = 0
    /// Whatever the configuration says, nobody types more (and Argon2 gets bounded input).
    public static let hardMaxLength = 64

    public let minLength: Int
    public let maxLength: Int

    public init(minLength: Int = defaultMinLength, maxLength: Int = defaultMaxLength) {
        var lo = minLength <= 0 ? Self.defaultMinLength : minLength
        var hi = max(0, maxLength)
        if hi != 0 && hi < lo || lo > Self.hardMaxLength {
            (lo, hi) = (Self.defaultMinLength, Self.defaultMaxLength)
        }
        self.minLength = lo
        self.maxLength = hi
    }

    public var effectiveMax: Int { maxLength == 0 ? Self.hardMaxLength : min(maxLength, Self.hardMaxLength) }

    public enum Violation: Error, Sendable, Equatable {
        case notDigits
        case tooShort(min: Int)
        case tooLong(max: Int)
    }

    /// Checks a PIN without saying anything about its digits.
    public func check(_ pin: String) -> Violation? {
        let bytes = Array(pin.utf8)
        guard bytes.allSatisfy({ (0x30...0x39).contains($0) }) else { return .notDigits }
        if bytes.count < minLength { return .tooShort(min: minLength) }
        if bytes.count > effectiveMax { return .tooLong(max: effectiveMax) }
        return nil
    }
}
