import BiometricVocabulary
import Foundation

/// Which face a session uses when the detector finds several (someone behind the user at a desk,
/// in a kiosk queue, at a door). Windows Hello and Howdy take the closest face; we take the face
/// that clearly dominates, and refuse the frame (`multiple_faces`) only when none does.
///
/// The rule, on each face's area inside the frame: the largest face dominates when it is not cut
/// by the frame edge (at least `minVisibleFraction` of its box inside) and its visible area is at
/// least `areaRatio` times that of the next face. 1.5 in area is 1.22 in width: a person 20 %
/// further from the camera than the user, or a bystander half out of the frame, is dominated;
/// two people side by side at the same distance are not, and then the frame is unusable rather
/// than a guess. A face cut by the edge never dominates another face (which of the two is
/// nearer cannot be told from a partial box).
public enum FaceDominance {
    public static let areaRatio = 1.5
    public static let minVisibleFraction = 0.85

    /// The index of the face to use: the only face, or the one that dominates; nil when several
    /// faces are found and none dominates.
    public static func dominant(_ boxes: [FaceBox], frameWidth: Int, frameHeight: Int) -> Int? {
        guard boxes.count > 1 else { return boxes.isEmpty ? nil : 0 }
        let visible = boxes.map { visibleArea($0, frameWidth, frameHeight) }
        let order = visible.indices.sorted { visible[$0] > visible[$1] }
        let top = order[0], next = order[1]
        let area = boxes[top].width * boxes[top].height
        guard area > 0, visible[top] / area >= minVisibleFraction, visible[top] >= areaRatio * visible[next] else { return nil }
        return top
    }

    static func visibleArea(_ b: FaceBox, _ width: Int, _ height: Int) -> Double {
        let w = max(0, min(b.x + b.width, Double(width)) - max(b.x, 0))
        let h = max(0, min(b.y + b.height, Double(height)) - max(b.y, 0))
        return w * h
    }
}

/// How a session picks its face when several are found (`FaceTracker.subjectRule`).
public enum FaceSubjectRule: Sendable, Equatable {
    /// Live cameras: the dominant face, or none (the frame is unusable: `multiple_faces`).
    case dominantOnly
    /// Still images (face.extract, image-mode verify, enrolment from a replay of images): the
    /// dominant face, else, among the faces of similar size, the one nearest the image centre.
    /// A photo's subject is where the photographer put it; a press photo often has a second face.
    case stillImage
}

extension FaceDominance {
    /// The face a still image is about, and how it was chosen: the only face; the dominant one;
    /// else, among the faces whose visible area is at least 1/`areaRatio` of the largest one's (the
    /// ones that kept it from dominating), the one whose centre is nearest the image centre. Nil
    /// only without faces.
    public static func subject(_ boxes: [FaceBox], frameWidth: Int, frameHeight: Int) -> (index: Int, subject: FaceSubject)? {
        guard !boxes.isEmpty else { return nil }
        if boxes.count == 1 { return (0, .only) }
        if let top = dominant(boxes, frameWidth: frameWidth, frameHeight: frameHeight) { return (top, .dominant) }
        let visible = boxes.map { visibleArea($0, frameWidth, frameHeight) }
        let largest = visible.max() ?? 0
        let cx = Double(frameWidth) / 2, cy = Double(frameHeight) / 2
        let candidates = boxes.indices.filter { visible[$0] * areaRatio >= largest && visible[$0] > 0 }
        let nearest = candidates.min { a, b in
            let da = pow(boxes[a].x + boxes[a].width / 2 - cx, 2) + pow(boxes[a].y + boxes[a].height / 2 - cy, 2)
            let db = pow(boxes[b].x + boxes[b].width / 2 - cx, 2) + pow(boxes[b].y + boxes[b].height / 2 - cy, 2)
            return da != db ? da < db : visible[a] > visible[b]
        }
        return nearest.map { ($0, .nearestCentre) }
    }
}
