import Foundation

/// A JSON-RPC id: a number, a string, or null (JSON-RPC allows it; the reply then carries null).
public enum RequestID: Hashable, Sendable, Codable, CustomStringConvertible {
    case int(Int64)
    case string(String)
    case null

    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let i = try? c.decode(Int64.self) { self = .int(i) }
        else { self = .string(try c.decode(String.self)) }
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .int(let i): try c.encode(i)
        case .string(let s): try c.encode(s)
        case .null: try c.encodeNil()
        }
    }

    public var json: JSONValue {
        switch self {
        case .int(let i): .int(i)
        case .string(let s): .string(s)
        case .null: .null
        }
    }

    public var description: String {
        switch self {
        case .int(let i): String(i)
        case .string(let s): "\"\(s)\""
        case .null: "null"
        }
    }
}

/// One call from a client. `id == nil` makes it a notification (no reply).
public struct RPCRequest: Sendable {
    public var method: String
    public var params: JSONValue?
    public var id: RequestID?

    public init(method: String, params: JSONValue? = nil, id: RequestID?) {
        self.method = method
        self.params = params
        self.id = id
    }
}

/// What one received line holds, after validation of the JSON-RPC envelope.
public enum IncomingLine: Sendable {
    /// One value: a request, or an error to reply with (id null when it could not be read).
    case single(Result<RPCRequest, FailedRequest>)
    /// A non-empty array: each element validated on its own.
    case batch([Result<RPCRequest, FailedRequest>])
}

/// An envelope that was not a valid request, with the id to answer to.
public struct FailedRequest: Error, Sendable {
    public var id: RequestID
    public var error: RPCError
}

public enum RPCCodec {
    /// The largest line accepted (SPEC §3): longer ones get -32600 and the connection closes.
    public static let maxLineBytes = 1 << 20

    /// Parses one line (without its "\n"). Invalid UTF-8 and malformed JSON are parse errors.
    public static func parse(line: Data) -> IncomingLine {
        line.withUnsafeBytes { parse(bytes: $0) }
    }

    /// Parses one line straight from the receive buffer (no copy).
    public static func parse(bytes: UnsafeRawBufferPointer) -> IncomingLine {
        let value: JSONValue
        do {
            value = try JSONReader.read(bytes)
        } catch {
            return .single(.failure(FailedRequest(id: .null, error: .parse("not valid JSON (UTF-8, one value per line)"))))
        }
        if case .array(let elements) = value {
            if elements.isEmpty {
                return .single(.failure(FailedRequest(id: .null, error: .invalidRequest("empty batch"))))
            }
            return .batch(elements.map(validate))
        }
        return .single(validate(value))
    }

    /// Checks one envelope against JSON-RPC 2.0.
    public static func validate(_ value: JSONValue) -> Result<RPCRequest, FailedRequest> {
        guard case .object(let members) = value else {
            return .failure(FailedRequest(id: .null, error: .invalidRequest("a request must be a JSON object")))
        }
        var id: RequestID? = nil
        if let rawID = members["id"] {
            switch rawID {
            case .null: id = .null
            case .string(let s): id = .string(s)
            case .int(let i): id = .int(i)
            default:
                return .failure(FailedRequest(id: .null, error: .invalidRequest("id must be a string, an integer or null")))
            }
        }
        let replyID = id ?? .null
        guard members["jsonrpc"] == .string("2.0") else {
            return .failure(FailedRequest(id: replyID, error: .invalidRequest("jsonrpc must be \"2.0\"")))
        }
        guard case .string(let method)? = members["method"], !method.isEmpty else {
            return .failure(FailedRequest(id: replyID, error: .invalidRequest("method must be a non-empty string")))
        }
        let params = members["params"]
        switch params {
        case nil, .object?, .array?: break
        default:
            return .failure(FailedRequest(id: replyID, error: .invalidRequest("params must be an object or an array")))
        }
        for key in members.keys where !["jsonrpc", "method", "params", "id"].contains(key) {
            return .failure(FailedRequest(id: replyID, error: .invalidRequest("unexpected member '\(key)'")))
        }
        return .success(RPCRequest(method: method, params: params, id: id))
    }

    // MARK: Encoding (every output is one line ending in "\n")

    private struct Failure: Encodable {
        let jsonrpc = "2.0"
        let id: RequestID
        let error: RPCError
    }

    private struct Call<P: Encodable>: Encodable {
        let jsonrpc = "2.0"
        let method: String
        let params: P?
        let id: RequestID?
        enum CodingKeys: CodingKey { case jsonrpc, method, params, id }
        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(jsonrpc, forKey: .jsonrpc)
            try c.encode(method, forKey: .method)
            try c.encodeIfPresent(params, forKey: .params)
            try c.encodeIfPresent(id, forKey: .id)
        }
    }

    /// `{"id":…,"jsonrpc":"2.0","result":…}`: the same bytes as JSONEncoder gives for the whole
    /// envelope with sorted keys (tested). Every result takes one path: its Encodable
    /// conformance → `JSONValueEncoder` → `JSONWriter`, written straight after the envelope's
    /// head.
    public static func response<R: Encodable>(id: RequestID, result: R) throws -> Data {
        let value = try JSONValueEncoder.encode(result)
        var out: [UInt8] = []
        out.reserveCapacity(256)
        out.append(contentsOf: #"{"id":"#.utf8)
        JSONWriter.write(id.json, into: &out)
        out.append(contentsOf: #","jsonrpc":"2.0","result":"#.utf8)
        JSONWriter.write(value, into: &out)
        out.append(contentsOf: "}\n".utf8)
        return Data(out)
    }

    public static func response(id: RequestID, error: RPCError) -> Data {
        // RPCError's fields are plain values: encoding cannot fail.
        line((try? JSONValueEncoder.encode(Failure(id: id, error: error))) ?? .null)
    }

    /// A request (or, with `id` nil, a notification) from a client.
    public static func request<P: Encodable>(method: String, params: P?, id: RequestID?) throws -> Data {
        line(try JSONValueEncoder.encode(Call(method: method, params: params, id: id)))
    }

    /// An `event` notification tied to the request `request` (SPEC §3, §5).
    public static func event(_ event: Event) throws -> Data {
        line(.object(["jsonrpc": "2.0", "method": "event", "params": try event.params()]))
    }

    /// Joins the replies of a batch into one array line (nothing when all were notifications).
    public static func batch(_ replies: [Data]) -> Data? {
        guard !replies.isEmpty else { return nil }
        var out = Data("[".utf8)
        for (i, reply) in replies.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out.append(reply.dropLast())  // without its "\n"
        }
        out.append(contentsOf: "]\n".utf8)
        return out
    }

    /// `value` as one line: JSONWriter's bytes and "\n".
    private static func line(_ value: JSONValue) -> Data {
        var out = JSONWriter.write(value)
        out.append(UInt8(ascii: "\n"))
        return Data(out)
    }
}

/// A notification sent while a long call runs: `type` names it (face.frame, camera.added, ...).
public struct Event: Sendable, Encodable {
    public var request: RequestID
    public var type: String
    /// The event's members without `request` and `type`: a SPEC §5 payload type, or free-form
    /// members (`init(request:type:fields:)`).
    public var body: any Encodable & Sendable

    public init(request: RequestID, type: String, fields: [String: JSONValue]) {
        self.request = request
        self.type = type
        body = fields
    }

    public init(request: RequestID, _ payload: some EventPayload) {
        self.request = request
        type = payload.eventType
        body = payload
    }

    /// The `params` of the event's line: the body's members with `request` and `type`.
    public func params() throws -> JSONValue {
        guard case .object(var members) = try JSONValueEncoder.encode(body) else {
            throw EncodingError.invalidValue(body, .init(codingPath: [], debugDescription: "an event's body must be a JSON object"))
        }
        members["request"] = request.json
        members["type"] = .string(type)
        return .object(members)
    }

    public func encode(to encoder: any Encoder) throws {
        try params().encode(to: encoder)
    }
}
