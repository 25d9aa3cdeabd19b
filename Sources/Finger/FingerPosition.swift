import BiometricVocabulary

/// One finger of one hand: what a template is of. Raw values are the protocol's names
/// (`right_index`, ...).
public struct FingerPosition: Sendable, Hashable, Codable, CustomStringConvertible {
    public let hand: Hand
    public let digit: Digit

    public init(_ hand: Hand, _ digit: Digit) {
        self.hand = hand
        self.digit = digit
    }

    /// `right_index`, `left_thumb`, ...
    public var name: String { "\(hand.rawValue)_\(digit.rawValue)" }
    public var description: String { name }

    public init?(name: String) {
        let parts = name.split(separator: "_", maxSplits: 1).map(String.init)
        guard parts.count == 2, let hand = Hand(rawValue: parts[0]), let digit = Digit(rawValue: parts[1]) else {
            return nil
        }
        self.init(hand, digit)
    }

    /// ISO/IEC 19794-2 and ANSI/NIST finger position code: right thumb 1 … right little 5,
    /// left thumb 6 … left little 10.
    public var isoCode: UInt8 { UInt8((hand == .right ? 1 : 6) + digit.order) }

    public init?(isoCode: UInt8) {
        guard (1...10).contains(isoCode) else { return nil }
        let code = Int(isoCode) - 1
        self.init(code < 5 ? .right : .left, Digit.allCases[code % 5])
    }

    public init(from decoder: any Decoder) throws {
        let name = try decoder.singleValueContainer().decode(String.self)
        guard let position = FingerPosition(name: name) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                    debugDescription: "not a finger position: \(name)"))
        }
        self = position
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(name)
    }
}
