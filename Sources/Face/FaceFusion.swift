/// Which of the second network's embeddings a template needs (Docs/face.md "Two networks, one
/// score"): stored templates chip + mirror, live probes the chip alone (+10.5 ms a frame; the
/// mirror would be +23 ms, over the 20 ms budget); none when no reference is v2.
public enum SecondEmbedding: Sendable, Equatable {
    case none
    case chip
    case chipAndMirror

    /// What goes with a dlib embedding of `views`: enrolment-style (jittered) gets chip + mirror,
    /// probe-style the chip.
    public static func matching(_ views: EmbeddingViews) -> SecondEmbedding {
        views == .jittered ? .chipAndMirror : .chip
    }
}
