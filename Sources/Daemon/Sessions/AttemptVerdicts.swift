import BiometricAuth
import BiometricCamera
import BiometricFace
import BiometricFinger

/// The one place where how an attempt ended becomes what the lockout counts.
extension AttemptVerdict {
    init(matched: Bool) {
        self = matched ? .matched : .noMatch
    }

    init(_ failure: FaceFailure) {
        switch failure {
        case .spoof: self = .presentationAttack
        // A face held still that never blinks is what a photo does.
        case .noBlink: self = .presentationAttack
        case .timeout(_, let sawFace): self = sawFace ? .noMatch : .notJudged(.nobodyInView)
        case .lowQuality: self = .notJudged(.poorQuality)
        case .enrolmentIncomplete: self = .notJudged(.error)
        }
    }

    init(_ failure: FingerFailure) {
        switch failure {
        case .spoof: self = .presentationAttack
        case .noFingers: self = .notJudged(.nobodyInView)
        case .lowQuality, .noTemplate: self = .notJudged(.poorQuality)
        }
    }

    /// Any error a verify call ended with.
    init(error: any Error) {
        switch error {
        case SessionFailure.face(let f): self = AttemptVerdict(f)
        case SessionFailure.finger(let f): self = AttemptVerdict(f)
        case is CancellationError: self = .notJudged(.canceled)
        case is CameraError: self = .notJudged(.cameraError)
        case is LockoutRefusal: self = .notJudged(.lockedOut)
        case is TrustRefusal: self = .notJudged(.refusedCamera)
        default: self = .notJudged(.error)
        }
    }
}

/// The one place where how a factor's attempt failed becomes the kind a decision reads
/// (auth.authenticate's `tried`, the FIDO authenticator's answer).
extension FactorRunner.FailureKind {
    init(error: any Error) {
        switch error {
        case SessionFailure.face(.timeout), SessionFailure.finger(.noFingers), is Deadline: self = .timeout
        // A face held still that never blinks is what a photo does (AttemptVerdict above).
        case SessionFailure.face(.spoof), SessionFailure.face(.noBlink), SessionFailure.finger(.spoof): self = .presentationAttack
        default: self = .other
        }
    }
}
