@testable import BiometricProtocol
import Foundation
import XCTest

/// The one-pass params decoder (`JSONValueDecoder`) against the path it replaced (JSONEncoder
/// writes the value, JSONDecoder reads it back): every params type, from valid bodies and from
/// each of them with every field set to each of a list of awkward values, left out, or joined by
/// an unknown field. Both paths must give the same params (compared as their JSON) or the same
/// error object, byte for byte, as a client would receive it.
final class JSONValueDecoderTests: XCTestCase {
    /// Real bodies: from ProtocolTests, DaemonTests and the SPEC's examples; the first of each
    /// type must decode.
    static var bodies: [(type: any RPCParams.Type, bodies: [String])] { [
        (NoParams.self, ["{}"]),
        (UserParams.self, [#"{"user":"ana"}"#]),
        (CancelParams.self, [#"{"request":7}"#, #"{"request":"abc"}"#, #"{"request":null}"#]),
        (SnapshotParams.self, [#"{"camera":"replay0","warmup_frames":0,"timeout_ms":5000}"#, "{}"]),
        (LockoutClearParams.self, [#"{"user":"ana"}"#, #"{"camera":"c0"}"#]),
        (PasswordBeginParams.self, [#"{"user":"ana"}"#]),
        (PasswordProvenParams.self, [#"{"user":"ana","nonce":"abcdefghijklmnopqrstuvwxyz0123456789-_ABCDE"}"#]),
        (PINSetParams.self, [#"{"user":"ana","pin":"482915","old_pin":"123456"}"#]),
        (PINVerifyParams.self, [#"{"user":"ana","pin":"482915"}"#]),
        (PINResetParams.self, [#"{"user":"ana","remove_pin":true}"#]),
        (PolicySetParams.self, [#"{"user":"ana","factors":["face","pin"],"require_liveness":true}"#, #"{"user":"ana","mode":"biometric"}"#]),
        (AuthenticateParams.self, [
            #"{"user":"ana","factors":["face"],"step_up":12,"pin":"482915","camera":"c0","timeout_ms":30000,"other_user":false,"require_arrival":true}"#,
            #"{"user":"ana","step_up":"r-1"}"#,
        ]),
        (KeyRegisterParams.self, [#"{"user":"ana","app_id":"https://example.org","aaid":"ABCD#0001"}"#]),
        (KeySignParams.self, [#"{"user":"ana","key_handle":"a-b_C9","challenge":"AAECAw==","pin":"482915","camera":"c0","timeout_ms":30000}"#]),
        (KeyDeregisterParams.self, [#"{"user":"ana","key_handle":"a-b_C9"}"#, #"{"user":"ana"}"#]),
        (CameraIRParams.self, [#"{"camera":"c0"}"#, "{}"]),
        (CameraIRProbeParams.self, [#"{"camera":"/dev/video2","trial":true}"#]),
        (CameraCheckParams.self, [#"{"camera":"c0","frames":5,"warmup_frames":5,"timeout_ms":5000}"#]),
        (FingerCaptureRequest.self, [
            #"{"mode":"thumb","hand":"left","amputated":["ring"],"liveness":"very_low","image_format":"jpeg","camera":"c0","quality_threshold":40,"timeout_s":10,"preview":{"fps":5,"width":320}}"#,
            #"{"image_format":"wsq"}"#,
        ]),
        (FingerEnrollParams.self, [#"{"user":"ana","captures":3,"mode":"fingers","amputated":["index"],"preview":{"fps":15}}"#]),
        (FingerAuthParams.self, [#"{"user":"ana","threshold":40.5,"references":["a","b"],"finger":"index","mode":"single","preview":{"width":640}}"#]),
        (FingerExtractParams.self, [#"{"image":"AAAA","dpi":500,"format":"iso19794_2"}"#]),
        (FingerMatchParams.self, [#"{"probe":"AAAA","reference":"BBBB","threshold":30,"dpi":500}"#]),
        (FingerAddParams.self, [#"{"user":"ana","template":"AAAA","format":"biometricd","position":"right_index","template_id":"t1"}"#]),
        (FingerExportParams.self, [#"{"user":"ana","format":"iso19794_2"}"#]),
        (FaceEnrollParams.self, [
            #"{"user":"ana","camera":"c0","mode":"full","frames":4,"countdown_s":0,"quality_threshold":48,"timeout_ms":30000,"preview":{"fps":10}}"#,
            #"{"user":"ann","preview":{}}"#,
        ]),
        (FaceVerifyParams.self, [
            #"{"user":"ana","camera":"c0","mode":"image","liveness_mode":"challenge","matching_threshold":48.5,"quality_threshold":48,"liveness_threshold":50,"blink_timeout_ms":5000,"timeout_ms":30000,"challenge_steps":2,"challenge_step_timeout_ms":5000,"preview":{"fps":10,"width":640}}"#,
            #"{"user":"ana","liveness_mode":"passive+blink"}"#,
        ]),
        (FaceIdentifyParams.self, [#"{"camera":"c0","margin":3,"blink_timeout_ms":900,"matching_threshold":40,"preview":{"fps":2}}"#]),
        (TemplateListParams.self, [#"{"user":"ana"}"#, "{}"]),
        (TemplateRemoveParams.self, [#"{"user":"ana","template_id":"t1"}"#]),
        (FaceAddParams.self, [#"{"user":"ana","template":"AAAA","template_id":"t1"}"#]),
        (FaceSetParams.self, [#"{"user":"ana","faces":["a","b"]}"#]),
        (FaceExtractParams.self, [#"{"image":"AAAA"}"#]),
        (FaceMatchParams.self, [#"{"probe":"AAAA","reference":"BBBB","matching_threshold":48}"#]),
    ] }

    /// Values put in each field. As JSON text they are read by JSONReader (the wire's own path:
    /// "3.0" and "1e3" become integers there, "2^63" a double); the values after them can only
    /// be built in-process.
    static let awkward: [JSONValue] = ([
        "null", "true", "0", "-1", "3", "3.0", "1e3", "2.5", "-0.0", "0.1", "1e300", "-1e300", "1e-400",
        "9223372036854775807", "-9223372036854775808", "9223372036854775808", "18446744073709551616",
        "9.21e18", "1e19", "4503599627370497", "9007199254740993",
        #""""#, #""x""#, #""image""#, #""index""#, #""inf""#, #""AAAA""#, #""\u0000""#,
        "[]", #"["index"]"#, #"["index","index"]"#, "[1]", "[null]", #"["thumb"]"#, "[[]]", "[3.0]", "[2.5]",
        "{}", #"{"fps":3}"#, #"{"fps":3.0}"#, #"{"fps":2.5}"#, #"{"fps":null}"#, #"{"width":"x"}"#, #"{"bogus":1}"#,
        #"{"fps":1e300}"#, #"{"fps":99}"#,
    ] as [String]).map { try! JSONReader.read(Data($0.utf8)) } + [
        .double(3.0), .double(-0.0), .double(1e16), .double(0x1p53), .double(0x1p60), .double(-0x1p63), .double(9.2e18), .double(.infinity), .double(-.infinity),
        .double(.nan), .double(.leastNonzeroMagnitude), .array([.double(3.0), .double(.nan)]), .object(["fps": .double(4.0)]),
    ]

    /// The awkward values tried in every params field: each kind of JSON value, and the numbers
    /// that tell an integer field's rules apart (the full list goes through every numeric type
    /// in `testEveryContainerCallAndSpecialTypeAsThroughJSONDecoder`).
    static let paramsAwkward: [JSONValue] = ([
        "null", "true", "0", "-1", "3", "3.0", "1e3", "2.5", "1e300", "9223372036854775808", "9.21e18",
        #""""#, #""x""#, #""image""#, #""index""#, #""inf""#,
        "[]", #"["index"]"#, #"["index","index"]"#, "[1]", "[null]", #"["thumb"]"#, "[3.0]", "[2.5]",
        "{}", #"{"fps":3}"#, #"{"fps":2.5}"#, #"{"fps":null}"#, #"{"width":"x"}"#, #"{"bogus":1}"#, #"{"fps":1e300}"#, #"{"fps":99}"#,
    ] as [String]).map { try! JSONReader.read(Data($0.utf8)) } + [
        .double(3.0), .double(0x1p60), .double(.infinity), .double(.nan), .array([.double(3.0), .double(.nan)]),
        .object(["fps": .double(4.0)]),
    ]

    /// What a client receives: the params as JSON, or the error object.
    private static func outcome<P: RPCParams>(_ type: P.Type, _ params: JSONValue?, through path: JSONValue.DecodingPath) -> String {
        let decoded: P
        do {
            decoded = try P.decode(from: params, through: path)
        } catch {
            return "error " + String(decoding: (try? JSONCoding.encoder.encode(error)) ?? Data(), as: UTF8.self)
        }
        guard let encodable = decoded as? any Encodable else { return "ok" }
        return "ok " + String(decoding: (try? JSONCoding.encoder.encode(encodable)) ?? Data("unencodable".utf8), as: UTF8.self)
    }

    /// Every body to try for one type: the valid ones, then each field of each replaced by each
    /// awkward value, removed, and an unknown field added; and params that are not an object.
    private static func variants(of bodies: [JSONValue], fields: Set<String>) -> [JSONValue?] {
        var out: [JSONValue?] = bodies
        out += [nil, .null, .array([]), .array(["ana"]), .string("ana"), .int(1)]
        for (n, body) in bodies.enumerated() {
            guard case .object(let members) = body else { continue }
            out.append(.object(members.merging(["zzz": 1]) { a, _ in a }))
            for key in members.keys.sorted() {
                var less = members
                less[key] = nil
                out.append(.object(less))
            }
            // Every awkward value in every field of the first body; the other bodies (same
            // fields) get null and the small numbers only.
            let values = n == 0 ? paramsAwkward : Array(paramsAwkward.prefix(8))
            for key in fields.sorted() {
                for value in values {
                    var changed = members
                    changed[key] = value
                    out.append(.object(changed))
                }
            }
        }
        return out
    }

    private static func compare<P: RPCParams>(_ type: P.Type, _ texts: [String]) -> (count: Int, mismatches: [String]) {
        let bodies = texts.map { try! JSONReader.read(Data($0.utf8)) }
        var mismatches: [String] = []
        let first = outcome(type, bodies[0], through: .foundation)
        if !first.hasPrefix("ok") { mismatches.append("\(P.self): the first body does not decode: \(first)") }
        let all = variants(of: bodies, fields: P.fields)
        for params in all {
            let old = outcome(type, params, through: .foundation)
            let new = outcome(type, params, through: .direct)
            if old != new {
                let body = params.map { String(decoding: try! JSONCoding.encoder.encode($0), as: UTF8.self) } ?? "nil"
                mismatches.append("\(P.self) \(body):\n  foundation: \(old)\n  direct:     \(new)")
            }
        }
        return (all.count, mismatches)
    }

    func testEveryParamsTypeDecodesAsThroughJSONDecoder() {
        var total = 0
        var mismatches: [String] = []
        for (type, texts) in Self.bodies {
            let r = Self.compare(type, texts)
            total += r.count
            mismatches += r.mismatches
        }
        XCTAssertEqual(Self.bodies.count, 34, "every params type of Sources/Protocol")
        XCTAssertGreaterThan(total, 5_000)
        print("JSONValueDecoderTests: \(total) params bodies over \(Self.bodies.count) types, both paths")
        XCTAssertEqual(mismatches, [], "\(mismatches.count) of \(total) bodies differ:\n" + mismatches.prefix(20).joined(separator: "\n"))
    }

    func testMessagesForBadNumbersAreUnchanged() throws {
        func message(_ body: String) throws -> String? {
            let params = try JSONReader.read(Data(body.utf8))
            do {
                _ = try SnapshotParams.decode(from: params)
                return nil
            } catch {
                return error.message
            }
        }
        XCTAssertNil(try message(#"{"warmup_frames":3.0}"#))
        XCTAssertNil(try message(#"{"warmup_frames":1e1}"#))
        XCTAssertEqual(try message(#"{"warmup_frames":2.5}"#),
                       "parameter 'warmup_frames' has a value its type cannot hold (2.5): a whole number in range, or a number of the right kind, is expected")
        XCTAssertEqual(try message(#"{"timeout_ms":1e300}"#),
                       "parameter 'timeout_ms' has a value its type cannot hold (1e+300): a whole number in range, or a number of the right kind, is expected")
        XCTAssertEqual(try message(#"{"warmup_frames":null,"timeout_ms":"fast"}"#), "parameter 'timeout_ms' must be an integer")
        XCTAssertEqual(try message(#"{"warmup_frames":61}"#), "parameter 'warmup_frames' must be between 0 and 60, got 61")
    }

    // MARK: Beyond the params: every container call and the types JSONDecoder reads itself

    struct Everything: Codable {
        var int8: Int8?
        var uint8: UInt8?
        var int32: Int32?
        var uint32: UInt32?
        var uint64: UInt64?
        var int: Int?
        var float: Float?
        var double: Double?
        var bool: Bool?
        var string: String?
        var data: Data?
        var date: Date?
        var url: URL?
        var decimal: Decimal?
        var map: [String: Int]?
        var grid: [[Int]]?
        var any: JSONValue?
        var tail: Tail?

        /// Reads the unkeyed and nested containers by hand, as an `init(from:)` may.
        struct Tail: Codable {
            var first: Int?
            var second: String
            var nested: [String]
            var rest: Int

            init(from decoder: any Decoder) throws {
                var c = try decoder.unkeyedContainer()
                if try c.decodeNil() { first = nil } else { first = try c.decodeIfPresent(Int.self) }
                second = try c.decode(String.self)
                var inner = try c.nestedUnkeyedContainer()
                nested = []
                while !inner.isAtEnd { nested.append(try inner.decode(String.self)) }
                let keyed = try c.nestedContainer(keyedBy: AnyKey.self)
                rest = try keyed.decode(Int.self, forKey: AnyKey(stringValue: "n")!) + (c.count ?? 0) * 1000
                _ = try c.decodeIfPresent(Bool.self)
                _ = try c.superDecoder()
            }

            func encode(to encoder: any Encoder) throws {
                var c = encoder.unkeyedContainer()
                try c.encode(first)
                try c.encode(second)
                try c.encode(nested)
                try c.encode(rest)
            }
        }

        struct AnyKey: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init?(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }
    }

    /// A DecodingError as its case, type, coding path (string and int values) and description;
    /// the key types differ between the decoders, their values may not.
    private static func describe(_ error: any Error) -> String {
        func context(_ c: DecodingError.Context) -> String {
            let path = c.codingPath.map { "\($0.stringValue)/\($0.intValue.map(String.init) ?? "-")" }.joined(separator: ".")
            return "[\(path)] \(c.debugDescription)"
        }
        switch error {
        case DecodingError.typeMismatch(let t, let c): return "typeMismatch \(t) \(context(c))"
        case DecodingError.valueNotFound(let t, let c): return "valueNotFound \(t) \(context(c))"
        case DecodingError.keyNotFound(let k, let c): return "keyNotFound \(k.stringValue) \(context(c))"
        case DecodingError.dataCorrupted(let c): return "dataCorrupted \(context(c))"
        default: return "\(type(of: error)) \(error)"
        }
    }

    private static func outcome<T: Codable>(_ type: T.Type, _ value: JSONValue, through path: JSONValue.DecodingPath) -> String {
        do {
            return "ok " + String(decoding: try JSONCoding.encoder.encode(try value.decode(type, through: path)), as: UTF8.self)
        } catch {
            return "error " + describe(error)
        }
    }

    func testEveryContainerCallAndSpecialTypeAsThroughJSONDecoder() {
        let fields = ["int8", "uint8", "int32", "uint32", "uint64", "int", "float", "double", "bool", "string", "data", "date",
                      "url", "decimal", "map", "grid", "any", "tail"]
        let extra: [JSONValue] = ([
            "-129", "255", "256", "4294967296", "18446744073709551615", "3.4e38", "3.5e38", "1e-46", "16777217",
            #""AAECAw==""#, #""AAE""#, #""https://example.org/a b""#, #""http://x""#, "12.5", #"{"a":1,"b":2.0}"#, #"{"a":"x"}"#,
            "[[1,2],[3.0]]", "[[1],[2.5]]", "[[1],null]", #"[null,"s",["a"],{"n":2},true]"#, #"[4,"s",["a","b"],{"n":3.0}]"#,
            #"[4,"s",["a",1],{"n":3}]"#, #"[4,"s"]"#, #"[4,"s",["a"],{"m":3}]"#, #"[4,"s",["a"],{"n":3},7]"#, #"[4,"s",[],{"n":3},null,8]"#,
            #"[4,5]"#, #"{"x":[1,{"y":2.5e-3}]}"#,
        ] as [String]).map { try! JSONReader.read(Data($0.utf8)) }
        var mismatches: [String] = []
        var total = 0
        for field in fields {
            for value in Self.awkward + extra {
                let body = JSONValue.object([field: value])
                total += 1
                let old = Self.outcome(Everything.self, body, through: .foundation)
                let new = Self.outcome(Everything.self, body, through: .direct)
                if old != new { mismatches.append("\(field) = \(value):\n  foundation: \(old)\n  direct:     \(new)") }
            }
        }
        // Top-level values that are not objects, and the values themselves as JSONValue.
        for value in Self.awkward + extra {
            total += 2
            for (a, b) in [(Self.outcome(Everything.self, value, through: .foundation), Self.outcome(Everything.self, value, through: .direct)),
                           (Self.outcome(JSONValue.self, value, through: .foundation), Self.outcome(JSONValue.self, value, through: .direct))]
            where a != b {
                mismatches.append("top \(value):\n  foundation: \(a)\n  direct:     \(b)")
            }
        }
        XCTAssertEqual(mismatches, [], "\(mismatches.count) of \(total) differ:\n" + mismatches.prefix(20).joined(separator: "\n"))
    }

    /// The client reads events and errors with `JSONValue.decode` too.
    func testEventsAndErrorsDecodeAsThroughJSONDecoder() throws {
        let texts = [
            #"{"code":-32602,"message":"parameter 'mode' must be a string","data":{"reason":"invalid_params","field":"mode"}}"#,
            #"{"code":3.0,"message":"m"}"#, #"{"code":2.5,"message":"m"}"#, #"{"message":"m"}"#,
        ]
        for text in texts {
            let value = try JSONReader.read(Data(text.utf8))
            XCTAssertEqual(Self.outcome(RPCError.self, value, through: .foundation), Self.outcome(RPCError.self, value, through: .direct), text)
        }
        let factor = try JSONReader.read(Data(#"{"factor":"face","outcome":"no_match","score":31.5,"attempt":1.0}"#.utf8))
        XCTAssertEqual((try? factor.decode(AuthFactorEvent.self, through: .foundation)), (try? factor.decode(AuthFactorEvent.self, through: .direct)))
    }
}
