#!/usr/bin/env bash
# The FIDO2 authenticator against clients nobody here wrote, on a real kernel's /dev/uhid
# (issue 24, Docs/fido.md "VM test"): Debian 12's own 6.1 kernel under qemu (TCG, no KVM needed)
# boots a busybox initramfs that loads uhid/hid/hid-generic and chroots into a Debian 12 root made
# by mmdebstrap with fido2-tools (libfido2 1.12), openssh-client 9.2, libpam-u2f + pamu2fcfg,
# pamtester, udev and python3 (+ PyPI fido2 2.x copied from the host: the guest has no network).
# Inside, Tests/fido/vm-guest/clients.sh runs fido-test-authenticator --uhid and the clients.
#
#   Tests/fido/vm.sh          # as root; run it under the build lock on the shared build host:
#                             # flock /tmp/biometricd-swift-build.lock Tests/fido/vm.sh
#   Tests/fido/vm.sh --daemon # biometricd itself (fido = yes, fido_user = tran) with UV by a live
#                             # face: tran's clip on a replay camera, then another person's photo
# Environment:
#   FIDO_VM_AUTHENTICATOR  the fido-test-authenticator binary (default .build/release, else .build/debug)
#   FIDO_VM_DAEMON         biometricd for --daemon (default: the newer of .build/release and .build/debug)
#   FIDO_VM_SHARED         the shared data folder (default ../shared next to the repository)
#   FIDO_VM_CACHE          cache and work folder (default .build/fido-vm; git-ignored)
#   FIDO_VM_CBOR_COUNT     malformed CBOR requests sent over hidraw by the python tests (default 5000)
#   FIDO_VM_TIMEOUT        limit for the VM in seconds (default 900, 3600 with --daemon: ~2 min per face check under TCG)
#   FIDO_VM_VERBOSE=1      show the VM console (always in $FIDO_VM_CACHE/console.log)
# Prints one line per check (PASS|FAIL name seconds detail) and `N passed, M failed`; exit 0 only
# when nothing failed.
set -euo pipefail
umask 022
SCRIPT_VERSION=1          # bump when the root recipe below changes (part of the cache key)

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
REPO=$(cd "$HERE/../.." && pwd -P)
CACHE=${FIDO_VM_CACHE:-$REPO/.build/fido-vm}
MODE=authenticator
[ "${1:-}" = --daemon ] && MODE=daemon
TIMEOUT=${FIDO_VM_TIMEOUT:-$([ $MODE = daemon ] && echo 3600 || echo 900)}
SHARED=${FIDO_VM_SHARED:-$REPO/../shared}
T0=$(date +%s.%N)
say() { echo "fido-vm: $*" >&2; }
die() { say "error: $*"; echo "0 passed, 1 failed"; exit 1; }
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

[ "$(id -u)" = 0 ] || die "run as root (mmdebstrap, a root tree shared with the VM)"
[ "$(uname -m)" = x86_64 ] || die "x86_64 only"
mkdir -p "$CACHE"; CACHE=$(cd "$CACHE" && pwd -P)
AUTH=${FIDO_VM_AUTHENTICATOR:-}
if [ -z "$AUTH" ]; then
    for b in "$REPO/.build/release/fido-test-authenticator" "$REPO/.build/debug/fido-test-authenticator"; do
        [ -x "$b" ] && { AUTH=$b; break; }
    done
fi
[ -n "$AUTH" ] && [ -x "$AUTH" ] || die "no fido-test-authenticator: flock /tmp/biometricd-swift-build.lock swift build -c release --product fido-test-authenticator"
PYFIDO=$(python3 -c 'import fido2, os; print(os.path.dirname(fido2.__file__))' 2>/dev/null) \
    && python3 -c 'import importlib.metadata as m, sys; sys.exit(0 if int(m.version("fido2").split(".")[0]) >= 2 else 1)' \
    || die "needs PyPI fido2 2.x on the host (scripts/setup.sh installs it); its package is copied into the guest"
PYFIDO_VERSION=$(python3 -c 'import importlib.metadata as m; print(m.version("fido2"))')

need=()
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v strings >/dev/null || need+=(binutils)
if [ ${#need[@]} -gt 0 ]; then
    say "installing ${need[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}" >&2 \
        || { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}" >&2; } \
        || die "cannot install ${need[*]}"
fi

# ---- 1. the Debian 12 root with the clients (cached tar) ---------------------------------------
PKGS=(fido2-tools openssh-client libpam-u2f pamu2fcfg pamtester python3 python3-cryptography udev kmod acl procps)
KEY=$(printf '%s\n' "$SCRIPT_VERSION" "${PKGS[*]}" | sha256sum | cut -c1-16)
BASE=$CACHE/fido-root-$KEY.tar
if [ ! -s "$BASE" ]; then
    sources=$("$REPO/scripts/bookworm-sources.sh" "$CACHE" fido) || die "no bookworm entry in /etc/apt/sources.list or /etc/apt/sources.list.d"
    say "mmdebstrap: Debian 12 minbase + ${PKGS[*]} -> $BASE"
    rm -f "$BASE.part"
    # Downloads reuse the system test's apt cache when there is one.
    ARCH=$REPO/.build/system/apt-archives
    mmdebstrap --variant=minbase --format=tar --quiet --include="$(echo "${PKGS[*]}" | tr ' ' ',')" \
        --skip=download/empty --skip=essential/unlink \
        --setup-hook="mkdir -p \"\$1/var/cache/apt/archives\" && cp -l $ARCH/*.deb \"\$1/var/cache/apt/archives/\" 2>/dev/null || true" \
        --customize-hook="rm -f \"\$1\"/var/cache/apt/archives/*.deb" \
        bookworm "$BASE.part" "$sources" >&2 || die "mmdebstrap failed"
    mv "$BASE.part" "$BASE"
    for old in "$CACHE"/fido-root-*.tar; do [ "$old" = "$BASE" ] || rm -f "$old"; done
fi

# ---- 2. this run's root: the tar, the authenticator and its Swift runtime, python-fido2, the rule
ROOT=$CACHE/root
rm -rf --one-file-system "$ROOT"; mkdir -p "$ROOT"
tar -C "$ROOT" -xf "$BASE"
V=$ROOT/vmtest; mkdir -p "$V/bin" "$V/logs"
cp "$AUTH" "$V/bin/fido-test-authenticator"
# The libraries a binary links that the guest lacks (the Swift runtime of a non-static build;
# OpenCV, dlib and the rest for biometricd): copied to the same paths, so its RUNPATH and the
# loader find them; what the guest's Debian 12 already has (libc, libstdc++, ...) stays its own.
copy_libs() {
    ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | while read -r lib; do
        [ -e "$ROOT$lib" ] && continue
        install -D -m 0644 "$(readlink -f "$lib")" "$ROOT$lib"
    done
}
copy_libs "$AUTH"
probe=$(chroot "$ROOT" /vmtest/bin/fido-test-authenticator 2>&1 || true)
[[ $probe == *--control* ]] || die "the authenticator does not run in the guest root (missing libraries?): $probe"
PYDIR=$(ls -d "$ROOT"/usr/lib/python3/dist-packages)
cp -r "$PYFIDO" "$PYDIR/fido2"
find "$PYDIR/fido2" -name __pycache__ -prune -exec rm -rf {} +
install -D -m 0644 "$REPO/udev/71-biometricd-fido.rules" "$ROOT/etc/udev/rules.d/71-biometricd-fido.rules"
cp "$HERE/vm-guest/clients.sh" "$HERE/vm-guest/daemon.sh" "$HERE/test_fido.py" "$REPO/Tests/hil/guest/rpc.py" "$V/"
if [ $MODE = daemon ]; then
    DAEMON=${FIDO_VM_DAEMON:-}
    if [ -z "$DAEMON" ]; then
        for b in "$REPO/.build/release/biometricd" "$REPO/.build/debug/biometricd"; do
            [ -x "$b" ] && { [ -z "$DAEMON" ] || [ "$b" -nt "$DAEMON" ]; } && DAEMON=$b
        done
    fi
    [ -n "$DAEMON" ] && [ -x "$DAEMON" ] || die "no biometricd: flock /tmp/biometricd-swift-build.lock swift build --product biometricd"
    LIVE=$SHARED/data/video/tran_live/video.mp4 STRANGER=$SHARED/data/faces/lfw/images/Tony_Blair/Tony_Blair_0018.jpg
    [ -f "$LIVE" ] && [ -f "$STRANGER" ] || die "face data not found under $SHARED/data (set FIDO_VM_SHARED)"
    [ -f "$REPO/models/dlib_face_recognition_resnet_model_v1.dat" ] && [ -f "$REPO/models/MiniFASNetV2.onnx" ] || die "models missing in $REPO/models: run scripts/setup.sh"
    cp "$DAEMON" "$V/bin/biometricd"
    copy_libs "$DAEMON"
    missing=$(chroot "$ROOT" ldd /vmtest/bin/biometricd 2>&1 | grep 'not found' || true)
    [ -z "$missing" ] || die "biometricd lacks libraries in the guest root: $missing"
    cp -r "$REPO/models" "$V/models"
    mkdir -p "$V/media/stranger"
    cp "$LIVE" "$V/media/tran_live.mp4"; cp "$STRANGER" "$V/media/stranger/"
    say "daemon mode: $DAEMON"
fi
cat > "$V/env.sh" <<ENV
CBOR_COUNT='${FIDO_VM_CBOR_COUNT:-5000}'
MODE='$MODE'
ENV
echo fido-vm > "$ROOT/etc/hostname"

# ---- 3. kernel, busybox (Debian packages, downloaded once), initramfs ---------------------------
mkdir -p "$CACHE/debs"
KPKG=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/.*Depends: //p' | head -1)
[ -n "$KPKG" ] || { apt-get update >&2; KPKG=$(apt-cache depends linux-image-amd64 | sed -n 's/.*Depends: //p' | head -1); }
[ -n "$KPKG" ] || die "cannot resolve the kernel package (linux-image-amd64)"
for p in "$KPKG" busybox-static; do
    ls "$CACHE/debs/${p}"_*.deb >/dev/null 2>&1 && continue
    # The HIL's download when it has one.
    if ls "$REPO/.build/hil/debs/${p}"_*.deb >/dev/null 2>&1; then cp "$REPO/.build/hil/debs/${p}"_*.deb "$CACHE/debs/"; continue; fi
    say "downloading $p"
    (cd "$CACHE/debs" && apt-get -o APT::Sandbox::User=root download "$p" >&2) \
        || (apt-get update >&2 && cd "$CACHE/debs" && apt-get -o APT::Sandbox::User=root download "$p" >&2) \
        || die "cannot download $p"
done
extract() { [ -d "$CACHE/$2" ] || { dpkg-deb -x "$(ls "$CACHE"/debs/"$1"_*.deb | tail -1)" "$CACHE/$2.tmp" && mv "$CACHE/$2.tmp" "$CACHE/$2"; }; }
rm -rf "$CACHE"/*.tmp
extract "$KPKG" "kernel-$KPKG"; extract busybox-static busybox
KDIR=$CACHE/kernel-$KPKG
KVER=$(ls "$KDIR/lib/modules" | head -1)
INITRD=$CACHE/initrd-$KVER.cpio.gz
if [ ! -f "$INITRD" ] || [ "$HERE/vm-guest/init" -nt "$INITRD" ] || [ "$0" -nt "$INITRD" ]; then
    say "building the initramfs for $KVER"
    IR=$CACHE/initramfs; rm -rf "$IR"
    mkdir -p "$IR"/{bin,dev,proc,sys,tmp,etc,lib/modules/"$KVER"}
    cp "$CACHE/busybox/bin/busybox" "$IR/bin/busybox"
    declare -A KO=() DONE=()
    while IFS= read -r f; do b=$(basename "$f" .ko); KO[${b//-/_}]=$f; done < <(find "$KDIR/lib/modules/$KVER" -name '*.ko')
    add_mod() {  # a module after its dependencies (modinfo's depends= line)
        local m=${1//-/_} d
        [ -n "${DONE[$m]:-}" ] && return 0
        DONE[$m]=1
        [ -n "${KO[$m]:-}" ] || return 0   # built into the kernel
        for d in $(strings "${KO[$m]}" | sed -n 's/^depends=//p' | tr ',' ' '); do add_mod "$d"; done
        cp "${KO[$m]}" "$IR/lib/modules/$KVER/"
        basename "${KO[$m]}" >> "$IR/etc/modules.order"
    }
    : > "$IR/etc/modules.order"
    # hid-generic binds the uhid device (udev would modprobe it by modalias; here it is loaded first).
    for m in virtio_pci 9pnet_virtio 9p hid hid_generic uhid; do add_mod $m; done
    cp "$HERE/vm-guest/init" "$IR/init"; chmod +x "$IR/init"
    (cd "$IR" && find . | "$CACHE/busybox/bin/busybox" cpio -o -H newc 2>/dev/null | gzip -1) > "$INITRD.tmp"
    mv "$INITRD.tmp" "$INITRD"
fi
PREP=$(since "$T0")

# ---- 4. boot ------------------------------------------------------------------------------------
ACCEL="-accel tcg,thread=multi"
# /dev/kvm may be a PVM-only module (kvm_pvm) that Debian's kernel cannot boot on: TCG then.
if [ -w /dev/kvm ] && [ ! -d /sys/module/kvm_pvm ] && [ -z "${FIDO_VM_NO_KVM:-}" ]; then ACCEL="-enable-kvm"; fi
say "prepared in ${PREP}s ($(basename "$AUTH") from ${AUTH%/*}, python-fido2 $PYFIDO_VERSION); booting $KVER ($ACCEL), console: $CACHE/console.log"
TB=$(date +%s.%N)
if [ -n "${FIDO_VM_VERBOSE:-}" ]; then CONSOLE=/dev/stderr; else CONSOLE=/dev/null; fi
set +e
timeout --foreground -k 5 "$TIMEOUT" qemu-system-x86_64 $ACCEL -cpu max -smp "$(nproc)" -m "$([ $MODE = daemon ] && echo 3072 || echo 2048)" -nographic -no-reboot -nic none \
    -no-user-config -kernel "$KDIR/boot/vmlinuz-$KVER" -initrd "$INITRD" \
    -virtfs local,path="$ROOT",mount_tag=fidoroot,security_model=none,id=fidoroot \
    -append "console=ttyS0 quiet loglevel=3 panic=-1" < /dev/null 2>&1 | tee "$CACHE/console.log" > "$CONSOLE"
QRC=${PIPESTATUS[0]}
set -e
VM=$(since "$TB")

# ---- 5. results ---------------------------------------------------------------------------------
rm -rf "$CACHE/logs"; cp -r "$V/logs" "$CACHE/logs" 2>/dev/null || true
cp "$V/guest.log" "$V/boot.log" "$CACHE/logs/" 2>/dev/null || true
pass=0; fail=0
if [ -f "$V/results.txt" ]; then
    while read -r status name secs rest; do
        printf '%-4s %-28s %6ss  %s\n' "$status" "$name" "$secs" "$rest"
        case $status in PASS) pass=$((pass + 1)) ;; *) fail=$((fail + 1)) ;; esac
    done < "$V/results.txt"
fi
if ! grep -q done "$V/boot.log" 2>/dev/null; then
    fail=$((fail + 1))
    echo "FAIL vm                           ${VM}s  the VM did not finish (qemu exit $QRC, limit ${TIMEOUT}s); see $CACHE/console.log, $CACHE/logs"
fi
say "prepare ${PREP}s, VM (boot + clients) ${VM}s, total $(since "$T0")s; logs in $CACHE/logs"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
