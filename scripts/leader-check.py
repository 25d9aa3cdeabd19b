#!/usr/bin/env python3
"""leader-check.py reference|compare ORIGINAL REWRITTEN [IMAGES...] --cache DIR

Checks scripts/leader-cv46.py's rewrite of LEADER on real prints, in two steps because the two
runtimes want different numpy builds:

  reference  (a Python with onnxruntime + numpy): runs the ORIGINAL model (NHWC, dynamic shape)
             on every image, padded as the daemon pads it (to multiples of 32), and stores its
             output maps in DIR;
  compare    (Debian's python3 with python3-opencv, OpenCV 4.6 = the daemon's): runs REWRITTEN
             through cv2.dnn on the same inputs and compares, per image: probability, type and
             blurred probability (max |difference|), the direction where the probability is ≥ 0.1
             (max angular difference), and the minutiae after non-maximum suppression at 0.55
             (the same set?).

IMAGES default to every shared FVC print (../shared/data/fingers, 320 images; 500 ppi except
FVC2002 DB2_B, resampled from 569 ppi as the daemon does).
"""
import glob
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.realpath(os.path.join(HERE, "..", "..", "shared", "data", "fingers"))


def images():
    out = []
    for path in sorted(glob.glob(os.path.join(SHARED, "fvc2002_db2_b", "images", "*.tif"))):
        out.append((path, 569))
    for sub in ("fvc2002/DB1_B", "fvc2002/DB4_B", "fvc2004/DB1_B"):
        for path in sorted(glob.glob(os.path.join(SHARED, "fvc_b_sets", sub, "*.tif"))):
            out.append((path, 500))
    return out


def load(path, ppi):
    from PIL import Image  # Pillow in the reference step; cv2 in the compare step
    img = Image.open(path).convert("L")
    if ppi != 500:
        w, h = img.size
        img = img.resize((round(w * 500 / ppi), round(h * 500 / ppi)), Image.BILINEAR)
    return np.asarray(img, dtype=np.float32)


def padded(grey):
    h, w = grey.shape
    H, W = (h + 31) // 32 * 32, (w + 31) // 32 * 32
    x = np.full((H, W), float(np.median(grey)), np.float32)
    x[(H - h) // 2:(H - h) // 2 + h, (W - w) // 2:(W - w) // 2 + w] = grey
    return x


def key(path):
    return path.replace(SHARED + os.sep, "").replace(os.sep, "_")


def reference(original, cache, items):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    session = ort.InferenceSession(original, so, providers=["CPUExecutionProvider"])
    os.makedirs(cache, exist_ok=True)
    for k, (path, ppi) in enumerate(items):
        x = padded(load(path, ppi))
        out = session.run(None, {"input": x[None, :, :, None]})[0][0]
        np.savez_compressed(os.path.join(cache, key(path) + ".npz"), x=x, out=out.astype(np.float32))
        print(f"\r{k + 1}/{len(items)}", end="", flush=True)
    print()


def nms(blurred, threshold=0.55):
    import cv2
    peaks = cv2.dilate(blurred, np.ones((7, 7), np.uint8))
    return set(zip(*np.nonzero((blurred == peaks) & (blurred >= threshold))))


def compare(rewritten, cache, items):
    import cv2
    cv2.setNumThreads(1)
    net = cv2.dnn.readNetFromONNX(rewritten)
    worst = {"prob": 0.0, "type": 0.0, "direction": 0.0}
    differing = 0
    total = 0
    for path, _ in items:
        data = np.load(os.path.join(cache, key(path) + ".npz"))
        x, ref = data["x"], data["out"]
        net.setInput(x[None, None])
        got = net.forward()[0]
        worst["prob"] = max(worst["prob"], float(np.abs(got[0] - ref[..., 0]).max()))
        worst["type"] = max(worst["type"], float(np.abs(got[3] - ref[..., 2]).max()))
        sure = ref[..., 0] >= 0.1
        d = np.angle(np.exp(1j * (np.arctan2(got[2], got[1]) - ref[..., 1])))
        worst["direction"] = max(worst["direction"], float(np.abs(d[sure]).max()) if sure.any() else 0.0)
        # The original's channel 3 is its own NMS; ours is done on the blurred map by the caller.
        a = set(zip(*np.nonzero(ref[..., 3] >= 0.55)))
        b = nms(got[4])
        total += len(a)
        differing += len(a ^ b)
    print(f"{len(items)} prints: max |Δ probability| {worst['prob']:.2e}, max |Δ type| {worst['type']:.2e}, "
          f"max |Δ direction| {worst['direction']:.2e} rad (probability ≥ 0.1); minutiae at 0.55: {total} from the "
          f"original, {differing} differ")
    return 0 if worst["prob"] < 1e-3 and worst["type"] < 1e-3 and worst["direction"] < 1e-2 and differing == 0 else 1


def main():
    args = sys.argv[1:]
    if "--cache" not in args or len(args) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    at = args.index("--cache")
    cache = args[at + 1]
    args = args[:at] + args[at + 2:]
    step, original, rewritten = args[0], args[1], args[2]
    items = [(p, 569 if "db2_b" in p else 500) for p in args[3:]] or images()
    if step == "reference":
        reference(original, cache, items)
        return 0
    if step == "compare":
        return compare(rewritten, cache, items)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
