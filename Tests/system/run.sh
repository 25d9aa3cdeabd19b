#!/usr/bin/env bash
# System test of biometricd as installed from its Debian packages (issue 22, Docs/system-test.md):
# a Debian 12 image made by mmdebstrap, the two .debs installed with apt, booted under qemu with
# systemd as PID 1, udev, the vivid camera fed with LFW faces (as Tests/hil does) and swtpm as a
# TPM 2.0. Four boots of one disk: socket activation, access, PAM through pam-auth-update,
# `systemctl reboot`, an upgrade with a schema migration, the logs, the TPM-sealed key (a fresh
# swtpm state, then the original one again), apt remove and purge.
#
#   Tests/system/run.sh [DEB_DIR]      # as root; DEB_DIR holds biometricd_*_amd64.deb and
#                                      # biometricd-models_*_all.deb (default: the repository root)
# Environment:
#   SYSTEST_CACHE    cache and work folder (default .build/system; git-ignored)
#   SYSTEST_SHARED   the shared data folder (default ../shared next to the repository)
#   SYSTEST_VERBOSE=1  show the VM consoles (always in $SYSTEST_CACHE/run/console-*.log)
# Prints one line per check (PASS|FAIL|SKIP name seconds detail), the time of each part, and
# `N passed, M failed`; exit 0 only when nothing failed.
set -euo pipefail
umask 022
SCRIPT_VERSION=3          # bump when the image recipe below changes (part of the cache key)

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
REPO=$(cd "$HERE/../.." && pwd -P)
DEBDIR=$(cd "${1:-$REPO}" && pwd -P)
CACHE=${SYSTEST_CACHE:-$REPO/.build/system}
SHARED=${SYSTEST_SHARED:-$REPO/../shared}
T0=$(date +%s.%N)
say() { echo "system: $*" >&2; }
die() { say "error: $*"; echo "0 passed, 1 failed"; exit 1; }
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
PARTS=()
TP=$(date +%s.%N)
part() { local s; s=$(since "$TP"); PARTS+=("$1 ${s}s"); say "part: $1 took ${s}s"; TP=$(date +%s.%N); }

[ "$(id -u)" = 0 ] || die "run as root (mmdebstrap, chroot, mkfs.ext4 -d of a root tree)"
[ "$(uname -m)" = x86_64 ] || die "x86_64 only"
mkdir -p "$CACHE"; CACHE=$(cd "$CACHE" && pwd -P)
LFW=$SHARED/data/faces/lfw/images
[ -d "$LFW/Tony_Blair" ] || die "LFW not found under $SHARED/data (set SYSTEST_SHARED)"
shopt -s nullglob
debs=("$DEBDIR"/biometricd_*_amd64.deb); mdebs=("$DEBDIR"/biometricd-models_*_all.deb)
shopt -u nullglob
[ ${#debs[@]} -eq 1 ] && [ ${#mdebs[@]} -eq 1 ] \
    || die "need exactly one biometricd_*_amd64.deb and one biometricd-models_*_all.deb in $DEBDIR (scripts/package.sh)"
DEB=${debs[0]} MDEB=${mdebs[0]}
say "packages: $(basename "$DEB") ($(du -k "$DEB" | cut -f1) KiB), $(basename "$MDEB") ($(du -k "$MDEB" | cut -f1) KiB)"

# ---- host tools (Debian packages) -------------------------------------------------------------
need=()
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v swtpm >/dev/null || need+=(swtpm)
command -v swtpm_setup >/dev/null || need+=(swtpm-tools)
command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
command -v debugfs >/dev/null || need+=(e2fsprogs)
command -v gcc >/dev/null || need+=(gcc libc6-dev)
command -v g++ >/dev/null || need+=(g++)
[ -e /usr/include/opencv4/opencv2/videoio.hpp ] || need+=(libopencv-dev)
if [ ${#need[@]} -gt 0 ]; then
    say "installing ${need[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}" >&2 \
        || { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}" >&2; } \
        || die "cannot install ${need[*]}"
fi

# ---- 1. the base image (cached) ---------------------------------------------------------------
# Debian 12 minbase plus what the test needs, plus the packages biometricd's Depends and Recommends
# name (so the
# per-run `apt-get install ./*.deb` resolves against installed packages instead of unpacking ~380
# of them each time; scripts/check-package.sh does that full resolution from a bare minbase).
PKGS=(systemd systemd-sysv udev dbus linux-image-amd64 initramfs-tools kmod pamtester python3 v4l-utils
      procps sqlite3 util-linux login passwd e2fsprogs)
# (Depends and Recommends: apt installs recommends by default; our own packages left out.)
DEPS=$({ dpkg-deb -f "$DEB" Depends; echo ,; dpkg-deb -f "$DEB" Recommends; } | tr ',' '\n' \
    | sed 's/|.*//; s/(.*)//; s/[[:space:]]//g' | grep -v '^$' | grep -v '^biometricd' | sort -u | paste -sd' ')
KEY=$(printf '%s\n' "$SCRIPT_VERSION" "${PKGS[*]}" "$DEPS" | sha256sum | cut -c1-16)
BASE=$CACHE/system-base-$KEY.tar
mkdir -p "$CACHE/apt-archives/partial"
if [ ! -s "$BASE" ]; then
    sources=$("$REPO/scripts/bookworm-sources.sh" "$CACHE" system) || die "no bookworm entry in /etc/apt/sources.list or /etc/apt/sources.list.d"
    say "mmdebstrap: Debian 12 minbase + ${PKGS[*]} + biometricd's dependencies -> $BASE"
    rm -f "$BASE.part"
    # apt's downloads are kept in $CACHE/apt-archives (shared with scripts/check-package.sh).
    mmdebstrap --variant=minbase --format=tar --quiet \
        --include="$(echo "${PKGS[*]} $DEPS" | tr ' ' ',')" \
        --skip=download/empty --skip=essential/unlink \
        --setup-hook="mkdir -p \"\$1/var/cache/apt/archives\" && cp -l $CACHE/apt-archives/*.deb \"\$1/var/cache/apt/archives/\" 2>/dev/null || true" \
        --customize-hook="cp -n \"\$1\"/var/cache/apt/archives/*.deb $CACHE/apt-archives/ 2>/dev/null || true; rm -f \"\$1\"/var/cache/apt/archives/*.deb" \
        bookworm "$BASE.part" "$sources" >&2 || die "mmdebstrap failed"
    mv "$BASE.part" "$BASE"
    for old in "$CACHE"/system-base-*.tar; do [ "$old" = "$BASE" ] || rm -f "$old"; done
fi
part "base image (cached: $(basename "$BASE"))"

# ---- 2. this run's image: the .debs installed with apt, users, test wiring ----------------------
WORK=$CACHE/run
SHARE=$WORK/share
rm -rf --one-file-system "$WORK/root"
rm -rf "$SHARE" "$WORK"/*.img "$WORK"/tpm-* "$WORK"/console-*.log
mkdir -p "$WORK/root" "$SHARE"
ROOT=$WORK/root
tar -C "$ROOT" -xf "$BASE"
install -d "$ROOT/tmp/debs"
cp "$DEB" "$MDEB" "$ROOT/tmp/debs/"
cat > "$ROOT/tmp/debs/install.sh" <<'INSTALL'
#!/bin/bash
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin
cd /tmp/debs
t=$(date +%s)
apt-get install -y -o Dpkg::Use-Pty=false -o APT::Sandbox::User=root \
    ./biometricd_*_amd64.deb ./biometricd-models_*_all.deb > install.log 2>&1 || { tail -30 install.log; exit 1; }
echo "apt-get install: $(grep -c '^Unpacking' install.log) packages unpacked in $(( $(date +%s) - t )) s"
grep -E '^(Need to get|After this operation|[0-9]+ upgraded)' install.log || true
# The test's accounts: admin (biometric-admin), alice, bob, carol; known passwords.
for u in admin alice bob carol; do useradd -m -s /bin/bash "$u"; done
usermod -a -G biometric-admin admin
printf '%s\n' root:root-pw-1 admin:admin-pw-1 alice:alice-pw-1 bob:bob-pw-1 carol:carol-pw-1 | chpasswd
dpkg-query -W biometricd biometricd-models
INSTALL
chmod +x "$ROOT/tmp/debs/install.sh"
unshare --mount --pid --fork --propagation private bash -c '
    set -e
    R=$1
    mount -t proc proc "$R/proc"
    mount -t tmpfs -o mode=0755,nosuid dev "$R/dev"
    for n in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0; do
        IFS=: read -r name maj min <<< "$n"; mknod -m 0666 "$R/dev/$name" c "$maj" "$min"
    done
    mkdir -p "$R/dev/pts" && mount -t devpts -o newinstance,ptmxmode=0666 devpts "$R/dev/pts" && ln -s pts/ptmx "$R/dev/ptmx"
    mount -t tmpfs tmpfs "$R/run"
    chroot "$R" /tmp/debs/install.sh
' _ "$ROOT" >&2 || die "installing the packages in the image failed"
rm -rf "$ROOT/tmp/debs"

# Test wiring (not part of what is tested): the 9p share, vivid, the runner, a quiet boot.
cat > "$ROOT/etc/fstab" <<'FSTAB'
/dev/vda  /             ext4  rw,errors=remount-ro  0 1
systest   /mnt/systest  9p    trans=virtio,version=9p2000.L,msize=524288,nofail  0 0
FSTAB
mkdir -p "$ROOT/mnt/systest" "$ROOT/var/log/journal"
echo systest > "$ROOT/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 systest\n' > "$ROOT/etc/hosts"
tr -d '-' < /proc/sys/kernel/random/uuid > "$ROOT/etc/machine-id"
printf 'vivid\n9p\n9pnet_virtio\n' > "$ROOT/etc/modules-load.d/systest.conf"
# node_types=0x101: video0 = capture, video1 = output (HDMI loopback between them), as in the HIL
echo 'options vivid n_devs=1 node_types=0x101' > "$ROOT/etc/modprobe.d/vivid.conf"
cat > "$ROOT/etc/systemd/system/systest.service" <<'UNIT'
[Unit]
Description=biometricd system test runner (Tests/system/guest/phases.sh from the 9p share)
After=multi-user.target
RequiresMountsFor=/mnt/systest

[Service]
Type=simple
ExecStart=/bin/bash /mnt/systest/phases.sh
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=multi-user.target
UNIT
ln -s /etc/systemd/system/systest.service "$ROOT/etc/systemd/system/multi-user.target.wants/systest.service"
# Timers that would only compete for the emulated CPUs.
for t in apt-daily.timer apt-daily-upgrade.timer man-db.timer dpkg-db-backup.timer e2scrub_all.timer fstrim.timer; do
    ln -sf /dev/null "$ROOT/etc/systemd/system/$t"
done
KVER=$(ls "$ROOT/lib/modules" | head -1)
cp "$ROOT/boot/vmlinuz-$KVER" "$WORK/vmlinuz"
cp "$ROOT/boot/initrd.img-$KVER" "$WORK/initrd.img"
DISK=$WORK/disk.img
mkfs.ext4 -q -F -L systest -E lazy_itable_init=1 -d "$ROOT" "$DISK" 5G || die "mkfs.ext4 -d failed"
rm -rf --one-file-system "$ROOT"
part "image: apt-get install of the .debs, users, ext4 disk ($(du -m "$DISK" | cut -f1) MiB used of 5 GiB, kernel $KVER)"

# ---- 3. the camera's frames, the writer, the upgrade package ----------------------------------
TOOLS=$CACHE/tools; mkdir -p "$TOOLS"
HILTOOLS=$REPO/Tests/hil/tools
if [ ! -x "$TOOLS/hiltool" ] || [ "$HILTOOLS/hiltool.cpp" -nt "$TOOLS/hiltool" ]; then
    g++ -O2 -std=c++17 -I/usr/include/opencv4 -o "$TOOLS/hiltool" "$HILTOOLS/hiltool.cpp" \
        -lopencv_core -lopencv_imgproc -lopencv_imgcodecs -lopencv_videoio || die "cannot build hiltool"
fi
if [ ! -x "$TOOLS/vout" ] || [ "$HILTOOLS/vout.c" -nt "$TOOLS/vout" ]; then
    gcc -O2 -o "$TOOLS/vout" "$HILTOOLS/vout.c" || die "cannot build vout"
fi
FR=$CACHE/frames; mkdir -p "$FR"
frames() {  # name inputs...: YUYV 640x480, each source frame once (the writer holds them)
    local name=$1; shift
    [ -s "$FR/$name.YUYV" ] && [ "$FR/$name.YUYV" -nt "$HILTOOLS/hiltool.cpp" ] && return 0
    "$TOOLS/hiltool" frames "$FR/$name.YUYV" YUYV 640 480 1 1 "$@" >/dev/null || die "cannot make frames $name"
}
T=$LFW/Tony_Blair
# As the HIL: enrol from 0048 + 0053, "same" is 0064, "other" Silvio_Berlusconi_0006.
frames tony-enrol2 "$T/Tony_Blair_0048.jpg" "$T/Tony_Blair_0053.jpg"
frames tony-same "$T/Tony_Blair_0064.jpg"
frames other "$LFW/Silvio_Berlusconi/Silvio_Berlusconi_0006.jpg"
mkdir -p "$SHARE/frames"
cp "$FR"/*.YUYV "$SHARE/frames/"
cp "$TOOLS/vout" "$SHARE/vout"
cp "$HERE/guest/phases.sh" "$HERE/guest/ptydrive.py" "$SHARE/"
cp "$REPO/Tests/hil/guest/rpc.py" "$SHARE/rpc.py"
# The upgrade: the same package with its version bumped (same binaries and maintainer scripts,
# version V+systest1), repacked with dpkg-deb; cached per .deb.
VERSION=$(dpkg-deb -f "$DEB" Version)
UPV=$VERSION+systest1
UPDEB=$CACHE/upgrade/biometricd_${UPV}_amd64.deb
DEBSUM=$(sha256sum "$DEB" | cut -c1-16)
if [ ! -s "$UPDEB" ] || [ "$(cat "$CACHE/upgrade/source.sha256" 2>/dev/null)" != "$DEBSUM" ]; then
    rm -rf "$CACHE/upgrade"; mkdir -p "$CACHE/upgrade"
    dpkg-deb -R "$DEB" "$CACHE/upgrade/tree"
    sed -i "s/^Version: .*/Version: $UPV/" "$CACHE/upgrade/tree/DEBIAN/control"
    dpkg-deb --root-owner-group -Zgzip -z1 --build "$CACHE/upgrade/tree" "$UPDEB" >/dev/null || die "cannot repack the upgrade package"
    rm -rf "$CACHE/upgrade/tree"
    echo "$DEBSUM" > "$CACHE/upgrade/source.sha256"
fi
cp "$UPDEB" "$SHARE/upgrade.deb"
cat > "$SHARE/env.sh" <<ENV
VERSION='$VERSION'
UPV='$UPV'
ENV
: > "$SHARE/results.txt"
part "frames, writer, upgrade package $(basename "$UPDEB")"

# ---- 4. boots -------------------------------------------------------------------------------
SWTPM_PID=""
start_tpm() {  # DIR
    mkdir -p "$1"
    swtpm socket --tpm2 --tpmstate dir="$1" --ctrl type=unixio,path="$1/ctrl.sock" \
        --log file="$1/swtpm.log",level=1 >/dev/null 2>&1 &
    SWTPM_PID=$!
    for _ in $(seq 50); do [ -S "$1/ctrl.sock" ] && return 0; sleep 0.1; done
    die "swtpm did not start (log: $1/swtpm.log)"
}
stop_tpm() { [ -n "$SWTPM_PID" ] && { kill "$SWTPM_PID" 2>/dev/null; wait "$SWTPM_PID" 2>/dev/null || true; }; SWTPM_PID=""; }
trap 'stop_tpm' EXIT
boot() {  # NAME TPMDIR LIMIT: one qemu run until the guest powers off (reboots inside it included)
    local name=$1 tpm=$2 limit=$3 rc=0 console=/dev/null
    [ -n "${SYSTEST_VERBOSE:-}" ] && console=/dev/stderr
    start_tpm "$tpm"
    say "booting ($name), console: $WORK/console-$name.log"
    timeout --foreground -k 5 "$limit" qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp 2 -m 2048 \
        -nographic -nic none -no-user-config \
        -kernel "$WORK/vmlinuz" -initrd "$WORK/initrd.img" -append "root=/dev/vda rw console=ttyS0 quiet loglevel=3 panic=-1" \
        -drive file="$DISK",format=raw,if=virtio \
        -virtfs local,path="$SHARE",mount_tag=systest,security_model=none,id=systest \
        -chardev socket,id=chrtpm,path="$tpm/ctrl.sock" -tpmdev emulator,id=tpm0,chardev=chrtpm -device tpm-tis,tpmdev=tpm0 \
        < /dev/null > >(tee "$WORK/console-$name.log" > "$console") 2>&1 || rc=$?
    stop_tpm
    [ $rc -eq 0 ] || say "qemu ($name) ended with $rc (124: the limit of ${limit}s)"
    return $rc
}
state() { cat "$SHARE/state" 2>/dev/null || echo none; }
# Files of the sealed store, read from the powered-off disk (debugfs: no mount needed).
disk_sums() {
    local f out=""
    for f in biometricd.sqlite biometricd.sqlite-wal key.cred key; do
        if debugfs -R "stat /var/lib/biometricd/$f" "$DISK" >/dev/null 2>&1 && debugfs -R "stat /var/lib/biometricd/$f" "$DISK" 2>/dev/null | grep -q Inode; then
            out="$out $f=$(debugfs -R "cat /var/lib/biometricd/$f" "$DISK" 2>/dev/null | sha256sum | cut -c1-12)"
        fi
    done
    echo "${out# }"
}
hostcheck() {  # STATUS NAME DETAIL
    echo "$1 $2 0 $3" >> "$SHARE/results.txt"
}

# Boots 1 and 2: one qemu; the guest's `systemctl reboot` restarts it (no -no-reboot).
echo 1 > "$SHARE/state"
boot "1-2" "$WORK/tpm-a" 1500 || true
[ "$(state)" = 3 ] || hostcheck FAIL vm-boot-1-2 "the guest did not finish phases 1 and 2 (state $(state)); see $WORK/console-1-2.log"
part "VM boots 1+2 (install checks, socket activation, access, PAM, reboot, upgrade, logs)"
if [ "$(state)" = 3 ]; then
    SUMS_BEFORE=$(disk_sums)
    boot 3 "$WORK/tpm-fresh" 400 || true
    SUMS_AFTER=$(disk_sums)
    [ "$(state)" = 4 ] || hostcheck FAIL vm-boot-3 "the guest did not finish phase 3 (state $(state)); see $WORK/console-3.log"
    if [ -n "$SUMS_BEFORE" ] && [ "$SUMS_BEFORE" = "$SUMS_AFTER" ]; then
        hostcheck PASS tpm-fresh-disk-unchanged "the boot with a fresh swtpm changed nothing of the sealed store (sha256 from the disk before/after: $SUMS_AFTER)"
    else
        hostcheck FAIL tpm-fresh-disk-unchanged "before: ${SUMS_BEFORE:-none}; after: ${SUMS_AFTER:-none}"
    fi
    part "VM boot 3 (fresh swtpm state)"
    if [ "$(state)" = 4 ]; then
        boot 4 "$WORK/tpm-a" 600 || true
        [ "$(state)" = done ] || hostcheck FAIL vm-boot-4 "the guest did not finish phase 4 (state $(state)); see $WORK/console-4.log"
        part "VM boot 4 (original swtpm state, remove, purge)"
    fi
fi

# ---- 5. results -------------------------------------------------------------------------------
pass=0; fail=0; skip=0
while read -r status name secs rest; do
    printf '%-4s %-34s %6ss  %s\n' "$status" "$name" "$secs" "$rest"
    case $status in PASS) pass=$((pass + 1)) ;; SKIP) skip=$((skip + 1)) ;; *) fail=$((fail + 1)) ;; esac
done < "$SHARE/results.txt"
[ -s "$SHARE/numbers.txt" ] && { echo "numbers:"; sed 's/^/  /' "$SHARE/numbers.txt"; }
echo "times: ${PARTS[*]/%/;} total $(since "$T0")s"
echo "logs: $SHARE/guest-*.log, $WORK/console-*.log"
echo "$pass passed, $fail failed$([ $skip -gt 0 ] && echo ", $skip skipped" || true)"
[ $fail -eq 0 ]
