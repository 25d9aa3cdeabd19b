#!/usr/bin/env bash
# Hardware-in-the-loop tests of biometricd: the release daemon and authctl on a real kernel V4L2
# driver (vivid, Debian's own 6.1 kernel under qemu), real faces pushed through the kernel, the
# project's udev rule and systemd identity, hot-plug and faults. See Docs/hil.md.
#
#   Tests/hil/run.sh                       # every scenario
#   Tests/hil/run.sh --fast                # the CI subset (HIL_SCENARIOS=fast), ~4 min under TCG
#   HIL_SCENARIOS=udev,discovery,capture Tests/hil/run.sh   # any subset (names: see Docs/hil.md)
#
# Environment:
#   BIOMETRICD_BIN_DIR  biometricd + authctl (default .build/release; built when missing)
#   HIL_CACHE           downloads, initramfs, frames, results (default .build/hil, git-ignored)
#   HIL_SHARED          the shared data folder (default ../shared next to the repository)
#   HIL_SCENARIOS       comma-separated scenario names (default: all)
#   HIL_TIMEOUT         hard limit for the VM in seconds (default 1200: the full set must end in 20 min)
#   HIL_VERBOSE=1       show the VM console while it runs (it is always in $HIL_CACHE/console.log)
#   HIL_MEM             VM memory in MiB (default 3072)
# Exit status: 0 when every scenario passed, 1 otherwise (also when the VM did not finish).
set -euo pipefail
# Physical paths (pwd -P): the VM resolves symbolic links against its own root.
HIL=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
REPO=$(cd "$HIL/../.." && pwd -P)
CACHE=${HIL_CACHE:-$REPO/.build/hil}
BIN_DIR=${BIOMETRICD_BIN_DIR:-$REPO/.build/release}
SHARED=${HIL_SHARED:-$REPO/../shared}
SHARED=$(cd "$SHARED" 2>/dev/null && pwd -P || echo "$SHARED")
SCENARIOS=${HIL_SCENARIOS:-all}
[ "${1:-}" = --fast ] && SCENARIOS=fast
[ "$SCENARIOS" = fast ] && SCENARIOS=udev,discovery,capture,idle-cpu,face-enrol,face-same,pam,busy,hotplug
TIMEOUT=${HIL_TIMEOUT:-1200}
MEM=${HIL_MEM:-3072}
T0=$(date +%s.%N)
say() { echo "hil: $*" >&2; }
die() { say "$*"; echo "0 passed, 1 failed"; exit 1; }
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

[ "$(id -u)" = 0 ] || die "run as root (the VM needs the host root exported read-only, and apt for set-up)"
[ "$(uname -m)" = x86_64 ] || die "x86_64 only (Debian amd64 kernel)"
mkdir -p "$CACHE"; CACHE=$(cd "$CACHE" && pwd -P)
# The VM sees the host's / read-only, with its own /tmp, /run, /etc, /var/lib. Folders of ours
# under /tmp, /run or /var/lib (a CI clone in /tmp, say) are bound back into the VM's copies
# (HOSTPATHS, see guest/init); under /etc, /dev, /proc or /sys they cannot be.
HOSTPATHS=""
for d in "$CACHE" "$REPO" "$SHARED"; do
    case $d/ in
        /etc/*|/dev/*|/proc/*|/sys/*) die "$d is hidden inside the VM: use a folder elsewhere (HIL_CACHE, the clone)" ;;
        /tmp/*|/run/*|/var/lib/*) HOSTPATHS="$HOSTPATHS $d" ;;
    esac
done

# ---- 1. Host packages ---------------------------------------------------------------------
# qemu (the VM), v4l-utils (v4l2-ctl writes frames into vivid's output inside the VM), OpenCV and
# libv4l headers (the two small helpers below), acl (setfacl, used by the udev rule), and
# libsystemd-shared (udevadm from the udev .deb links it).
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v v4l2-ctl >/dev/null || need+=(v4l-utils)
command -v g++ >/dev/null || need+=(g++)
command -v strings >/dev/null || need+=(binutils)
command -v setpriv >/dev/null || need+=(util-linux)
[ -e /usr/bin/setfacl ] || need+=(acl)
[ -e /usr/include/opencv4/opencv2/videoio.hpp ] || need+=(libopencv-dev)
[ -e /usr/include/libv4l-plugin.h ] || need+=(libv4l-dev)
ls /usr/lib/x86_64-linux-gnu/systemd/libsystemd-shared-*.so >/dev/null 2>&1 || need+=(libsystemd-shared)
if [ ${#need[@]} -gt 0 ]; then
    say "installing ${need[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}" >&2 \
        || { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}" >&2; } \
        || die "cannot install ${need[*]}"
fi

# ---- 2. The binaries under test, models, data -----------------------------------------------
if [ ! -x "$BIN_DIR/biometricd" ] || [ ! -x "$BIN_DIR/authctl" ]; then
    [ -z "${BIOMETRICD_BIN_DIR:-}" ] || die "no biometricd/authctl in BIOMETRICD_BIN_DIR=$BIN_DIR"
    say "building the release binaries (swift build -c release)"
    (cd "$REPO" && swift build -c release >&2) || die "release build failed"
fi
[ -f "$BIN_DIR/pam_biometricd.so" ] || (cd "$REPO" && scripts/build-pam.sh "$BIN_DIR/pam_biometricd.so" >&2) || die "cannot build the PAM module"
BIN_DIR=$(cd "$BIN_DIR" && pwd -P)
case $BIN_DIR/ in /tmp/*|/run/*|/var/lib/*) HOSTPATHS="$HOSTPATHS $BIN_DIR" ;; /etc/*) die "$BIN_DIR is hidden inside the VM" ;; esac
MODELS=$REPO/models
[ -f "$MODELS/dlib_face_recognition_resnet_model_v1.dat" ] || die "models missing in $MODELS: run scripts/setup.sh"
LFW=$SHARED/data/faces/lfw/images
CLIP=$SHARED/data/video/grid_face_blink_a/video.mp4
[ -d "$LFW" ] && [ -f "$CLIP" ] || die "face data not found under $SHARED/data (set HIL_SHARED)"

# ---- 3. Kernel, busybox and udev from Debian (downloaded once, not installed) ---------------
mkdir -p "$CACHE/debs"
KPKG=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/.*Depends: //p' | head -1)
if [ -z "$KPKG" ] || ! ls "$CACHE/debs/${KPKG}"_*.deb >/dev/null 2>&1; then
    [ -n "$KPKG" ] || { apt-get update >&2; KPKG=$(apt-cache depends linux-image-amd64 | sed -n 's/.*Depends: //p' | head -1); }
    [ -n "$KPKG" ] || die "cannot resolve the kernel package (linux-image-amd64)"
fi
for p in "$KPKG" busybox-static udev; do
    ls "$CACHE/debs/${p}"_*.deb >/dev/null 2>&1 && continue
    say "downloading $p"
    (cd "$CACHE/debs" && apt-get -o APT::Sandbox::User=root download "$p" >&2) \
        || (apt-get update >&2 && cd "$CACHE/debs" && apt-get -o APT::Sandbox::User=root download "$p" >&2) \
        || die "cannot download $p"
done
extract() { [ -d "$CACHE/$2" ] || { dpkg-deb -x "$(ls "$CACHE"/debs/"$1"_*.deb | tail -1)" "$CACHE/$2.tmp" && mv "$CACHE/$2.tmp" "$CACHE/$2"; }; }
rm -rf "$CACHE"/*.tmp
extract "$KPKG" "kernel-$KPKG"; extract busybox-static busybox; extract udev udev
KDIR=$CACHE/kernel-$KPKG
KVER=$(ls "$KDIR/lib/modules" | head -1)

# ---- 4. Initramfs: busybox, vivid + virtio/9p modules (dependencies first), Tests/hil/guest/init
INITRD=$CACHE/initrd-$KVER.cpio.gz
if [ ! -f "$INITRD" ] || [ "$HIL/guest/init" -nt "$INITRD" ]; then
    say "building the initramfs for $KVER"
    ROOTFS=$CACHE/rootfs; rm -rf "$ROOTFS"
    mkdir -p "$ROOTFS"/{bin,dev,proc,sys,tmp,etc,lib/modules/"$KVER"}
    cp "$CACHE/busybox/bin/busybox" "$ROOTFS/bin/busybox"
    declare -A KO=() DONE=()
    while IFS= read -r f; do b=$(basename "$f" .ko); KO[${b//-/_}]=$f; done < <(find "$KDIR/lib/modules/$KVER" -name '*.ko')
    add_mod() {
        local m=${1//-/_} d
        [ -n "${DONE[$m]:-}" ] && return 0
        DONE[$m]=1
        [ -n "${KO[$m]:-}" ] || return 0   # built into the kernel
        for d in $(strings "${KO[$m]}" | sed -n 's/^depends=//p' | tr ',' ' '); do add_mod "$d"; done
        cp "${KO[$m]}" "$ROOTFS/lib/modules/$KVER/"
        basename "${KO[$m]}" >> "$ROOTFS/etc/modules.order"
    }
    : > "$ROOTFS/etc/modules.order"
    for m in virtio_pci 9pnet_virtio 9p vivid; do add_mod $m; done
    cp "$HIL/guest/init" "$ROOTFS/init"; chmod +x "$ROOTFS/init"
    (cd "$ROOTFS" && find . | "$CACHE/busybox/bin/busybox" cpio -o -H newc 2>/dev/null | gzip -1) > "$INITRD.tmp"
    mv "$INITRD.tmp" "$INITRD"
fi

# ---- 5. Helpers (OpenCV frame converter, libv4l2 format-filter plugin) and the frames --------
TOOLS=$CACHE/tools; mkdir -p "$TOOLS"
if [ ! -x "$TOOLS/hiltool" ] || [ "$HIL/tools/hiltool.cpp" -nt "$TOOLS/hiltool" ]; then
    g++ -O2 -std=c++17 -I/usr/include/opencv4 -o "$TOOLS/hiltool" "$HIL/tools/hiltool.cpp" \
        -lopencv_core -lopencv_imgproc -lopencv_imgcodecs -lopencv_videoio || die "cannot build hiltool"
fi
if [ ! -f "$TOOLS/libv4l-hilfmt.so" ] || [ "$HIL/tools/libv4l-hilfmt.c" -nt "$TOOLS/libv4l-hilfmt.so" ]; then
    gcc -O2 -shared -fPIC -o "$TOOLS/libv4l-hilfmt.so" "$HIL/tools/libv4l-hilfmt.c" || die "cannot build the libv4l plugin"
fi
if [ ! -x "$TOOLS/vout" ] || [ "$HIL/tools/vout.c" -nt "$TOOLS/vout" ]; then
    gcc -O2 -o "$TOOLS/vout" "$HIL/tools/vout.c" || die "cannot build vout"
fi
SHARE=$CACHE/share; FR=$SHARE/frames; mkdir -p "$FR"
frames() {  # name fourcc repeat scale inputs...
    local name=$1 fourcc=$2; shift 2
    [ -s "$FR/$name.$fourcc" ] && [ "$FR/$name.$fourcc" -nt "$HIL/tools/hiltool.cpp" ] && return 0
    "$TOOLS/hiltool" frames "$FR/$name.$fourcc" "$fourcc" 640 480 "$@" >/dev/null || die "cannot make frames $name"
}
T=$LFW/Tony_Blair
[ -f "$FR/pattern.png" ] || "$TOOLS/hiltool" pattern "$FR/pattern.png" 640 480
frames pattern YUYV 1 1 "$FR/pattern.png"
# LFW stills (250x250, as the replay tests use them) in the middle of the 640x480 frame, each
# source frame once (guest/scenarios.sh decides how long the writer holds each).
# Enrolment: 0048 and 0053, each of which alone matches 0064 (measured natively: 72.9, 53.1).
# Under TCG which photos the 3 enrolment frames come from depends on timing; with 0018 in the
# sequence (25.8 alone) face-same scored anywhere from 42.9 to 75.8.
for f in YUYV GREY; do frames tony-enrol2 $f 1 1 "$T/Tony_Blair_0048.jpg" "$T/Tony_Blair_0053.jpg"; done
for f in YUYV GREY NV12; do frames tony-same $f 1 1 "$T/Tony_Blair_0064.jpg"; done
frames other YUYV 1 1 "$LFW/Silvio_Berlusconi/Silvio_Berlusconi_0006.jpg"
# The blink clip (96x128, 25 fps) at twice its size.
frames blink YUYV 1 2 "$CLIP"
# Black frames, as an IR camera whose emitter is not lit gives them (the doctor-dark scenario).
[ -s "$FR/black.pgm" ] || { printf 'P5 640 480 255\n'; head -c $((640 * 480)) /dev/zero; } > "$FR/black.pgm"
frames black YUYV 1 1 "$FR/black.pgm"

# ---- 6. Boot -------------------------------------------------------------------------------
# The speed probe the guest repeats (guest/scenarios.sh scales its waiting limits by the ratio).
HOST_PROBE_S=$(awk -v t0="$(date +%s.%N)" 'BEGIN { for (i = 0; i < 10000000; i++) s += i * 0.5;
    "date +%s.%N" | getline t1; printf "%.3f", t1 - t0 }')
rm -f "$SHARE"/results.txt "$SHARE"/*.log "$SHARE"/*.png "$SHARE"/*.json "$SHARE"/*.err "$SHARE"/done
cat > "$SHARE/env.sh" <<EOF
HOSTPATHS='$HOSTPATHS'
REPO='$REPO'
BIN='$BIN_DIR'
MODELS='$MODELS'
CACHE='$CACHE'
TOOLS='$TOOLS'
SCENARIOS='$SCENARIOS'
HIL_TOP='${HIL_TOP:-}'
HIL_BLINK_HOLD='${HIL_BLINK_HOLD:-}'
HIL_BLINK_LIVE_HOLD='${HIL_BLINK_LIVE_HOLD:-}'
HIL_ENROL_TIMEOUT_MS='${HIL_ENROL_TIMEOUT_MS:-}'
HOST_PROBE_S='$HOST_PROBE_S'
EOF
ACCEL="-accel tcg,thread=multi"
# /dev/kvm may be a PVM-only module (kvm_pvm) that Debian's kernel cannot boot on: TCG then.
if [ -w /dev/kvm ] && [ ! -d /sys/module/kvm_pvm ] && [ -z "${HIL_NO_KVM:-}" ]; then ACCEL="-enable-kvm"; fi
echo "ACCEL='$([ "$ACCEL" = -enable-kvm ] && echo kvm || echo tcg)'" >> "$SHARE/env.sh"
PREP=$(since "$T0")
say "prepared in ${PREP}s; booting $KVER ($ACCEL), console: $CACHE/console.log"
TB=$(date +%s.%N)
set +e
if [ -n "${HIL_VERBOSE:-}" ]; then CONSOLE=/dev/stderr; else CONSOLE=/dev/null; fi
timeout --foreground -k 5 "$TIMEOUT" qemu-system-x86_64 $ACCEL -cpu max -smp "$(nproc)" -m "$MEM" -nographic -no-reboot -nic none \
    -kernel "$KDIR/boot/vmlinuz-$KVER" -initrd "$INITRD" \
    -virtfs local,path="$SHARE",mount_tag=hil,security_model=none,id=hil \
    -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap,id=hostroot \
    -append "console=ttyS0 quiet loglevel=3 panic=-1" < /dev/null 2>&1 | tee "$CACHE/console.log" > "$CONSOLE"
QRC=${PIPESTATUS[0]}
set -e
VM=$(since "$TB")

# ---- 7. Results ----------------------------------------------------------------------------
pass=0; fail=0; skip=0
if [ -f "$SHARE/results.txt" ]; then
    while read -r status name secs rest; do
        printf '%-4s %-22s %6ss  %s\n' "$status" "$name" "$secs" "$rest"
        case $status in PASS) pass=$((pass + 1)) ;; SKIP) skip=$((skip + 1)) ;; *) fail=$((fail + 1)) ;; esac
    done < "$SHARE/results.txt"
fi
if [ ! -f "$SHARE/done" ]; then
    fail=$((fail + 1))
    echo "FAIL vm                     ${VM}s  the VM did not finish (qemu exit $QRC, limit ${TIMEOUT}s); see $CACHE/console.log"
fi
say "prepare ${PREP}s, VM (boot + scenarios) ${VM}s, total $(since "$T0")s; logs and frames in $SHARE"
echo "$pass passed, $fail failed$([ $skip -gt 0 ] && echo ", $skip skipped")"
[ $fail -eq 0 ]
