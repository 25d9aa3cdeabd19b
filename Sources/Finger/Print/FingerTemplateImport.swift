import Foundation

/// Templates handed in from outside (finger.add, finger.verify `references`): biometricd's own
/// format or an ISO/IEC 19794-2 record, told apart by their headers and fully validated by their
/// decoders. Whether such bytes are accepted — and why not — is decided here, once, as a value;
/// the daemon maps a refusal to `invalid_params` with a stable `problem`.
public enum FingerTemplateImport {
    public enum Format: String, Sendable, Equatable {
        case biometricd
        case iso19794_2
    }

    public enum Refusal: Error, Equatable, Sendable, CustomStringConvertible {
        case notBase64
        /// Neither a biometricd template (BMFP) nor an ISO 19794-2 record (FMR).
        case unknownFormat
        /// The caller said which format to expect and the bytes are the other.
        case formatMismatch(expected: Format, found: Format)
        case biometricd(FingerTemplateError)
        case iso(ISO19794_2.Error)
        /// No finger view, or a view without a single minutia: nothing to match.
        case empty

        /// Stable name of the problem (the error's `problem` field).
        public var problem: String {
            switch self {
            case .notBase64: "not_base64"
            case .unknownFormat, .formatMismatch: "template_format"
            case .biometricd(.unsupportedVersion), .iso(.unsupportedVersion): "template_version"
            case .biometricd(.invalidField(let field, _)) where field == "source ppi": "template_resolution"
            case .iso(.invalidField(let field, _)) where field.hasPrefix("resolution"): "template_resolution"
            case .empty: "template_empty"
            case .biometricd, .iso: "template_corrupt"
            }
        }

        public var description: String {
            switch self {
            case .notBase64: "not base64"
            case .unknownFormat: "neither a biometricd finger template nor an ISO/IEC 19794-2 record"
            case .formatMismatch(let expected, let found): "expected a \(expected.rawValue) template, got \(found.rawValue)"
            case .biometricd(let e): "\(e)"
            case .iso(let e): "\(e)"
            case .empty: "the template holds no finger with minutiae"
            }
        }
    }

    /// The templates in `base64` (one for biometricd, one per finger view for ISO).
    /// `isoSource`: the extractor an ISO record's minutiae are matched against (`ISO19794_2.decode`).
    public static func decode(base64: String, expecting: Format? = nil, isoSource: MinutiaeSource = .classical)
        throws(Refusal) -> (format: Format, templates: [FingerTemplate])
    {
        guard let data = Data(base64Encoded: base64), !data.isEmpty else { throw .notBase64 }
        return try decode([UInt8](data), expecting: expecting, isoSource: isoSource)
    }

    public static func decode(_ bytes: [UInt8], expecting: Format? = nil, isoSource: MinutiaeSource = .classical)
        throws(Refusal) -> (format: Format, templates: [FingerTemplate])
    {
        let format: Format
        if FingerTemplate.looksLikeTemplate(bytes) { format = .biometricd }
        else if ISO19794_2.looksLikeRecord(bytes) { format = .iso19794_2 }
        else { throw .unknownFormat }
        if let expecting, expecting != format { throw .formatMismatch(expected: expecting, found: format) }
        let templates: [FingerTemplate]
        switch format {
        case .biometricd:
            do { templates = [try FingerTemplate(decoding: bytes)] } catch { throw .biometricd(error) }
        case .iso19794_2:
            do { templates = try ISO19794_2.decode(bytes, as: isoSource) } catch { throw .iso(error) }
        }
        guard !templates.isEmpty, templates.allSatisfy({ !$0.minutiae.isEmpty }) else { throw .empty }
        return (format, templates)
    }
}
