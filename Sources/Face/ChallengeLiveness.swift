import BiometricVocabulary

/// Challenge-response liveness: after keep-still the person is asked for a short random sequence
/// of head moves, each to be done within a time limit and measured from the head pose. A
/// recorded video cannot know the sequence (drawn with the system CSPRNG per session), so a
/// replay either does not move or moves the wrong way.
///
/// Moves are measured against the pose held during keep-still (people do not sit exactly
/// frontal: the live clip `tran_live` rests at yaw +4°), and a move must reach `threshold`
/// degrees — chosen on that clip, whose turns reach +17° / −16° of yaw and −17° / +19° of pitch
/// from its rest pose (Docs/face.md). A clear move the other way (past the threshold, after the
/// head came back near its rest pose) fails the step at once: that is what a replay does.
public struct ChallengeLiveness: Sendable {
    public enum Action: String, Sendable, CaseIterable, Codable {
        case turnLeft = "turn_left"
        case turnRight = "turn_right"
        case lookUp = "look_up"
        case nod
    }

    public enum State: Sendable, Equatable {
        case waiting
        case step(Action, index: Int)
        case passed
        case failed(String)
    }

    public static let threshold = 12.0
    public let sequence: [Action]
    public let stepTimeoutNs: UInt64
    public private(set) var state: State = .waiting
    private var rest: HeadPose?
    private var stepStartNs: UInt64 = 0
    /// The head came back near its rest pose since the step began (a wrong move counts only then).
    private var armed = false
    private var nodWentDown = false
    /// The last poses: moves are judged on their per-axis median, so a single-frame flip of the
    /// pose solver (seen when the head is bowed) neither completes nor fails a step.
    private var recent: [HeadPose] = []
    public private(set) var completed = 0

    public init(sequence: [Action], stepTimeoutMs: Int) {
        self.sequence = sequence
        stepTimeoutNs = UInt64(max(1, stepTimeoutMs)) * 1_000_000
    }

    /// `steps` moves from the system's cryptographic RNG, no move twice in a row.
    public static func random(steps: Int) -> [Action] {
        var rng = SystemRandomNumberGenerator()
        var out: [Action] = []
        while out.count < steps {
            let next = Action.allCases.randomElement(using: &rng)!
            if next != out.last { out.append(next) }
        }
        return out
    }

    /// Starts the sequence from the pose held during keep-still.
    public mutating func start(rest pose: HeadPose, at ns: UInt64) {
        guard case .waiting = state, let first = sequence.first else {
            if sequence.isEmpty { state = .passed }
            return
        }
        rest = pose
        begin(first, index: 0, at: ns)
    }

    private mutating func begin(_ action: Action, index: Int, at ns: UInt64) {
        state = .step(action, index: index)
        stepStartNs = ns
        armed = false
        nodWentDown = false
    }

    /// The move asked for now, for the frame events.
    public var action: Action? {
        if case .step(let a, _) = state { return a }
        return nil
    }

    /// 0–1: the share of the sequence done.
    public var progress: Double { sequence.isEmpty ? 1 : Double(completed) / Double(sequence.count) }

    public mutating func observe(_ pose: HeadPose?, at ns: UInt64) -> State {
        guard case .step(let action, let index) = state, let rest else { return state }
        if ns > stepStartNs, ns - stepStartNs > stepTimeoutNs {
            state = .failed("\(action.rawValue) was not done within \(stepTimeoutNs / 1_000_000) ms")
            return state
        }
        guard let pose else { return state }
        recent.append(pose)
        if recent.count > 3 { recent.removeFirst() }
        guard recent.count == 3 else { return state }
        func median(_ values: [Double]) -> Double { values.sorted()[1] }
        let yaw = median(recent.map(\.yaw)) - rest.yaw, pitch = median(recent.map(\.pitch)) - rest.pitch
        let t = Self.threshold
        if abs(yaw) < t / 2 && abs(pitch) < t / 2 { armed = true }
        let done: Bool, wrong: Bool
        switch action {
        case .turnLeft: (done, wrong) = (yaw >= t, yaw <= -t)
        case .turnRight: (done, wrong) = (yaw <= -t, yaw >= t)
        case .lookUp: (done, wrong) = (pitch >= t, pitch <= -t)
        case .nod:
            if pitch <= -t { nodWentDown = true }
            (done, wrong) = (nodWentDown && pitch > -t / 2, !nodWentDown && pitch >= t)
        }
        if done {
            completed += 1
            if index + 1 < sequence.count { begin(sequence[index + 1], index: index + 1, at: ns) } else { state = .passed }
        } else if wrong && armed {
            state = .failed("asked \(action.rawValue), the head moved the other way")
        }
        return state
    }
}

extension LivenessAction {
    /// The action that asks for a challenge move.
    public init(_ move: ChallengeLiveness.Action) {
        switch move {
        case .turnLeft: self = .turnLeft
        case .turnRight: self = .turnRight
        case .lookUp: self = .lookUp
        case .nod: self = .nod
        }
    }
}
