/// The face modality's words (SPEC §4, §5): liveness modes and verdicts, what a frame asks of the
/// person, and which face of an image a result is about.

/// face.verify / face.identify `liveness_mode`: keep still then blink, random head moves too,
/// passive (a trained presentation-attack detector and the replay cues, nothing asked of the
/// person), or passive and the blink both (unattended doors). Left out, the daemon's
/// `face_liveness_mode` applies (built in: `default`).
public enum LivenessMode: String, WireEnum {
    case blink, challenge, passive
    case passiveBlink = "passive+blink"
    public static let `default` = Self.passive

    /// Whether the passive detector decides (it needs the anti-spoofing models).
    public var isPassive: Bool { self == .passive || self == .passiveBlink }
}

/// A face result's `liveness`.
public enum FaceLiveness: String, WireEnum {
    case live, spoof
    case notChecked = "not_checked"
}

/// face.frame `liveness_action`: the liveness step asked for now (challenge mode adds the moves).
public enum LivenessAction: String, WireEnum {
    case keepStill = "keep_still"
    case blink
    case turnLeft = "turn_left"
    case turnRight = "turn_right"
    case lookUp = "look_up"
    case nod
}

/// face.frame `extraction`: what happened to the frame sent to the matcher.
public enum Extraction: String, WireEnum {
    case extracting, success, failed
}

/// Which face of a still image a result is about (face.extract, face.match images, image-mode
/// face.verify, enrolment from a replay of images).
public enum FaceSubject: String, Codable, Sendable, CaseIterable {
    /// The only face found.
    case only
    /// The largest face, clearly (1.5× the next one's visible area, not cut by the edge).
    case dominant
    /// Several faces of similar size: the one whose centre is nearest the image centre.
    case nearestCentre = "nearest_centre"
}
