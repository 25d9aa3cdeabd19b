import CFingerVision
import Foundation

/// A finger-like shape the detector found (frame pixels).
struct ClassicalCandidate {
    var tipX, tipY: Double
    /// Unit vector base → tip.
    var dirX, dirY: Double
    var width: Double
    /// Visible length over which the sides stay parallel (pixels).
    var length: Double
    var score: Double
    var centreLevel, edgeLevel: Double

    init(_ f: cvis_finger) {
        tipX = Double(f.tip_x)
        tipY = Double(f.tip_y)
        dirX = Double(f.dir_x)
        dirY = Double(f.dir_y)
        width = Double(f.width)
        length = Double(f.length)
        score = Double(f.score)
        centreLevel = Double(f.centre_level)
        edgeLevel = Double(f.edge_level)
    }

    /// The distal phalanx: from the tip down the finger for 1.35 finger widths (an adult distal
    /// phalanx is ≈ 22–25 mm long for a 16–18 mm wide finger), as wide as the finger.
    var box: FingerBox {
        let length = 1.35 * width
        let angle = atan2(dirX, -dirY) * 180 / .pi
        return FingerBox(centreX: tipX - dirX * length / 2, centreY: tipY - dirY * length / 2, width: width,
                         height: length, angle: angle)
    }

    /// Edge/centre brightness across the fingertip (shading cue for liveness), nil when unmeasured.
    var shadingRatio: Double? { centreLevel > 8 ? edgeLevel / centreLevel : nil }
}

/// Picks the fingers of one hand among the candidates and names them (the baseline detector).
///
/// Convention: the palm faces the camera, the image is not mirrored. Then a right hand's thumb is
/// on the image's right, so index→little runs right→left for a right hand and left→right for a
/// left hand, measured across the fingers' mean direction (works for a tilted hand).
enum ClassicalFingerSelection {
    static let minimumScore = 0.45

    static func select(_ candidates: [ClassicalCandidate], options: FingerCaptureOptions,
                       tracked: [FingerPosition: FingerBox]) -> [(FingerPosition, ClassicalCandidate)] {
        let good = candidates.filter { $0.score >= minimumScore }
        guard let seed = good.first else { return [] }
        let expected = options.expectedDigits
        guard !expected.isEmpty else { return [] }
        if options.mode != .fingers {
            // The extended thumb is the longest straight finger in view (curled fingers of the fist
            // show shorter straight stretches).
            let thumb = good.max { $0.score * min($0.length / $0.width, 4) < $1.score * min($1.length / $1.width, 4) } ?? seed
            return [(FingerPosition(options.hand, expected[0]), thumb)]
        }
        // The hand: candidates like the best one (the detector puts the best hand-like group first).
        var members = good.filter { c in
            c.width > 0.65 * seed.width && c.width < 1.5 * seed.width && c.dirX * seed.dirX + c.dirY * seed.dirY > 0.5
                && hypot(c.tipX - seed.tipX, c.tipY - seed.tipY) < 6 * seed.width
        }
        // Mean direction of the fingers, and across it.
        var ux = members.reduce(0) { $0 + $1.dirX }, uy = members.reduce(0) { $0 + $1.dirY }
        let norm = max(hypot(ux, uy), 1e-9)
        ux /= norm
        uy /= norm
        let widths = members.map(\.width).sorted()
        let typicalWidth = widths[widths.count / 2]
        // The thumb's tip is far below the fingertips (it starts at the wrist end of the palm).
        let heights = members.map { $0.tipX * ux + $0.tipY * uy }
        let top = heights.max() ?? 0
        members = zip(members, heights).filter { $0.1 > top - 2.5 * typicalWidth }.map(\.0)
        if members.count > expected.count {
            members = Array(members.sorted { $0.score > $1.score }.prefix(expected.count))
        }
        // Index first: toward the thumb side.
        let sideX = -uy, sideY = ux // "right" of the finger direction on screen
        let towardThumb = options.hand == .right ? 1.0 : -1.0
        let lateral = { (c: ClassicalCandidate) in (c.tipX * sideX + c.tipY * sideY) * towardThumb }
        members.sort { lateral($0) > lateral($1) }
        let positions = expected.map { FingerPosition(options.hand, $0) }
        if members.count == positions.count { return Array(zip(positions, members)) }
        // Fewer than expected: names from the previous frames' tracks when they agree…
        if !tracked.isEmpty {
            var used = Set<FingerPosition>()
            var named: [(FingerPosition, ClassicalCandidate)] = []
            for c in members {
                let box = c.box
                let nearest = tracked.filter { !used.contains($0.key) }
                    .min { hypot($0.value.centreX - box.centreX, $0.value.centreY - box.centreY)
                        < hypot($1.value.centreX - box.centreX, $1.value.centreY - box.centreY) }
                if let nearest, hypot(nearest.value.centreX - box.centreX, nearest.value.centreY - box.centreY) < 0.6 * box.width {
                    used.insert(nearest.key)
                    named.append((nearest.key, c))
                }
            }
            if named.count == members.count { return named.sorted { $0.0.digit < $1.0.digit } }
        }
        // …else from the thumb side, skipping a digit where the gap between neighbours is wider
        // than one finger would leave (adjacent fingertips are 1.1–1.5 widths apart).
        var named: [(FingerPosition, ClassicalCandidate)] = []
        var slot = 0
        for (i, c) in members.enumerated() {
            if i > 0 {
                let gap = lateral(members[i - 1]) - lateral(c)
                slot += max(1, Int((gap / (1.45 * typicalWidth)).rounded()))
            }
            guard slot < positions.count else { break }
            named.append((positions[slot], c))
        }
        return named
    }
}
