import BiometricCore
import CImaging
import CVisionReference
import Foundation
import XCTest
import TestRequirements

/// CImaging decodes still images through libpng, libjpeg-turbo, libtiff and libwebp, and video files
/// through FFmpeg's libraries loaded on demand, instead of OpenCV's imgcodecs and videoio (whose
/// Debian builds pull GDAL, poppler and ~270 libraries into the daemon). Every number measured
/// before (LFW, the clips, the prints) was measured on OpenCV's pixels: these tests check that the
/// pixels are the same ones, against OpenCV itself (CVisionReference, test-only).
final class CodecTests: XCTestCase {
    static let shared = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path + "/../shared/data"

    struct Failure: Error { let text: String }

    /// Ours: (width, height, channels, packed pixels) or the error text.
    func ours(_ bytes: [UInt8], maxPixels: Int64 = 0) -> Result<(Int, Int, Int, [UInt8]), Failure> {
        var status = CVIS_OK
        guard let image = bytes.withUnsafeBufferPointer({ cvis_image_decode($0.baseAddress, $0.count, maxPixels, &status) })
        else { return .failure(Failure(text: String(cString: cvis_last_error()))) }
        defer { cvis_image_free(image) }
        let w = Int(cvis_image_width(image)), h = Int(cvis_image_height(image)), c = Int(cvis_image_channels(image))
        var grey = [UInt8](repeating: 0, count: w * h)
        var bgr = [UInt8](repeating: 0, count: w * h * 3)
        let copied = c == 3 ? cvis_image_copy(image, &grey, &bgr) : cvis_image_copy(image, &grey, nil)
        guard copied == CVIS_OK else { return .failure(Failure(text: "copy failed")) }
        return .success((w, h, c, c == 3 ? bgr : grey))
    }

    func opencv(_ bytes: [UInt8]) -> (Int, Int, Int, [UInt8])? {
        var w: Int32 = 0, h: Int32 = 0, c: Int32 = 0
        guard let p = bytes.withUnsafeBufferPointer({ cvref_imdecode($0.baseAddress, $0.count, &w, &h, &c) }) else { return nil }
        defer { cvref_free(p) }
        return (Int(w), Int(h), Int(c), Array(UnsafeBufferPointer(start: p, count: Int(w * h * c))))
    }

    func assertSame(_ bytes: [UInt8], _ label: String, file: StaticString = #filePath, line: UInt = #line) {
        guard let reference = opencv(bytes) else { return XCTFail("\(label): OpenCV does not decode it", file: file, line: line) }
        switch ours(bytes) {
        case .failure(let why): XCTFail("\(label): \(why.text)", file: file, line: line)
        case .success(let got):
            XCTAssertEqual(got.0, reference.0, "\(label): width", file: file, line: line)
            XCTAssertEqual(got.1, reference.1, "\(label): height", file: file, line: line)
            XCTAssertEqual(got.2, reference.2, "\(label): channels", file: file, line: line)
            if got.3 != reference.3 {
                let differing = zip(got.3, reference.3).filter { $0 != $1 }.count
                XCTFail("\(label): \(differing) of \(got.3.count) samples differ from OpenCV's", file: file, line: line)
            }
        }
    }

    func files(_ folder: String, every step: Int, extensions: Set<String>) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: folder) else { return [] }
        let all = walker.compactMap { $0 as? String }.filter { extensions.contains(($0 as NSString).pathExtension.lowercased()) }.sorted()
        return stride(from: 0, to: all.count, by: step).map { folder + "/" + all[$0] }
    }

    /// Real files of every kind the daemon reads: LFW's JPEG photos, the FVC prints (TIFF), the
    /// hand photos (phone and webcam JPEGs, some with EXIF orientation).
    func testSharedPhotosAndPrintsDecodeToOpenCVsPixels() throws {
        let lfw = files(Self.shared + "/faces/lfw/images", every: 97, extensions: ["jpg"])
        let prints = files(Self.shared + "/fingers", every: 7, extensions: ["tif", "tiff"])
        let hands = files(Self.shared + "/hands", every: 3, extensions: ["jpg", "jpeg", "png"])
        guard !lfw.isEmpty, !prints.isEmpty else { throw missing("../shared/data is not beside the repository") }
        for path in lfw + prints + hands {
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            assertSame(bytes, (path as NSString).lastPathComponent)
        }
        XCTAssertGreaterThan(lfw.count + prints.count + hands.count, 100)
    }

    /// A synthetic picture with edges and smooth gradients in every channel.
    func pattern(width: Int, height: Int, channels: Int, wide: Bool = false) -> [UInt8] {
        var out: [UInt8] = []
        for y in 0..<height {
            for x in 0..<width {
                for c in 0..<channels {
                    let v = (x * (3 + c) + y * (5 - c) + ((x / 7 + y / 5) % 2) * 90) % 256
                    if wide { out += [UInt8(truncatingIfNeeded: v * 37), UInt8(v)] } else { out.append(UInt8(v)) }
                }
            }
        }
        return out
    }

    func encoded(_ ext: String, width: Int = 61, height: Int = 37, channels: Int, wide: Bool = false) -> [UInt8] {
        let pixels = pattern(width: width, height: height, channels: channels, wide: wide)
        var length = 0
        guard let p = pixels.withUnsafeBufferPointer({ cvref_imencode(ext, $0.baseAddress, Int32(width), Int32(height), Int32(channels), wide ? 1 : 0, &length) })
        else { XCTFail("OpenCV cannot write \(ext)"); return [] }
        defer { cvref_free(p) }
        return Array(UnsafeBufferPointer(start: p, count: length))
    }

    /// The other formats and variants: grey, colour, with alpha, 16-bit, as OpenCV writes them.
    func testEveryAcceptedFormatDecodesToOpenCVsPixels() {
        for (ext, channelCounts) in [(".png", [1, 3, 4]), (".jpg", [1, 3]), (".tiff", [1, 3, 4]), (".webp", [3, 4]),
                                     (".pgm", [1]), (".ppm", [3]), (".bmp", [1, 3])] {
            for c in channelCounts { assertSame(encoded(ext, channels: c), "\(ext) \(c) channels") }
        }
        assertSame(encoded(".png", channels: 1, wide: true), "16-bit grey PNG")
        assertSame(encoded(".png", channels: 3, wide: true), "16-bit colour PNG")
        assertSame(encoded(".pgm", channels: 1, wide: true), "16-bit PGM")
        assertSame(encoded(".tiff", channels: 1, wide: true), "16-bit grey TIFF")
        assertSame(encoded(".tiff", channels: 3, wide: true), "16-bit colour TIFF")
    }

    /// A phone photo stored sideways with EXIF orientation 6 (turn 90° clockwise) comes out upright,
    /// as OpenCV's imdecode turned it.
    func testJPEGOrientationIsAppliedAsOpenCVDid() {
        let jpeg = encoded(".jpg", width: 40, height: 24, channels: 3)
        // APP1 "Exif\0\0" + a little-endian TIFF header with one IFD entry: Orientation (0x0112) = 6.
        var exif: [UInt8] = Array("Exif".utf8) + [0, 0] + [0x49, 0x49, 0x2A, 0x00, 0x08, 0, 0, 0]
        exif += [1, 0] + [0x12, 0x01, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0] + [0, 0, 0, 0]
        let segment: [UInt8] = [0xFF, 0xE1, UInt8((exif.count + 2) >> 8), UInt8((exif.count + 2) & 0xFF)] + exif
        let rotated = Array(jpeg[0..<2]) + segment + Array(jpeg[2...])
        assertSame(rotated, "EXIF orientation 6")
        if case .success(let got) = ours(rotated) { XCTAssertEqual([got.0, got.1], [24, 40], "turned upright") }
    }

    /// Broken and hostile inputs are errors with a message, never a crash.
    func testTruncatedAndCorruptImagesAreRefused() {
        for (ext, c) in [(".png", 3), (".jpg", 3), (".tiff", 1), (".webp", 3), (".bmp", 3), (".ppm", 3)] {
            let bytes = encoded(ext, channels: c)
            for cut in [bytes.count / 3, bytes.count / 2, bytes.count - 9] {
                // Truncated: refused, or (JPEG, which libjpeg pads with grey) decoded at full size.
                if case .success(let got) = ours(Array(bytes.prefix(cut))) {
                    XCTAssertEqual([got.0, got.1], [61, 37], "\(ext) cut at \(cut)")
                }
            }
            var corrupt = bytes
            for i in stride(from: 20, to: corrupt.count, by: 11) { corrupt[i] ^= 0x5A }
            _ = ours(corrupt)  // must return (either way), not crash
        }
        if case .success = ours(Array("GIF89a".utf8) + [UInt8](repeating: 1, count: 40)) { XCTFail("GIF is not accepted") }
        if case .failure(let why) = ours([0x50, 0x35, 0x20, 0x31]) { XCTAssertFalse(why.text.isEmpty) } else { XCTFail("a stub PGM decoded") }
    }

    /// The replay camera's frames of every shared clip are cv::VideoCapture's, frame for frame, at
    /// the same declared rate.
    func testVideoFramesAreOpenCVsFrames() throws {
        let clips = ["tran_live", "tran_replay_screen", "grid_face_blink_a"].map { Self.shared + "/video/\($0)/video.mp4" }
        guard FileManager.default.fileExists(atPath: clips[0]) else { throw missing("../shared/data is not beside the repository") }
        for clip in clips {
            var status = CVIS_OK
            guard let video = cvis_video_open(clip, &status) else { return XCTFail("\(clip): \(String(cString: cvis_last_error()))") }
            defer { cvis_video_close(video) }
            guard let reference = cvref_video_open(clip) else { return XCTFail("OpenCV cannot open \(clip)") }
            defer { cvref_video_close(reference) }
            XCTAssertEqual(cvis_video_fps(video), cvref_video_fps(reference), accuracy: 1e-9, clip)
            var frames = 0, differing = 0
            while true {
                var w: Int32 = 0, h: Int32 = 0
                var frame: OpaquePointer?
                let mine = cvis_video_next(video, &frame)
                guard let expected = cvref_video_next(reference, &w, &h) else {
                    XCTAssertEqual(mine, CVIS_ERR_END, "\(clip): OpenCV ended at frame \(frames), we did not")
                    break
                }
                defer { cvref_free(expected) }
                guard mine == CVIS_OK, let frame else { XCTFail("\(clip): ended at frame \(frames) before OpenCV"); break }
                XCTAssertEqual([Int(cvis_image_width(frame)), Int(cvis_image_height(frame))], [Int(w), Int(h)])
                var grey = [UInt8](repeating: 0, count: Int(w * h))
                var bgr = [UInt8](repeating: 0, count: Int(w * h * 3))
                XCTAssertEqual(cvis_image_copy(frame, &grey, &bgr), CVIS_OK)
                if bgr != Array(UnsafeBufferPointer(start: expected, count: Int(w * h * 3))) { differing += 1 }
                frames += 1
            }
            XCTAssertEqual(differing, 0, "\(clip): \(differing) of \(frames) frames differ from cv::VideoCapture's")
            XCTAssertGreaterThan(frames, 50, clip)
        }
    }

    func testAVideoThatIsNotOneIsRefused() throws {
        let path = NSTemporaryDirectory() + "not-a-video-\(getpid()).mp4"
        try Data((0..<4096).map { UInt8($0 % 251) }).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        var status = CVIS_OK
        XCTAssertNil(cvis_video_open(path, &status))
        XCTAssertNotEqual(status, CVIS_OK)
        XCTAssertFalse(String(cString: cvis_last_error()).isEmpty)
        XCTAssertNil(cvis_video_open("http://127.0.0.1:9/x.mp4", &status), "a replay camera reads local files only")
    }
}
