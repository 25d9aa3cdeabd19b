import CArgon2
import Foundation

/// Argon2id cost parameters. They are stored with every hash (PHC string), so they can be raised
/// later: a hash made with weaker parameters still verifies, and is re-made on the next success.
public struct Argon2Parameters: Sendable, Equatable, CustomStringConvertible {
    /// Passes over memory.
    public var iterations: UInt32
    /// Memory in KiB.
    public var memoryKiB: UInt32
    public var parallelism: UInt32

    public init(iterations: UInt32, memoryKiB: UInt32, parallelism: UInt32) {
        self.iterations = iterations
        self.memoryKiB = memoryKiB
        self.parallelism = parallelism
    }

    /// ~0.1 s per hash on a 2-core x86-64 machine (Docs/auth.md has the measurement): slow enough
    /// that an offline guess of a 6-digit PIN costs a day of one core, fast enough for a login.
    public static let standard = Argon2Parameters(iterations: 3, memoryKiB: 32 * 1024, parallelism: 1)

    public var description: String { "m=\(memoryKiB),t=\(iterations),p=\(parallelism)" }

    /// Bounds for parameters read back from the store (a corrupted row must not ask for 1 TiB).
    static let accepted = (iterations: UInt32(1)...UInt32(64), memoryKiB: UInt32(8)...UInt32(1 << 21), parallelism: UInt32(1)...UInt32(16))

    public func isWeaker(than other: Argon2Parameters) -> Bool {
        iterations < other.iterations || memoryKiB < other.memoryKiB
    }
}

public enum PINHashError: Error, Sendable, Equatable, CustomStringConvertible {
    case argon2(String)
    case malformedHash

    public var description: String {
        switch self {
        case .argon2(let m): "argon2: \(m)"
        case .malformedHash: "the stored PIN hash is not an argon2id PHC string this build reads"
        }
    }
}

/// Hashes PINs with Argon2id (libargon2) and checks them in constant time.
public struct PINHasher: Sendable {
    public var parameters: Argon2Parameters
    static let saltBytes = 16
    static let hashBytes = 32

    public init(parameters: Argon2Parameters = .standard) {
        self.parameters = parameters
    }

    /// A PHC string: `$argon2id$v=19$m=…,t=…,p=…$<salt>$<hash>` (salt from the system CSPRNG).
    public func hash(_ pin: String) throws(PINHashError) -> String {
        var salt = [UInt8](repeating: 0, count: Self.saltBytes)
        var rng = SystemRandomNumberGenerator()
        for i in salt.indices { salt[i] = UInt8.random(in: 0...255, using: &rng) }
        let p = parameters
        let length = argon2_encodedlen(p.iterations, p.memoryKiB, p.parallelism, UInt32(salt.count), UInt32(Self.hashBytes), Argon2_id)
        var encoded = [CChar](repeating: 0, count: length + 1)
        var secret = Array(pin.utf8)
        defer { secret.withUnsafeMutableBytes { wipe($0) } }
        let rc = argon2id_hash_encoded(p.iterations, p.memoryKiB, p.parallelism, secret, secret.count, salt, salt.count,
                                       Self.hashBytes, &encoded, encoded.count)
        guard rc == ARGON2_OK.rawValue else { throw .argon2(String(cString: argon2_error_message(rc))) }
        return String(cString: encoded)
    }

    /// Whether `pin` matches `stored`; the comparison of the derived keys takes the same time
    /// wherever they differ.
    public static func verify(_ pin: String, against stored: String) throws(PINHashError) -> Bool {
        let phc = try PHCString(parsing: stored)
        var derived = [UInt8](repeating: 0, count: phc.hash.count)
        var secret = Array(pin.utf8)
        defer {
            secret.withUnsafeMutableBytes { wipe($0) }
            derived.withUnsafeMutableBytes { wipe($0) }
        }
        let p = phc.parameters
        let rc = argon2id_hash_raw(p.iterations, p.memoryKiB, p.parallelism, secret, secret.count, phc.salt, phc.salt.count,
                                   &derived, derived.count)
        guard rc == ARGON2_OK.rawValue else { throw .argon2(String(cString: argon2_error_message(rc))) }
        return constantTimeEqual(derived, phc.hash)
    }

    /// The parameters a stored hash was made with.
    public static func parameters(of stored: String) throws(PINHashError) -> Argon2Parameters {
        try PHCString(parsing: stored).parameters
    }
}

/// Equal length and equal bytes, in time that depends only on the length.
public func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    var difference: UInt8 = 0
    for i in a.indices { difference |= a[i] ^ b[i] }
    return difference == 0
}

/// Overwrites a secret's bytes before the memory is released.
func wipe(_ buffer: UnsafeMutableRawBufferPointer) {
    guard let base = buffer.baseAddress else { return }
    memset_s_compat(base, buffer.count)
}

@inline(never)
private func memset_s_compat(_ pointer: UnsafeMutableRawPointer, _ count: Int) {
    // explicit_bzero is not optimised away (glibc ≥ 2.25).
    explicit_bzero(pointer, count)
}

/// `$argon2id$v=19$m=65536,t=3,p=1$<salt b64>$<hash b64>` (unpadded base64, as libargon2 writes).
struct PHCString {
    var parameters: Argon2Parameters
    var salt: [UInt8]
    var hash: [UInt8]

    init(parsing s: String) throws(PINHashError) {
        let parts = s.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 6, parts[0].isEmpty, parts[1] == "argon2id", parts[2] == "v=19" else { throw .malformedHash }
        var values: [String: UInt32] = [:]
        for item in parts[3].split(separator: ",") {
            let kv = item.split(separator: "=", maxSplits: 1)
            guard kv.count == 2, let v = UInt32(kv[1]) else { throw .malformedHash }
            values[String(kv[0])] = v
        }
        guard let m = values["m"], let t = values["t"], let p = values["p"], values.count == 3,
              Argon2Parameters.accepted.iterations.contains(t), Argon2Parameters.accepted.memoryKiB.contains(m),
              Argon2Parameters.accepted.parallelism.contains(p), m >= 8 * p
        else { throw .malformedHash }
        guard let salt = Self.base64(parts[4]), let hash = Self.base64(parts[5]), salt.count >= 8, (16...64).contains(hash.count)
        else { throw .malformedHash }
        parameters = Argon2Parameters(iterations: t, memoryKiB: m, parallelism: p)
        self.salt = salt
        self.hash = hash
    }

    static func base64(_ s: Substring) -> [UInt8]? {
        var padded = String(s)
        while padded.count % 4 != 0 { padded += "=" }
        return Data(base64Encoded: padded).map { [UInt8]($0) }
    }
}
