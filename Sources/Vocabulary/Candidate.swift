/// A user a match names, with the score of the match (SPEC §4 face.identify / finger.identify
/// `candidates`): what the identification sessions decide and the results carry.
public struct Candidate: Codable, Sendable, Equatable {
    public var user: String
    public var score: Double
    public init(user: String, score: Double) {
        self.user = user
        self.score = score
    }
}
