import Foundation

/// A face template: a unit-length 128-d dlib embedding plus its quality and, in version 2, the
/// second network's unit-length 128-d embedding, in a versioned binary form.
///
/// Layout (little-endian): "BMFT" · version u8 · dimensions u16 (128) · quality u8 (0–100)
/// · 128 × float32 (dlib) — version 1 ends here (520 bytes) — then, version 2 only:
/// second dimensions u16 (128) · 128 × float32 (MobileFaceNet-ArcFace), 1034 bytes.
/// Base64 of it is what face.add/face.export carry. The version lives in the blob, so the store
/// needs no migration: v1 rows keep verifying with dlib alone (Docs/face.md "Two networks, one
/// score").
public struct FaceTemplate: Sendable, Equatable {
    public static let magic: [UInt8] = Array("BMFT".utf8)
    /// The versions this build reads: 1 (dlib) and 2 (dlib + the second network).
    public static let supportedVersions: [UInt8] = [1, 2]
    public static let dimensions = 128
    public static let secondDimensions = 128

    public var embedding: [Float]
    /// The second network's embedding (v2), nil in a v1 template.
    public var second: [Float]?
    public var quality: Int

    /// 2 when the template carries the second network's embedding, else 1.
    public var version: UInt8 { second == nil ? 1 : 2 }

    public enum DecodeError: Error, Equatable, CustomStringConvertible {
        case notATemplate
        case unsupportedVersion(UInt8)
        case badDimensions(Int)
        case notNormalised
        public var description: String {
            switch self {
            case .notATemplate: "not a biometricd face template"
            case .unsupportedVersion(let v): "face template version \(v) is not supported (this build reads versions 1 and 2)"
            case .badDimensions(let d): "face template has \(d) dimensions or a wrong length, expected 128"
            case .notNormalised: "face template is not a unit-length embedding"
            }
        }
    }

    public init(embedding: [Float], second: [Float]? = nil, quality: Int) {
        precondition(embedding.count == Self.dimensions)
        precondition(second.map { $0.count == Self.secondDimensions } ?? true)
        self.embedding = Self.normalised(embedding)
        self.second = second.map(Self.normalised)
        self.quality = max(0, min(100, quality))
    }

    /// The same template without the second network's embedding (what a v1 reader would see).
    public var dlibOnly: FaceTemplate {
        var t = self
        t.second = nil
        return t
    }

    public static func normalised(_ v: [Float]) -> [Float] {
        let norm = v.reduce(0) { $0 + $1 * $1 }.squareRoot()
        return norm > 0 ? v.map { $0 / norm } : v
    }

    public var data: Data {
        var out = Data(Self.magic)
        out.append(version)
        out.append(contentsOf: withUnsafeBytes(of: UInt16(Self.dimensions).littleEndian) { Array($0) })
        out.append(UInt8(quality))
        Self.append(embedding, to: &out)
        if let second {
            out.append(contentsOf: withUnsafeBytes(of: UInt16(Self.secondDimensions).littleEndian) { Array($0) })
            Self.append(second, to: &out)
        }
        return out
    }

    private static func append(_ values: [Float], to out: inout Data) {
        for value in values {
            out.append(contentsOf: withUnsafeBytes(of: value.bitPattern.littleEndian) { Array($0) })
        }
    }

    /// Reads `count` float32 at `offset`; each must be finite and the vector unit length.
    private static func unitVector(_ bytes: [UInt8], at offset: Int, count: Int) throws(DecodeError) -> [Float] {
        var values = [Float](repeating: 0, count: count)
        for i in 0..<count {
            let o = offset + 4 * i
            let bits = UInt32(bytes[o]) | UInt32(bytes[o + 1]) << 8 | UInt32(bytes[o + 2]) << 16 | UInt32(bytes[o + 3]) << 24
            values[i] = Float(bitPattern: bits)
        }
        guard values.allSatisfy(\.isFinite) else { throw .notNormalised }
        let norm = values.reduce(0) { $0 + $1 * $1 }.squareRoot()
        guard abs(norm - 1) < 0.01 else { throw .notNormalised }
        return values
    }

    public init(data: Data) throws(DecodeError) {
        let bytes = [UInt8](data)
        guard bytes.count >= 8, Array(bytes[0..<4]) == Self.magic else { throw .notATemplate }
        let version = bytes[4]
        guard Self.supportedVersions.contains(version) else { throw .unsupportedVersion(version) }
        let dims = Int(bytes[5]) | Int(bytes[6]) << 8
        let first = 8 + 4 * Self.dimensions
        guard dims == Self.dimensions else { throw .badDimensions(dims) }
        if version == 1 {
            guard bytes.count == first else { throw .badDimensions(dims) }
        } else {
            guard bytes.count >= first + 2 else { throw .badDimensions(dims) }
            let dims2 = Int(bytes[first]) | Int(bytes[first + 1]) << 8
            guard dims2 == Self.secondDimensions, bytes.count == first + 2 + 4 * dims2 else { throw .badDimensions(dims2) }
            second = try Self.unitVector(bytes, at: first + 2, count: dims2)
        }
        embedding = try Self.unitVector(bytes, at: 8, count: dims)
        quality = Int(min(bytes[7], 100))
    }

    /// Euclidean distance between the dlib embeddings (0 = identical, 2 = opposite).
    public func distance(to other: FaceTemplate) -> Double {
        Self.distance(embedding, other.embedding)
    }

    /// The fused distance (Docs/face.md "Two networks, one score"): the Euclidean distance between
    /// the unit vectors [√w·dlib, √(1 − w)·second] of both templates, w = `FaceFusion.dlibShare`,
    /// i.e. √(2 − 2·(w·cos_dlib + (1 − w)·cos_second)). Nil unless both carry the second embedding.
    public func fusedDistance(to other: FaceTemplate) -> Double? {
        guard let a = second, let b = other.second else { return nil }
        let w = FaceFusion.dlibShare
        let c = w * Self.dot(embedding, other.embedding) + (1 - w) * Self.dot(a, b)
        return max(0, 2 - 2 * c).squareRoot()
    }

    /// The vector whose distances are the fused distances: [√w·dlib, √(1 − w)·second] (256-d,
    /// unit length). Nil for a v1 template.
    public var fusedVector: [Float]? {
        guard let second else { return nil }
        let x = Float(FaceFusion.dlibShare.squareRoot()), y = Float((1 - FaceFusion.dlibShare).squareRoot())
        return embedding.map { x * $0 } + second.map { y * $0 }
    }

    static func dot(_ a: [Float], _ b: [Float]) -> Double {
        var sum: Float = 0
        for i in 0..<min(a.count, b.count) { sum += a[i] * b[i] }
        return Double(sum)
    }

    static func distance(_ a: [Float], _ b: [Float]) -> Double {
        var sum: Float = 0
        for i in 0..<min(a.count, b.count) {
            let d = a[i] - b[i]
            sum += d * d
        }
        return Double(sum.squareRoot())
    }

    /// A quality-weighted mean of several frames' embeddings (re-normalised): steadier than any one
    /// frame. The second embedding is fused likewise when every frame has one (else the result is v1).
    public static func fused(_ templates: [FaceTemplate]) -> FaceTemplate? {
        guard !templates.isEmpty else { return nil }
        var sum = [Float](repeating: 0, count: dimensions)
        var secondSum: [Float]? = templates.allSatisfy { $0.second != nil } ? [Float](repeating: 0, count: secondDimensions) : nil
        var weightSum: Float = 0
        for t in templates {
            let w = Float(max(t.quality, 1))
            for i in 0..<dimensions { sum[i] += w * t.embedding[i] }
            if secondSum != nil, let s = t.second { for i in 0..<secondDimensions { secondSum![i] += w * s[i] } }
            weightSum += w
        }
        let quality = Int((templates.map { Double($0.quality) }.reduce(0, +) / Double(templates.count)).rounded())
        return FaceTemplate(embedding: sum.map { $0 / weightSum }, second: secondSum.map { $0.map { $0 / weightSum } }, quality: quality)
    }
}
