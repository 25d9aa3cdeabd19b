import BiometricClient
import BiometricProtocol
import Foundation
import XCTest

/// `--preview FILE`: the latest preview replaces the file whole, through a temporary file.
final class PreviewFileTests: XCTestCase {
    private var dir = ""

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "preview-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    func testEachWriteReplacesTheFileAndLeavesNoTemporary() throws {
        let file = PreviewFile(path: dir + "/latest.jpg")
        try file.write(Data(repeating: 1, count: 5000))
        let first = try FileManager.default.attributesOfItem(atPath: file.path)[.systemFileNumber] as? Int
        try file.write(Data([0xFF, 0xD8, 0xFF, 2]))
        XCTAssertEqual(FileManager.default.contents(atPath: file.path), Data([0xFF, 0xD8, 0xFF, 2]), "the shorter image is whole, not a prefix")
        let second = try FileManager.default.attributesOfItem(atPath: file.path)[.systemFileNumber] as? Int
        XCTAssertNotEqual(first, second, "a new inode was renamed over the old one (a reader holding the old file sees it whole)")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), ["latest.jpg"])
    }

    func testAMissingFolderIsAnErrorNotACrash() {
        XCTAssertThrowsError(try PreviewFile(path: dir + "/no/such/latest.jpg").write(Data([1])))
    }

    /// The renderer keeps the file up to date from the events that carry a preview.
    func testTheRendererWritesTheLatestPreview() throws {
        let renderer = ProgressRenderer(json: false, isTerminal: false)
        renderer.previewFile = PreviewFile(path: dir + "/latest.jpg")
        var event = FaceFrameEvent(box: nil, yaw: nil, pitch: nil, roll: nil, quality: 0, brightness: nil, sharpness: nil, feedback: [.noFace])
        event.frame = FrameSize(width: 640, height: 480)
        renderer.render(try Event(request: .int(1), event).params())
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/latest.jpg"), "no preview in the event: nothing written")
        event.preview = FramePreview(jpeg: Data([0xFF, 0xD8, 0xFF, 9]), width: 320, height: 240)
        let withPreview = try Event(request: .int(1), event).params()
        renderer.render(withPreview)
        XCTAssertEqual(FileManager.default.contents(atPath: dir + "/latest.jpg"), Data([0xFF, 0xD8, 0xFF, 9]))
        XCTAssertEqual(ProgressRenderer.describe(withPreview), "Look at the camera", "the preview adds no words")
    }
}
