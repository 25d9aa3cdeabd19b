import BiometricProtocol
import BiometricStore

/// How much one user may store: templates per modality and keys. Every account can reach the
/// socket, so without these one account could fill the disk (5,000 keys in 2.8 s added 8.3 MB).
/// Admins are exempt: they import galleries. A full quota is error 1010 `quota_exceeded`.
public struct StorageQuotas: Sendable, Equatable {
    /// Face templates per user: a full enrolment is 5, re-enrolling a few times stays well under.
    public var faceTemplates = 30
    /// Finger templates per user: ten fingers, several templates each.
    public var fingerTemplates = 60
    /// Registered keys per user.
    public var keys = 32

    public init() {}

    public enum Kind: String, Sendable, CaseIterable {
        case faceTemplates = "face_templates"
        case fingerTemplates = "finger_templates"
        case keys
    }

    /// The quota a caller is held to: nil for an admin (exempt).
    public func quota(_ kind: Kind, isAdmin: Bool) -> Quota? {
        guard !isAdmin else { return nil }
        let max = switch kind {
        case .faceTemplates: faceTemplates
        case .fingerTemplates: fingerTemplates
        case .keys: keys
        }
        return Quota(name: kind.rawValue, max: max)
    }

    public func templates(_ modality: Modality, isAdmin: Bool) -> Quota? {
        quota(modality == .face ? .faceTemplates : .fingerTemplates, isAdmin: isAdmin)
    }
}
