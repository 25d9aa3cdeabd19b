import Foundation

/// A template's non-biometric metadata: how it was made. Stored as a JSON object in the
/// templates table's `meta` column and read and written only here, so a field is named once.
///
/// Versioned by `v` (absent in rows written before this type: they read as version 1, with the
/// same keys). Unknown keys are ignored and a malformed value reads as absent, so a newer or
/// damaged row still lists; none of it decides anything about security.
public struct TemplateMeta: Sendable, Equatable, Codable {
    public static let currentVersion = 1

    /// Where a template came from.
    public enum Source: String, Sendable, Codable {
        /// Made by this daemon from a camera (enrolment).
        case capture
        /// Added by a caller (face.add, face.import, finger.add).
        case `import`
    }

    public var version: Int
    /// Face: the enrolment pose (front, left, right, up, down).
    public var pose: String?
    /// Face: how many frames the template was averaged from.
    public var frames: Int?
    /// Finger: how many captures the enrolment merged.
    public var captures: Int?
    /// nil in rows from before it was recorded (they were captured unless `format` says otherwise).
    public var source: Source?
    /// An import's interchange format (e.g. bmft, iso19794-2, ansi378).
    public var format: String?

    public init(pose: String? = nil, frames: Int? = nil, captures: Int? = nil, source: Source? = nil, format: String? = nil) {
        version = Self.currentVersion
        self.pose = pose
        self.frames = frames
        self.captures = captures
        self.source = source
        self.format = format
    }

    enum CodingKeys: String, CodingKey {
        case version = "v", pose, frames, captures, source, format
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        version = (try? c.decodeIfPresent(Int.self, forKey: .version)) ?? 1
        pose = try? c.decodeIfPresent(String.self, forKey: .pose)
        frames = try? c.decodeIfPresent(Int.self, forKey: .frames)
        captures = try? c.decodeIfPresent(Int.self, forKey: .captures)
        source = try? c.decodeIfPresent(Source.self, forKey: .source)
        format = try? c.decodeIfPresent(String.self, forKey: .format)
    }

    /// Reads a stored value; anything that is not a JSON object reads as no metadata.
    public init(stored json: String) {
        self = (try? JSONDecoder().decode(Self.self, from: Data(json.utf8))) ?? TemplateMeta()
    }

    /// The stored form: a JSON object with sorted keys.
    public var stored: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(self) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}
