// finger-scene: renders synthetic camera frames of an open hand whose fingertips carry real FVC
// prints, as a folder of PNGs for replay cameras in tests and benchmarks. Deterministic: the same
// arguments give the same files. (Written with the camera side of the finger pipeline.)
import CHandScene
import CImaging
import CVisionReference
import Foundation

let usage = """
    usage: finger-scene --out DIR [--frames N=30] [--hand right|left] [--mode fingers|thumb]
                        [--prints 101_1,102_1,103_1,104_1] [--prints-dir DIR] [--finger-width PX=190]
                        [--amputated index,middle,ring,little] [--attack paper|screen] [--empty]
                        [--blur SIGMA] [--rotation DEG] [--tip X,Y] [--size 1280x720] [--seed N=1]
                        [--approach N (fingers: 16, thumb: 0)] [--format png|bmp]
      --prints      FVC2002 DB2 names (finger_impression), index→little; thumb mode: one print.
                    Default: 101_1,102_1,103_1,104_1 (thumb: 105_1) from --prints-dir.
      --prints-dir  default ../shared/data/fingers/fvc2002_db2_b/images (relative to the working dir)
      --finger-width  middle-finger width in pixels (the distance): ~150–220 is optimal at 1280x720
                    (at 190 the little finger's ridges are ~4.8 px apart, clear of the 4-px limit)
      --tip         where the middle fingertip (thumb mode: thumb tip) is, as frame fractions [0.5,0.1]
      --approach    the first N frames bring the hand from 60-px fingers (the whole hand in view) to
                    --finger-width, as a user does: the hand models must see the palm before the
                    fingers are close enough for prints (at 1280x720 the palm then is out of frame)
      --format      png (default) or bmp: uncompressed, for tests, where a replay camera decoding
                    a 1280x720 PNG per frame costs more than the finger pipeline it feeds
    Writes DIR/frame_0000.png (or .bmp) … (played in name order by a replay camera).
    """

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("finger-scene: \(message)\n\(usage)\n".utf8))
    exit(2)
}

var options: [String: String] = [:]
var flags: Set<String> = []
var index = 1
let argv = CommandLine.arguments
while index < argv.count {
    let name = argv[index]
    guard name.hasPrefix("--") else { fail("unexpected argument \(name)") }
    let key = String(name.dropFirst(2))
    if key == "empty" || key == "help" {
        flags.insert(key)
        index += 1
        continue
    }
    guard index + 1 < argv.count else { fail("\(name) needs a value") }
    options[key] = argv[index + 1]
    index += 2
}
if flags.contains("help") {
    print(usage)
    exit(0)
}
let known: Set<String> = ["out", "frames", "hand", "mode", "prints", "prints-dir", "finger-width", "amputated", "attack",
                          "blur", "rotation", "tip", "size", "seed", "approach", "format"]
if let unknown = options.keys.first(where: { !known.contains($0) }) { fail("unknown option --\(unknown)") }
guard let outDir = options["out"] else { fail("--out is required") }

let frames = Int(options["frames"] ?? "30") ?? -1
guard (1...10_000).contains(frames) else { fail("--frames must be 1…10000") }
let rightHand: Bool
switch options["hand"] ?? "right" {
case "right": rightHand = true
case "left": rightHand = false
default: fail("--hand must be right or left")
}
let thumbMode: Bool
switch options["mode"] ?? "fingers" {
case "fingers": thumbMode = false
case "thumb": thumbMode = true
default: fail("--mode must be fingers or thumb")
}
let attack: cvis_scene_attack
switch options["attack"] {
case nil: attack = CVIS_SCENE_LIVE
case "paper": attack = CVIS_SCENE_PAPER
case "screen": attack = CVIS_SCENE_SCREEN
default: fail("--attack must be paper or screen")
}
guard let fingerWidth = Float(options["finger-width"] ?? "190"), fingerWidth >= 8 else { fail("bad --finger-width") }
guard let blur = Float(options["blur"] ?? "0"), blur >= 0 else { fail("bad --blur") }
guard let rotation = Float(options["rotation"] ?? "0") else { fail("bad --rotation") }
guard let seed = UInt32(options["seed"] ?? "1") else { fail("bad --seed") }
let size = (options["size"] ?? "1280x720").split(separator: "x").compactMap { Int32($0) }
guard size.count == 2, (64...8192).contains(size[0]), (64...8192).contains(size[1]) else { fail("bad --size") }
let tip = (options["tip"] ?? (thumbMode ? "0.5,0.12" : "0.5,0.1")).split(separator: ",").compactMap { Float($0) }
guard tip.count == 2 else { fail("bad --tip") }
guard let approach = Int(options["approach"] ?? (thumbMode ? "0" : "16")), approach >= 0 else { fail("bad --approach") }
let format = options["format"] ?? "png"
guard format == "png" || format == "bmp" else { fail("--format must be png or bmp") }
var absent: UInt32 = 0
for name in (options["amputated"] ?? "").split(separator: ",") {
    guard let bit = ["index": 1, "middle": 2, "ring": 3, "little": 4][String(name)] else { fail("bad --amputated \(name)") }
    absent |= 1 << UInt32(bit)
}

// Prints, decoded once.
let printsDir = options["prints-dir"] ?? "../shared/data/fingers/fvc2002_db2_b/images"
let printNames = (options["prints"] ?? (thumbMode ? "105_1" : "101_1,102_1,103_1,104_1"))
    .split(separator: ",").map(String.init)
guard printNames.count <= 5 else { fail("at most 5 prints") }
var printPixels: [[UInt8]] = []
var printSizes: [(Int32, Int32)] = []
for name in printNames {
    let path = name.contains("/") ? name : "\(printsDir)/\(name).tif"
    var status = CVIS_OK
    guard let image = cvis_image_read(path, 16_000_000, &status) else {
        fail("cannot read print \(path): \(String(cString: cvis_last_error()))")
    }
    defer { cvis_image_free(image) }
    let w = cvis_image_width(image), h = cvis_image_height(image)
    var grey = [UInt8](repeating: 0, count: Int(w * h))
    guard cvis_image_copy(image, &grey, nil) == CVIS_OK else { fail("cannot copy \(path)") }
    printPixels.append(grey)
    printSizes.append((w, h))
}

do {
    try FileManager.default.createDirectory(atPath: outDir, withIntermediateDirectories: true)
} catch {
    fail("cannot create \(outDir): \(error)")
}

var bgr = [UInt8](repeating: 0, count: Int(size[0]) * Int(size[1]) * 3)
for frame in 0..<frames {
    var params = cvis_scene_params()
    params.width = size[0]
    params.height = size[1]
    params.right_hand = rightHand ? 1 : 0
    params.thumb_mode = thumbMode ? 1 : 0
    // The approach: fingers from 60 px to the target width over the first `approach` frames.
    let approaching = frame < min(approach, frames - 1) && fingerWidth > 60
    params.finger_width = approaching ? 60 + (fingerWidth - 60) * Float(frame) / Float(min(approach, frames - 1)) : fingerWidth
    params.tip_x = tip[0]
    params.tip_y = tip[1]
    params.rotation = rotation
    params.blur_sigma = blur
    params.attack = Int32(attack.rawValue)
    params.empty = flags.contains("empty") ? 1 : 0
    params.absent = absent
    params.seed = seed
    params.frame_index = UInt32(frame)
    params.print_ppi = 569 // FVC2002 DB2
    let status: cvis_status = printPixels.withMultipleBuffers { pointers in
        withUnsafeMutableBytes(of: &params.prints) { slots in
            let typed = slots.bindMemory(to: UnsafePointer<UInt8>?.self)
            for (i, pointer) in pointers.enumerated() { typed[i] = pointer }
        }
        withUnsafeMutableBytes(of: &params.print_width) { raw in
            let typed = raw.bindMemory(to: Int32.self)
            for (i, s) in printSizes.enumerated() { typed[i] = s.0 }
        }
        withUnsafeMutableBytes(of: &params.print_height) { raw in
            let typed = raw.bindMemory(to: Int32.self)
            for (i, s) in printSizes.enumerated() { typed[i] = s.1 }
        }
        return bgr.withUnsafeMutableBufferPointer { cvis_hand_render_scene(&params, $0.baseAddress) }
    }
    guard status == CVIS_OK else { fail("render failed: \(String(cString: cvis_last_error()))") }
    let data: Data
    if format == "bmp" {
        var length = 0
        guard let bytes = cvref_imencode(".bmp", bgr, size[0], size[1], 3, 0, &length) else { fail("BMP encoding failed") }
        data = Data(bytes: bytes, count: length)
        cvref_free(bytes)
    } else {
        var png: UnsafeMutablePointer<UInt8>?
        var length = 0
        guard cvis_encode_png(bgr, size[0], size[1], 3, &png, &length) == CVIS_OK, let png else {
            fail("PNG encoding failed: \(String(cString: cvis_last_error()))")
        }
        data = Data(bytes: png, count: length)
        cvis_free(png)
    }
    let path = "\(outDir)/frame_\(String(format: "%04d", frame)).\(format)"
    guard FileManager.default.createFile(atPath: path, contents: data) else { fail("cannot write \(path)") }
}
print("finger-scene: wrote \(frames) frames to \(outDir)")

extension Array where Element == [UInt8] {
    /// Calls `body` with stable pointers to every element's bytes (the prints stay alive meanwhile).
    func withMultipleBuffers<R>(_ body: ([UnsafePointer<UInt8>]) -> R) -> R {
        func recurse(_ i: Int, _ acc: [UnsafePointer<UInt8>]) -> R {
            if i == count { return body(acc) }
            return self[i].withUnsafeBufferPointer { recurse(i + 1, acc + [$0.baseAddress!]) }
        }
        return recurse(0, [])
    }
}
