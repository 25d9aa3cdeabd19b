#!/usr/bin/env bash
# System test of biometricd as installed from its Debian packages (issue 22, Docs/system-test.md):
# a Debian 12 image made by mmdebstrap, the two .debs installed with apt, booted under qemu with
# systemd as PID 1, udev, the vivid camera fed with LFW faces (as Tests/hil does) and swtpm as a
# TPM 2.0. Four boots of one disk: socket activation, access, PAM through pam-auth-update,
# `systemctl reboot`, an upgrade with a schema migration, the logs, the TPM-sealed key (a fresh
# swtpm state, then the original one again), apt remove and purge.
#
#   Tests/system/run.sh [--scenario base|desktop] [DEB_DIR]
#                                      # as root; DEB_DIR holds biometricd_*_amd64.deb and
#                                      # biometricd-models_*_all.deb (default: the repository root)
# Scenarios: base (default; the four boots above) and desktop (issue 36, Docs/system-test.md
# "The desktop scenario": one boot with greetd, sudo, polkit, gnome-keyring installed and the PAM
# files of gdm3, sddm, lightdm and swaylock as Debian ships them; Tests/system/guest/desktop.sh).
# Environment:
#   SYSTEST_CACHE    cache and work folder (default .build/system; git-ignored)
#   SYSTEST_SHARED   the shared data folder (default ../shared next to the repository)
#   SYSTEST_VERBOSE=1  show the VM consoles (always in $SYSTEST_CACHE/run/console-*.log)
#   SYSTEST_ONLY='NAME …'  run only these checks (a developer's rerun; a check that needs an
#                    earlier one's state needs it too, e.g. the desktop's checks in alice's session
#                    need the greetd logins before them: Docs/system-test.md)
# Prints one line per check (PASS|FAIL|SKIP name seconds detail), the time of each part, and
# `N passed, M failed`; exit 0 only when nothing failed.
set -euo pipefail
umask 022
SCRIPT_VERSION=3          # bump when the image recipe below changes (part of the cache key)

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
REPO=$(cd "$HERE/../.." && pwd -P)
SCENARIO=base
if [ "${1:-}" = --scenario ]; then SCENARIO=${2:?--scenario needs base or desktop}; shift 2; fi
case $SCENARIO in base|desktop) ;; *) echo "system: unknown scenario $SCENARIO (base, desktop)" >&2; exit 2 ;; esac
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
# The desktop scenario: a real greetd (agreety), sudo, polkit with pkexec, gnome-keyring with its
# PAM module, secret-tool, a user D-Bus (dbus-user-session), KWallet's PAM module (SDDM's and
# greetd's stacks name it). GDM, SDDM, LightDM and swaylock need a GPU or a compositor: their PAM
# files are taken from their .debs below.
[ "$SCENARIO" = desktop ] && PKGS+=(greetd sudo polkitd pkexec gnome-keyring libpam-gnome-keyring libsecret-tools
                                   dbus-user-session libpam-kwallet5 libpam-systemd)
# (Depends and Recommends: apt installs recommends by default; our own packages left out.)
DEPS=$({ dpkg-deb -f "$DEB" Depends; echo ,; dpkg-deb -f "$DEB" Recommends; } | tr ',' '\n' \
    | sed 's/|.*//; s/(.*)//; s/[[:space:]]//g' | grep -v '^$' | grep -v '^biometricd' | sort -u | paste -sd' ')
KEY=$(printf '%s\n' "$SCRIPT_VERSION" "${PKGS[*]}" "$DEPS" | sha256sum | cut -c1-16)
PREFIX=system-base
[ "$SCENARIO" = desktop ] && PREFIX=system-desktop-base
BASE=$CACHE/$PREFIX-$KEY.tar
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
    for old in "$CACHE"/$PREFIX-*.tar; do [ "$old" = "$BASE" ] || rm -f "$old"; done
fi
part "base image (cached: $(basename "$BASE"))"

# ---- 2. this run's image: the .debs installed with apt, users, test wiring ----------------------
WORK=$CACHE/run
[ "$SCENARIO" = desktop ] && WORK=$CACHE/run-desktop
SHARE=$WORK/share
rm -rf --one-file-system "$WORK/root"
rm -rf "$SHARE" "$WORK"/*.img "$WORK"/tpm-* "$WORK"/console-*.log "$WORK"/waker.log
mkdir -p "$WORK/root" "$SHARE"
ROOT=$WORK/root
tar -C "$ROOT" -xf "$BASE"
install -d "$ROOT/tmp/debs"
cp "$DEB" "$MDEB" "$ROOT/tmp/debs/"
if [ "$SCENARIO" = desktop ]; then
    # The PAM files of gdm3, sddm, lightdm and swaylock (not installable without a GPU or a
    # compositor) from their .debs (apt-get download on this host, cached), and the sha256 of every
    # desktop package's PAM files as shipped, for the guest to compare (pam-shipped.sha256).
    DDEBS=$CACHE/desktop-debs
    mkdir -p "$DDEBS"
    # installed ones: the very version in the image
    ( cd "$DDEBS" && for p in gdm3 sddm lightdm swaylock greetd login sudo util-linux polkitd libpam-runtime; do
          v=$(dpkg-query --admindir="$ROOT/var/lib/dpkg" -W -f='${Version}' "$p" 2>/dev/null || true)
          if [ -n "$v" ]; then
              ls "$p"_"${v#*:}"_*.deb >/dev/null 2>&1 || { rm -f "$p"_*.deb; apt-get download "$p=$v" >&2; } || exit 1
          else
              ls "$p"_*.deb >/dev/null 2>&1 || apt-get download "$p" >&2 || exit 1
          fi
      done ) || die "apt-get download of the desktop packages failed"
    rm -rf "$DDEBS/x" "$ROOT/tmp/debs/pam.d"
    mkdir -p "$DDEBS/x" "$ROOT/tmp/debs/pam.d"
    : > "$DDEBS/pam-shipped.sha256"
    for d in "$DDEBS"/*.deb; do
        p=$(basename "$d"); p=${p%%_*}
        dpkg-deb -x "$d" "$DDEBS/x/$p"
        for f in "$DDEBS/x/$p"/etc/pam.d/* "$DDEBS/x/$p"/usr/lib/pam.d/*; do
            [ -f "$f" ] || continue
            rel=${f#"$DDEBS/x/$p"}
            (cd "$DDEBS/x/$p" && sha256sum ".$rel") >> "$DDEBS/pam-shipped.sha256"
            case $p in gdm3|sddm|lightdm|swaylock) cp "$f" "$ROOT/tmp/debs/pam.d/" ;; esac
        done
    done
    touch "$ROOT/tmp/debs/desktop"
    cp "$HERE/guest/session-agent.sh" "$ROOT/tmp/debs/"
fi
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
# vivid stands in for a camera sensor here: a virtual capture device, which the login path
# refuses by default since issue 33 (refuse_virtual_cameras = pam). Test wiring only.
printf '\n# system test: vivid stands in for a real camera\nrefuse_virtual_cameras = no\n' >> /etc/biometricd/biometricd.conf
if [ -e /tmp/debs/desktop ]; then
    # alice may use sudo and is an admin identity for polkit (Debian's rule: group sudo)
    usermod -a -G sudo alice
    # greetd with agreety on tty1, started by the test (not at boot); the session is the test's agent
    install -m 0755 /tmp/debs/session-agent.sh /usr/local/bin/systest-session
    printf '[terminal]\nvt = 1\n\n[default_session]\ncommand = "/usr/sbin/agreety --cmd /usr/local/bin/systest-session"\nuser = "_greetd"\n' > /etc/greetd/config.toml
    systemctl disable greetd.service >/dev/null 2>&1 || true
    rm -f /etc/systemd/system/display-manager.service
    systemctl mask getty@tty1.service >/dev/null 2>&1
    # the lid is read (LidClosed), not acted on (the test suspends through logind itself)
    mkdir -p /etc/systemd/logind.conf.d
    printf '[Login]\nHandleLidSwitch=ignore\nHandleLidSwitchExternalPower=ignore\nHandleLidSwitchDocked=ignore\n' > /etc/systemd/logind.conf.d/systest.conf
    # Under TCG a face attempt with the second network takes 60-100 s on a loaded host: the
    # desktop scenario tests the PAM stacks, not the face networks (Docs/face.md has those).
    printf 'face_second_network = off\n' >> /etc/biometricd/biometricd.conf
    # the PAM files of the desktops that cannot run here, exactly as their packages ship them
    cp -n /tmp/debs/pam.d/* /etc/pam.d/
fi
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
if [ "$SCENARIO" = desktop ]; then
    # nobody in view (a grey wall) and a covered camera (black), for kde-face and the dark check
    for g in grey:128 black:0; do
        python3 -c 'import sys; open(sys.argv[1], "wb").write(b"P5 640 480 255\n" + bytes([int(sys.argv[2])]) * (640 * 480))' \
            "$FR/${g%%:*}.pgm" "${g#*:}"
        frames "${g%%:*}" "$FR/${g%%:*}.pgm"
    done
    cp "$FR"/tony-same.YUYV "$FR"/other.YUYV "$FR"/grey.YUYV "$FR"/black.YUYV "$SHARE/frames/"
else
    cp "$FR"/tony-enrol2.YUYV "$FR"/tony-same.YUYV "$FR"/other.YUYV "$SHARE/frames/"
fi
cp "$TOOLS/vout" "$SHARE/vout"
if [ "$SCENARIO" = desktop ]; then
    cp "$HERE/guest/desktop.sh" "$SHARE/phases.sh"
    cp "$HERE/guest/typeon.py" "$REPO/Tests/pam/ptyrun.py" "$CACHE/desktop-debs/pam-shipped.sha256" "$SHARE/"
    if [ ! -x "$TOOLS/lidswitch" ] || [ "$HERE/tools/lidswitch.c" -nt "$TOOLS/lidswitch" ]; then
        gcc -O2 -Wall -o "$TOOLS/lidswitch" "$HERE/tools/lidswitch.c" || die "cannot build lidswitch"
    fi
    cp "$TOOLS/lidswitch" "$SHARE/"
    # alice's face templates, made on this host with the package's own daemon (face.extract of the
    # enrolment photos LFW Tony_Blair 0048 + 0053), cached per .deb: face.add in the guest instead
    # of a camera enrolment under TCG (the base scenario enrols through the camera).
    TPL=$CACHE/desktop-templates-$(sha256sum "$DEB" | cut -c1-16).json
    if [ ! -s "$TPL" ]; then
        HP=$CACHE/hostpkg; rm -rf "$HP"; mkdir -p "$HP/state"
        dpkg-deb -x "$DEB" "$HP/root" && dpkg-deb -x "$MDEB" "$HP/root" || die "cannot unpack the .debs for the templates"
        "$HP/root/usr/sbin/biometricd" --socket "$HP/b.sock" --state-dir "$HP/state" --models "$HP/root/usr/share/biometricd/models" \
            --camera "replay:$T/Tony_Blair_0048.jpg" > "$HP/daemon.log" 2>&1 &
        HPID=$!
        for _ in $(seq 300); do [ -S "$HP/b.sock" ] && break; sleep 0.1; done
        python3 - "$HP/b.sock" "$TPL" "$T/Tony_Blair_0048.jpg" "$T/Tony_Blair_0053.jpg" <<'PY' || { kill $HPID; die "face.extract on the host failed: $(tail -3 "$HP/daemon.log")"; }
import base64, json, socket, sys
out = []
for i, path in enumerate(sys.argv[3:]):
    s = socket.socket(socket.AF_UNIX); s.settimeout(120); s.connect(sys.argv[1])
    s.sendall((json.dumps({"jsonrpc": "2.0", "id": i + 1, "method": "face.extract",
                           "params": {"image": base64.b64encode(open(path, "rb").read()).decode()}}) + "\n").encode())
    for line in s.makefile("r"):
        m = json.loads(line)
        if m.get("id") == i + 1:
            if "error" in m: sys.exit("face.extract: %s" % m["error"])
            out.append(m["result"]["template"]); break
json.dump(out, open(sys.argv[2], "w"))
PY
        kill $HPID; wait $HPID 2>/dev/null || true
        rm -rf "$HP"
    fi
    cp "$TPL" "$SHARE/alice-templates.json"
else
    cp "$HERE/guest/phases.sh" "$SHARE/"
fi
cp "$HERE/guest/ptydrive.py" "$HERE/guest/common.sh" "$SHARE/"
cp "$REPO/Tests/hil/guest/rpc.py" "$SHARE/rpc.py"
# The upgrade (base scenario): the same package with its version bumped (same binaries and
# maintainer scripts, version V+systest1), repacked with dpkg-deb; cached per .deb.
VERSION=$(dpkg-deb -f "$DEB" Version)
UPV=$VERSION+systest1
UPDEB=$CACHE/upgrade/biometricd_${UPV}_amd64.deb
DEBSUM=$(sha256sum "$DEB" | cut -c1-16)
if [ "$SCENARIO" = base ] && { [ ! -s "$UPDEB" ] || [ "$(cat "$CACHE/upgrade/source.sha256" 2>/dev/null)" != "$DEBSUM" ]; }; then
    rm -rf "$CACHE/upgrade"; mkdir -p "$CACHE/upgrade"
    dpkg-deb -R "$DEB" "$CACHE/upgrade/tree"
    sed -i "s/^Version: .*/Version: $UPV/" "$CACHE/upgrade/tree/DEBIAN/control"
    dpkg-deb --root-owner-group -Zgzip -z1 --build "$CACHE/upgrade/tree" "$UPDEB" >/dev/null || die "cannot repack the upgrade package"
    rm -rf "$CACHE/upgrade/tree"
    echo "$DEBSUM" > "$CACHE/upgrade/source.sha256"
fi
[ "$SCENARIO" = base ] && cp "$UPDEB" "$SHARE/upgrade.deb"
cat > "$SHARE/env.sh" <<ENV
VERSION='$VERSION'
UPV='$UPV'
ONLY='${SYSTEST_ONLY:-}'
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
# (its last status is the script's under set -e: a waker already gone must not fail the run)
trap 'stop_tpm; [ -z "$WAKER" ] || kill $WAKER 2>/dev/null || true' EXIT
WAKER=""
waker() {  # the desktop scenario's suspend: once the guest asked and QMP says the VM is
    # suspended, system_wakeup 5 s later (the VM's wake button); gives up after 300 s
    while sleep 1; do
        [ -e "$SHARE/suspend-request" ] || continue
        rm -f "$SHARE/suspend-request"
        python3 -c 'import json,socket,sys,time
s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f=s.makefile("rw")
def cmd(c):
    f.write(json.dumps({"execute":c})+"\n"); f.flush()
    while True:
        m=json.loads(f.readline())
        if "event" in m: print(time.strftime("%T"), m); continue
        return m
f.readline(); cmd("qmp_capabilities")
t=time.time(); st="unknown"
while time.time()-t < 300:
    try: st=cmd("query-status")["return"]["status"]
    except (OSError, ValueError): st="gone"; break
    if st=="suspended": break
    time.sleep(1)
print(time.strftime("%T"), "status", st, "after %.0f s" % (time.time()-t))
if st=="suspended":
    time.sleep(5); print(time.strftime("%T"), "system_wakeup", cmd("system_wakeup"))' "$WORK/qmp.sock" >> "$WORK/waker.log" 2>&1
    done
}
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
        -qmp unix:"$WORK/qmp.sock",server=on,wait=off -global PIIX4_PM.disable_s3=0 \
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

if [ "$SCENARIO" = desktop ]; then
    echo d1 > "$SHARE/state"
    waker & WAKER=$!
    boot desktop "$WORK/tpm-d" 3000 || true
    kill $WAKER 2>/dev/null; wait $WAKER 2>/dev/null || true
    # a result the guest could not put on the share (it is unmounted around the suspend)
    debugfs -R "cat /var/lib/systest-results.txt" "$DISK" 2>/dev/null | grep -E '^(PASS|FAIL|SKIP) ' >> "$SHARE/results.txt" || true
    [ "$(state)" = done ] || hostcheck FAIL vm-boot-desktop "the guest did not finish the desktop phase (state $(state)); see $WORK/console-desktop.log"
    part "VM boot (desktop: greetd, sudo, polkit, keyring, per-service PAM, lid, suspend)"
fi
# Boots 1 and 2: one qemu; the guest's `systemctl reboot` restarts it (no -no-reboot).
[ "$SCENARIO" = base ] && echo 1 > "$SHARE/state"
if [ "$SCENARIO" = base ]; then
boot "1-2" "$WORK/tpm-a" 1500 || true
[ "$(state)" = 3 ] || hostcheck FAIL vm-boot-1-2 "the guest did not finish phases 1 and 2 (state $(state)); see $WORK/console-1-2.log"
part "VM boots 1+2 (install checks, socket activation, access, PAM, reboot, upgrade, logs)"
fi
if [ "$SCENARIO" = base ] && [ "$(state)" = 3 ]; then
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
