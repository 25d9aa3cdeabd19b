import Foundation

/// A face template: a unit-length 128-d embedding plus its quality, in a versioned binary form.
///
/// Layout (little-endian): "BMFT" · version u8 (1) · dimensions u16 (128) · quality u8 (0–100)
/// · 128 × float32. 136 + 8 = 520 bytes. Base64 of it is what face.add/face.export carry.
public struct FaceTemplate: Sendable, Equatable {
    public static let magic: [UInt8] = Array("BMFT".utf8)
    public static let version: UInt8 = 1
    public static let dimensions = 128

    public var embedding: [Float]
    public var quality: Int

    public enum DecodeError: Error, Equatable, CustomStringConvertible {
        case notATemplate
        case unsupportedVersion(UInt8)
        case badDimensions(Int)
        case notNormalised
        public var description: String {
            switch self {
            case .notATemplate: "not a biometricd face template"
            case .unsupportedVersion(let v): "face template version \(v) is not supported (this build reads version 1)"
            case .badDimensions(let d): "face template has \(d) dimensions, expected 128"
            case .notNormalised: "face template is not a unit-length embedding"
            }
        }
    }

    public init(embedding: [Float], quality: Int) {
        precondition(embedding.count == Self.dimensions)
        self.embedding = Self.normalised(embedding)
        self.quality = max(0, min(100, quality))
    }

    public static func normalised(_ v: [Float]) -> [Float] {
        let norm = v.reduce(0) { $0 + $1 * $1 }.squareRoot()
        return norm > 0 ? v.map { $0 / norm } : v
    }

    public var data: Data {
        var out = Data(Self.magic)
        out.append(Self.version)
        out.append(contentsOf: withUnsafeBytes(of: UInt16(Self.dimensions).littleEndian) { Array($0) })
        out.append(UInt8(quality))
        for value in embedding {
            out.append(contentsOf: withUnsafeBytes(of: value.bitPattern.littleEndian) { Array($0) })
        }
        return out
    }

    public init(data: Data) throws(DecodeError) {
        let bytes = [UInt8](data)
        guard bytes.count >= 8, Array(bytes[0..<4]) == Self.magic else { throw .notATemplate }
        guard bytes[4] == Self.version else { throw .unsupportedVersion(bytes[4]) }
        let dims = Int(bytes[5]) | Int(bytes[6]) << 8
        guard dims == Self.dimensions, bytes.count == 8 + 4 * dims else { throw .badDimensions(dims) }
        var values = [Float](repeating: 0, count: dims)
        for i in 0..<dims {
            let o = 8 + 4 * i
            let bits = UInt32(bytes[o]) | UInt32(bytes[o + 1]) << 8 | UInt32(bytes[o + 2]) << 16 | UInt32(bytes[o + 3]) << 24
            values[i] = Float(bitPattern: bits)
        }
        guard values.allSatisfy(\.isFinite) else { throw .notNormalised }
        let norm = values.reduce(0) { $0 + $1 * $1 }.squareRoot()
        guard abs(norm - 1) < 0.01 else { throw .notNormalised }
        embedding = values
        quality = Int(min(bytes[7], 100))
    }

    /// Euclidean distance between unit embeddings (0 = identical, 2 = opposite).
    public func distance(to other: FaceTemplate) -> Double {
        var sum: Float = 0
        for i in 0..<Self.dimensions {
            let d = embedding[i] - other.embedding[i]
            sum += d * d
        }
        return Double(sum.squareRoot())
    }

    /// A quality-weighted mean of several frames' embeddings (re-normalised): steadier than any one frame.
    public static func fused(_ templates: [FaceTemplate]) -> FaceTemplate? {
        guard !templates.isEmpty else { return nil }
        var sum = [Float](repeating: 0, count: dimensions)
        var weightSum: Float = 0
        for t in templates {
            let w = Float(max(t.quality, 1))
            for i in 0..<dimensions { sum[i] += w * t.embedding[i] }
            weightSum += w
        }
        let quality = Int((templates.map { Double($0.quality) }.reduce(0, +) / Double(templates.count)).rounded())
        return FaceTemplate(embedding: sum.map { $0 / weightSum }, quality: quality)
    }
}
