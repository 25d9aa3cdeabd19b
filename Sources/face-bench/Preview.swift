import BiometricCore
import BiometricDaemon
import BiometricFace
import BiometricProtocol
import Foundation

/// `preview`: what the live preview of issue 25 costs per frame, against the face pipeline's own
/// per-frame analysis of the same frame in the same process (the baseline), at the frame sizes
/// sessions see: 640x480 colour (face), 640x480 grey (an IR camera), 1280x720 colour (finger).
/// A preview is made only at its rate (default 5/s), so its share of a 30 frames/s stream is
/// the per-preview cost x 5/30; with the preview off the event path is as before (measured too).
func runPreview() {
    let person = shared + "/faces/lfw/images/Aaron_Eckhart/Aaron_Eckhart_0001.jpg"
    guard let face = readFrame(person), let faceBGR = face.bgr else { fatalError("no LFW image") }
    let models = loadModels()
    let pipeline = FacePipeline(models: models, threads: 1)
    let n = 60

    /// A w x h frame: the LFW face enlarged to 60 % of the height in the middle of a grey canvas.
    func frame(_ w: Int, _ h: Int, colour: Bool) -> Frame {
        let pool = PixelBufferPool(limit: 0)
        let bgr = pool.buffer(count: w * h * 3), grey = pool.buffer(count: w * h)
        for i in 0..<(w * h * 3) { bgr.pointer[i] = 110 }
        let side = h * 6 / 10, x0 = (w - side) / 2, y0 = (h - side) / 2
        for y in 0..<side { for x in 0..<side {
            let sx = x * 250 / side, sy = y * 250 / side
            for c in 0..<3 { bgr.pointer[((y + y0) * w + x + x0) * 3 + c] = faceBGR.pointer[(sy * 250 + sx) * 3 + c] }
        } }
        for i in 0..<(w * h) { grey.pointer[i] = UInt8((Int(bgr.pointer[3 * i]) + Int(bgr.pointer[3 * i + 1]) + Int(bgr.pointer[3 * i + 2])) / 3) }
        return Frame(width: w, height: h, grey: grey, bgr: colour ? bgr : nil, timestampNs: 0, sequence: 0, isInfrared: !colour)
    }

    func ms(_ body: () -> Void) -> Double {
        body()
        let t = now()
        for _ in 0..<n { body() }
        return (now() - t) / Double(n) * 1000
    }

    print("preview cost per frame (\(n) runs each; baseline: FacePipeline.analyze with tracking on the same frame, same process)")
    for (label, w, h, colour) in [("640x480 colour", 640, 480, true), ("640x480 grey (IR)", 640, 480, false),
                                  ("1280x720 colour", 1280, 720, true)] {
        let f = frame(w, h, colour: colour)
        let tracker = FaceTracker()
        let sem = DispatchSemaphore(value: 0)
        let box = Box()
        let observationBox = ObservationBox()
        Task {
            observationBox.value = try? await pipeline.analyze(f, tracker: tracker)
            let t = now()
            for _ in 0..<n { _ = try? await pipeline.analyze(f, tracker: tracker) }
            box.value = (now() - t) / Double(n) * 1000
            sem.signal()
        }
        sem.wait()
        guard let observation = observationBox.value else { fatalError("no observation") }
        let analyse = box.value
        // Off: the event as the pump sends it (frame size set), written to its wire bytes.
        var plain = observation.event
        plain.frame = FrameSize(width: w, height: h)
        let off = ms { _ = try? RPCCodec.event(Event(request: .int(1), plain)) }
        for width in [160, 320, 640] {
            var bytes = 0
            let on = ms {
                var e = plain
                e.preview = try? observation.preview(of: f, width: width)
                bytes = (try? RPCCodec.event(Event(request: .int(1), e)))?.count ?? 0
            }
            let encodeOnly = ms { _ = try? f.previewJPEG(width: previewSize(of: FrameSize(width: w, height: h), width: width).width,
                                                        height: previewSize(of: FrameSize(width: w, height: h), width: width).height) }
            print("\(label) preview width \(width): \(fmt(on, 3)) ms per preview (resize+JPEG \(fmt(encodeOnly, 3)) ms), event \(bytes) bytes; "
                  + "event without preview \(fmt(off, 3)) ms; analyze \(fmt(analyse, 2)) ms/frame; "
                  + "ratio preview/analyze \(fmt(on / analyse, 3)); at 5 previews/s of 30 frames/s: \(fmt(on * 5 / 30, 3)) ms/frame "
                  + "(\(fmt(on * 5 / 30 / analyse * 100, 2)) % of analyze)")
        }
    }
}

final class ObservationBox: @unchecked Sendable { var value: FaceObservation? }
