import BiometricProtocol
import BiometricVocabulary
import Foundation

/// Makes up values of any Decodable type, for the differential tests of `JSONValueEncoder`:
/// every result and event type the daemon sends is built by its own `init(from:)` from values
/// picked by a seeded generator (nil about a third of the time, 0–3 array elements, big and
/// negative integers, non-finite and awkward doubles, strings with escapes, slashes and
/// non-ASCII). A String field of an enum type must hold one of its raw values: when `init(from:)`
/// refuses the string made up at a path, the next attempt gives that path the next string of
/// the pool (which holds every raw value of Protocol's and Vocabulary's String enums).
final class Sampler {
    static let tricky = ["", "a", "é", "😀", "a/b", "q\"uote", "back\\slash", "\u{0}\u{1}\u{8}\u{9}\u{A}\u{C}\u{D}\u{1F}\u{7F}",
                         "aGVsbG8=", "/9j/4A==", "Zürich ⌘", "</script>"]
    static let pool = tricky + Sampler.rawValues
    static let integers: [Int64] = [0, 1, -1, 7, 42, 255, 65_536, Int64(Int32.max), 1 << 53 + 1, Int64.max, Int64.min]
    static let doubles: [Double] = [0, -0.0, 1, -1, 0.5, 0.1, 12.345, 3.0, 48.0, 1e-7, 1e21, 1e22, .pi, -2.5e-300, 5e-324,
                                    1.7976931348623157e308, 0.30000000000000004, .nan, .infinity, -.infinity]

    private let seed: UInt64
    private var state: UInt64 = 0
    /// The pool index forced at a path after `init(from:)` refused what was made up there.
    private var forced: [String: Int] = [:]

    init(seed: UInt64) { self.seed = seed | 1 }

    func next() -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return state
    }

    func pick<T>(_ values: [T]) -> T { values[Int(next() % UInt64(values.count))] }

    func string(at path: [any CodingKey]) -> String {
        let r = next()
        if let i = forced[Self.name(path)] { return Self.pool[i] }
        return Self.pool[Int(r % UInt64(Self.pool.count))]
    }

    static func name(_ path: [any CodingKey]) -> String { path.map(\.stringValue).joined(separator: "/") }

    /// A value of `type`, retrying with the pool's strings where `init(from:)` refuses one.
    func make<T: Decodable>(_ type: T.Type) throws -> T {
        for _ in 0..<5000 {
            state = seed
            do {
                return try SampleDecoder(sampler: self, codingPath: []).decodeValue(type)
            } catch let error as WireEnumError {
                // A Vocabulary enum names what it accepts: take one of those.
                guard let i = Self.pool.firstIndex(of: error.allowed[Int(seed % UInt64(error.allowed.count))]) else { throw error }
                forced[Self.name(error.codingPath)] = i
            } catch DecodingError.dataCorrupted(let context) {
                let at = Self.name(context.codingPath)
                let i = (forced[at] ?? -1) + 1
                guard i < Self.pool.count else { throw DecodingError.dataCorrupted(context) }
                forced[at] = i
            }
        }
        throw CocoaError(.coderInvalidValue)
    }
}

struct SampleDecoder: Decoder {
    let sampler: Sampler
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    struct SampleKey: CodingKey {
        var stringValue: String
        var intValue: Int?
        init(stringValue: String) { self.stringValue = stringValue }
        init(intValue: Int) {
            stringValue = "Index \(intValue)"
            self.intValue = intValue
        }
    }

    func container<K: CodingKey>(keyedBy type: K.Type) throws -> KeyedDecodingContainer<K> {
        KeyedDecodingContainer(Keyed<K>(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        Unkeyed(decoder: self, count: Int(sampler.next() % 4))
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { Single(decoder: self) }

    func below(_ key: any CodingKey) -> SampleDecoder { SampleDecoder(sampler: sampler, codingPath: codingPath + [key]) }

    func decodeNil() -> Bool { sampler.next() % 3 == 0 }

    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        if T.self == String.self { return sampler.string(at: codingPath) as! T }
        if T.self == Bool.self { return (sampler.next() % 2 == 0) as! T }
        if T.self == Double.self { return sampler.pick(Sampler.doubles) as! T }
        if T.self == Float.self { return sampler.pick([Float(0), 0.5, -1.25, 3, .infinity]) as! T }
        if T.self == Data.self { return Data((0..<Int(sampler.next() % 7)).map { _ in UInt8(truncatingIfNeeded: sampler.next()) }) as! T }
        if T.self == Date.self { return Date(timeIntervalSinceReferenceDate: sampler.pick([0, 1.5, 812_345_678.25, -3])) as! T }
        if T.self == URL.self { return URL(string: "file:///run/biometricd/a%20b.sock")! as! T }
        if let v = integer(T.self) { return v }
        return try T(from: self)
    }

    private func integer<T>(_ type: T.Type) -> T? {
        let i = sampler.pick(Sampler.integers)
        switch type {
        case is Int.Type: return Int(i) as? T
        case is Int64.Type: return i as? T
        case is Int32.Type: return Int32(truncatingIfNeeded: i) as? T
        case is Int16.Type: return Int16(truncatingIfNeeded: i) as? T
        case is Int8.Type: return Int8(truncatingIfNeeded: i) as? T
        case is UInt.Type: return UInt(i.magnitude & UInt64(Int64.max)) as? T
        case is UInt64.Type: return (i.magnitude & UInt64(Int64.max)) as? T
        case is UInt32.Type: return UInt32(truncatingIfNeeded: i) as? T
        case is UInt16.Type: return UInt16(truncatingIfNeeded: i) as? T
        case is UInt8.Type: return UInt8(truncatingIfNeeded: i) as? T
        default: return nil
        }
    }

    struct Single: SingleValueDecodingContainer {
        let decoder: SampleDecoder
        var codingPath: [any CodingKey] { decoder.codingPath }
        func decodeNil() -> Bool { decoder.decodeNil() }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decodeValue(type) }
        func decode(_ type: Bool.Type) throws -> Bool { try decoder.decodeValue(type) }
        func decode(_ type: String.Type) throws -> String { try decoder.decodeValue(type) }
        func decode(_ type: Double.Type) throws -> Double { try decoder.decodeValue(type) }
        func decode(_ type: Float.Type) throws -> Float { try decoder.decodeValue(type) }
        func decode(_ type: Int.Type) throws -> Int { try decoder.decodeValue(type) }
        func decode(_ type: Int8.Type) throws -> Int8 { try decoder.decodeValue(type) }
        func decode(_ type: Int16.Type) throws -> Int16 { try decoder.decodeValue(type) }
        func decode(_ type: Int32.Type) throws -> Int32 { try decoder.decodeValue(type) }
        func decode(_ type: Int64.Type) throws -> Int64 { try decoder.decodeValue(type) }
        func decode(_ type: UInt.Type) throws -> UInt { try decoder.decodeValue(type) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try decoder.decodeValue(type) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try decoder.decodeValue(type) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try decoder.decodeValue(type) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try decoder.decodeValue(type) }
    }

    struct Keyed<K: CodingKey>: KeyedDecodingContainerProtocol {
        let decoder: SampleDecoder
        var codingPath: [any CodingKey] { decoder.codingPath }
        var allKeys: [K] { [] }
        func contains(_ key: K) -> Bool { true }
        func decodeNil(forKey key: K) throws -> Bool { decoder.decodeNil() }
        func decode<T: Decodable>(_ type: T.Type, forKey key: K) throws -> T { try decoder.below(key).decodeValue(type) }
        func decode(_ type: Bool.Type, forKey key: K) throws -> Bool { try decoder.below(key).decodeValue(type) }
        func decode(_ type: String.Type, forKey key: K) throws -> String { try decoder.below(key).decodeValue(type) }
        func decode(_ type: Double.Type, forKey key: K) throws -> Double { try decoder.below(key).decodeValue(type) }
        func decode(_ type: Float.Type, forKey key: K) throws -> Float { try decoder.below(key).decodeValue(type) }
        func decode(_ type: Int.Type, forKey key: K) throws -> Int { try decoder.below(key).decodeValue(type) }
        func decode(_ type: Int8.Type, forKey key: K) throws -> Int8 { try decoder.below(key).decodeValue(type) }
        func decode(_ type: Int16.Type, forKey key: K) throws -> Int16 { try decoder.below(key).decodeValue(type) }
        func decode(_ type: Int32.Type, forKey key: K) throws -> Int32 { try decoder.below(key).decodeValue(type) }
        func decode(_ type: Int64.Type, forKey key: K) throws -> Int64 { try decoder.below(key).decodeValue(type) }
        func decode(_ type: UInt.Type, forKey key: K) throws -> UInt { try decoder.below(key).decodeValue(type) }
        func decode(_ type: UInt8.Type, forKey key: K) throws -> UInt8 { try decoder.below(key).decodeValue(type) }
        func decode(_ type: UInt16.Type, forKey key: K) throws -> UInt16 { try decoder.below(key).decodeValue(type) }
        func decode(_ type: UInt32.Type, forKey key: K) throws -> UInt32 { try decoder.below(key).decodeValue(type) }
        func decode(_ type: UInt64.Type, forKey key: K) throws -> UInt64 { try decoder.below(key).decodeValue(type) }
        func nestedContainer<N: CodingKey>(keyedBy type: N.Type, forKey key: K) throws -> KeyedDecodingContainer<N> {
            try decoder.below(key).container(keyedBy: type)
        }
        func nestedUnkeyedContainer(forKey key: K) throws -> any UnkeyedDecodingContainer { try decoder.below(key).unkeyedContainer() }
        func superDecoder() throws -> any Decoder { decoder.below(SampleKey(stringValue: "super")) }
        func superDecoder(forKey key: K) throws -> any Decoder { decoder.below(key) }
    }

    struct Unkeyed: UnkeyedDecodingContainer {
        let decoder: SampleDecoder
        let count: Int?
        var currentIndex = 0
        var codingPath: [any CodingKey] { decoder.codingPath }
        var isAtEnd: Bool { currentIndex >= count! }

        init(decoder: SampleDecoder, count: Int) {
            self.decoder = decoder
            self.count = count
        }

        private mutating func element() -> SampleDecoder {
            defer { currentIndex += 1 }
            return decoder.below(SampleKey(intValue: currentIndex))
        }

        mutating func decodeNil() throws -> Bool {
            let isNil = decoder.decodeNil()
            if isNil { currentIndex += 1 }
            return isNil
        }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try element().decodeValue(type) }
        mutating func decode(_ type: Bool.Type) throws -> Bool { try element().decodeValue(type) }
        mutating func decode(_ type: String.Type) throws -> String { try element().decodeValue(type) }
        mutating func decode(_ type: Double.Type) throws -> Double { try element().decodeValue(type) }
        mutating func decode(_ type: Float.Type) throws -> Float { try element().decodeValue(type) }
        mutating func decode(_ type: Int.Type) throws -> Int { try element().decodeValue(type) }
        mutating func decode(_ type: Int8.Type) throws -> Int8 { try element().decodeValue(type) }
        mutating func decode(_ type: Int16.Type) throws -> Int16 { try element().decodeValue(type) }
        mutating func decode(_ type: Int32.Type) throws -> Int32 { try element().decodeValue(type) }
        mutating func decode(_ type: Int64.Type) throws -> Int64 { try element().decodeValue(type) }
        mutating func decode(_ type: UInt.Type) throws -> UInt { try element().decodeValue(type) }
        mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try element().decodeValue(type) }
        mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try element().decodeValue(type) }
        mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try element().decodeValue(type) }
        mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try element().decodeValue(type) }
        mutating func nestedContainer<N: CodingKey>(keyedBy type: N.Type) throws -> KeyedDecodingContainer<N> {
            try element().container(keyedBy: type)
        }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try element().unkeyedContainer() }
        mutating func superDecoder() throws -> any Decoder { element() }
    }
}

extension Sampler {
    /// Every raw value of Protocol's and Vocabulary's String enums (and their CodingKeys, which
    /// does no harm), listed from the sources.
    static let rawValues: [String] = [
        "aaid", "active_sessions", "amputated", "app_id", "applications", "auth.factor", "authenticated", "authenticator_data",
        "bad_capture", "bad_quality", "biometric", "biometric_failures", "biometricd", "blink", "blink_timeout",
        "blink_timeout_ms", "blurry", "box", "brightness", "brightness_before", "brightness_during", "busy", "camera",
        "camera.added", "camera.removed", "camera_error", "cameras", "canceled", "candidates", "captures", "captures_used",
        "center_face", "challenge", "challenge_step_timeout_ms", "challenge_steps", "clients", "code", "controls",
        "countdown_s", "counter", "created", "credential_id", "deleted", "distance", "distance_range", "dominant", "dpi",
        "duration_ms", "entry", "expires_s", "extracting", "extraction", "face", "face.frame", "face_forward", "face_gallery",
        "face_templates", "faces", "faces_seen", "factor", "factors", "failed", "fake", "feedback", "fido_credentials",
        "finger", "finger.frame", "finger_templates", "fingers", "focus", "format", "fps", "frame_height", "frame_width",
        "frames", "frames_captured", "frames_needed", "frames_used", "full", "hand", "height", "high", "hold_still", "image",
        "image_format", "index", "invalid_aaid", "invalid_user", "ir", "iso19794_2", "jpeg", "keep_still", "key_handle",
        "keys", "landmarks", "last", "left", "limit_reached", "little", "live", "liveness", "liveness_action", "liveness_mode",
        "liveness_score", "liveness_threshold", "locked_out", "look_down", "look_up", "low", "margin", "match",
        "matching_threshold", "max", "medium", "message", "middle", "min", "mode", "models", "move_back", "move_closer",
        "multiple_faces", "name", "nearest_centre", "no_camera", "no_decision", "no_face", "no_face_registered",
        "no_finger_registered", "no_fingers", "nod", "nonce", "none", "not_checked", "not_found", "not_initialized", "ok",
        "old_pin", "only", "optimal", "optimal_max", "optimal_min", "original", "other_user", "outcome", "passive",
        "passive+blink", "password", "path", "payload", "permission_denied", "pid", "pin", "pin_format", "pin_locked",
        "pin_not_set", "pin_retries_left", "pin_set", "pitch", "png", "policy", "position", "preview", "privileged", "probe",
        "public_key", "quality", "quality_threshold", "quota_exceeded", "read_back", "reason", "reenroll_hint", "reference",
        "references", "remove_pin", "require_arrival", "require_liveness", "requires_pin", "restored", "retries_left",
        "retry_after_s", "right", "ring", "roll", "rp_id", "score", "seconds_ago", "selector", "sharpness", "show_palm",
        "signature", "simple", "single", "skipped", "socket_activated", "spoof", "spoof_attempt", "spoof_detected", "status",
        "step_up", "step_up_required", "store", "subject", "success", "suggestion", "summary", "table_errors", "table_files",
        "template", "template_id", "template_version", "templates", "templates_removed", "threshold", "thumb", "timeout",
        "timeout_ms", "timeout_s", "too_bright", "too_close", "too_dark", "too_far", "trials", "tried", "turn_left",
        "turn_right", "type", "unavailable", "unit", "uptime_s", "usb_device", "usb_interface", "user", "user_name",
        "user_verified", "users", "uuid", "verified_by", "version", "very_low", "warmup_frames", "width", "writes", "written",
        "wsq", "yaw",
    ]
}
