import Foundation

/// Smooths each finger's box over frames (the event boxes should not jitter with the detector)
/// and remembers where each finger was, to name fingers when some are missing.
struct FingerBoxSmoother {
    private struct Track {
        var box: FingerBox
        var missed = 0
    }
    private var tracks: [FingerPosition: Track] = [:]
    /// Weight of the new measurement.
    static let alpha = 0.6
    static let maximumMissed = 5

    var boxes: [FingerPosition: FingerBox] { tracks.mapValues(\.box) }

    mutating func reset() { tracks.removeAll() }

    /// Updates the tracks with this frame's boxes; returns the smoothed boxes.
    mutating func update(_ observed: [(FingerPosition, FingerBox)]) -> [FingerPosition: FingerBox] {
        var seen = Set<FingerPosition>()
        var result: [FingerPosition: FingerBox] = [:]
        for (position, box) in observed {
            seen.insert(position)
            var smoothed = box
            if let old = tracks[position]?.box,
               hypot(old.centreX - box.centreX, old.centreY - box.centreY) < 0.5 * box.width {
                let a = Self.alpha
                var dAngle = box.angle - old.angle
                if dAngle > 180 { dAngle -= 360 }
                if dAngle < -180 { dAngle += 360 }
                smoothed = FingerBox(centreX: old.centreX + a * (box.centreX - old.centreX),
                                     centreY: old.centreY + a * (box.centreY - old.centreY),
                                     width: old.width + a * (box.width - old.width),
                                     height: old.height + a * (box.height - old.height),
                                     angle: old.angle + a * dAngle)
            }
            tracks[position] = Track(box: smoothed)
            result[position] = smoothed
        }
        for key in tracks.keys where !seen.contains(key) {
            tracks[key]!.missed += 1
            if tracks[key]!.missed > Self.maximumMissed { tracks[key] = nil }
        }
        return result
    }
}
