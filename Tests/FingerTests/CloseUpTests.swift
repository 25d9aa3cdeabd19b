@testable import BiometricFinger
import CFingerVision
import Foundation
import XCTest

/// Which outline of a finger held close is kept (FingerCapture.chooseCloseUp): the region seeds
/// can merge a finger with a bed sheet of its own grey, or outline only part of it on a sheet of
/// its own colour; the rules that keep the finger's own outline, each on its own.
final class CloseUpTests: XCTestCase {
    /// An upright fingertip (pointing up the frame) at `x`, apex at y 200, `width` pixels wide,
    /// with ridges of 14 px over `area` of the pad and sides standing out by `edge`.
    func tip(x: Float = 600, width: Float, area: Float = 0.9, strength: Float = 0.6, edge: Float = 20,
             period: Float = 14, dirX: Float = 0, dirY: Float = -1) -> Fingertip {
        var raw = cvis_fingertip()
        raw.found = 1
        raw.tip_x = x
        raw.tip_y = 200
        raw.dir_x = dirX
        raw.dir_y = dirY
        raw.width = width
        raw.length = 1.35 * width
        raw.edge_contrast = edge
        raw.ridge_period = period
        raw.ridge_area = area
        raw.ridge_strength = strength
        raw.repeated = 1
        return Fingertip(raw: raw)
    }

    func testANarrowerFingertipInsideAWiderOneLiesInside() {
        let wide = tip(width: 740), finger = tip(x: 640, width: 470)
        XCTAssertTrue(FingerCapture.lies(finger, inside: wide))
        XCTAssertFalse(FingerCapture.lies(wide, inside: finger))
        // Beside it rather than inside: its side 90 px beyond the wide outline's.
        XCTAssertFalse(FingerCapture.lies(tip(x: 600 + 135 + 90, width: 470), inside: wide))
        // Turned 30° from it.
        XCTAssertFalse(FingerCapture.lies(tip(width: 470, dirX: 0.5, dirY: -0.866), inside: wide))
        // Its apex half a width further down the finger: a crease or a knuckle, not the tip.
        var lower = tip(width: 470)
        lower.raw.tip_y = 200 + 370
        XCTAssertFalse(FingerCapture.lies(lower, inside: wide))
    }

    /// sahibind7: the region that took in the bed sheet (736 px) looked clearer than the finger
    /// (470 px) because the sheet's folds and weave pass for ridges; the finger inside it is kept.
    func testTheFingerInsideAnOutlineThatTookInTheBackgroundIsKept() throws {
        let merged = tip(x: 570, width: 736, area: 0.69, strength: 0.55, edge: 11, period: 18.8)
        let finger = tip(x: 612, width: 470, area: 0.59, strength: 0.53, edge: 20.9, period: 15)
        XCTAssertGreaterThan(FingerCapture.clarity(merged), FingerCapture.clarity(finger))
        let chosen = try XCTUnwrap(FingerCapture.chooseCloseUp([merged, finger]))
        XCTAssertEqual(chosen.width, 470)
        XCTAssertEqual(try XCTUnwrap(FingerCapture.chooseCloseUp([finger, merged])).width, 470, "whatever the order")
    }

    /// The inner outline must itself show resolved ridges: a narrow strip of the pad with no
    /// ridge area is not preferred to the whole finger.
    func testAnInnerOutlineWithoutResolvedRidgesIsNotPreferred() throws {
        let finger = tip(width: 560, area: 0.85)
        let strip = tip(x: 610, width: 300, area: 0.3)
        XCTAssertEqual(try XCTUnwrap(FingerCapture.chooseCloseUp([finger, strip])).width, 560)
    }

    /// sahibind6: a region seed on a pink sheet outlined 271 px of a 505-px finger, along a wrong
    /// axis, with sides that hardly stand out (2.6); the guide seed's outline (14.7) is kept even
    /// when the region's ridges look clearer.
    func testSidesThatHardlyStandOutLoseToAClearOutline() throws {
        let faint = tip(x: 586, width: 271, area: 0.8, strength: 0.6, edge: 2.6, period: 10.5, dirX: 0.45, dirY: -0.89)
        let finger = tip(x: 597, width: 505, area: 0.64, strength: 0.49, edge: 14.7, period: 15.7)
        XCTAssertGreaterThan(FingerCapture.clarity(faint), FingerCapture.clarity(finger))
        XCTAssertEqual(try XCTUnwrap(FingerCapture.chooseCloseUp([faint, finger])).width, 505)
        // Two clear outlines: the clearer ridges win, as before.
        let other = tip(x: 300, width: 480, area: 0.95, strength: 0.7, edge: 12)
        XCTAssertEqual(try XCTUnwrap(FingerCapture.chooseCloseUp([finger, other])).width, 480)
        XCTAssertNil(FingerCapture.chooseCloseUp([]))
    }

    /// The guide looks across the middle of the frame, pointing away from a short side, 0.4 of the
    /// short side wide; it is only looked at when no region outlined a finger clearly.
    func testGuideSeeds() {
        let portrait = FingerCapture.guideSeeds(width: 1200, height: 1600)
        XCTAssertEqual(portrait.count, 1)
        XCTAssertEqual(portrait[0].tip_x, 600)
        XCTAssertLessThan(portrait[0].tip_y, portrait[0].base_y, "pointing up")
        XCTAssertEqual(portrait[0].width, 480)
        let landscape = FingerCapture.guideSeeds(width: 1280, height: 1024)
        XCTAssertEqual(landscape.count, 2)
        XCTAssertEqual(Set(landscape.map { $0.tip_x < $0.base_x }), [true, false], "pointing left and right")
        XCTAssertTrue(landscape.allSatisfy { $0.tip_y == 512 && abs($0.width - 409.6) < 0.01 })
        XCTAssertEqual(FingerCapture.outlinedEdgeContrast, 4)
    }
}
