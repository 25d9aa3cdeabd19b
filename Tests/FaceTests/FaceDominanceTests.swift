@testable import BiometricFace
import XCTest

final class FaceDominanceTests: XCTestCase {
    func box(_ x: Double, _ y: Double, _ size: Double) -> FaceBox { FaceBox(x: x, y: y, width: size, height: size) }

    func testOneFaceIsUsedEvenAtTheEdge() {
        XCTAssertEqual(FaceDominance.dominant([box(-40, 10, 100)], frameWidth: 640, frameHeight: 480), 0)
        XCTAssertNil(FaceDominance.dominant([], frameWidth: 640, frameHeight: 480))
    }

    func testAClearlyLargerFaceDominates() {
        // The user at 160 px, someone behind at 110 px (area ratio 2.1).
        XCTAssertEqual(FaceDominance.dominant([box(400, 100, 110), box(200, 150, 160)], frameWidth: 640, frameHeight: 480), 1)
        // A bystander half out of the frame: only its visible half counts.
        XCTAssertEqual(FaceDominance.dominant([box(-60, 100, 130), box(250, 120, 140)], frameWidth: 640, frameHeight: 480), 1)
    }

    func testSimilarFacesOrACutFaceDoNotDominate() {
        // Side by side at the same distance (area ratio 1.1 < 1.5).
        XCTAssertNil(FaceDominance.dominant([box(100, 100, 150), box(380, 100, 143)], frameWidth: 640, frameHeight: 480))
        // The largest face is cut by the edge: which face is nearer cannot be told.
        XCTAssertNil(FaceDominance.dominant([box(560, 100, 200), box(200, 100, 90)], frameWidth: 640, frameHeight: 480))
        // Just at the ratio: 1.5 in area dominates, a little less does not.
        let s = 100.0, big = (1.5).squareRoot() * s
        XCTAssertEqual(FaceDominance.dominant([box(10, 10, s), box(300, 10, big + 0.01)], frameWidth: 640, frameHeight: 480), 1)
        XCTAssertNil(FaceDominance.dominant([box(10, 10, s), box(300, 10, big - 1)], frameWidth: 640, frameHeight: 480))
    }

    /// Still images: the dominant face, else among faces of similar size the one nearest the
    /// centre; a much smaller face elsewhere is never the subject; none without faces.
    func testAStillImageTakesItsSubject() {
        XCTAssertNil(FaceDominance.subject([], frameWidth: 640, frameHeight: 480))
        XCTAssertEqual(FaceDominance.subject([box(-40, 10, 100)], frameWidth: 640, frameHeight: 480)?.subject, .only)
        let dominant = FaceDominance.subject([box(400, 100, 110), box(200, 150, 160)], frameWidth: 640, frameHeight: 480)
        XCTAssertEqual(dominant?.index, 1)
        XCTAssertEqual(dominant?.subject, .dominant)
        // Side by side, the right one nearer the centre (320, 240).
        let pair = FaceDominance.subject([box(40, 100, 150), box(260, 100, 143)], frameWidth: 640, frameHeight: 480)
        XCTAssertEqual(pair?.index, 1)
        XCTAssertEqual(pair?.subject, .nearestCentre)
        // A small face right in the centre is not the subject when two big ones keep each other
        // from dominating: only faces of similar size to the largest count.
        let small = FaceDominance.subject([box(20, 100, 160), box(300, 220, 40), box(460, 100, 150)], frameWidth: 640, frameHeight: 480)
        XCTAssertEqual(small?.index, 2, "the big face nearer the centre, not the small one in it")
        // The largest face cut by the edge: the whole face nearest the centre of those similar in size.
        let cut = FaceDominance.subject([box(500, 100, 200), box(250, 150, 170)], frameWidth: 640, frameHeight: 480)
        XCTAssertEqual(cut?.index, 1)
        XCTAssertEqual(cut?.subject, .nearestCentre)
    }
}
