#!/usr/bin/env bash
# check-package.sh [DIR]
#
# Installs the packages scripts/package.sh built (biometricd_*_amd64.deb and
# biometricd-models_*_all.deb in DIR, default the repository root) into a fresh Debian 12 root
# made by mmdebstrap, with apt, so dependency resolution is real, and checks what the package
# promises (Docs/install.md, "The Debian package"): files where Debian puts them, users and
# groups, folders, the socket enabled and nothing started, the conffile, pam-auth-update
# --enable/--disable and the password fall-through, a first enrolment by the installed daemon,
# then apt remove (state kept), reinstall (templates still there) and apt purge (state gone).
# Runs as root in a chroot with private mounts and PIDs; systemd is not running there, as in an
# image build. The Debian mirror is the host's (/etc/apt/sources.list or sources.list.d).
# Caches under .build/system/: the mmdebstrap tarball (delete it to refresh) and apt's .debs.
set -euo pipefail
umask 022

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
DIR=$(cd "${1:-$REPO}" && pwd)
CACHE=$REPO/.build/system
TARBALL=$CACHE/bookworm-minbase.tar
LFW=$REPO/../shared/data/faces/lfw/images

log() { echo "==> $*"; }
die() { echo "check-package: error: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run as root (chroot, mounts)"

shopt -s nullglob
debs=("$DIR"/biometricd_*_amd64.deb)
mdebs=("$DIR"/biometricd-models_*_all.deb)
shopt -u nullglob
[ ${#debs[@]} -eq 1 ] && [ ${#mdebs[@]} -eq 1 ] \
    || die "need exactly one biometricd_*_amd64.deb and one biometricd-models_*_all.deb in $DIR (scripts/package.sh)"
[ -d "$LFW" ] || die "$LFW not found (../shared/data: the photos of the enrolment check)"
T0=$(date +%s)

if ! command -v mmdebstrap >/dev/null; then
    log "installing mmdebstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends mmdebstrap \
        || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends mmdebstrap; }
fi

# --- the Debian 12 root (cached) -----------------------------------------------------------
mkdir -p "$CACHE/apt-archives/partial"
if [ ! -s "$TARBALL" ]; then
    # The host's bookworm entries, deb822 and one-line, and nothing else (no third-party repos).
    sources=$("$HERE/bookworm-sources.sh" "$CACHE" debian) || die "no bookworm entry in /etc/apt/sources.list or /etc/apt/sources.list.d"
    log "mmdebstrap: Debian 12 minbase -> $TARBALL (mirror: $(grep -v '^#' "$sources" | grep -ohE 'https?://[^ ]+' | sort -u | paste -sd' '))"
    rm -rf "$TARBALL.part"
    mmdebstrap --variant=minbase --format=tar --quiet bookworm "$TARBALL.part" "$sources"
    mv "$TARBALL.part" "$TARBALL"
fi

ROOT=$(mktemp -d "$CACHE/chroot.XXXXXX")
cleanup() { rm -rf --one-file-system "$ROOT"; }
trap cleanup EXIT
tar -C "$ROOT" -xf "$TARBALL"
install -d "$ROOT/check"
cp "${debs[0]}" "${mdebs[0]}" "$ROOT/check/"
# Photos of the enrolment check (LFW, as scripts/demo.sh): four to enrol, one of someone else.
# (Whether another photo of the same person reaches the threshold depends on which frames the
# enrolment kept; the check is about the installed daemon, so it verifies the enrolment photos.)
install -d "$ROOT/srv/photos/enrol" "$ROOT/srv/photos/other"
for f in Tony_Blair_0018 Tony_Blair_0032 Tony_Blair_0048 Tony_Blair_0053; do
    cp "$LFW/Tony_Blair/$f.jpg" "$ROOT/srv/photos/enrol/"
done
cp "$LFW/Silvio_Berlusconi/Silvio_Berlusconi_0006.jpg" "$ROOT/srv/photos/other/"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"

# --- the checks, run inside the root -----------------------------------------------------------
cat > "$ROOT/check/inside.sh" <<'INSIDE'
#!/bin/bash
set -uo pipefail
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin
PASS=0 FAIL=0
ok() { echo "  ok    $*"; PASS=$((PASS + 1)); }
bad() { echo "  FAIL  $*"; FAIL=$((FAIL + 1)); }
check() { local what=$1; shift; if "$@" >/tmp/check.out 2>&1; then ok "$what"; else bad "$what"; sed 's/^/        /' /tmp/check.out | tail -20; fi; }
APT=(apt-get -y -o APT::Keep-Downloaded-Packages=true -o Dpkg::Use-Pty=false -o APT::Sandbox::User=root)
cd /check
DEB=$(ls biometricd_*_amd64.deb) MDEB=$(ls biometricd-models_*_all.deb)
SECURITY=/usr/lib/x86_64-linux-gnu/security

echo "-- install: apt install ./$DEB ./$MDEB"
"${APT[@]}" update -qq >/dev/null || { echo "apt-get update failed"; exit 1; }
t=$(date +%s)
if apt install -y -o APT::Keep-Downloaded-Packages=true -o Dpkg::Use-Pty=false -o APT::Sandbox::User=root \
        "./$DEB" "./$MDEB" > /tmp/install.log 2>&1; then
    ok "apt install resolves and installs ($(grep -c '^Unpacking' /tmp/install.log) packages, $(( $(date +%s) - t )) s)"
    grep -E '^(Need to get|After this operation)' /tmp/install.log | sed 's/^/        /'
else
    bad "apt install"; tail -30 /tmp/install.log; echo "$PASS passed, $FAIL failed"; exit 1
fi
grep -iE '^(W|E):|warning|error' /tmp/install.log | grep -v "apt does not have a stable CLI" | sed 's/^/        install log: /' || true
"${APT[@]}" install -qq pamtester >/dev/null 2>&1 || bad "apt install pamtester"

echo "-- files"
for f in /usr/sbin/biometricd /usr/bin/authctl $SECURITY/pam_biometricd.so /usr/libexec/biometricd/biometricd-password \
         /usr/lib/systemd/system/biometricd.service /usr/lib/systemd/system/biometricd.socket \
         /usr/lib/systemd/system/biometricd-password.service /usr/lib/systemd/system/biometricd-password.socket \
         /etc/pam.d/biometricd-enroll /usr/share/doc/biometricd/auth.md \
         /usr/lib/sysusers.d/biometricd.conf /usr/lib/tmpfiles.d/biometricd.conf \
         /usr/lib/udev/rules.d/70-biometricd.rules /usr/lib/udev/rules.d/71-biometricd-fido.rules \
         /usr/lib/modules-load.d/biometricd.conf /etc/biometricd/biometricd.conf /usr/share/pam-configs/biometricd \
         /usr/share/pam-configs/biometricd-recovery /usr/share/pam-configs/biometricd-keyring \
         /usr/lib/pam.d/kde-face /usr/lib/pam.d/gdm-face \
         /usr/share/man/man1/authctl.1.gz /usr/share/man/man5/biometricd.conf.5.gz \
         /usr/share/man/man8/biometricd.8.gz /usr/share/man/man8/pam_biometricd.8.gz \
         /usr/share/bash-completion/completions/authctl /usr/share/zsh/vendor-completions/_authctl \
         /usr/share/fish/vendor_completions.d/authctl.fish /usr/share/doc/biometricd/copyright \
         /usr/share/biometricd/models/SHA256SUMS; do
    check "$f" test -s "$f"
done
check "the models match their SHA256SUMS" sh -c 'cd /usr/share/biometricd/models && sha256sum --quiet -c SHA256SUMS'
check "ExecStart=/usr/sbin/biometricd" grep -qx 'ExecStart=/usr/sbin/biometricd' /usr/lib/systemd/system/biometricd.service
check "binaries run without a Swift toolchain" sh -c '/usr/sbin/biometricd --version && /usr/bin/authctl --version'
check "no library missing (ldd)" sh -c '! ldd /usr/sbin/biometricd /usr/bin/authctl $0/pam_biometricd.so | grep "not found"' "$SECURITY"
check "conffiles registered: biometricd.conf, pam.d/biometricd-enroll" sh -c '
    c=$(dpkg-query -W -f="\${Conffiles}" biometricd); echo "$c" | grep -q " /etc/biometricd/biometricd.conf " && echo "$c" | grep -q " /etc/pam.d/biometricd-enroll "'
check "the password helper is root:root 0755" sh -c '[ "$(stat -c "%U:%G %a" /usr/libexec/biometricd/biometricd-password)" = "root:root 755" ]'
check "every key in the conffile is commented out" sh -c '! grep -vE "^(#|$)" /etc/biometricd/biometricd.conf'

echo "-- users, groups, folders"
check "user biometricd (system, nologin)" sh -c 'getent passwd biometricd | grep -q ":/var/lib/biometricd:/usr/sbin/nologin$" && [ "$(id -u biometricd)" -lt 1000 ]'
check "biometricd is in video" sh -c 'id -nG biometricd | grep -qw video'
check "groups biometric-admin and biometric-login" sh -c 'getent group biometric-admin && getent group biometric-login'
check "/var/lib/biometricd 0700 biometricd" sh -c '[ "$(stat -c "%a %U %G" /var/lib/biometricd)" = "700 biometricd biometricd" ]'
check "/var/lib/biometricd/models 0755 biometricd" sh -c '[ "$(stat -c "%a %U" /var/lib/biometricd/models)" = "755 biometricd" ]'
check "/var/lib/biometricd-keyring 0700 root (the keyring secrets)" sh -c '[ "$(stat -c "%a %U" /var/lib/biometricd-keyring)" = "700 root" ]'

echo "-- systemd: socket enabled, service not, nothing started"
check "biometricd.socket enabled (sockets.target.wants)" test -L /etc/systemd/system/sockets.target.wants/biometricd.socket
check "biometricd-password.socket enabled" test -L /etc/systemd/system/sockets.target.wants/biometricd-password.socket
check "the services are not enabled" sh -c '! ls /etc/systemd/system/*.wants/biometricd.service /etc/systemd/system/*.wants/biometricd-password.service 2>/dev/null | grep -q .'
check "no biometricd process after install" sh -c '! grep -qx biometricd /proc/[0-9]*/comm'
check "nothing under /var/lib/biometricd yet (no key, no database)" sh -c '[ -z "$(ls -A /var/lib/biometricd | grep -v "^models$")" ]'

echo "-- PAM: pam-auth-update"
check "installing leaves the primary block alone (Default: no, as fprintd)" sh -c '! grep -v after_password /etc/pam.d/common-auth | grep -q pam_biometricd'
check "only the inert recovery line is added, after pam_permit (Additional)" sh -c '
    r=$(grep -n "pam_biometricd.so after_password" /etc/pam.d/common-auth | cut -d: -f1); p=$(grep -n "pam_permit.so" /etc/pam.d/common-auth | cut -d: -f1)
    [ -n "$r" ] && [ -n "$p" ] && [ "$r" -gt "$p" ] && grep -qE "^auth[[:space:]]+optional[[:space:]]+pam_biometricd.so after_password" /etc/pam.d/common-auth'
check "pam-auth-update --enable biometricd" pam-auth-update --enable biometricd
check "pam_biometricd is in common-auth, before pam_unix" sh -c '
    b=$(grep -n "pam_biometricd.so" /etc/pam.d/common-auth | grep -v after_password | cut -d: -f1); u=$(grep -n "pam_unix.so" /etc/pam.d/common-auth | cut -d: -f1)
    [ -n "$b" ] && [ -n "$u" ] && [ "$b" -lt "$u" ]'
check "its line jumps over the password on success only" grep -qE '^auth[[:space:]]+\[success=[0-9]+ default=ignore\][[:space:]]+pam_biometricd.so' /etc/pam.d/common-auth
sed -n '/^# here are the per-package modules/,/^# end of pam-auth-update config/p' /etc/pam.d/common-auth | sed 's/^/        common-auth: /'
echo "root:pw-ok" | chpasswd
printf 'auth include common-auth\naccount required pam_permit.so\n' > /etc/pam.d/bmcheck
t=$(date +%s%N)
check "daemon down: the right password succeeds through common-auth" sh -c 'echo pw-ok | pamtester bmcheck root authenticate'
check "daemon down: the password step came within 2 s" [ $(( ($(date +%s%N) - t) / 1000000 )) -lt 2000 ]
check "daemon down: a wrong password fails" sh -c '! echo pw-bad | pamtester bmcheck root authenticate'
check "libpam loads the module: alone it answers AUTHINFO_UNAVAIL (not 'module is unknown')" sh -c '
    printf "auth requisite pam_biometricd.so\nauth required pam_permit.so\n" > /etc/pam.d/bmmod
    ! pamtester bmmod root authenticate > /tmp/pm 2>&1; cat /tmp/pm; grep -q "cannot retrieve authentication info" /tmp/pm'

echo "-- the installed daemon: a first enrolment (as the service runs it: user biometricd)"
mkdir -p /run/biometricd && chown biometricd:biometricd /run/biometricd
start_daemon() {
    setpriv --reuid=biometricd --regid=biometricd --init-groups --inh-caps=-all \
        env -i PATH=/usr/bin:/bin OPENCV_OPENCL_RUNTIME=disabled /usr/sbin/biometricd \
        --camera 'replay:/srv/photos/enrol?fps=10&loop=true' --camera 'replay:/srv/photos/other?fps=10&loop=true' \
        >> /tmp/daemon.log 2>&1 &
    DPID=$!
    for _ in $(seq 300); do authctl status >/dev/null 2>&1 && return 0; kill -0 $DPID 2>/dev/null || return 1; sleep 0.2; done
    return 1
}
stop_daemon() { kill $DPID 2>/dev/null; wait $DPID 2>/dev/null; }
check "biometricd starts (default config, default socket, state and models)" start_daemon
authctl status | sed 's/^/        status: /'
check "the packaged models are all loaded" sh -c 'authctl status --json | grep -q "\"missing\":\[\]" && ! authctl status | grep -q "missing\|CORRUPT"'
check "authctl face enroll tony (replay camera of 4 photos)" authctl face enroll tony --camera replay0 --countdown 0 --frames 3
check "face verify: his enrolment photos match" authctl face verify tony --camera replay0 --no-liveness
check "face verify: someone else does not match (exit 1)" sh -c 'authctl face verify tony --camera replay1 --no-liveness; [ $? -eq 1 ]'
check "the database and the key are in /var/lib/biometricd, owned by biometricd, not readable by others" sh -c '
    [ "$(stat -c "%U %a" /var/lib/biometricd/key)" = "biometricd 600" ] && [ "$(stat -c %U /var/lib/biometricd/biometricd.sqlite)" = biometricd ]'
check "PAM with the daemon up: tony is enrolled but root is not, so root falls through to the password" sh -c 'echo pw-ok | pamtester bmcheck root authenticate'
echo "-- a user's own first enrolment: the account password through biometricd-password"
useradd -M alice && echo "alice:alice-pw" | chpasswd
mkdir -p -m 0755 /run/biometricd-password
/usr/libexec/biometricd/biometricd-password --socket /run/biometricd-password/password.sock >> /tmp/helper.log 2>&1 &
HPID=$!
for _ in $(seq 50); do [ -S /run/biometricd-password/password.sock ] && break; sleep 0.1; done
check "a wrong password is refused (exit 1), nothing enrolled" sh -c '
    echo wrong | runuser -u alice -- authctl face enroll --camera replay0 --countdown 0 --frames 3; [ $? -eq 1 ] && ! authctl face list alice | grep -q alice'
check "alice enrols her own face after her account password" sh -c '
    echo alice-pw | runuser -u alice -- authctl face enroll --camera replay0 --countdown 0 --frames 3 && authctl face list alice | grep -q alice'
check "alice may not enrol for tony" sh -c '! echo alice-pw | runuser -u alice -- authctl face enroll tony --camera replay0 --countdown 0'
kill $HPID 2>/dev/null; wait $HPID 2>/dev/null
stop_daemon

echo "-- upgrade in place (same version again: prerm upgrade, postinst configure)"
check "dpkg -i over the installed package" dpkg -i "/check/$DEB"
check "still one primary and one recovery pam_biometricd line in common-auth" [ "$(grep -c pam_biometricd.so /etc/pam.d/common-auth)" = 2 ]

echo "-- pam-auth-update --disable"
check "pam-auth-update --disable biometricd" pam-auth-update --disable biometricd
check "common-auth's primary block no longer names pam_biometricd" sh -c '! grep -v after_password /etc/pam.d/common-auth | grep -q pam_biometricd'
check "pam_unix is the first auth module again" sh -c 'grep -E "^auth" /etc/pam.d/common-auth | head -1 | grep -q pam_unix.so'
pam-auth-update --enable biometricd

echo "-- apt remove biometricd"
check "apt remove" apt-get remove -y biometricd
check "the package is removed, its conffiles kept (rc)" sh -c '[ "$(dpkg-query -W -f="\${db:Status-Abbrev}" biometricd)" = "rc " ]'
check "common-auth no longer names pam_biometricd (prerm)" sh -c '! grep -q pam_biometricd /etc/pam.d/common-auth'
check "the PAM module, binaries, helper and units are gone" sh -c '! ls /usr/sbin/biometricd /usr/bin/authctl $0/pam_biometricd.so /usr/libexec/biometricd /usr/lib/systemd/system/biometricd* 2>/dev/null | grep -q .' "$SECURITY"
check "/var/lib/biometricd kept, with the database and the key" test -s /var/lib/biometricd/biometricd.sqlite -a -s /var/lib/biometricd/key
check "the conffiles are kept" test -s /etc/biometricd/biometricd.conf -a -s /etc/pam.d/biometricd-enroll
check "login still works with the password" sh -c 'echo pw-ok | pamtester bmcheck root authenticate'

echo "-- reinstall: the templates are still there"
check "apt install ./$DEB" apt install -y -o APT::Sandbox::User=root -o Dpkg::Use-Pty=false "./$DEB"
check "pam_biometricd not re-enabled by itself after remove" sh -c '! grep -q pam_biometricd /etc/pam.d/common-auth'
check "the daemon starts on the kept state" start_daemon
check "tony's face templates survived remove + install" sh -c 'authctl face list tony | grep -q tony'
check "and still verify" authctl face verify tony --camera replay0 --no-liveness
stop_daemon

echo "-- apt purge biometricd biometricd-models"
check "apt purge" apt-get purge -y biometricd biometricd-models
check "dpkg knows neither package any more" sh -c '! dpkg-query -W -f="\${db:Status-Abbrev}\n" biometricd biometricd-models 2>/dev/null | grep -q .'
check "/var/lib/biometricd deleted" test ! -e /var/lib/biometricd
check "/etc/biometricd and /etc/pam.d/biometricd-enroll deleted" test ! -e /etc/biometricd -a ! -e /etc/pam.d/biometricd-enroll
check "/usr/share/biometricd deleted" test ! -e /usr/share/biometricd
check "the sockets' enable links are gone" sh -c '! ls /etc/systemd/system/sockets.target.wants/biometricd* 2>/dev/null | grep -q .'
check "deb-systemd-helper keeps no state of the units" sh -c '! find /var/lib/systemd/deb-systemd-helper-enabled /var/lib/systemd/deb-systemd-helper-masked -name "biometricd*" 2>/dev/null | grep -q .'
check "the biometricd user and the groups stay (Debian keeps system users)" getent passwd biometricd

echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
INSIDE
chmod 0755 "$ROOT/check/inside.sh"

log "checking in a Debian 12 chroot: $(basename "${debs[0]}") $(basename "${mdebs[0]}")"
# Private mounts and PIDs: everything mounted here, and every process started, ends with it. /dev
# has only the basic nodes (no camera of the host is visible).
rc=0
unshare --mount --pid --fork --propagation private bash -c '
    set -e
    R=$1; CACHE=$2
    mount -t proc proc "$R/proc"
    mount -t tmpfs -o mode=0755,nosuid dev "$R/dev"
    for n in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0; do
        IFS=: read -r name maj min <<< "$n"; mknod -m 0666 "$R/dev/$name" c "$maj" "$min"
    done
    mkdir -p "$R/dev/pts" "$R/dev/shm" && mount -t devpts -o newinstance,ptmxmode=0666 devpts "$R/dev/pts" \
        && ln -s pts/ptmx "$R/dev/ptmx"
    mount -t tmpfs tmpfs "$R/run"
    mount -t tmpfs tmpfs "$R/tmp"
    mount --bind "$CACHE/apt-archives" "$R/var/cache/apt/archives"
    chroot "$R" /check/inside.sh
' _ "$ROOT" "$CACHE" || rc=$?
log "done in $(( $(date +%s) - T0 )) s"
exit $rc
