/// The reasons of SPEC §6, each with its stable code. Clients switch on `reason` or `code`.
public enum ErrorReason: String, Sendable, CaseIterable, Codable {
    case invalidUser = "invalid_user"
    case notFound = "not_found"
    case permissionDenied = "permission_denied"
    case invalidAAID = "invalid_aaid"
    case busy
    case canceled
    case timeout
    case notInitialized = "not_initialized"
    /// Beyond SPEC §6: a per-uid share is used up (connections, calls, queued work, buffered
    /// input); `data.limit` names it. Transient: retry when something of yours has finished.
    case limitReached = "limit_reached"
    /// Beyond SPEC §6: a storage quota (templates per modality, keys) is full; `data.quota`
    /// names it. Lasting: remove something first, or ask an administrator.
    case quotaExceeded = "quota_exceeded"
    case noCamera = "no_camera"
    case cameraError = "camera_error"
    case noFaceRegistered = "no_face_registered"
    case badQuality = "bad_quality"
    case blinkTimeout = "blink_timeout"
    case spoofDetected = "spoof_detected"
    case badCapture = "bad_capture"
    case noFingerRegistered = "no_finger_registered"
    case lockedOut = "locked_out"
    case pinLocked = "pin_locked"
    case pinFormat = "pin_format"
    case pinNotSet = "pin_not_set"

    public var code: Int {
        switch self {
        case .invalidUser: 1001
        case .notFound: 1002
        case .permissionDenied: 1003
        case .invalidAAID: 1004
        case .busy: 1005
        case .canceled: 1006
        case .timeout: 1007
        case .notInitialized: 1008
        case .limitReached: 1009
        case .quotaExceeded: 1010
        case .noCamera: 2001
        case .cameraError: 2002
        case .noFaceRegistered: 3001
        case .badQuality: 3002
        case .blinkTimeout: 3003
        case .spoofDetected: 3004
        case .badCapture: 4001
        case .noFingerRegistered: 4002
        case .lockedOut: 5001
        case .pinLocked: 5002
        case .pinFormat: 5003
        case .pinNotSet: 5004
        }
    }

    public init?(code: Int) {
        guard let match = Self.allCases.first(where: { $0.code == code }) else { return nil }
        self = match
    }
}

/// A JSON-RPC error object: the standard ones (-32700…-32603) and the application ones of SPEC §6.
/// `data` always carries `reason`; application errors add `hint` (what to do) and details.
public struct RPCError: Error, Sendable, Codable, Equatable {
    public var code: Int
    public var message: String
    public var data: JSONValue?

    public init(code: Int, message: String, data: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    public static let parseErrorCode = -32700
    public static let invalidRequestCode = -32600
    public static let methodNotFoundCode = -32601
    public static let invalidParamsCode = -32602
    public static let internalErrorCode = -32603

    public static func parse(_ message: String) -> RPCError {
        RPCError(code: parseErrorCode, message: message, data: .object(["reason": "parse_error"]))
    }
    public static func invalidRequest(_ message: String) -> RPCError {
        RPCError(code: invalidRequestCode, message: message, data: .object(["reason": "invalid_request"]))
    }
    public static func methodNotFound(_ method: String) -> RPCError {
        RPCError(code: methodNotFoundCode, message: "unknown method '\(method)'",
                 data: .object(["reason": "method_not_found", "method": .string(method)]))
    }
    /// Invalid params; `field` names the offending parameter (dotted path for nested ones).
    public static func invalidParams(field: String?, _ message: String) -> RPCError {
        var data: [String: JSONValue] = ["reason": "invalid_params"]
        if let field { data["field"] = .string(field) }
        return RPCError(code: invalidParamsCode, message: message, data: .object(data))
    }
    public static func `internal`(_ message: String) -> RPCError {
        RPCError(code: internalErrorCode, message: message, data: .object(["reason": "internal_error"]))
    }

    /// An application error of SPEC §6.
    public static func app(_ reason: ErrorReason, _ message: String, hint: String? = nil,
                           details: [String: JSONValue] = [:]) -> RPCError {
        var data = details
        data["reason"] = .string(reason.rawValue)
        if let hint { data["hint"] = .string(hint) }
        return RPCError(code: reason.code, message: message, data: .object(data))
    }

    public var reason: String? { data?["reason"]?.stringValue }
    public var errorReason: ErrorReason? { ErrorReason(code: code) }
    public var field: String? { data?["field"]?.stringValue }
    public var hint: String? { data?["hint"]?.stringValue }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByFloatLiteral, ExpressibleByNilLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
