import BiometricCamera
import BiometricCore
@testable import BiometricFace
import Foundation
import XCTest

/// The int8 gallery with exact re-score gives the float32 search's answer on real face embeddings.
final class FaceGalleryTests: XCTestCase {
    /// Real LFW embeddings (one photo per person enrolled, another as the probe), in a gallery made
    /// dense around them: each real template also has 150 near look-alikes (the template moved by
    /// noise to distances 0.3–0.7, typical of other people's faces) filed under other users. Every
    /// probe must get exactly the top-5 of the exhaustive float32 search, and the filter must
    /// actually filter (re-score a small part of the gallery).
    func testTopFiveEqualsTheFloat32SearchOnLFWEmbeddings() throws {
        let models = try PipelineTests.loadModels()
        let root = PipelineTests.lfw
        let people = try FileManager.default.contentsOfDirectory(atPath: root).sorted().filter {
            ((try? FileManager.default.contentsOfDirectory(atPath: root + "/" + $0)) ?? []).count >= 2
        }.prefix(40)
        func embedding(_ path: String) throws -> FaceTemplate? {
            let f = try Frame(contentsOfFile: path)
            let o = try models.withEngine { try FacePipeline.analyze(f, tracker: FaceTracker(), engine: $0) }
            guard let landmarks = o.landmarks else { return nil }
            let image = ImageRef(pixels: UnsafePointer(f.bgr!.pointer), width: f.width, height: f.height, channels: 3)
            return FaceTemplate(embedding: try models.withEngine { try $0.embed(image, landmarks: landmarks, views: EmbeddingViews.single) }, quality: 80)
        }
        var enrolled: [(user: String, template: FaceTemplate)] = []
        var probes: [(user: String, template: FaceTemplate)] = []
        for person in people {
            let files = try FileManager.default.contentsOfDirectory(atPath: root + "/" + person).sorted()
            guard let a = try embedding(root + "/" + person + "/" + files[0]),
                  let b = try embedding(root + "/" + person + "/" + files[1]) else { continue }
            enrolled.append((person, a))
            probes.append((person, b))
        }
        XCTAssertGreaterThanOrEqual(enrolled.count, 35, "faces found in the LFW photos")
        var state: UInt64 = 12345
        func gaussian() -> Float {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            let u1 = Float(state >> 40) / Float(1 << 24) + 1e-7
            state = state &* 6364136223846793005 &+ 1442695040888963407
            let u2 = Float(state >> 40) / Float(1 << 24)
            return (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
        }
        var items = enrolled
        for (i, real) in enrolled.enumerated() {
            for k in 0..<150 {
                let sigma = Float(0.025 + 0.04 * Double(k % 10) / 10)
                let moved = real.template.embedding.map { $0 + sigma * gaussian() }
                items.append(("other\(i)_\(k)", FaceTemplate(embedding: moved, quality: 50)))
            }
        }
        let gallery = FaceGallery(items.indices.map { (key: Int64($0), template: items[$0].template) })
        let source = InMemoryFaceTemplates(items)
        var rescored = 0
        var foundSelf = 0
        for probe in probes + enrolled {
            var stats = FaceGallery.SearchStats()
            let ranked = try gallery.rank(probe.template, exact: source, threads: 2, stats: &stats)
            XCTAssertEqual(ranked, FaceGallery.exhaustiveRank(probe.template, items), "probe of \(probe.user)")
            rescored = max(rescored, stats.rescored)
            if ranked.first?.user == probe.user { foundSelf += 1 }
        }
        XCTAssertLessThan(rescored, items.count / 4, "the int8 filter leaves most rows out")
        XCTAssertGreaterThanOrEqual(foundSelf, enrolled.count, "each enrolled photo finds itself first")
    }

    /// Templates deleted since the gallery was built are never answered (the re-score reads the source).
    func testDeletedTemplatesAreNeverAnswered() throws {
        var state: UInt64 = 7
        func random() -> FaceTemplate {
            FaceTemplate(embedding: (0..<128).map { _ in
                state = state &* 6364136223846793005 &+ 1442695040888963407
                return Float(Int64(bitPattern: state >> 11) % 2000) / 1000 - 1
            }, quality: 50)
        }
        let items = (0..<1000).map { (user: "u\($0)", template: random()) }
        let gallery = FaceGallery(items.indices.map { (key: Int64($0), template: items[$0].template) })
        struct WithoutFirstHalf: FaceTemplateSource {
            let all: InMemoryFaceTemplates
            func templates(_ keys: [Int64]) throws -> [Int64: (user: String, template: FaceTemplate)] {
                try all.templates(keys.filter { $0 >= 500 })
            }
        }
        let probe = items[3].template
        let ranked = try gallery.rank(probe, exact: WithoutFirstHalf(all: InMemoryFaceTemplates(items)))
        XCTAssertEqual(ranked, FaceGallery.exhaustiveRank(probe, Array(items[500...])))
        XCTAssertFalse(ranked.contains { $0.user == "u3" })
    }
}
