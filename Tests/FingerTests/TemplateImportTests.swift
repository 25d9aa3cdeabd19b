import Foundation
import XCTest
@testable import BiometricFinger

/// The one decision on templates from outside (finger.add, finger.verify references): each
/// refusal and its stable problem name.
final class TemplateImportTests: XCTestCase {
    func template(minutiae: Int = 20, position: FingerPosition? = FingerPosition(name: "right_index")) -> FingerTemplate {
        var list: [Minutia] = []
        for i in 0..<minutiae {
            let x = Double(20 + 11 * i), y = Double(30 + 7 * i), angle = Double(i) / 3
            let kind: Minutia.Kind = i % 2 == 0 ? .ending : .bifurcation
            list.append(Minutia(x: x, y: y, angle: angle, kind: kind, quality: 60))
        }
        return FingerTemplate(sourcePPI: 500, width: 300, height: 400, quality: 70, position: position, minutiae: list)
    }

    func problem(_ bytes: [UInt8], expecting: FingerTemplateImport.Format? = nil) -> String? {
        do {
            _ = try FingerTemplateImport.decode(bytes, expecting: expecting)
            return nil
        } catch {
            return error.problem
        }
    }

    func testBothFormatsAreReadAndTold() throws {
        let native = try FingerTemplateImport.decode(template().encoded())
        XCTAssertEqual(native.format, .biometricd)
        XCTAssertEqual(native.templates.first?.minutiae.count, 20)
        let iso = try FingerTemplateImport.decode(ISO19794_2.encode([template(), template(minutiae: 12)]))
        XCTAssertEqual(iso.format, .iso19794_2)
        XCTAssertEqual(iso.templates.count, 2, "one template per finger view")
        XCTAssertEqual(iso.templates.first?.position?.name, "right_index")
        XCTAssertNoThrow(try FingerTemplateImport.decode(base64: Data(template().encoded()).base64EncodedString(), expecting: .biometricd))
    }

    func testRefusalsHaveStableProblems() {
        let native = template().encoded(), iso = ISO19794_2.encode([template()])
        XCTAssertEqual(problem(Array("hello".utf8)), "template_format")
        XCTAssertEqual(problem(iso, expecting: .biometricd), "template_format")
        XCTAssertEqual(problem(native, expecting: .iso19794_2), "template_format")
        var version = native
        version[4] = 4 // versions 1, 2 (classical minutiae, without and with the field) and 3 (learned) are read
        XCTAssertEqual(problem(version), "template_version")
        var isoVersion = iso
        isoVersion[5] = 0x33 // " 30"
        XCTAssertEqual(problem(isoVersion), "template_version")
        var resolution = iso
        resolution[16] = 0; resolution[17] = 50; resolution[18] = 0; resolution[19] = 50 // 127 ppi
        XCTAssertEqual(problem(resolution), "template_resolution")
        XCTAssertEqual(problem(Array(native.dropLast(3))), "template_corrupt")
        var flipped = native
        flipped[20] ^= 0x40
        XCTAssertEqual(problem(flipped), "template_corrupt", "the checksum catches it")
        XCTAssertEqual(problem(template(minutiae: 0).encoded()), "template_empty")
        XCTAssertThrowsError(try FingerTemplateImport.decode(base64: "***")) {
            XCTAssertEqual(($0 as? FingerTemplateImport.Refusal)?.problem, "not_base64")
        }
    }
}
