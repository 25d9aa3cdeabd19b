#!/usr/bin/env bash
# package.sh [--out DIR] [--version V] [--no-build] [--no-lintian] [--check-conf]
#
# Builds the Debian 12 packages from this checkout, with dpkg-dev's own tools (no debian/rules):
#   biometricd_<version>_amd64.deb        daemon, authctl, PAM module, password helper, units,
#                                         udev rule, config, pam-auth-update profile, man pages,
#                                         shell completions
#   biometricd-models_<version>_all.deb   the face and hand models with their SHA256SUMS
# <version> is biometricdVersion in Sources/Daemon/Daemon.swift; debian/changelog must have an
# entry for it. The binaries are release builds linked with --static-swift-stdlib (no Swift
# toolchain on the target); Depends come from dpkg-shlibdeps. Fails when a key of
# DaemonConfiguration.keys is missing from debian/biometricd.conf (or the file lists an unknown
# one), when a man page renders with warnings, or when lintian reports an error.
#   --out DIR     where the .debs go (default: the repository root)
#   --version V   package version override, e.g. a test build (adds a changelog entry)
#   --no-build    reuse the binaries of the last run (.build/package/bin)
#   --no-lintian  skip lintian
#   --check-conf  only check that the conffile and biometricd.conf(5) name every key (1 s)
# Installs its own missing build tools (dpkg-dev, lintian, man-db, ...) with apt.
# Check the result in a Debian 12 chroot: scripts/check-package.sh (Docs/install.md).
set -euo pipefail
umask 022

usage() { sed -n '2,20s/^# \{0,1\}//p' "$0"; }

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
cd "$REPO"

OUT=$REPO
VERSION_OVERRIDE=
BUILD=1
LINTIAN=1
CHECK_CONF_ONLY=0
while [ $# -gt 0 ]; do
    case $1 in
        --out) OUT=${2:?--out needs a folder}; shift ;;
        --version) VERSION_OVERRIDE=${2:?--version needs a version}; shift ;;
        --no-build) BUILD=0 ;;
        --no-lintian) LINTIAN=0 ;;
        --check-conf) CHECK_CONF_ONLY=1 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "package: unknown option: $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

log() { echo "==> $*"; }
die() { echo "package: error: $*" >&2; exit 1; }
T0=$(date +%s)

# --- the conffile names every configuration key -------------------------------------------
# DaemonConfiguration.keys (Sources/Daemon/Configuration.swift) against the "#key = ..." lines.
CONF=debian/biometricd.conf
code_keys=$(sed -n '/static let keys = \[/,/\]/p' Sources/Daemon/Configuration.swift | grep -o '"[a-z0-9_]*"' | tr -d '"' | sort -u)
[ "$(echo "$code_keys" | wc -l)" -ge 10 ] || die "could not read DaemonConfiguration.keys from Sources/Daemon/Configuration.swift"
conf_keys=$(sed -n 's/^#\([a-z0-9_]*\) = .*/\1/p' "$CONF" | sort -u)
absent=$(comm -23 <(echo "$code_keys") <(echo "$conf_keys"))
unknown=$(comm -13 <(echo "$code_keys") <(echo "$conf_keys"))
[ -z "$absent" ] || die "$CONF lacks these keys of DaemonConfiguration.keys (add each, commented, with its default): $(echo $absent)"
[ -z "$unknown" ] || die "$CONF lists keys DaemonConfiguration.keys does not know: $(echo $unknown)"
for k in $code_keys; do
    grep -q "^\.B $k\$" Docs/biometricd.conf.5 || die "Docs/biometricd.conf.5 does not describe the key $k (a '.B $k' entry)"
done
log "$CONF and Docs/biometricd.conf.5: all $(echo "$code_keys" | wc -l) configuration keys present"
[ $CHECK_CONF_ONLY -eq 0 ] || exit 0

# --- build tools (Debian 12 packages) ---------------------------------------------------
TOOLS=(dpkg-dev lintian man-db groff-base binutils gcc libc6-dev libpam0g-dev libsystemd-dev gzip python3)
missing=()
for p in "${TOOLS[@]}"; do
    [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    AS_ROOT=()
    [ "$(id -u)" -eq 0 ] || AS_ROOT=(sudo)
    log "installing build tools: ${missing[*]}"
    "${AS_ROOT[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" \
        || { "${AS_ROOT[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update \
             && "${AS_ROOT[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"; }
fi

# --- version ----------------------------------------------------------------------------
UPSTREAM=$(sed -n 's/^public let biometricdVersion = "\([^"]*\)".*/\1/p' Sources/Daemon/Daemon.swift)
[ -n "$UPSTREAM" ] || die "biometricdVersion not found in Sources/Daemon/Daemon.swift"
CHANGELOG_VERSION=$(dpkg-parsechangelog -l debian/changelog -S Version)
VERSION=${VERSION_OVERRIDE:-$UPSTREAM}
[ -n "$VERSION_OVERRIDE" ] || [ "$CHANGELOG_VERSION" = "$UPSTREAM" ] \
    || die "debian/changelog's newest entry is $CHANGELOG_VERSION, biometricdVersion is $UPSTREAM: add an entry (dch -v $UPSTREAM)"
log "biometricd $VERSION"

WORK=$REPO/.build/package
rm -rf "$WORK/root" "$WORK/control" && mkdir -p "$WORK/root" "$WORK/control" "$WORK/bin"
CHANGELOG=$WORK/control/changelog
if [ -n "$VERSION_OVERRIDE" ] && [ "$VERSION_OVERRIDE" != "$CHANGELOG_VERSION" ]; then
    { printf 'biometricd (%s) unstable; urgency=medium\n\n  * Build of %s with version %s (scripts/package.sh --version).\n\n -- %s  %s\n\n' \
        "$VERSION" "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" "$VERSION" \
        "$(dpkg-parsechangelog -l debian/changelog -S Maintainer)" "$(date -R)"
      cat debian/changelog; } > "$CHANGELOG"
else
    cp debian/changelog "$CHANGELOG"
fi
# Reproducible: dpkg-deb clamps every timestamp to the changelog's.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(dpkg-parsechangelog -l "$CHANGELOG" -S Timestamp)}

# --- binaries -----------------------------------------------------------------------------
# lock_held_by_ancestor FILE: an flock on FILE is held by this process or one of its parents.
lock_held_by_ancestor() {
    local inode holders p
    inode=$(stat -c %i "$1" 2>/dev/null) || return 1
    holders=$(awk -v ino=":$inode" '$2 == "FLOCK" && substr($6, length($6) - length(ino) + 1) == ino { print $5 }' /proc/locks)
    [ -n "$holders" ] || return 1
    p=$$
    while [ -n "$p" ] && [ "$p" -gt 1 ]; do
        for h in $holders; do [ "$h" = "$p" ] && return 0; done
        p=$(awk '/^PPid:/ { print $2 }' "/proc/$p/status" 2>/dev/null)
    done
    return 1
}
BIN=$WORK/bin
if [ $BUILD -eq 1 ]; then
    # One Swift build at a time on this machine (the lock), and the static binaries are copied
    # while it is held: .build/release is shared with the non-static build of the tests.
    # Link flags only (switching them relinks, nothing is recompiled): no $ORIGIN run path (the
    # Swift runtime is inside), and BIND_NOW with the RELRO the linker already sets.
    FLAGS=(-c release --static-swift-stdlib --disable-local-rpath -Xlinker -z -Xlinker now)
    log "swift build ${FLAGS[*]} (biometricd, authctl; log: $WORK/build.log)"
    # Run as `flock /tmp/biometricd-swift-build.lock scripts/package.sh`, the lock is already ours:
    # a second flock on it (a new open file description) would wait for ever.
    LOCK=(flock /tmp/biometricd-swift-build.lock)
    if lock_held_by_ancestor /tmp/biometricd-swift-build.lock; then LOCK=(); fi
    "${LOCK[@]}" bash -c '
        set -e
        out=$1; shift
        swift build "$@" --product biometricd
        swift build "$@" --product authctl
        dir=$(swift build "$@" --show-bin-path)
        cp "$dir/biometricd" "$dir/authctl" "$out/"' _ "$BIN" "${FLAGS[@]}" > "$WORK/build.log" 2>&1 \
        || { tail -40 "$WORK/build.log" >&2; die "swift build failed (log: $WORK/build.log)"; }
    "$HERE/build-pam.sh" "$BIN/pam_biometricd.so" >/dev/null
    "$HERE/build-password-helper.sh" "$BIN/biometricd-password" >/dev/null
fi
for f in biometricd authctl pam_biometricd.so biometricd-password; do [ -f "$BIN/$f" ] || die "$BIN/$f missing (run without --no-build)"; done
for f in biometricd authctl; do
    if readelf -d "$BIN/$f" | grep -q 'NEEDED.*libswift\|NEEDED.*libFoundation\|NEEDED.*libdispatch'; then
        die "$f needs the Swift runtime libraries: not linked with --static-swift-stdlib"
    fi
    ! readelf -d "$BIN/$f" | grep -q 'RPATH\|RUNPATH' || die "$f has a run path (built without --disable-local-rpath?)"
done
# Every value the conffile shows, uncommented (the test hooks aside), is accepted by the daemon.
T=$WORK/conf-check
rm -rf "$T" && mkdir -p "$T/models"
grep -E '^#[a-z0-9_]+ = ' "$CONF" | grep -v '^#test_' | sed 's/^#//' > "$T/all.conf"
"$BIN/biometricd" --config "$T/all.conf" --socket "$T/s" --state-dir "$T/state" --models "$T/models" \
    --set modalities=finger > "$T/log" 2>&1 &
pid=$!
for _ in $(seq 100); do [ -S "$T/s" ] || ! kill -0 $pid 2>/dev/null || sleep 0.1; done
if [ -S "$T/s" ]; then kill $pid; wait $pid 2>/dev/null || true; else
    kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true
    die "the daemon refuses the values of $CONF uncommented:
$(tail -5 "$T/log")"
fi
log "$CONF: the daemon accepts every value it shows"
AUTHCTL_VERSION=$("$BIN/authctl" --version)
[ "$AUTHCTL_VERSION" = "$UPSTREAM" ] || die "authctl --version says $AUTHCTL_VERSION, biometricdVersion is $UPSTREAM (Sources/authctl/AuthCtl.swift)"

# --- man pages render without warnings ----------------------------------------------------
MANPAGES=(Docs/authctl.1 Docs/biometricd.8 Docs/biometricd.conf.5 Docs/pam_biometricd.8)
for m in "${MANPAGES[@]}"; do
    warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$m" 2>&1 >/dev/null) \
        || die "$m: man failed: $warnings"
    [ -z "$warnings" ] || die "$m renders with warnings:
$warnings"
done
log "man pages render cleanly: ${MANPAGES[*]}"
# The pages name every command and option the executables have (ArgumentParser's help dump).
manual_covers() {  # EXECUTABLE PAGE
    "$1" --experimental-dump-help | python3 -c '
import json, re, subprocess, sys
page = sys.argv[1]
text = subprocess.run(["man", "-l", "-Tutf8", page], capture_output=True, text=True,
                      env={"MANWIDTH": "250", "LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin"}).stdout
text = " ".join(re.sub(r".\x08", "", text).replace("[", " ").replace("]", " ").split())
missing = []
def walk(cmd, path):
    subs = [c for c in cmd.get("subcommands", []) if c["commandName"] != "help"]
    if path and " ".join(path) not in text:
        missing.append(" ".join(path))
    for arg in cmd.get("arguments", []):
        for name in arg.get("names", []):
            if arg.get("shouldDisplay") and name["kind"] == "long" and "--" + name["name"] not in text:
                missing.append(" ".join(path + ["--" + name["name"]]))
    for c in subs:
        walk(c, path + [c["commandName"]])
walk(json.load(sys.stdin)["command"], [])
if missing:
    sys.exit(page + " does not name: " + ", ".join(sorted(set(missing))))
' "$2"
}
manual_covers "$BIN/authctl" Docs/authctl.1 || die "Docs/authctl.1 lags behind authctl"
manual_covers "$BIN/biometricd" Docs/biometricd.8 || die "Docs/biometricd.8 lags behind biometricd"
log "authctl(1) and biometricd(8) name every command and option"

# --- biometricd ---------------------------------------------------------------------------
ROOT=$WORK/root/biometricd
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
[ "$(grep '^ExecStart=' systemd/biometricd.service)" = "ExecStart=/usr/sbin/biometricd" ] \
    || die "systemd/biometricd.service: ExecStart must be /usr/sbin/biometricd (where the package installs it)"

install -D -m 0755 "$BIN/biometricd" "$ROOT/usr/sbin/biometricd"
install -D -m 0755 "$BIN/authctl" "$ROOT/usr/bin/authctl"
install -D -m 0644 "$BIN/pam_biometricd.so" "$ROOT/usr/lib/$MULTIARCH/security/pam_biometricd.so"
install -D -m 0755 "$BIN/biometricd-password" "$ROOT/usr/libexec/biometricd/biometricd-password"
# As dh_strip: executables lose their symbols, the PAM module what linking does not need.
strip --remove-section=.comment --remove-section=.note "$ROOT/usr/sbin/biometricd" "$ROOT/usr/bin/authctl" \
    "$ROOT/usr/libexec/biometricd/biometricd-password"
strip --remove-section=.comment --remove-section=.note --strip-unneeded "$ROOT/usr/lib/$MULTIARCH/security/pam_biometricd.so"
"$ROOT/usr/bin/authctl" --help >/dev/null || die "the stripped authctl does not run"
"$ROOT/usr/sbin/biometricd" --help >/dev/null || die "the stripped biometricd does not run"

install -D -m 0644 systemd/biometricd.service "$ROOT/usr/lib/systemd/system/biometricd.service"
install -D -m 0644 systemd/biometricd.socket "$ROOT/usr/lib/systemd/system/biometricd.socket"
install -D -m 0644 systemd/biometricd-key.service "$ROOT/usr/lib/systemd/system/biometricd-key.service"
install -D -m 0755 systemd/biometricd-key "$ROOT/usr/libexec/biometricd/biometricd-key"
grep -qx 'ExecStart=/usr/libexec/biometricd/biometricd-key' systemd/biometricd-key.service \
    || die "systemd/biometricd-key.service: ExecStart must be /usr/libexec/biometricd/biometricd-key"
install -D -m 0644 systemd/biometricd-password.service "$ROOT/usr/lib/systemd/system/biometricd-password.service"
install -D -m 0644 systemd/biometricd-password.socket "$ROOT/usr/lib/systemd/system/biometricd-password.socket"
grep -qx 'ExecStart=/usr/libexec/biometricd/biometricd-password.*' systemd/biometricd-password.service \
    || die "systemd/biometricd-password.service: ExecStart must be /usr/libexec/biometricd/biometricd-password"
install -D -m 0644 systemd/biometricd.sysusers "$ROOT/usr/lib/sysusers.d/biometricd.conf"
install -D -m 0644 systemd/biometricd.tmpfiles "$ROOT/usr/lib/tmpfiles.d/biometricd.conf"
install -D -m 0644 udev/70-biometricd.rules "$ROOT/usr/lib/udev/rules.d/70-biometricd.rules"
# The FIDO2 authenticator (fido = yes): /dev/uhid for the daemon, its hidraw node for the seat's user.
install -D -m 0644 udev/71-biometricd-fido.rules "$ROOT/usr/lib/udev/rules.d/71-biometricd-fido.rules"
install -D -m 0644 systemd/biometricd-fido.modules-load "$ROOT/usr/lib/modules-load.d/biometricd.conf"
# The IR emitter table (Docs/ir-emitters.md); administrators add entries in /etc/biometricd/ir-emitters.d.
install -D -m 0644 share/ir-emitters.conf "$ROOT/usr/share/biometricd/ir-emitters.conf"
install -D -m 0644 "$CONF" "$ROOT/etc/biometricd/biometricd.conf"
install -D -m 0644 debian/pam-configs-biometricd "$ROOT/usr/share/pam-configs/biometricd"
# Inert until the primary line runs and fails in the same stack: clears the biometric lockout
# after a password typed in that stack succeeded (Docs/pam.md "Recovery by password").
install -D -m 0644 debian/pam-configs-biometricd-recovery "$ROOT/usr/share/pam-configs/biometricd-recovery"
install -D -m 0644 Sources/PAM/biometricd-enroll.pam "$ROOT/etc/pam.d/biometricd-enroll"
# Keeps the keyring's sealed password in step with password changes (common-password's
# Additional block, enabled by default, inert for users who never ran authctl keyring enable).
install -D -m 0644 debian/pam-configs-biometricd-keyring "$ROOT/usr/share/pam-configs/biometricd-keyring"
# Face-only services run beside a password service (Docs/pam.md "Per service"): vendor files in
# /usr/lib/pam.d, which an /etc/pam.d file of the same name overrides.
for f in share/pam.d/*; do install -D -m 0644 "$f" "$ROOT/usr/lib/pam.d/$(basename "$f")"; done

for m in "${MANPAGES[@]}"; do
    section=${m##*.}
    install -D -m 0644 "$m" "$ROOT/usr/share/man/man$section/$(basename "$m")"
    gzip -9nf "$ROOT/usr/share/man/man$section/$(basename "$m")"
done
install -d "$ROOT/usr/share/bash-completion/completions" "$ROOT/usr/share/zsh/vendor-completions" \
    "$ROOT/usr/share/fish/vendor_completions.d"
# (bash-completion sources the file: no "#!" line.)
"$ROOT/usr/bin/authctl" --generate-completion-script bash | sed '1{/^#!/d}' > "$ROOT/usr/share/bash-completion/completions/authctl"
"$ROOT/usr/bin/authctl" --generate-completion-script zsh > "$ROOT/usr/share/zsh/vendor-completions/_authctl"
"$ROOT/usr/bin/authctl" --generate-completion-script fish > "$ROOT/usr/share/fish/vendor_completions.d/authctl.fish"

install -D -m 0644 debian/copyright "$ROOT/usr/share/doc/biometricd/copyright"
# Named by the units' Documentation= (file:/usr/share/doc/biometricd/auth.md), so not compressed.
install -m 0644 Docs/auth.md Docs/pam.md "$ROOT/usr/share/doc/biometricd/"
gzip -9nc "$CHANGELOG" > "$ROOT/usr/share/doc/biometricd/changelog.gz"

# --- biometricd-models --------------------------------------------------------------------
MROOT=$WORK/root/biometricd-models
# Not shape_predictor_68_face_landmarks.dat: the daemon runs the PFLD network instead (2.9 MB for
# 95 MiB of RSS), and dlib's file (100 MB) was trained on iBUG 300-W, whose licence excludes
# commercial use (Docs/face.md "Landmarks").
MODELS=(dlib_face_recognition_resnet_model_v1.dat landmarks_68_pfld.onnx
        shape_predictor_5_face_landmarks.dat mmod_human_face_detector.dat face_detection_yunet_2023mar.onnx
        MiniFASNetV2.onnx MiniFASNetV1SE.onnx mobilefacenet_arcface_cv46.onnx leader_cv46.onnx
        palm_detection_lite.onnx hand_landmark_lite_cv46.onnx)
for m in "${MODELS[@]}"; do
    [ -f "models/$m" ] && continue
    log "models/$m missing: scripts/fetch-models.sh ./models"
    "$HERE/fetch-models.sh" "$REPO/models"
    break
done
MDIR=$MROOT/usr/share/biometricd/models
install -d "$MDIR"
for m in "${MODELS[@]}"; do
    [ -f "models/$m" ] || die "models/$m missing (YuNet, PFLD, MiniFASNet, the recognizer and the hand models come from ../shared/models: scripts/fetch-models.sh)"
    install -m 0644 "models/$m" "$MDIR/$m"
    grep -E "^[0-9a-f]{64}  \*?$m\$" scripts/models.sha256 | sed 's/  \*/  /' >> "$MDIR/SHA256SUMS"
done
(cd "$MDIR" && sha256sum --quiet -c SHA256SUMS) || die "a model does not match scripts/models.sha256"
[ "$(wc -l < "$MDIR/SHA256SUMS")" -eq ${#MODELS[@]} ] || die "scripts/models.sha256 lacks a model"
install -D -m 0644 debian/copyright "$MROOT/usr/share/doc/biometricd-models/copyright"
gzip -9nc "$CHANGELOG" > "$MROOT/usr/share/doc/biometricd-models/changelog.gz"

# --- control files ------------------------------------------------------------------------
install -d -m 0755 "$ROOT/DEBIAN" "$MROOT/DEBIAN"
# dpkg-shlibdeps: the libraries the ELF files need, as versioned Debian packages.
dpkg-shlibdeps -T"$WORK/control/biometricd.substvars" \
    -e"$ROOT/usr/sbin/biometricd" -e"$ROOT/usr/bin/authctl" -e"$ROOT/usr/lib/$MULTIARCH/security/pam_biometricd.so" \
    -e"$ROOT/usr/libexec/biometricd/biometricd-password" \
    2> >(sed 's/^/dpkg-shlibdeps: /' >&2)
echo "misc:Depends=" >> "$WORK/control/biometricd.substvars"
echo "misc:Depends=" > "$WORK/control/biometricd-models.substvars"

install -m 0755 debian/biometricd.postinst "$ROOT/DEBIAN/postinst"
install -m 0755 debian/biometricd.prerm "$ROOT/DEBIAN/prerm"
install -m 0755 debian/biometricd.postrm "$ROOT/DEBIAN/postrm"
printf '%s\n' /etc/biometricd/biometricd.conf /etc/pam.d/biometricd-enroll > "$ROOT/DEBIAN/conffiles"
chmod 0644 "$ROOT/DEBIAN/conffiles"

for pkg in biometricd biometricd-models; do
    dir=$WORK/root/$pkg
    (cd "$dir" && find . -path ./DEBIAN -prune -o -path ./etc -prune -o -type f -print0 | sort -z \
        | xargs -0 md5sum | sed 's|  \./|  |' > DEBIAN/md5sums)
    chmod 0644 "$dir/DEBIAN/md5sums"
    dpkg-gencontrol -p"$pkg" -cdebian/control -l"$CHANGELOG" -T"$WORK/control/$pkg.substvars" \
        -f"$WORK/control/files" -P"$dir" -v"$VERSION"
done

# --- .debs --------------------------------------------------------------------------------
DEB=$OUT/biometricd_${VERSION}_amd64.deb
MDEB=$OUT/biometricd-models_${VERSION}_all.deb
dpkg-deb --root-owner-group -Zxz --build "$ROOT" "$DEB" >/dev/null
# The models change rarely and take most of the compression time: the last models .deb is
# reused while its contents and control data are the same.
MKEY=$({ cat "$MROOT/DEBIAN/control" "$MROOT/DEBIAN/md5sums"; echo "$SOURCE_DATE_EPOCH"; } | sha256sum | cut -c1-16)
if [ -f "$WORK/models-$MKEY.deb" ]; then
    cp "$WORK/models-$MKEY.deb" "$MDEB"
else
    rm -f "$WORK"/models-*.deb
    dpkg-deb --root-owner-group -Zxz --build "$MROOT" "$MDEB" >/dev/null
    cp "$MDEB" "$WORK/models-$MKEY.deb"
fi
for d in "$DEB" "$MDEB"; do
    log "$(basename "$d"): $(du -k "$d" | cut -f1) KiB, installed $(dpkg-deb -f "$d" Installed-Size) KiB"
done
log "Depends: $(dpkg-deb -f "$DEB" Depends)"

# --- lintian ------------------------------------------------------------------------------
if [ $LINTIAN -eq 1 ]; then
    log "lintian"
    # Warnings are listed (the kept ones and why: Docs/install.md, "The Debian package"); errors fail.
    lintian --fail-on error --display-info --tag-display-limit 0 "$DEB" "$MDEB" || die "lintian reports errors"
fi
log "done in $(( $(date +%s) - T0 )) s: $DEB $MDEB"
