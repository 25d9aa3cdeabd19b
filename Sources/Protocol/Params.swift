import BiometricVocabulary
import Foundation

/// The params of one method. Unknown fields are refused (a typo must not silently fall back to a
/// default), and `validate` checks ranges, so a handler only ever sees sane values.
public protocol RPCParams: Decodable, Sendable {
    /// The wire names this method accepts: `wireNames(CodingKeys.self)` (with a shared options
    /// type's, for the params that carry one flat), so each name is written once.
    static var fields: Set<String> { get }
    func validate() throws(RPCError)
}

extension RPCParams {
    public func validate() throws(RPCError) {}

    /// Decodes and validates params, turning every failure into -32602 with `data.field`.
    public static func decode(from params: JSONValue?) throws(RPCError) -> Self {
        try decode(from: params, through: .direct)
    }

    /// `decode(from:)` with the value read `through` one path or the other (the differential
    /// test and the bench compare them; the daemon uses `.direct`).
    public static func decode(from params: JSONValue?, through decoding: JSONValue.DecodingPath) throws(RPCError) -> Self {
        let object: [String: JSONValue]
        switch params {
        case nil, .null?: object = [:]
        case .object(let o)?: object = o
        default: throw .invalidParams(field: nil, "params must be an object with named fields")
        }
        if let unknown = object.keys.sorted().first(where: { !fields.contains($0) }) {
            throw .invalidParams(field: unknown, "unknown parameter '\(unknown)'; accepted: \(fields.sorted().joined(separator: ", "))")
        }
        let decoded: Self
        do {
            decoded = try JSONValue.object(object).decode(Self.self, through: decoding)
        } catch let error as DecodingError {
            throw Self.describe(error, in: object, through: decoding)
        } catch let error as WireEnumError {
            let f = path(error.codingPath)
            throw .invalidParams(field: f, "parameter '\(f)' must be one of \(error.allowed.joined(separator: ", ")), got '\(error.got)'")
        } catch {
            throw .invalidParams(field: nil, "params do not decode: \(error)")
        }
        try decoded.validate()
        return decoded
    }

    /// `a.b[2]` for a coding path.
    private static func path(_ keys: [any CodingKey], _ last: (any CodingKey)? = nil) -> String {
        (keys + (last.map { [$0] } ?? [])).map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            .joined(separator: ".").replacingOccurrences(of: ".[", with: "[")
    }

    /// Foundation reports a number that does not fit its field's type (1.5 or 2^63 for an
    /// integer) as corrupt data with no coding path. The field is then found by leaving one
    /// parameter out at a time: the one whose absence changes the error is the bad one.
    private static func culprit(of error: DecodingError, in object: [String: JSONValue],
                                through decoding: JSONValue.DecodingPath) -> String? {
        guard case .dataCorrupted(let ctx) = error, ctx.codingPath.isEmpty else { return nil }
        for key in object.keys.sorted() {
            var rest = object
            rest[key] = nil
            do {
                _ = try JSONValue.object(rest).decode(Self.self, through: decoding)
                return key
            } catch DecodingError.dataCorrupted(let c) where c.codingPath.isEmpty {
                continue
            } catch {
                return key
            }
        }
        return nil
    }

    private static func describe(_ error: DecodingError, in object: [String: JSONValue],
                                 through decoding: JSONValue.DecodingPath) -> RPCError {
        if let key = culprit(of: error, in: object, through: decoding) {
            let value = object[key].flatMap { try? JSONCoding.encoder.encode($0) }.map { String(decoding: $0, as: UTF8.self) } ?? ""
            return .invalidParams(field: key, "parameter '\(key)' has a value its type cannot hold (\(value.prefix(40))): "
                                  + "a whole number in range, or a number of the right kind, is expected")
        }
        return describe(error)
    }

    private static func describe(_ error: DecodingError) -> RPCError {
        switch error {
        case .keyNotFound(let key, let ctx):
            let f = path(ctx.codingPath, key)
            return .invalidParams(field: f, "missing required parameter '\(f)'")
        case .typeMismatch(let type, let ctx):
            let f = path(ctx.codingPath)
            return .invalidParams(field: f, "parameter '\(f)' must be \(describe(type))")
        case .valueNotFound(let type, let ctx):
            let f = path(ctx.codingPath)
            return .invalidParams(field: f, "parameter '\(f)' must be \(describe(type)), not null")
        case .dataCorrupted(let ctx):
            let f = path(ctx.codingPath)
            return .invalidParams(field: f.isEmpty ? nil : f, "parameter '\(f)': \(ctx.debugDescription)")
        @unknown default:
            return .invalidParams(field: nil, "params do not decode")
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "true or false"
        case is Int.Type, is Int64.Type, is Int32.Type, is UInt32.Type: "an integer"
        case is Double.Type, is Float.Type: "a number"
        default: "of type \(type)"
        }
    }
}

/// Range checks shared by all param types.
public enum Check {
    public static func range<T: Comparable>(_ value: T?, _ bounds: ClosedRange<T>, field: String) throws(RPCError) {
        guard let value else { return }
        guard bounds.contains(value) else {
            throw .invalidParams(field: field, "parameter '\(field)' must be between \(bounds.lowerBound) and \(bounds.upperBound), got \(value)")
        }
    }
}

/// User names follow the FIDO UAF rules (SPEC §6: 1–128 printable characters, no control characters).
public enum UserName {
    public static func validate(_ name: String) throws(RPCError) {
        let scalars = name.unicodeScalars
        guard (1...128).contains(name.count),
              !scalars.contains(where: { $0.properties.generalCategory == .control || $0.properties.generalCategory == .format || $0 == "\u{7F}" }),
              name.trimmingCharacters(in: .whitespaces) == name
        else {
            throw .app(.invalidUser, "user name '\(name.prefix(40))' is not valid",
                       hint: "use 1–128 printable characters, without control characters or leading/trailing spaces")
        }
    }
}

// MARK: - Params of the foundation methods

public struct NoParams: RPCParams {
    public static let fields: Set<String> = []
    public init() {}
}

public struct UserParams: RPCParams, Encodable {
    public static let fields = wireNames(CodingKeys.self)
    enum CodingKeys: String, CodingKey, CaseIterable { case user }
    public var user: String
    public init(user: String) { self.user = user }
    public func validate() throws(RPCError) { try UserName.validate(user) }
}

public struct CancelParams: RPCParams, Encodable {
    public static let fields = wireNames(CodingKeys.self)
    enum CodingKeys: String, CodingKey, CaseIterable { case request }
    public var request: RequestID
    public init(request: RequestID) { self.request = request }
}

public struct SnapshotParams: RPCParams, Encodable {
    public static let fields = wireNames(CodingKeys.self)
    /// Camera id, path or spec; the first available camera when absent.
    public var camera: String?
    /// Frames dropped before the one kept (auto-exposure settles).
    public var warmupFrames: Int?
    public static let warmupFrames = Setting(CodingKeys.warmupFrames, 0...60, default: 3)
    public var timeoutMs: Int?
    public static let timeoutMs = Setting(CodingKeys.timeoutMs, 100...60000, default: 5000)

    enum CodingKeys: String, CodingKey, CaseIterable {
        case camera
        case warmupFrames = "warmup_frames"
        case timeoutMs = "timeout_ms"
    }

    public init(camera: String? = nil, warmupFrames: Int? = nil, timeoutMs: Int? = nil) {
        self.camera = camera
        self.warmupFrames = warmupFrames
        self.timeoutMs = timeoutMs
    }

    public func validate() throws(RPCError) {
        try Self.warmupFrames.check(warmupFrames)
        try Self.timeoutMs.check(timeoutMs)
    }
}

/// The wire names of a type's keys. A params type's accepted names are its `CodingKeys`: each
/// name is written once, where Codable reads it.
public func wireNames<Keys: CodingKey & CaseIterable>(_ keys: Keys.Type) -> Set<String> {
    Set(keys.allCases.map(\.stringValue))
}

