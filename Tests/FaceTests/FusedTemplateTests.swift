import BiometricCamera
import BiometricCore
import BiometricProtocol
@testable import BiometricFace
import Foundation
import XCTest

/// Version 2 face templates (dlib + the second network) and the fused score (Docs/face.md "Two
/// networks, one score"): the binary form, v1 staying on dlib alone, the calibrations, and real
/// LFW pairs on the right side of the default threshold.
final class FusedTemplateTests: XCTestCase {
    static func random(_ seed: UInt64, count: Int = 128) -> [Float] {
        var state = seed
        return (0..<count).map { _ -> Float in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int64(bitPattern: state >> 11) % 2000) / 1000 - 1
        }
    }

    func testVersion2RoundTripsAndVersion1StaysVersion1() throws {
        let v1 = FaceTemplate(embedding: Self.random(1), quality: 70)
        let v2 = FaceTemplate(embedding: Self.random(1), second: Self.random(2), quality: 70)
        XCTAssertEqual(v1.version, 1)
        XCTAssertEqual(v2.version, 2)
        XCTAssertEqual(v1.data.count, 520)
        XCTAssertEqual(v2.data.count, 1034)
        XCTAssertEqual(v2.data[4], 2, "the version is in the blob")
        XCTAssertEqual(try FaceTemplate(data: v1.data), v1)
        let back = try FaceTemplate(data: v2.data)
        XCTAssertEqual(back, v2)
        XCTAssertEqual(back.version, 2)
        XCTAssertEqual(v2.dlibOnly, v1, "the dlib part of a v2 template is the v1 template")
        XCTAssertEqual(try FaceTemplate(data: v2.data).dlibOnly.data, v1.data)
        XCTAssertEqual(Array(v2.data.prefix(520)).dropFirst(5), Array(v1.data).dropFirst(5), "same dlib bytes after the version")
    }

    func testBadVersion2BlobsAreRefused() {
        let v2 = FaceTemplate(embedding: Self.random(3), second: Self.random(4), quality: 60).data
        XCTAssertThrowsError(try FaceTemplate(data: v2.prefix(520))) { XCTAssertEqual($0 as? FaceTemplate.DecodeError, .badDimensions(128)) }
        XCTAssertThrowsError(try FaceTemplate(data: v2.prefix(1000)))
        XCTAssertThrowsError(try FaceTemplate(data: v2 + Data([0])))
        var version1Length2 = v2
        version1Length2[4] = 1  // a v1 header on a v2 body
        XCTAssertThrowsError(try FaceTemplate(data: version1Length2))
        var version3 = v2
        version3[4] = 3
        XCTAssertThrowsError(try FaceTemplate(data: version3)) { XCTAssertEqual($0 as? FaceTemplate.DecodeError, .unsupportedVersion(3)) }
        var secondDims = v2
        secondDims[520] = 64
        XCTAssertThrowsError(try FaceTemplate(data: secondDims)) { XCTAssertEqual($0 as? FaceTemplate.DecodeError, .badDimensions(64)) }
        var scaled = v2
        scaled[522 + 3] ^= 0x40  // the second embedding no longer unit length
        XCTAssertThrowsError(try FaceTemplate(data: scaled)) { XCTAssertEqual($0 as? FaceTemplate.DecodeError, .notNormalised) }
        var nan = v2
        for k in 0..<4 { nan[522 + k] = 0xff }
        XCTAssertThrowsError(try FaceTemplate(data: nan)) { XCTAssertEqual($0 as? FaceTemplate.DecodeError, .notNormalised) }
    }

    func testFusedDistanceIsTheDistanceOfTheConcatenatedVectors() throws {
        let a = FaceTemplate(embedding: Self.random(5), second: Self.random(6), quality: 80)
        let b = FaceTemplate(embedding: Self.random(7), second: Self.random(8), quality: 80)
        let d = try XCTUnwrap(a.fusedDistance(to: b))
        let va = try XCTUnwrap(a.fusedVector), vb = try XCTUnwrap(b.fusedVector)
        XCTAssertEqual(va.count, 256)
        XCTAssertEqual(Double(va.map { $0 * $0 }.reduce(0, +)), 1, accuracy: 1e-5)
        XCTAssertEqual(d, Double(zip(va, vb).map { ($0 - $1) * ($0 - $1) }.reduce(0, +)).squareRoot(), accuracy: 1e-5)
        XCTAssertNil(a.fusedDistance(to: b.dlibOnly), "a v1 side has no fused distance")
        XCTAssertEqual(a.fusedDistance(to: a)!, 0, accuracy: 1e-3)
    }

    func testEnrolmentFusionKeepsVersion2OnlyWhenEveryFrameHasIt() {
        let a = FaceTemplate(embedding: Self.random(9), second: Self.random(10), quality: 90)
        let b = FaceTemplate(embedding: Self.random(11), second: Self.random(12), quality: 30)
        XCTAssertEqual(FaceTemplate.fused([a, b])?.version, 2)
        XCTAssertEqual(FaceTemplate.fused([a, b.dlibOnly])?.version, 1)
        let f = FaceTemplate.fused([a, b])!
        XCTAssertEqual(Double(f.second!.map { $0 * $0 }.reduce(0, +)), 1, accuracy: 1e-5)
    }

    /// A v1 reference is scored on dlib alone whatever the probe carries, and a v2 reference
    /// without the second network loaded likewise; the session asks for the second embedding only
    /// when it will use it.
    func testVersion1VerifiesWithDlibAlone() {
        let settings = FaceAuthenticationSettings(liveness: false, matchingThreshold: 48, qualityThreshold: 40, livenessThreshold: 50,
                                                  blinkTimeoutMs: 5000, timeoutMs: 10000)
        let v1 = FaceTemplate(embedding: Self.random(13), quality: 80)
        let v2 = FaceTemplate(embedding: Self.random(13), second: Self.random(14), quality: 80)
        let probe = FaceTemplate(embedding: Self.random(15), second: Self.random(16), quality: 80)
        let dlib = FaceCalibration.lfw.score(probe.distance(to: v1))
        XCTAssertEqual(FaceVerification.score(probe, against: [v1], calibration: FaceCalibration.lfw), dlib)
        XCTAssertEqual(FaceVerification.score(probe.dlibOnly, against: [v2], calibration: FaceCalibration.lfw), dlib)
        XCTAssertEqual(FaceVerification.score(probe, against: [v2], calibration: FaceCalibration.lfw),
                       FaceFusion.calibration.score(probe.fusedDistance(to: v2)!))

        let onlyV1 = FaceVerification(settings, references: [v1], calibration: FaceCalibration.lfw, startedAt: 0, secondNetwork: true)
        XCTAssertFalse(onlyV1.fused)
        XCTAssertEqual(onlyV1.secondEmbedding, .none, "no extra cost for v1 users")
        let noModel = FaceVerification(settings, references: [v2], calibration: FaceCalibration.lfw, startedAt: 0, secondNetwork: false)
        XCTAssertFalse(noModel.fused)
        XCTAssertEqual(noModel.secondEmbedding, .none)
        let both = FaceVerification(settings, references: [v2, v1], calibration: FaceCalibration.lfw, startedAt: 0, secondNetwork: true)
        XCTAssertTrue(both.fused)
        XCTAssertEqual(both.secondEmbedding, .chip)
        XCTAssertEqual(FaceEnrolment(targets: [.front], framesPerPose: 3, qualityThreshold: 40, countdownS: 0, timeoutMs: 1000,
                                     startedAt: 0).secondEmbedding, .chipAndMirror)
    }

    /// The fused calibrations are monotone and state the SPEC §4 scale: score = −12·log10 FAR.
    func testFusedCalibrationsAreMonotoneAndOnTheSpecScale() {
        var last = 101.0
        for step in 0...400 {
            let s = FaceFusion.calibration.score(Double(step) / 200)
            XCTAssertLessThanOrEqual(s, last, "per comparison: a larger distance never scores higher")
            last = s
        }
        XCTAssertEqual(FaceFusion.calibration.score(0), 100, accuracy: 0.5)
        XCTAssertEqual(FaceFusion.calibration.score(2), 0, accuracy: 0.5)
        for score in [24.0, 36, 48, 60, 72] {
            XCTAssertEqual(FaceFusion.calibration.score(FaceFusion.calibration.value(forScore: score)), score, accuracy: 0.5)
        }
        last = -1
        for step in 0...200 {
            let s = FaceFusion.attempt.score(Double(step) / 200)
            XCTAssertGreaterThanOrEqual(s, last, "per attempt: a higher mean frame score never scores lower")
            last = s
        }
        // One photo held for every frame: the attempt states no less than one comparison does.
        for mean in [24.0, 36, 48, 60] {
            XCTAssertGreaterThanOrEqual(mean + 0.6, FaceAttemptRule.standardFused.score(frameScores: [mean, mean, mean])!)
        }
        XCTAssertEqual(FaceAttemptRule.standardFused.frames, FaceAttemptRule.standard.frames)
    }

    // MARK: Real LFW faces

    /// An enrolment-style v2 template (dlib 8 views; second chip + mirror) or a probe-style one
    /// (dlib chip + mirror; second chip) of an LFW photo.
    static func template(_ models: FaceModels, _ name: String, stored: Bool) throws -> FaceTemplate {
        let f = try Frame(contentsOfFile: PipelineTests.lfw + "/" + name)
        let o = try models.withEngine { try FacePipeline.analyze(f, tracker: FaceTracker(), engine: $0) }
        let landmarks = try XCTUnwrap(o.landmarks, "no face in \(name)")
        let image = ImageRef(pixels: UnsafePointer(f.bgr!.pointer), width: f.width, height: f.height, channels: 3)
        return try models.withEngine { engine in
            FaceTemplate(embedding: try engine.embed(image, landmarks: landmarks, views: stored ? .jittered : .mirrored),
                         second: try engine.secondEmbedding(image, landmarks: landmarks, box: o.box, mirrored: stored), quality: 80)
        }
    }

    /// The first 12 genuine and 12 impostor pairs of LFW View-2 fold 1 (not chosen): the first
    /// image enrolled, the second a live probe. At the default threshold (FAR 1e-4 per
    /// comparison) the fused TAR on all of LFW is 95.5 %, so about 11 of 12 genuine pairs match, and
    /// no impostor pair should.
    func testLFWPairsFallOnTheirSidesOfTheDefaultThreshold() throws {
        let models = try SecondNetworkTests.models()
        let threshold = FaceCaptureOptions.matchingThreshold.defaultValue
        let lines = try String(contentsOfFile: PipelineTests.lfw + "/../pairs.txt", encoding: .utf8)
            .split(separator: "\n").map { $0.split(whereSeparator: { $0 == "\t" || $0 == " " }).map(String.init) }
        func path(_ name: String, _ n: String) -> String { String(format: "%@/%@_%04d.jpg", name, name, Int(n)!) }
        let genuine = lines[1...12].map { (path($0[0], $0[1]), path($0[0], $0[2])) }
        let impostor = lines[301...312].map { (path($0[0], $0[1]), path($0[2], $0[3])) }
        func scores(_ pairs: [(String, String)]) throws -> (fused: [Double], dlib: [Double]) {
            var fused: [Double] = [], dlib: [Double] = []
            for (a, b) in pairs {
                let enrolled = try Self.template(models, a, stored: true), probe = try Self.template(models, b, stored: false)
                XCTAssertEqual(enrolled.version, 2)
                fused.append(FaceVerification.score(probe, against: [enrolled], calibration: FaceCalibration.lfw))
                dlib.append(FaceVerification.score(probe.dlibOnly, against: [enrolled], calibration: FaceCalibration.lfw))
            }
            return (fused, dlib)
        }
        let g = try scores(genuine), i = try scores(impostor)
        print("LFW fold 1 genuine fused \(g.fused.map { String(format: "%.1f", $0) }) dlib \(g.dlib.map { String(format: "%.1f", $0) })")
        print("LFW fold 1 impostor fused \(i.fused.map { String(format: "%.1f", $0) }) dlib \(i.dlib.map { String(format: "%.1f", $0) })")
        XCTAssertGreaterThanOrEqual(g.fused.filter { $0 >= threshold }.count, 10, "genuine \(g.fused)")
        XCTAssertEqual(i.fused.filter { $0 >= threshold }.count, 0, "impostor \(i.fused)")
        // A v1 reading of the same templates is the dlib score (what a v1 template gets).
        XCTAssertNotEqual(g.fused, g.dlib)
    }
}

/// The 1:N gallery over v1 and v2 templates (`FaceGallerySet`): the same answer as scoring every
/// template the way verify does, with a fused probe and with a dlib-only one.
final class FusedGalleryTests: XCTestCase {
    /// Users in families (faces alike), so rankings are crowded; half the templates v2.
    static func crowd(seed: UInt64) -> (items: [(user: String, template: FaceTemplate)], probes: [FaceTemplate]) {
        var state = seed
        func gaussian() -> Float {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            let u1 = Float(state >> 40) / Float(1 << 24) + 1e-7
            state = state &* 6364136223846793005 &+ 1442695040888963407
            let u2 = Float(state >> 40) / Float(1 << 24)
            return (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
        }
        func unit(_ v: [Float]) -> [Float] { FaceTemplate.normalised(v) }
        func near(_ v: [Float], _ sigma: Float) -> [Float] { unit(v.map { $0 + sigma * gaussian() }) }
        var items: [(user: String, template: FaceTemplate)] = []
        var probes: [FaceTemplate] = []
        for family in 0..<12 {
            let d = unit((0..<128).map { _ in gaussian() }), s = unit((0..<128).map { _ in gaussian() })
            for member in 0..<8 {
                let ud = near(d, 0.05), us = near(s, 0.08)
                let user = "f\(family)m\(member)"
                for k in 0..<3 {
                    let version2 = (family + member + k) % 2 == 0
                    items.append((user, FaceTemplate(embedding: near(ud, 0.03), second: version2 ? near(us, 0.06) : nil, quality: 70)))
                }
                if member < 2 { probes.append(FaceTemplate(embedding: near(ud, 0.03), second: near(us, 0.06), quality: 70)) }
            }
        }
        return (items, probes)
    }

    func testTheGallerySetEqualsTheExhaustiveSearchOnTheFusedScore() throws {
        let (items, probes) = Self.crowd(seed: 7)
        let gallery = FaceGallerySet(items.indices.map { (key: Int64($0), template: items[$0].template) })
        XCTAssertEqual(gallery.count, items.count)
        XCTAssertTrue(gallery.hasVersion2)
        let source = InMemoryFaceTemplates(items)
        var nonTrivial = 0
        for probe in probes {
            for p in [probe, probe.dlibOnly] {
                let fast = try gallery.rank(p, limit: 5, exact: source, calibration: FaceCalibration.lfw)
                let exact = FaceGallerySet.exhaustiveRank(p, items, limit: 5, calibration: FaceCalibration.lfw)
                XCTAssertEqual(fast, exact)
                if exact.count >= 3 { nonTrivial += 1 }
            }
            // The fused probe's score of a user is what verify gives against their templates.
            let top = try XCTUnwrap(try gallery.rank(probe, limit: 1, exact: source, calibration: FaceCalibration.lfw).first)
            let theirs = items.filter { $0.user == top.user }.map(\.template)
            XCTAssertEqual(top.score, FaceVerification.score(probe, against: theirs, calibration: FaceCalibration.lfw))
        }
        XCTAssertGreaterThan(nonTrivial, probes.count, "the rankings are crowded, not one user each")
    }

    func testAVersion1GalleryIsTheDlibGallery() throws {
        let (items, probes) = Self.crowd(seed: 9)
        let v1 = items.map { (user: $0.user, template: $0.template.dlibOnly) }
        let gallery = FaceGallerySet(v1.indices.map { (key: Int64($0), template: v1[$0].template) })
        XCTAssertFalse(gallery.hasVersion2)
        let plain = FaceGallery(v1.indices.map { (key: Int64($0), template: v1[$0].template) })
        for probe in probes.prefix(8) {
            let set = try gallery.rank(probe, limit: 5, exact: InMemoryFaceTemplates(v1), calibration: FaceCalibration.lfw)
            let dlib = try plain.rank(probe, limit: 5, exact: InMemoryFaceTemplates(v1))
                .map { FaceGallerySet.Scored(user: $0.user, score: FaceCalibration.lfw.score($0.distance)) }.filter { $0.score > 0 }
            // Same scores in the same order (users tied on the 0.1 grid are ordered by name here).
            XCTAssertEqual(set.map(\.score), Array(dlib.map(\.score).prefix(set.count)))
            XCTAssertEqual(set.first?.user, dlib.first?.user)
        }
    }
}
