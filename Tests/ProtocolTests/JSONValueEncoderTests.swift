import BiometricProtocol
import BiometricVocabulary
import Foundation
import XCTest

/// `JSONWriter.write(JSONValueEncoder.encode(x))` must be the bytes of `JSONCoding.encoder.encode(x)`
/// for every value the daemon sends, and the results and events that had hand-written writers
/// must go out as those wrote them (`LegacyWireWriters.swift` keeps them, in this target only).
final class JSONValueEncoderTests: XCTestCase {
    private func foundation(_ value: some Encodable) throws -> [UInt8] { Array(try JSONCoding.encoder.encode(value)) }
    private func direct(_ value: some Encodable) throws -> [UInt8] { JSONWriter.write(try JSONValueEncoder.encode(value)) }
    private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    /// Every result type of SPEC §4 (and the values they hold), made up from 40 seeds each: the
    /// same bytes both ways, the same reply line as before (JSONEncoder's bytes in the envelope),
    /// and `JSONValue(encoding:)` the same value as the former JSONEncoder → JSONDecoder round trip.
    func testEveryResultTypeIsTheSameBytesAsJSONEncoder() throws {
        let types: [any Codable.Type] = [
            PasswordBeginResult.self, OKResult.self, PINResult.self, PolicyResult.self, FactorAttempt.self, FactorSkip.self,
            AuthenticateResult.self, AuthStatusResult.self, KeyInfo.self, KeySignResult.self, KeyListResult.self,
            FIDOCredentialInfo.self, UVCWriteInfo.self, IREntryInfo.self, IRApplicationInfo.self, CameraIRInfo.self,
            CameraIRResult.self, ProbedControlInfo.self, ProbeTrialInfo.self, CameraIRProbeResult.self, CameraCheckResult.self,
            FaceEnrollResult.self, FaceVerifyResult.self, FaceIdentifyResult.self, FaceTemplateInfo.self, FaceListResult.self,
            RemovedResult.self, TemplateIDs.self, FaceExportResult.self, FaceExtractResult.self, PixelRect.self, MatchResult.self,
            FingerBoxWire.self, CapturedFinger.self, FingerCaptureResult.self, EnrolledFinger.self, FingerEnrollResult.self,
            FingerVerifyResult.self, FingerIdentifyResult.self, MinutiaWire.self, FingerExtractResult.self,
            FingerTemplateInfo.self, FingerListResult.self, FingerExportResult.self, ModelStatus.self, GalleryStatus.self,
            DaemonStatus.self, StoreStatus.self, CameraFormatInfo.self, CameraInfo.self, SnapshotResult.self, CancelResult.self,
            WatchResult.self, UserRecord.self, UserList.self, DeleteResult.self, FrameSize.self, PixelPoint.self,
            FramePreview.self, RPCError.self,
        ]
        for type in types { try checkSamples(of: type) }
    }

    private func checkSamples<T: Codable>(of type: T.Type) throws {
        var distinct = Set<[UInt8]>()
        for seed in UInt64(1)...40 {
            let value = try Sampler(seed: seed &* 0x9E37_79B9_7F4A_7C15).make(T.self)
            let expected = try foundation(value)
            distinct.insert(expected)
            XCTAssertEqual(text(try direct(value)), text(expected), "\(T.self), seed \(seed)")
            let id: RequestID = seed % 2 == 0 ? .int(Int64(seed)) : .string("r/\(seed) \"é\"")
            XCTAssertEqual(try RPCCodec.response(id: id, result: value), try legacyResponse(id: id, encoded: Data(expected)),
                           "\(T.self), seed \(seed)")
            XCTAssertEqual(try JSONValue(encoding: value), try legacyJSONValue(encoding: value), "\(T.self), seed \(seed)")
        }
        XCTAssertGreaterThan(distinct.count, 1, "\(T.self): the samples differ")
    }

    /// daemon.status had its own writer (the hot call): the reply is the bytes it wrote.
    func testDaemonStatusIsTheLineItsFormerWriterWrote() throws {
        let models = ModelStatus(loaded: ["a.dat"], missing: ["b/c.dat"], corrupt: [], folders: ["/usr/share/x", "./models"])
        let stores: [StoreStatus?] = [nil, StoreStatus(state: "open", key: "credential", protection: "tpm2"),
                                      StoreStatus(state: "key_unsealable", message: "sealed on another TPM \"é\"")]
        let galleries: [GalleryStatus?] = [nil, GalleryStatus(state: "loading", templates: 3, loaded: 3, total: 10, refreshing: false)]
        var statuses: [DaemonStatus] = []
        for (gallery, store) in galleries.flatMap({ g in stores.map { (g, $0) } }) {
            statuses.append(DaemonStatus(version: "0.1.0", uptimeS: 12.345, pid: 4242, cameras: ["replay0", "video2"], models: models,
                                         users: 7, activeSessions: 1, clients: 64, socketActivated: false, privileged: true,
                                         faceGallery: gallery, store: store))
        }
        for seed in UInt64(1)...60 { statuses.append(try Sampler(seed: seed).make(DaemonStatus.self)) }
        for status in statuses {
            let legacy = try legacyResponse(id: .int(3), encoded: Data(JSONWriter.write(status.legacyJSONValue)))
            XCTAssertEqual(text(Array(try RPCCodec.response(id: .int(3), result: status))), text(Array(legacy)))
        }
        XCTAssertTrue(text(Array(try RPCCodec.response(id: .int(3), result: statuses[1]))).contains(#""protection":"tpm2""#))
    }

    /// Each event is the line its hand-written `fields` gave (every SPEC field, null included),
    /// on hand-built events and on 60 made-up ones of each type. The daemon sets a frame's size
    /// through `frame` (both members or none), as it does in the frame pump.
    func testEveryEventIsTheLineItsFormerWriterWrote() throws {
        func check<E: EventPayload>(_ event: E, _ legacyFields: [String: JSONValue], request: RequestID = .int(9)) throws {
            XCTAssertEqual(text(Array(try RPCCodec.event(Event(request: request, event)))),
                           text(Array(legacyEventLine(request: request, type: event.eventType, fields: legacyFields))))
        }
        let jpeg = Data([0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3, 0xFB, 0xFF])
        var face = FaceFrameEvent(box: PixelRect(x: -3, y: 20, width: 120, height: 130), yaw: -0.0, pitch: .nan, roll: 1e21,
                                  quality: 71, brightness: .infinity, sharpness: 88.125, feedback: [], livenessAction: .nod,
                                  livenessScore: Int(Int32.max), countdownS: 0, extraction: .success, framesCaptured: 1,
                                  framesNeeded: 4, faces: 2)
        try check(face, face.legacyFields, request: .string("a/\"b\" é"))
        face.frame = FrameSize(width: 640, height: 480)
        face.preview = FramePreview(jpeg: jpeg, width: 320, height: 240, box: nil, landmarks: [PixelPoint(x: 5, y: -6)])
        try check(face, face.legacyFields)
        face.preview?.box = PixelRect(x: 1, y: 2, width: 3, height: 4)
        try check(face, face.legacyFields, request: .null)
        var finger = FingerFrameEvent(
            fingers: [.init(position: "right_index", box: PixelRect(x: 1, y: 2, width: 30, height: 40), angle: -12.5, quality: .high)],
            distance: nil, distanceRange: DistanceRange(min: 0.1, optimalMin: 0.4, optimalMax: 0.6, max: 1),
            feedback: .tooFar, framesCaptured: 0, framesNeeded: 3)
        try check(finger, finger.legacyFields)
        finger.frame = FrameSize(width: 1280, height: 720)
        finger.preview = FramePreview(jpeg: jpeg, width: 320, height: 180, fingers: [PixelRect(x: 1, y: 1, width: 9, height: 20)])
        finger.distance = 0.333
        try check(finger, finger.legacyFields)
        let camera = CameraInfo(id: "video0", path: "/dev/video0", name: "Integrated IR \u{1}", driver: "uvcvideo", bus: "usb-1",
                                formats: [], ir: true, busy: false)
        try check(CameraChangeEvent(.added, camera: camera), CameraChangeEvent(.added, camera: camera).legacyFields)
        try check(AuthFactorEvent(factor: "pin", name: "PIN", index: 1, of: 2), AuthFactorEvent(factor: "pin", name: "PIN", index: 1, of: 2).legacyFields)

        var comparedCameras = 0
        for seed in UInt64(1)...60 {
            var f = try Sampler(seed: seed).make(FaceFrameEvent.self)
            f.frame = f.frame
            try check(f, f.legacyFields, request: .int(Int64(seed)))
            var g = try Sampler(seed: seed).make(FingerFrameEvent.self)
            g.frame = g.frame
            try check(g, g.legacyFields)
            let c = try Sampler(seed: seed).make(CameraChangeEvent.self)
            // The camera is JSONEncoder's bytes of it, as camera.list sends it. The former writer read
            // them back through JSONDecoder first, which turned an fps of -0.0 into 0 and a whole fps
            // from 1e16 up into digits; on every other camera the line is the same as before.
            let line = text(Array(try RPCCodec.event(Event(request: .int(9), c))))
            XCTAssertTrue(line.contains(#""camera":"# + text(try foundation(c.camera)) + ","), line)
            if !c.camera.formats.contains(where: { ($0.fps == 0 && $0.fps.sign == .minus) || ($0.fps.isFinite && $0.fps.rounded() == $0.fps && abs($0.fps) >= 1e16) }) {
                try check(c, c.legacyFields)
                comparedCameras += 1
            }
            let a = try Sampler(seed: seed).make(AuthFactorEvent.self)
            try check(a, a.legacyFields)
        }
        XCTAssertGreaterThan(comparedCameras, 10)
    }

    /// The `@Nullable` fields read back from null and from an absent key, as the plain
    /// Optionals did.
    func testNullableFieldsReadNullAndAbsentAsNil() throws {
        let empty = FaceFrameEvent(box: nil, yaw: nil, pitch: nil, roll: nil, quality: 0, brightness: nil, sharpness: nil, feedback: [])
        let withNulls = try JSONCoding.decoder.decode(FaceFrameEvent.self, from: Data(
            #"{"box":null,"yaw":null,"quality":0,"feedback":[],"liveness_score":0,"frames_captured":0,"frames_needed":0}"#.utf8))
        XCTAssertEqual(withNulls, empty)
        XCTAssertEqual(try JSONValue.object(["quality": 0, "feedback": [], "liveness_score": 0, "frames_captured": 0, "frames_needed": 0])
            .decode(FaceFrameEvent.self), empty)
        XCTAssertThrowsError(try JSONCoding.decoder.decode(FaceFrameEvent.self, from: Data(
            #"{"yaw":"x","quality":0,"feedback":[],"liveness_score":0,"frames_captured":0,"frames_needed":0}"#.utf8)))
    }

    // MARK: Generic cases

    final class Base: Encodable {
        var id = 1
        var note: String? = nil
    }

    final class Derived: Encodable {
        let base = Base()
        enum CodingKeys: String, CodingKey { case extra, list, inner, parent }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode("x/y", forKey: .extra)
            var list = c.nestedUnkeyedContainer(forKey: .list)
            try list.encode(1)
            var nested = list.nestedContainer(keyedBy: CodingKeys.self)
            try nested.encodeNil(forKey: .extra)
            try list.encode(Optional<Int>.none)
            try base.encode(to: list.superEncoder())
            try list.encode(UInt8.max)
            var inner = c.nestedContainer(keyedBy: CodingKeys.self, forKey: .inner)
            try inner.encodeIfPresent(Optional<Int>.none, forKey: .extra)
            try inner.encodeIfPresent(Optional<Double>.some(-.infinity), forKey: .list)
            try base.encode(to: c.superEncoder())
            try base.encode(to: c.superEncoder(forKey: .parent))
            // A second request gives the same container.
            var again = encoder.container(keyedBy: CodingKeys.self)
            try again.encode(Int8.min, forKey: .extra)
        }
    }

    /// Encodes nothing: `{}` when nested, an error at the top.
    struct Nothing: Encodable {
        func encode(to encoder: any Encoder) throws {}
    }

    enum Shape: Codable, Equatable {
        case circle(radius: Double)
        case pair(Int, String)
        case empty
    }

    struct Mixed: Encodable {
        var date = Date(timeIntervalSinceReferenceDate: 812_345_678.25)
        var data = Data([0, 1, 2, 0xFF, 0xFE])
        var url = URL(string: "https://example.org/a%20b?q=1&r=/x")!
        var decimals: [Decimal] = [Decimal(12.5), Decimal(42), Decimal(-3), Decimal(string: "0.1")!]
        var float: [Float] = [0.5, 1.25, -3, .infinity, -.infinity]
        var ints: [Int64] = [Int64.max, Int64.min, 0]
        var small: [Int8] = [.min, .max]
        var unsigned: [UInt64] = [UInt64(Int64.max), 0]
        var u: [UInt] = [7]
        var byInt: [Int: String] = [10: "ten", 2: "two", -1: "minus"]
        var byString: [String: [Double?]] = ["b": [nil, .nan], "a": [], "é": [1e-7], "B": [5e-324]]
        var byBool: [Bool: Int] = [true: 1]
        var nothing = Nothing()
        var maybeNothing: Nothing? = Nothing()
        var shapes: [Shape] = [.circle(radius: 2.5), .pair(-1, "p"), .empty]
        var optionalShape: Shape? = nil
        var json: JSONValue = ["k": [1, 2.5, "s", nil, true], "inf": .double(.infinity)]
        var nested: [[String]] = [[], ["a", "b/c"]]
        var set: Set<String> = ["only"]
    }

    func testTrickyValuesAreTheSameBytesAsJSONEncoder() throws {
        func same(_ value: some Encodable, _ label: String) throws {
            XCTAssertEqual(text(try direct(value)), text(try foundation(value)), label)
        }
        try same(Derived(), "nested, super encoders, a repeated container")
        try same(Mixed(), "Foundation types, integers, dictionaries, nothing-encoded, enums")
        try same(Shape.circle(radius: .nan), "top-level enum")
        try same(42, "top-level Int")
        try same("a\"/\\é", "top-level String")
        try same(Double.nan, "top-level nan")
        try same(Optional<Int>.none, "top-level nil")
        try same([Int?.none, 1], "array with nil")
        try same([String: Int](), "empty object")
        try same([Nothing()], "array of nothings")
        try same(Float(0.1), "a Float whose text a Double has")
        try same(Decimal(string: "123456789012345678")!, "a whole Decimal")
        XCTAssertThrowsError(try JSONValueEncoder.encode(Nothing())) { error in
            guard case EncodingError.invalidValue(_, let context) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(context.debugDescription, "Top-level Nothing did not encode any values.")
        }
        XCTAssertThrowsError(try JSONCoding.encoder.encode(Nothing()), "JSONEncoder refuses it too")
    }

    /// What a JSONValue cannot hold as JSONEncoder writes it is refused with the value's path.
    func testNumbersAJSONValueCannotHoldAreRefusedWithTheirPath() throws {
        struct Holder<T: Encodable>: Encodable {
            var values: [String: [T]]
        }
        func refused(_ value: some Encodable, _ label: String) {
            XCTAssertThrowsError(try JSONValueEncoder.encode(value), label) { error in
                guard case EncodingError.invalidValue(_, let context) = error else { return XCTFail("\(error)") }
                XCTAssertEqual(context.codingPath.map(\.stringValue), ["values", "k", "Index 1"], label)
            }
        }
        refused(Holder(values: ["k": [UInt64(1), UInt64.max]]), "UInt64 above Int64.max")
        refused(Holder(values: ["k": [UInt(1), UInt.max]]), "UInt above Int64.max")
        refused(Holder(values: ["k": [Float(1), Float(1e10)]]), "Float 1e+10")
        refused(Holder(values: ["k": [Decimal(1), Decimal(string: "1.23456789012345678901")!]]), "a Decimal with 21 digits")
        refused(Holder(values: ["k": [Decimal(1), Decimal.nan]]), "Decimal NaN")
    }

    /// An error a value throws names its whole coding path (JSONEncoder's, with the keys of
    /// nested containers that JSONEncoder drops).
    func testCodingPathsAreJSONEncoders() throws {
        struct Thrower: Encodable {
            func encode(to encoder: any Encoder) throws {
                throw EncodingError.invalidValue(0, .init(codingPath: encoder.codingPath, debugDescription: "thrown"))
            }
        }
        struct Deep: Encodable {
            enum CodingKeys: String, CodingKey { case a, b }
            func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: CodingKeys.self)
                var list = c.nestedUnkeyedContainer(forKey: .a)
                try list.encode(1)
                var inner = list.nestedContainer(keyedBy: CodingKeys.self)
                try inner.encode([[1], [2]], forKey: .a)
                try inner.encode(["x": [Thrower()]], forKey: .b)
            }
        }
        func path(_ encode: () throws -> Void) -> [String] {
            do {
                try encode()
            } catch EncodingError.invalidValue(_, let context) {
                return context.codingPath.map(\.stringValue)
            } catch {}
            return []
        }
        XCTAssertEqual(path { _ = try JSONValueEncoder.encode(Deep()) }, ["a", "Index 1", "b", "x", "Index 0"])
        // JSONEncoder leaves out the keys of nested containers (their encoder is the parent's):
        // the rest of its path is the same.
        XCTAssertEqual(path { _ = try JSONCoding.encoder.encode(Deep()) }, ["b", "x", "Index 0"])
    }
}
