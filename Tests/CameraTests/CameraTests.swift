import BiometricCore
@testable import BiometricCamera
import Foundation
import Logging
import Synchronization
import XCTest
import TestRequirements

/// ../shared/data next to the repository.
let sharedData = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("shared/data").path

final class CameraSpecTests: XCTestCase {
    func testParsesSpecs() throws {
        XCTAssertEqual(try CameraSpec(parsing: "v4l2:/dev/video0"), .v4l2(path: "/dev/video0"))
        XCTAssertEqual(try CameraSpec(parsing: "replay:/tmp/x"), .replay(path: "/tmp/x", fps: 30, loop: false))
        XCTAssertEqual(try CameraSpec(parsing: "replay:/tmp/x?fps=12.5&loop=true"), .replay(path: "/tmp/x", fps: 12.5, loop: true))
    }

    func testRejectsBadSpecsWithAReason() {
        for bad in ["", "usb:0", "v4l2:", "v4l2:video0", "replay:", "replay:/x?fps=0", "replay:/x?fps=abc",
                    "replay:/x?loop=maybe", "replay:/x?speed=2", "replay:/x?fps"] {
            XCTAssertThrowsError(try CameraSpec(parsing: bad), bad) { error in
                guard case .invalidSpec(_, let reason) = error as? CameraError else { return XCTFail("\(bad): \(error)") }
                XCTAssertFalse(reason.isEmpty)
            }
        }
    }
}

final class V4L2ErrorPathTests: XCTestCase {
    func testMissingDevice() {
        XCTAssertThrowsError(try V4L2Device(path: "/dev/video-does-not-exist")) { error in
            XCTAssertEqual(error as? CameraError, .notFound("/dev/video-does-not-exist"))
        }
    }

    func testCharacterDeviceThatIsNotV4L2() {
        XCTAssertThrowsError(try V4L2Device(path: "/dev/null")) { error in
            guard case .notACaptureDevice(let path, let reason)? = error as? CameraError else { return XCTFail("\(error)") }
            XCTAssertEqual(path, "/dev/null")
            XCTAssertTrue(reason.contains("QUERYCAP"), reason)
        }
    }

    func testRegularFileAndFolder() {
        for path in ["/etc/hostname", "/tmp"] {
            XCTAssertThrowsError(try V4L2Device(path: path)) { error in
                guard case .notACaptureDevice(_, let reason)? = error as? CameraError else { return XCTFail("\(error)") }
                XCTAssertEqual(reason, "not a character device")
            }
        }
    }

    func testRegistryRefusesANonCameraAndWaitsForAnAbsentOne() throws {
        XCTAssertThrowsError(try CameraRegistry(specs: [.v4l2(path: "/dev/null")], logger: Logger(label: "t")))
        let registry = try CameraRegistry(specs: [.v4l2(path: "/dev/video-later")], logger: Logger(label: "t"))
        XCTAssertTrue(registry.devices.isEmpty, "an absent device is waited for, not listed")
        XCTAssertThrowsError(try registry.acquire("/dev/video-later")) { error in
            XCTAssertEqual(error as? CameraError, .notFound("/dev/video-later"))
        }
    }

    func testModeChoicePrefersYUYVNearTheRequest() {
        let formats: [CameraDescription.Format] = [
            .init(fourcc: "MJPG", width: 1280, height: 720, fps: 30), .init(fourcc: "YUYV", width: 640, height: 480, fps: 30),
            .init(fourcc: "YUYV", width: 1280, height: 720, fps: 10), .init(fourcc: "H264", width: 640, height: 480, fps: 30),
        ]
        XCTAssertEqual(V4L2Device.chooseMode(formats, CaptureRequest())?.fourcc, "YUYV")
        XCTAssertEqual(V4L2Device.chooseMode(formats, CaptureRequest())?.width, 640)
        XCTAssertEqual(V4L2Device.chooseMode(formats, CaptureRequest(width: 1280, height: 720, fps: 30))?.fourcc, "MJPG")
        XCTAssertNil(V4L2Device.chooseMode([.init(fourcc: "H264", width: 640, height: 480, fps: 30)], CaptureRequest()))
    }
}

final class ReplayTests: XCTestCase {
    /// A folder of `count` small PNGs made by the test.
    private func makeFolder(count: Int, grey: Bool = false) throws -> String {
        let dir = NSTemporaryDirectory() + "replay-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        for i in 0..<count {
            // A binary PGM/PPM: the simplest image format OpenCV reads.
            let (w, h) = (32, 24)
            var data = Data((grey ? "P5\n\(w) \(h)\n255\n" : "P6\n\(w) \(h)\n255\n").utf8)
            data.append(contentsOf: [UInt8](repeating: UInt8(i * 20), count: w * h * (grey ? 1 : 3)))
            try data.write(to: URL(fileURLWithPath: "\(dir)/frame\(String(format: "%03d", i)).\(grey ? "pgm" : "ppm")"))
        }
        return dir
    }

    func testFramesAreInNameOrderPacedAndEndWithoutLoop() throws {
        let dir = try makeFolder(count: 5)
        // A clock of the test's own: pacing is checked by what the replay waits for, not by
        // reading wall-clock time.
        let clock = FakePacingClock()
        let device = try ReplayDevice(spec: .replay(path: dir, fps: 20, loop: false), id: "r", clock: clock.clock)
        XCTAssertEqual(device.description.formats.first?.width, 32)
        XCTAssertFalse(device.description.isInfrared)
        let source = try device.open(CaptureRequest())
        var values: [UInt8] = []
        var times: [UInt64] = []
        for _ in 0..<5 {
            let frame = try source.nextFrame(timeoutMs: 2000)
            times.append(clock.now)
            XCTAssertEqual(frame.width, 32)
            XCTAssertNotNil(frame.bgr)
            values.append(frame.grey.pointer[0])
        }
        XCTAssertEqual(values, [0, 20, 40, 60, 80], "frames come in file-name order")
        // 5 frames at 20 fps: frame n is handed out at n/20 s, never earlier.
        XCTAssertEqual(times, [0, 50, 100, 150, 200].map { UInt64($0) * 1_000_000 })
        XCTAssertThrowsError(try source.nextFrame(timeoutMs: 2000)) { error in
            guard case .lost(_, let reason)? = error as? CameraError else { return XCTFail("\(error)") }
            XCTAssertEqual(reason, "end of replay")
        }
    }

    /// A frame due later than the caller will wait is a camera time-out after that wait.
    func testAFrameDueAfterTheTimeoutIsATimeout() throws {
        let clock = FakePacingClock()
        let device = try ReplayDevice(spec: .replay(path: try makeFolder(count: 3), fps: 2, loop: false), id: "r", clock: clock.clock)
        let source = try device.open(CaptureRequest())
        _ = try source.nextFrame(timeoutMs: 100)
        XCTAssertThrowsError(try source.nextFrame(timeoutMs: 100)) { error in
            XCTAssertEqual(error as? CameraError, .timeout("r"))
        }
        XCTAssertEqual(clock.now, 100_000_000, "it waited the caller's 100 ms, not the frame's 500")
        clock.advance(400_000_000)
        XCTAssertNoThrow(try source.nextFrame(timeoutMs: 100), "due now")
    }

    func testLoopStartsOver() throws {
        let dir = try makeFolder(count: 2)
        let source = try ReplayDevice(spec: .replay(path: dir, fps: 200, loop: true), id: "r").open(CaptureRequest())
        let values = try (0..<5).map { _ in try source.nextFrame(timeoutMs: 1000).grey.pointer[0] }
        XCTAssertEqual(values, [0, 20, 0, 20, 0])
    }

    func testGreyImagesMakeAnInfraredCamera() throws {
        let dir = try makeFolder(count: 1, grey: true)
        let device = try ReplayDevice(spec: .replay(path: dir, fps: 30, loop: false), id: "ir")
        XCTAssertTrue(device.description.isInfrared)
        let frame = try device.open(CaptureRequest()).nextFrame(timeoutMs: 1000)
        XCTAssertNil(frame.bgr, "IR frames have no colour plane")
        XCTAssertTrue(frame.isInfrared)
    }

    func testBadReplaySources() throws {
        let empty = NSTemporaryDirectory() + "empty-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        XCTAssertThrowsError(try ReplayDevice(spec: .replay(path: empty, fps: 30, loop: false), id: "r"))
        XCTAssertThrowsError(try ReplayDevice(spec: .replay(path: "/nonexistent/x", fps: 30, loop: false), id: "r")) { error in
            XCTAssertEqual(error as? CameraError, .notFound("/nonexistent/x"))
        }
        XCTAssertThrowsError(try ReplayDevice(spec: .replay(path: "/etc/hostname", fps: 30, loop: false), id: "r"),
                             "a text file is neither a video nor an image folder")
    }

    func testRealVideoFileFromSharedData() throws {
        let clip = sharedData + "/video/grid_face_blink_a"
        guard let file = (try? FileManager.default.contentsOfDirectory(atPath: clip))?
            .first(where: { ["mp4", "avi", "mkv", "mpg", "mov"].contains(($0 as NSString).pathExtension.lowercased()) })
        else { throw missing("no video file in \(clip)") }
        let device = try ReplayDevice(spec: .replay(path: clip + "/" + file, fps: 200, loop: false), id: "v")
        let source = try device.open(CaptureRequest())
        var count = 0
        while (try? source.nextFrame(timeoutMs: 1000)) != nil { count += 1 }
        XCTAssertGreaterThan(count, 50, "a 3 s clip at 25 fps")
    }
}

final class FrameQueueTests: XCTestCase {
    private func frame(_ n: UInt64) -> Frame {
        Frame(width: 1, height: 1, grey: PixelBufferPool().buffer(count: 1), bgr: nil, timestampNs: n, sequence: n, isInfrared: true)
    }

    func testDropsTheOldestWhenFull() async throws {
        let queue = FrameQueue(capacity: 2)
        for n in UInt64(1)...5 { queue.push(frame(n)) }
        XCTAssertEqual(queue.droppedCount, 3)
        let a = try await queue.next()
        let b = try await queue.next()
        XCTAssertEqual([a.sequence, b.sequence], [4, 5], "analysis gets the freshest frames")
    }

    func testEndIsDeliveredAfterQueuedFrames() async throws {
        let queue = FrameQueue()
        queue.push(frame(1))
        queue.finish(.lost("c", reason: "gone"))
        let first = try await queue.next()
        XCTAssertEqual(first.sequence, 1)
        do {
            _ = try await queue.next()
            XCTFail("expected the end")
        } catch {
            XCTAssertEqual(error as? CameraError, .lost("c", reason: "gone"))
        }
    }

    func testWaitingConsumerIsCanceled() async {
        let queue = FrameQueue()
        let task = Task { try await queue.next() }
        try? await Task.sleep(nanoseconds: 50_000_000)
        task.cancel()
        let result = await task.result
        XCTAssertThrowsError(try result.get()) { XCTAssertTrue($0 is CancellationError) }
    }

    func testPoolRecyclesPlanes() {
        let pool = PixelBufferPool(limit: 2)
        var first: PixelBuffer? = pool.buffer(count: 100)
        let address = first!.pointer
        first = nil
        XCTAssertEqual(pool.idleCount, 1)
        let again = pool.buffer(count: 100)
        XCTAssertEqual(again.pointer, address, "the same memory is reused, no allocation per frame")
        XCTAssertEqual(pool.idleCount, 0)
    }
}

final class RegistryTests: XCTestCase {
    func testOneSessionPerCamera() throws {
        let dir = NSTemporaryDirectory() + "reg-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try Data("P5\n2 2\n255\n\u{0}\u{0}\u{0}\u{0}".utf8).write(to: URL(fileURLWithPath: dir + "/a.pgm"))
        let registry = try CameraRegistry(specs: [.replay(path: dir, fps: 30, loop: true)], logger: Logger(label: "t"))
        let lease = try registry.acquire(nil)
        XCTAssertEqual(lease.device.id, "replay0")
        XCTAssertTrue(registry.isBusy("replay0"))
        XCTAssertThrowsError(try registry.acquire("replay0")) { XCTAssertEqual($0 as? CameraError, .busy("replay0")) }
        XCTAssertThrowsError(try registry.acquire("nope")) { XCTAssertEqual($0 as? CameraError, .notFound("nope")) }
        lease.release()
        XCTAssertNoThrow(try registry.acquire(dir).release(), "a camera is also found by its path")
    }
}

/// A pacing clock that only moves when the replay sleeps (or the test advances it).
final class FakePacingClock: Sendable {
    private let time = Mutex<UInt64>(0)
    var now: UInt64 { time.withLock { $0 } }
    func advance(_ ns: UInt64) { time.withLock { $0 += ns } }
    var clock: PacingClock {
        PacingClock(now: { [self] in now }, sleep: { [self] in advance($0) })
    }
}
