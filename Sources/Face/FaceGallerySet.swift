import BiometricCore

/// The 1:N gallery over version-1 and version-2 templates, exact on the score the verify path
/// gives (Docs/face.md "Two networks, one score"): a v2 template against a probe with the second
/// embedding is scored on the fused distance (`FaceFusion.calibration`), anything else on dlib's
/// (`calibration`), as `FaceVerification.score` does.
///
/// Three exact galleries, each searched for its best `limit` users: the v1 templates (dlib), the
/// v2 templates' dlib part (used when the probe has no second embedding: the network is not
/// loaded) and their fused vectors (256-d). The per-user best of the two searched lists, by SPEC
/// score, is the exhaustive answer: a user outside one list's top `limit` has `limit` users at
/// least as good there, and so overall.
public struct FaceGallerySet: Sendable {
    public private(set) var version1 = FaceGallery(metric: .dlib)
    public private(set) var version2Dlib = FaceGallery(metric: .dlib)
    public private(set) var version2Fused = FaceGallery(metric: .fused)

    public init() {}

    public init<S: Sequence>(_ items: S) where S.Element == (key: Int64, template: FaceTemplate) {
        for item in items { append(key: item.key, item.template) }
    }

    /// Templates held (each v2 template once).
    public var count: Int { version1.count + version2Dlib.count }
    /// Whether any template is version 2 (a probe then needs the second network's chip).
    public var hasVersion2: Bool { version2Fused.count > 0 }
    /// Bytes of the compact rows.
    public var bytes: Int {
        version1.count * version1.bytesPerRow + version2Dlib.count * version2Dlib.bytesPerRow + version2Fused.count * version2Fused.bytesPerRow
    }

    public mutating func reserveCapacity(_ n: Int) { version1.reserveCapacity(n) }

    public mutating func append(key: Int64, _ template: FaceTemplate) {
        if template.second != nil {
            version2Dlib.append(key: key, template)
            version2Fused.append(key: key, template)
        } else {
            version1.append(key: key, template)
        }
    }

    public struct Scored: Sendable, Equatable {
        public var user: String
        public var score: Double
    }

    /// The best SPEC score per user, best first (ties by name), at most `limit` users: the same
    /// answer as `exhaustiveRank`. `calibration` scores dlib distances (`FaceCalibration.lfw`).
    public func rank(_ probe: FaceTemplate, limit: Int = 5, exact source: some FaceTemplateSource, calibration: FARCalibration,
                     threads: Int = 1, stats: UnsafeMutablePointer<FaceGallery.SearchStats>? = nil) throws -> [Scored]
    {
        let version2 = probe.second != nil ? (version2Fused, FaceFusion.calibration) : (version2Dlib, calibration)
        var best: [String: Double] = [:]
        var total = FaceGallery.SearchStats()
        for (gallery, scale) in [(version1, calibration), version2] where gallery.count > 0 {
            // Scores are on a 0.1 grid: users tied with the `limit`-th on score but farther away
            // must come along too (the ranking breaks score ties by name), so widen until the
            // last one kept scores strictly lower, or everyone is in.
            // One more than asked: the extra one tells whether the `limit`-th has score ties beyond.
            var wanted = limit + 1
            var found: [(user: String, score: Double)] = []
            while true {
                var one = FaceGallery.SearchStats()
                found = try gallery.rank(probe, limit: wanted, exact: source, threads: threads, stats: &one)
                    .map { ($0.user, scale.score($0.distance)) }
                total.rescored += one.rescored
                total.passes += one.passes
                // (Score 0 is no candidate: its ties do not matter.)
                if found.count < wanted || found[limit - 1].score <= 0 || found[found.count - 1].score < found[limit - 1].score { break }
                wanted *= 4
            }
            for candidate in found { best[candidate.user] = max(best[candidate.user] ?? -1, candidate.score) }
        }
        stats?.pointee = total
        return Self.sorted(best, limit: limit)
    }

    /// The reference answer: every template scored as `FaceVerification.score` scores it.
    public static func exhaustiveRank(_ probe: FaceTemplate, _ items: [(user: String, template: FaceTemplate)], limit: Int = 5,
                                      calibration: FARCalibration) -> [Scored]
    {
        var best: [String: Double] = [:]
        for item in items {
            best[item.user] = max(best[item.user] ?? -1, FaceVerification.score(probe, against: [item.template], calibration: calibration))
        }
        return sorted(best, limit: limit)
    }

    /// Best first, ties by name; a user scoring 0 (FAR 1: anyone) is no candidate.
    static func sorted(_ best: [String: Double], limit: Int) -> [Scored] {
        Array(best.filter { $0.value > 0 }.map { Scored(user: $0.key, score: $0.value) }
            .sorted { $0.score != $1.score ? $0.score > $1.score : $0.user < $1.user }.prefix(limit))
    }
}
