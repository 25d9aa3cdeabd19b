import BiometricAuth
import BiometricFace
import BiometricProtocol
import Logging

/// Every limit that keeps one local account from starving the others, in one place (SPEC §4
/// "Limits"): the per-uid shares the server books (connections, calls, buffered input), the fair
/// queues in front of expensive work, the storage quotas and the largest image decoded.
final class DaemonLimits: Sendable {
    let shares: UserShares
    /// Argon2id (pin.set, pin.verify, the PIN factor): two at a time (32 MiB each), at most one
    /// per uid, fair between uids: one uid's flood holds one slot and another uid's PIN check
    /// starts in the other. Checks of one user's PIN still run one at a time (AuthService), so
    /// its wrong-attempt count is exact.
    let pins: FairQueue
    /// Decoding uploaded images and extracting from them (face.extract/match, finger.extract/match).
    let images: FairQueue
    let quotas: StorageQuotas
    let maxImagePixels: Int
    /// The floors of every capture knob (Auth's CallerLimits).
    let callers: CallerLimits
    /// The face liveness mode of a verify or identify that names none (PAM's, through
    /// auth.authenticate): biometricd.conf's `face_liveness_mode`.
    let faceLivenessMode: LivenessMode

    init(configuration: DaemonConfiguration, descriptorLimit: Int, logger: Logger) {
        var rules = configuration.shares
        rules.connectionsTotal = ShareRules.connectionsTotal(descriptorLimit: descriptorLimit)
        let shares = UserShares(rules: rules) { logger.warning("\($0)") }
        self.shares = shares
        let queued = rules.queuedPerUser
        let refusedQueue: @Sendable (UInt32) -> Void = { uid in
            shares.noted(.refused(.queuePerUser, max: queued),
                         Peer(pid: 0, uid: uid, gid: 0, userName: nil, isAdmin: false, isLogin: false))
        }
        pins = FairQueue(label: "pin", width: 2, maxQueuedPerOwner: rules.queuedPerUser, maxRunningPerOwner: 1, refused: refusedQueue)
        images = FairQueue(label: "images", width: configuration.analysisThreads, maxQueuedPerOwner: rules.queuedPerUser,
                           maxRunningPerOwner: max(1, configuration.analysisThreads / 2), refused: refusedQueue)
        quotas = configuration.quotas
        callers = configuration.callerLimits
        faceLivenessMode = configuration.faceLivenessMode
        maxImagePixels = configuration.maxImagePixels
    }
}
