import COpenBLAS

/// All enrolled face templates as one row-major matrix, for 1:N search with one BLAS call
/// (sgemv: every similarity at once, memory-bandwidth bound).
public struct FaceGallery: Sendable {
    public struct Entry: Sendable, Equatable {
        public var user: String
        public var templateID: String
        public init(user: String, templateID: String) {
            self.user = user
            self.templateID = templateID
        }
    }

    public let entries: [Entry]
    /// entries.count × 128 floats.
    private let matrix: [Float]

    public init(_ items: [(Entry, FaceTemplate)]) {
        entries = items.map(\.0)
        matrix = items.flatMap(\.1.embedding)
    }

    public var count: Int { entries.count }

    /// Distances of `probe` to every entry (unit vectors: d² = 2 − 2·cos).
    public func distances(to probe: FaceTemplate) -> [Double] {
        guard !entries.isEmpty else { return [] }
        var dots = [Float](repeating: 0, count: entries.count)
        matrix.withUnsafeBufferPointer { m in
            probe.embedding.withUnsafeBufferPointer { q in
                cblas_sgemv(CblasRowMajor, CblasNoTrans, Int32(entries.count), Int32(FaceTemplate.dimensions), 1,
                            m.baseAddress, Int32(FaceTemplate.dimensions), q.baseAddress, 1, 0, &dots, 1)
            }
        }
        return dots.map { (dot: Float) -> Double in
            let squared = Double(2 - 2 * dot)
            return max(0, squared).squareRoot()
        }
    }

    public struct Candidate: Sendable, Equatable {
        public var user: String
        public var distance: Double
    }

    /// The best distance per user, best first, at most `limit` users.
    public func rank(_ probe: FaceTemplate, limit: Int = 5) -> [Candidate] {
        var best: [String: Double] = [:]
        for (entry, d) in zip(entries, distances(to: probe)) {
            best[entry.user] = min(best[entry.user] ?? .infinity, d)
        }
        let all: [Candidate] = best.map { Candidate(user: $0.key, distance: $0.value) }
        let sorted = all.sorted { (a: Candidate, b: Candidate) -> Bool in
            a.distance != b.distance ? a.distance < b.distance : a.user < b.user
        }
        return Array(sorted.prefix(limit))
    }
}
