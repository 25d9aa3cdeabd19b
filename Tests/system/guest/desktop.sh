#!/bin/bash
# The system test's desktop scenario, guest side (issue 36; Tests/system/run.sh --scenario
# desktop copies it to the 9p share; systest.service runs it after multi-user.target). One boot:
#   the PAM files exactly as Debian's packages ship them (gdm3, sddm, lightdm, swaylock extracted;
#   greetd, login, sudo, su, polkit-1 installed), pam-auth-update's profile enabled;
#   per service: a remote session, the daemon stopped, the password typed at the intent prompt,
#   a face (pamtester), another face;
#   a real greetd with agreety on tty1: alice logs in by password (another face), stores a secret
#   in her login keyring and seals her password (authctl keyring enable); then by face: the
#   keyring opens (secret-tool in her session), pkexec through polkit's agent helper, sudo with
#   the intent prompt and the password beside the camera, su, swaylock's service, kde-face's
#   "the face must arrive after the lock";
#   the lid closed (a uinput switch logind watches), a dark camera, a suspend and resume through
#   logind, then the first login by face.
# Each check appends "PASS|FAIL|SKIP name seconds detail" to /mnt/systest/results.txt.
# (no set -e / -u: one failing check must not stop the others)
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive
S=/mnt/systest
RESULTS=$S/results.txt NUMBERS=$S/numbers.txt
PHASE=$(cat $S/state)
. $S/env.sh   # VERSION, UPV, ONLY (SYSTEST_ONLY)
# The runner reads itself from a copy in /run: around the suspend (c_resume) the share is
# unmounted, and bash reads a script as it goes.
RUNNER=/run/systest-desktop.sh
if [ "$0" != $RUNNER ]; then cp "$0" $RUNNER && exec /bin/bash $RUNNER; fi
exec >> $S/guest-$PHASE.log 2>&1
CAP=/dev/video0 OUTDEV=/dev/video1
A=/run/systest-agent
PW=alice-pw-1 SECRET=s3cr3t-36-keyring
# Services whose stack holds a password module, those that are face only, those run as the user.
# (su is not here: as root, pam_rootok passes before the module; alice's own su is in her session)
PASSWORD_SERVICES="login greetd lightdm gdm-password sddm sudo polkit-1 swaylock kde"
FACE_ONLY="gdm-face kde-face"
INTENT_SERVICES="gdm-password sddm sudo polkit-1 swaylock kde"
CHECK_PREFIX=$PHASE-
. $S/common.sh   # now, elapsed, log, number, check, json_field, camera_setup, feed

camera_setup || log "camera: cannot set up $CAP (the face checks will fail)"

# ---- PAM through pamtester (root, a login process on tty1 unless said) --------------------------
pt() {  # pt NAME SERVICE USER INPUT [pamtester options] -> RC, PT (s), OUT (one line)
    local name=$1 svc=$2 user=$3 input=$4 t; shift 4
    t=$(now)
    printf "$input" | timeout -k 5 280 pamtester -v "$@" "$svc" "$user" authenticate > $S/$PHASE-$name.out 2>&1; RC=$?
    PT=$(elapsed "$t")
    OUT=$(tr '\n' ' ' < $S/$PHASE-$name.out | cut -c1-300)
    log "pamtester $svc $user ($name) -> $RC in ${PT}s: $OUT"
}
ptyrun() {  # ptyrun NAME [ptyrun.py args] -- command: in a new pseudo-terminal -> RC, PTY (the JSON)
    local name=$1; shift
    timeout -k 5 300 python3 $S/ptyrun.py "$@" > $S/$PHASE-$name.json 2>&1; RC=$?
    PTY=$(cat $S/$PHASE-$name.json)
    log "ptyrun ($name) -> $RC: $(cut -c1-400 <<< "$PTY")"
}
pty_field() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$S/$PHASE-$1.json" "$2" 2>/dev/null; }
since() { date +%s; }
jsince() { journalctl -q -o cat --no-pager --since "@$1" 2>/dev/null; }

# ---- alice's session (greetd + agreety on tty1; session-agent.sh runs the commands) ------------
AGENT_N=0
agent() {  # agent NAME LIMIT SCRIPT -> RC, AOUT
    local name=$1 limit=$2 n=$AGENT_N t
    AGENT_N=$((AGENT_N + 1))
    printf '%s\n' "$3" > $A/cmd-$n
    chmod 644 $A/cmd-$n
    touch $A/cmd-$n.ready
    t=$(now)
    while [ ! -e $A/rc-$n ]; do
        if ! lt "$(elapsed "$t")" "$limit"; then RC=124; AOUT="(no answer from the session in ${limit}s)"; log "agent $name: timeout"; return; fi
        sleep 0.3
    done
    RC=$(cat $A/rc-$n); AOUT=$(cat $A/out-$n); cp $A/out-$n $S/$PHASE-$name.agent.out
    log "agent ($name) -> $RC: $(tr '\n' ' ' <<< "$AOUT" | cut -c1-400)"
}
typeon() { python3 $S/typeon.py /dev/tty1 "$1"; }
screen() { fold -w 80 /dev/vcs1 2>/dev/null | sed 's/ *$//' | grep -v '^$'; }
wait_for() {  # wait_for LIMIT COMMAND...: until COMMAND succeeds -> 0, or 1 after LIMIT s
    local limit=$1 t; shift; t=$(now)
    until "$@"; do lt "$(elapsed "$t")" "$limit" || return 1; sleep 0.5; done
}
screen_has() { screen | tail -6 | grep -qF -- "$1"; }
# The daemon back and ready, as after a boot with biometricd.service enabled, long before anyone
# types a name: socket-activated by `authctl status`, then its face models loaded. Under TCG the
# load takes ~35 s with both vCPUs busy, and a PAM attempt in that window gets no first answer
# within the module's 2 s (full run 5: `reason=no_answer`, "Password:" at once, no camera).
daemon_ready() {
    local s0; s0=$(since)
    systemctl start biometricd.socket
    timeout 120 authctl status > /dev/null 2>&1
    wait_for 240 sh -c "journalctl -q -o cat --no-pager -u biometricd.service --since @$s0 | grep -q 'face models loaded'" ||
        log "daemon_ready: no 'face models loaded' in the journal after 240 s"
}
session_up() { [ -e $A/started ]; }
end_session() {
    touch $A/stop
    wait_for 30 sh -c "[ ! -e $A/started ]"
    # root's, in a sticky folder: the agent (alice) cannot remove it, and a stop left behind
    # ended the next session's agent at once (the first runs' "no session by face")
    rm -f $A/stop
    loginctl terminate-user alice 2>/dev/null
    wait_for 60 sh -c '! pgrep -u alice >/dev/null'
    rm -f $A/cmd-* $A/out-* $A/rc-*
    AGENT_N=0
}

GUEST_T0=$(now)
log "desktop phase $PHASE, kernel $(uname -r), uptime $(cut -d' ' -f1 /proc/uptime)s"
number "desktop: runner started $(cut -d' ' -f1 /proc/uptime) s after boot ($(systemd-analyze 2>/dev/null | head -1))"
install -d -m 1777 $A
T_START=$(since)

# =================================================================================================
c_setup() {
    local t st pr
    t=$(now)
    timeout 200 authctl status --json > $S/$PHASE-status.out 2>&1
    st=$(json_field $S/$PHASE-status.out 'd.get("store",{}).get("state")'); pr=$(json_field $S/$PHASE-status.out 'd.get("store",{}).get("protection")')
    # alice's face: two templates made on the host from the enrolment photos with this package's
    # daemon (face.extract), added by root (face.add) — the camera enrolment is the base scenario's.
    local added=0 tpl
    for tpl in $(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))))' $S/alice-templates.json); do
        python3 $S/rpc.py face.add "{\"user\":\"alice\",\"template\":\"$tpl\"}" > $S/$PHASE-add.out 2>&1 && added=$((added + 1))
    done
    timeout 60 authctl auth policy set alice face --no-liveness > $S/$PHASE-policy.out 2>&1; local rp=$?
    DETAIL="first authctl status in $(elapsed "$t")s: store $st/$pr; alice's templates added: $added; policy face without liveness (stills): exit $rp"
    [ "$st" = open ] && [ "$pr" = tpm2 ] && [ $added = 2 ] && [ $rp = 0 ]
}
check setup-daemon-templates c_setup

c_enable() {
    # Under TCG one face attempt takes 20-100 s: the profile's line gets timeout=120, and the
    # face-only services (vendor files, no common-auth) a copy in /etc/pam.d with timeout=300
    # (kde-face must outlast the "face must arrive" wait). Only when systemd-detect-virt says qemu.
    local tcg=""
    if [ "$(systemd-detect-virt)" = qemu ]; then
        sed -i 's/pam_biometricd\.so$/pam_biometricd.so timeout=120/' /usr/share/pam-configs/biometricd
        for f in $FACE_ONLY; do sed 's/pam_biometricd\.so$/pam_biometricd.so timeout=300/' /usr/lib/pam.d/$f > /etc/pam.d/$f; done
        tcg=" (TCG: timeout=120 on the profile's line, 300 for the face-only services)"
    fi
    pam-auth-update --enable biometricd > $S/$PHASE-pam-auth-update.out 2>&1
    local auth pw
    auth=$(grep -E '^auth' /etc/pam.d/common-auth | tr '\t' ' ' | tr -s ' ' | paste -sd';')
    pw=$(grep -E '^password' /etc/pam.d/common-password | tr '\t' ' ' | tr -s ' ' | paste -sd';')
    DETAIL="pam-auth-update --enable biometricd$tcg; common-auth: $auth; common-password: $pw"
    grep -v after_password /etc/pam.d/common-auth | grep -q 'pam_biometricd.so' && grep -q 'pam_biometricd.so' /etc/pam.d/common-password \
        && grep -q 'timeout=300' /etc/pam.d/kde-face
}
check pam-auth-update-enable c_enable

c_shipped() {
    # The PAM files of gdm3, sddm, lightdm, swaylock (extracted from their .debs), greetd, login,
    # sudo, util-linux (su), polkitd and libpam-runtime: byte for byte as the packages ship them.
    local out; out=$(cd / && sha256sum -c $S/pam-shipped.sha256 2>&1)
    DETAIL="sha256 of the packages' PAM files in the image: $(grep -c ': OK$' <<< "$out") OK, $(grep -vc ': OK$' <<< "$out") not: $(grep -v ': OK$' <<< "$out" | head -3)"
    ! grep -qv ': OK$' <<< "$out" && [ "$(grep -c ': OK$' <<< "$out")" -ge 12 ]
}
check pam-files-as-debian-ships-them c_shipped

c_doctor() {
    SUDO_USER=alice timeout 120 authctl doctor --json > $S/$PHASE-doctor.out 2>&1
    local desk; desk=$(python3 -c 'import json,sys
d=json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
print("; ".join("%s %s %s%s" % (f["code"], f["subject"] or "", f["message"][:90], (" FIX: " + f["fix"]) if f["fix"] and f["severity"] != "ok" else "")
                for f in d["findings"] if f["code"].startswith("desktop.")))' $S/$PHASE-doctor.out 2>&1)
    DETAIL="authctl doctor (root, for alice): $desk"
    grep -q 'desktop.found [^;]*greetd' <<< "$desk" && grep -q 'desktop.wired greetd' <<< "$desk" && grep -q 'desktop.wired sudo' <<< "$desk" \
        && grep -q 'desktop.wired polkit-1' <<< "$desk" && grep -q 'desktop.wired login' <<< "$desk" && grep -q 'desktop.keyring_not_set' <<< "$desk"
}
check doctor-names-the-desktop c_doctor

# ---- every service: remote session, daemon stopped, the password at the intent prompt ---------
c_remote() {
    local s0 svc fails="" n
    s0=$(since)
    for svc in $PASSWORD_SERVICES $FACE_ONLY; do
        pt remote-$svc $svc alice "$PW\n" -I rhost=192.0.2.7 -I tty=tty1
        case " $FACE_ONLY " in
            *" $svc "*) [ $RC != 0 ] || fails="$fails $svc(face-only passed)" ;;
            *) [ $RC = 0 ] || fails="$fails $svc(rc $RC)"; grep -q 'use your face' $S/$PHASE-remote-$svc.out && fails="$fails $svc(intent shown)" ;;
        esac
    done
    n=$(jsince $s0 | grep -c 'outcome=skipped reason=remote_session')
    DETAIL="PAM_RHOST=192.0.2.7 on 11 services: the module skipped $n of 11 (reason=remote_session), no intent prompt, the password works, face-only services refuse; problems:${fails:- none}"
    [ -z "$fails" ] && [ "$n" -ge 11 ]
}
check every-service-remote-session-password c_remote

c_intent_password() {
    local s0 svc fails=""
    s0=$(since)
    feed tony-same
    for svc in $INTENT_SERVICES; do
        pt intent-$svc $svc alice "$PW\n" -I tty=tty1
        [ $RC = 0 ] && grep -q '(or press Enter to use your face)' $S/$PHASE-intent-$svc.out && ! grep -q '^Password:' $S/$PHASE-intent-$svc.out \
            || fails="$fails $svc(rc $RC)"
        lt "$PT" 5 || fails="$fails $svc(${PT}s)"
    done
    local typed faces
    typed=$(jsince $s0 | grep -c 'reason=typed_at_intent_prompt'); faces=$(jsince $s0 | grep -c 'face.verify alice')
    DETAIL="the password typed at the intent prompt of ${INTENT_SERVICES// /, }: $typed handed on as PAM_AUTHTOK (asked once), camera runs: $faces; problems:${fails:- none}"
    [ -z "$fails" ] && [ "$typed" -ge 6 ] && [ "$faces" = 0 ]
}
check intent-prompt-takes-the-password c_intent_password

c_stopped() {
    local svc fails="" worst=0
    systemctl stop biometricd.socket biometricd.service
    for svc in $PASSWORD_SERVICES $FACE_ONLY; do
        pt stopped-$svc $svc alice "$PW\n" -I tty=tty1
        case " $FACE_ONLY " in
            *" $svc "*) [ $RC != 0 ] || fails="$fails $svc(passed)" ;;
            *) [ $RC = 0 ] && ! grep -q 'use your face' $S/$PHASE-stopped-$svc.out || fails="$fails $svc(rc $RC)" ;;
        esac
        lt "$PT" 2.5 || fails="$fails $svc(${PT}s)"
        lt "$worst" "$PT" && worst=$PT
    done
    systemctl start biometricd.socket
    DETAIL="daemon and socket stopped: 11 services, the password at once (slowest ${worst}s), no intent prompt, face-only services refuse; problems:${fails:- none}"
    number "desktop: every service with the daemon stopped: password after at most ${worst} s"
    [ -z "$fails" ]
}
check every-service-daemon-stopped-password c_stopped

# ---- faces through the services (pamtester as the login process) -------------------------------
daemon_ready
c_login_pty() {
    feed tony-same
    ptyrun login-face --limit 280 --step "expect=Password (or look at the camera): " --step "expect=successfully authenticated" -- \
        pamtester -v -I tty=tty1 login alice authenticate
    local prompt ok
    prompt=$(pty_field login-face 'd["matched"][0]["at"]'); ok=$(pty_field login-face 'd["matched"][1]["at"]')
    DETAIL="login in a terminal, alice's face on the camera: the password prompt beside the camera after ${prompt}s, success after ${ok}s; $(pty_field login-face 'd["output"]' | tr '\n' ' ' | cut -c1-300)"
    number "desktop: login on a terminal: password prompt after ${prompt} s, face success after ${ok} s (TCG)"
    [ $RC = 0 ] && lt "$prompt" 2
}
check login-terminal-face-beside-password c_login_pty

c_login_typing() {
    local s0; s0=$(since)
    feed tony-same
    ptyrun login-typing --limit 120 --step "expect=Password (or look at the camera): " --step "sleep=2" --step "send=$PW\r" \
        --step "expect=successfully authenticated" -- pamtester -v -I tty=tty1 login alice authenticate
    local ok; ok=$(pty_field login-typing 'd["matched"][1]["at"]')
    local j; j=$(jsince $s0)
    DETAIL="login in a terminal, the password typed 2 s into the camera: success after ${ok}s; module: $(grep -o 'outcome=stopped reason=password_typed[^ ]*' <<< "$j" | head -1); $(grep -c 'typed_at_camera_prompt' <<< "$j") password handed on; daemon: $(grep -iE 'cancel' <<< "$j" | head -1 | cut -c1-120)"
    [ $RC = 0 ] && grep -q 'reason=password_typed' <<< "$j" && lt "$ok" 20
}
check login-typing-stops-the-camera c_login_typing

c_greeters() {
    local svc input fails="" times=""
    feed tony-same
    for svc in lightdm gdm-password sddm gdm-face; do
        input=""; case $svc in gdm-password|sddm) input='\n' ;; esac
        pt face-$svc $svc alice "$input" -I tty=tty1
        [ $RC = 0 ] && grep -q 'successfully authenticated' $S/$PHASE-face-$svc.out && ! grep -q '^Password:' $S/$PHASE-face-$svc.out || fails="$fails $svc(rc $RC)"
        times="$times $svc ${PT}s"
    done
    DETAIL="alice's face through pamtester (a greeter's stack, as root on tty1): lightdm (camera at once), gdm-password and sddm (Enter on the empty password), gdm-face (face only):$times; problems:${fails:- none}"
    number "desktop: face success per greeter service (TCG):$times"
    [ -z "$fails" ]
}
check greeter-services-face c_greeters

c_other_face() {
    feed other
    pt other-sddm sddm alice "\n$PW\n" -I tty=tty1
    DETAIL="another face on sddm (Enter for the face): $OUT"
    [ $RC = 0 ] && grep -q 'Face not recognised' $S/$PHASE-other-sddm.out && grep -q 'Password:' $S/$PHASE-other-sddm.out
}
check sddm-another-face-then-password c_other_face

# ---- a real greetd with agreety on tty1 ---------------------------------------------------------
c_greetd_password() {
    # alice's first login ever, as before she set up biometricd (the daemon stopped: the password
    # at once): greetd's pam_gnome_keyring creates her login keyring with her password. gnome-keyring
    # 42 (Debian 12) does not put a login keyring it created on the Secret Service until its daemon
    # starts again (the first runs: login.keyring on disk, secret-tool "Object does not exist at
    # path /org/freedesktop/secrets/collection/login"; in the next session it is there, unlocked):
    # on a desktop a person's keyring exists long before they enable the face for it.
    systemctl stop biometricd.socket biometricd.service
    systemctl start greetd
    wait_for 60 screen_has "login:" || { DETAIL="agreety did not show its login prompt: $(screen | tail -5)"; systemctl start biometricd.socket; return 1; }
    typeon 'alice\r'
    wait_for 30 screen_has "Password:" && typeon "$PW\r"
    wait_for 90 session_up || { DETAIL="no session at alice's first login (daemon stopped): $(screen | tail -6 | tr '\n' '|')"; systemctl start biometricd.socket; return 1; }
    agent first 30 "ls ~/.local/share/keyrings"
    local first=$AOUT
    end_session
    daemon_ready
    feed other
    wait_for 60 screen_has "login:" || { DETAIL="agreety did not show its login prompt again: $(screen | tail -5)"; return 1; }
    typeon 'alice\r'
    wait_for 240 screen_has "Face not recognised" && wait_for 20 screen_has "Password:" \
        || { DETAIL="no password prompt after another face: $(screen | tail -6 | tr '\n' '|')"; return 1; }
    local seen; seen=$(screen | tail -8 | tr '\n' '|')
    typeon "$PW\r"
    wait_for 90 session_up || { DETAIL="no session after the password: $(screen | tail -6 | tr '\n' '|')"; return 1; }
    local sid props
    sid=$(loginctl list-sessions --no-legend | awk '$3 == "alice" { print $1 }' | head -1)
    props=$(loginctl show-session "$sid" -p Service -p Seat -p Active -p Remote -p TTY -p Type 2>/dev/null | tr '\n' ' ')
    # The login keyring as a desktop gets it: greetd's stack (pam_gnome_keyring: the password
    # stashed in auth, the daemon started and the keyring unlocked, or created, in
    # open_session) made it; an application stores a secret through the Secret Service on the
    # session bus (the default collection, which is the login keyring), as secret-tool does.
    agent store 90 "printf '%s' '$SECRET' | secret-tool store --label=systest service systest account alice && secret-tool lookup service systest account alice"
    local r1=$RC o1=$AOUT
    agent where 60 "busctl --user call org.freedesktop.secrets /org/freedesktop/secrets/collection/login org.freedesktop.Secret.Collection SearchItems 'a{ss}' 2 service systest account alice 2>&1; busctl --user get-property org.freedesktop.secrets /org/freedesktop/secrets/collection/login org.freedesktop.Secret.Collection Locked 2>&1; busctl --user status org.freedesktop.secrets 2>&1 | grep -E '^(PID|CommandLine)='; ls ~/.local/share/keyrings 2>&1 | tr '\\n' ' '"
    local where=$AOUT
    agent seal 90 "printf '%s\n' '$PW' | authctl keyring enable && authctl keyring status"
    DETAIL="alice's first login (daemon stopped, the password): keyrings: $(tr '\n' ' ' <<< "$first"); greetd/agreety on tty1, another face: '$seen'; password login: session $sid ($props); in it: secret stored, read back '$o1' (exit $r1); where: $(tr '\n' ' ' <<< "$where"); authctl keyring enable: exit $RC: $(tr '\n' ' ' <<< "$AOUT")"
    grep -q 'login.keyring' <<< "$first" && grep -q 'Face not recognised' <<< "$seen" \
        && [ $r1 = 0 ] && [ "$o1" = "$SECRET" ] && grep -q '^ao 1 "/org/freedesktop/secrets/collection/login/' <<< "$where" && grep -q '^b false' <<< "$where" && [ $RC = 0 ] && grep -q 'Active=yes' <<< "$props" && grep -q 'Remote=no' <<< "$props" \
        && grep -q 'Seat=seat0' <<< "$props" && grep -q 'Service=greetd' <<< "$props" && grep -q 'sealed' <<< "$AOUT"
}
check greetd-another-face-password-login-keyring-sealed c_greetd_password
end_session

c_doctor_keyring() {
    SUDO_USER=alice timeout 120 authctl doctor --json > $S/$PHASE-doctor2.out 2>&1
    DETAIL="authctl doctor after authctl keyring enable: $(grep -o '"code":"desktop.keyring[a-z_]*"[^}]*' $S/$PHASE-doctor2.out | head -1 | cut -c1-200); sealed file: $(stat -c '%U %a %s bytes' /var/lib/biometricd-keyring/$(id -u alice).cred 2>&1)"
    grep -q '"code":"desktop.keyring_ready"' $S/$PHASE-doctor2.out && [ "$(stat -c '%U %a' /var/lib/biometricd-keyring/$(id -u alice).cred)" = "root 600" ]
}
check doctor-keyring-ready c_doctor_keyring

GREETD_FACE=0
c_greetd_face() {
    local s0 t; s0=$(since); t=$(now)
    feed tony-same
    wait_for 60 screen_has "login:" || { DETAIL="no login prompt: $(screen | tail -4 | tr '\n' '|')"; return 1; }
    rm -f $A/stop
    typeon 'alice\r'
    wait_for 280 session_up || { DETAIL="no session by face: $(screen | tail -6 | tr '\n' '|')"; return 1; }
    local took; took=$(elapsed "$t")
    local j; j=$(jsince $s0)
    DETAIL="greetd/agreety on tty1, alice's face: session after ${took}s, no password typed; screen: $(screen | tail -5 | tr '\n' '|' | cut -c1-200); module: $(grep -o 'keyring: login password handed[^)]*)' <<< "$j" | head -1)"
    number "desktop: greetd + agreety login by face (TCG): ${took} s from the user name to the session"
    GREETD_FACE=1
    ! screen | tail -6 | grep -q 'Password:' && grep -q 'keyring: login password handed to the stack' <<< "$j"
}
check greetd-agreety-login-by-face c_greetd_face

in_session() { [ $GREETD_FACE = 1 ] && session_up || { DETAIL="no face-login session"; return 1; }; }
c_keyring() {
    in_session || return 1
    agent lookup 60 'secret-tool lookup service systest account alice; echo; busctl --user get-property org.freedesktop.secrets /org/freedesktop/secrets/collection/login org.freedesktop.Secret.Collection Locked 2>&1'
    DETAIL="in alice's face-login session (gnome-keyring-daemon started by pam_gnome_keyring): secret-tool lookup: exit $RC '$(tr '\n' ' ' <<< "$AOUT")'"
    [ $RC = 0 ] && grep -q "^$SECRET" <<< "$AOUT" && grep -q 'b false' <<< "$AOUT"
}
check keyring-unlocked-by-the-face-login c_keyring

c_pkexec() {
    in_session || return 1
    feed tony-same
    # The agent is pkttyagent, registered for the shell that runs pkexec, as a desktop's own agent
    # (GNOME Shell's, polkit-kde-agent) would be. pkexec's built-in text agent cannot finish on
    # Debian 12: polkit 122 records that agent under the caller's uid, root (pkexec is setuid),
    # while polkit-agent-helper-1 answers as the user, so polkitd finds "No session for cookie"
    # whatever PAM said (the first runs: the face matched, then that error; polkit gitlab issue
    # 17, fixed in polkit 125 by commit 716a273).
    agent pkexec 300 "python3 $S/ptyrun.py --limit 280 --step 'expect=(or press Enter to use your face): ' --step 'send=\r' -- sh -c 'd=\$(mktemp -d); mkfifo \$d/ready; pkttyagent --process \$\$ --notify-fd 5 5>\$d/ready & cat \$d/ready; pkexec --disable-internal-agent /usr/bin/id -u; r=\$?; kill \$! 2>/dev/null; rm -r \$d; exit \$r'"
    # (pkttyagent colours its banners: the escapes go, "0" must stand on a line of its own)
    local out; out=$(python3 -c 'import json,re,sys; d=json.loads(sys.stdin.read().strip().splitlines()[-1]); print(d["exit"], d["all_matched"], re.sub(r"\x1b\[[0-9;]*m", "", d["output"]).replace("\r","").replace("\n","|"))' <<< "$AOUT" 2>&1)
    DETAIL="alice runs pkexec in her session (pkttyagent, polkit-agent-helper-1, service polkit-1): Enter at the prompt, her face: $out"
    grep -q '^0 True ' <<< "$out" && grep -q 'AUTHENTICATION COMPLETE' <<< "$out" && grep -q '|0|' <<< "$out|"
}
check pkexec-polkit-agent-helper-intent-face c_pkexec

c_sudo() {
    in_session || return 1
    feed tony-same
    agent sudo 300 "sudo -k; python3 $S/ptyrun.py --limit 280 --step 'expect=[sudo] password for alice (or press Enter to use your face): ' --step 'send=\r' --step 'expect=[sudo] password for alice (or look at the camera): ' -- sudo id -u"
    local out; out=$(python3 -c 'import json,sys; d=json.loads(sys.stdin.read().strip().splitlines()[-1]); print(d["exit"], d["all_matched"], d["output"].replace("\r","").replace("\n","|"))' <<< "$AOUT" 2>&1)
    DETAIL="alice runs sudo in her session: the intent prompt, Enter, then the camera with the password prompt beside it: $out"
    grep -q '^0 True ' <<< "$out" && grep -q '|0|' <<< "$out|"
}
check sudo-intent-then-face c_sudo

c_sudo_typing() {
    in_session || return 1
    feed other
    agent sudo-typing 120 "sudo -k; python3 $S/ptyrun.py --limit 100 --step 'expect=(or press Enter to use your face): ' --step 'send=\r' --step 'expect=(or look at the camera): ' --step 'sleep=1' --step 'send=$PW\r' -- sudo id -u"
    local out; out=$(python3 -c 'import json,sys; d=json.loads(sys.stdin.read().strip().splitlines()[-1]); print(d["exit"], d["all_matched"], d["total"], d["output"].replace("\r","").replace("\n","|"))' <<< "$AOUT" 2>&1)
    DETAIL="sudo: Enter, then the password typed while the camera runs (another face in view): $out"
    grep -q '^0 True ' <<< "$out" && grep -q '|0|' <<< "$out|" && ! grep -q "$PW" <<< "$out"
}
check sudo-password-typed-beside-the-camera c_sudo_typing

c_su() {
    in_session || return 1
    agent su 60 "python3 $S/ptyrun.py --limit 50 --step 'expect=Password (or press Enter to use your face): ' --step 'send=$PW\r' -- su alice -c 'id -un'"
    local out; out=$(python3 -c 'import json,sys; d=json.loads(sys.stdin.read().strip().splitlines()[-1]); print(d["exit"], d["all_matched"], d["output"].replace("\r","").replace("\n","|"))' <<< "$AOUT" 2>&1)
    DETAIL="su alice by alice in her session: the password typed at the intent prompt: $out"
    grep -q '^0 True ' <<< "$out" && grep -q '|alice|' <<< "$out|"
}
check su-intent-prompt-password c_su

c_swaylock() {
    in_session || return 1
    feed tony-same
    agent swaylock 300 "printf '\n' | pamtester -v swaylock alice authenticate"
    DETAIL="swaylock's service as alice in her session (Enter on the empty password, her face): exit $RC $(tr '\n' ' ' <<< "$AOUT" | cut -c1-250)"
    [ $RC = 0 ] && grep -q 'successfully authenticated' <<< "$AOUT"
}
check swaylock-service-face c_swaylock

c_arrival() {
    # KDE's face service starts when the screen locks, while alice still sits in front of it:
    # that face must not unlock it (#1007). It must arrive: nobody in view, then the face.
    in_session || return 1
    feed tony-same
    rm -f $A/kde.rc
    agent kde-start 20 "nohup sh -c 'timeout 320 pamtester -v kde-face alice authenticate > $A/kde.out 2>&1; echo \$? > $A/kde.rc' > /dev/null 2>&1 &"
    sleep 60
    local early=""; [ -e $A/kde.rc ] && early="ended early: $(cat $A/kde.rc) $(tr '\n' ' ' < $A/kde.out)"
    feed grey || { DETAIL="kde-face: cannot show the wall while the camera streams"; return 1; }
    # nobody in view long enough for the daemon to judge two empty frames: under TCG on a busy
    # host a frame takes 10-20 s (the first run's 25 s gave one, so the face never "arrived")
    sleep 60
    feed tony-same || { DETAIL="kde-face: cannot show the face again while the camera streams"; return 1; }
    local t; t=$(now)
    wait_for 230 test -e $A/kde.rc
    local back; back=$(elapsed "$t")
    DETAIL="kde-face (as alice, in her session; require_arrival by the module's table): alice's face in view for 60 s: ${early:-not unlocked}; nobody for 60 s, then her face: exit $(cat $A/kde.rc 2>/dev/null) after ${back}s; $(tr '\n' ' ' < $A/kde.out 2>/dev/null | cut -c1-200)"
    number "desktop: kde-face, the face arriving after the lock: success ${back} s after it came back (TCG)"
    [ -z "$early" ] && [ "$(cat $A/kde.rc 2>/dev/null)" = 0 ]
}
check kde-face-needs-a-face-that-arrives c_arrival
end_session
systemctl stop greetd

# ---- the lid, a dark camera, suspend and resume (through logind) -----------------------------
c_lid() {
    modprobe uinput 2>/dev/null
    mkfifo /run/lidswitch 2>/dev/null
    install -m 0755 $S/lidswitch /tmp/lidswitch
    /tmp/lidswitch /run/lidswitch 2>> $S/lidswitch.log &
    LIDPID=$!
    sleep 2
    exec 7> /run/lidswitch
    echo close >&7
    wait_for 20 sh -c 'busctl get-property org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.login1.Manager LidClosed | grep -q true' \
        || { DETAIL="logind does not see the lid closed: $(busctl get-property org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.login1.Manager LidClosed 2>&1)"; return 1; }
    local s0; s0=$(since)
    feed tony-same
    pt lid-closed greetd alice "$PW\n" -I tty=tty1
    local r=$RC p=$PT j; j=$(jsince $s0)
    echo open >&7
    wait_for 20 sh -c 'busctl get-property org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.login1.Manager LidClosed | grep -q false'
    local lid_after; lid_after=$(busctl get-property org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.login1.Manager LidClosed 2>&1)
    exec 7>&-
    kill $LIDPID 2>/dev/null; wait $LIDPID 2>/dev/null  # (its log is on the share: c_resume unmounts it)
    DETAIL="the lid closed (uinput switch; logind LidClosed=true), alice's face on the camera: greetd's stack asked the password after ${p}s (exit $r); daemon: $(grep -o 'the lid is closed[^(]*' <<< "$j" | head -1); lid open again: $lid_after"
    number "desktop: lid closed: the password after ${p} s, no camera (TCG)"
    [ $r = 0 ] && lt "$p" 4 && grep -q 'the lid is closed' <<< "$j"
}
check lid-closed-skips-the-camera c_lid

c_dark() {
    local s0; s0=$(since)
    feed black
    pt dark greetd alice "$PW\n" -I tty=tty1
    local j; j=$(jsince $s0)
    DETAIL="a black camera (covered): greetd's stack asked the password after ${PT}s (timeout=120), exit $RC; module: $(grep -o 'outcome=unavailable factor=face reason=[a-z_]*' <<< "$j" | head -1)"
    number "desktop: a covered camera: the password after ${PT} s instead of the 120 s time-out (TCG)"
    [ $RC = 0 ] && lt "$PT" 60 && grep -q 'reason=bad_quality' <<< "$j"
}
check dark-camera-skipped-at-once c_dark

c_resume() {
    # The share is 9p over virtio, and a resume resets every virtio device (virtio's restore)
    # while 9pnet_virtio has no restore of its own: its queue is gone after any system sleep and
    # every later request on the share waits for ever (the first runs hung right after the
    # wake-up). So nothing may hold the share across the sleep: this script runs from its copy in
    # /run, its output and the camera writer's log go to /run, the share is unmounted and its
    # transport unloaded; after the resume both are loaded and mounted again.
    local s0 t share_log=$S/guest-$PHASE.log local_log=/run/systest-resume.log; s0=$(since)
    WRITER_LOG=/run/systest-writer.log
    exec >> $local_log 2>&1
    feed tony-same
    # The host waits until QMP says the VM is suspended, then presses its wake button (QMP
    # system_wakeup, as a key or the lid would) 5 s later.
    touch $S/suspend-request; sync
    local held; held=$(find /proc/[0-9]*/fd -lname '/mnt/systest*' 2>/dev/null | head -5 | tr '\n' ' ')
    if ! umount /mnt/systest; then
        exec >> $share_log 2>&1; cat $local_log
        DETAIL="the share could not be unmounted before the suspend (open: ${held:-none}): not suspended"
        return 1
    fi
    modprobe -r 9pnet_virtio
    t=$(now)
    systemctl suspend
    # the runner itself is frozen while the machine sleeps
    wait_for 180 sh -c "journalctl -q -o cat --since @$s0 | grep -q 'resumed from sleep'"
    local slept; slept=$(elapsed "$t")
    modprobe 9pnet_virtio && mount /mnt/systest && timeout -k 2 20 touch $S/.back
    local back=$?
    if [ $back != 0 ]; then
        # no share: the result goes to the disk, which the host reads after the power-off
        echo "FAIL $PHASE-resume-then-face-at-first-login $(elapsed "$t") the share (9p) did not come back after the resume (exit $back); guest log: $local_log" >> /var/lib/systest-results.txt
        sync; systemctl poweroff; sleep 600
    fi
    exec >> $share_log 2>&1
    cat $local_log; cat /run/systest-writer.log >> $S/writer.log 2>/dev/null
    WRITER_LOG=$S/writer.log
    local j; j=$(jsince $s0)
    local s1; s1=$(since)
    pt resume greetd alice "" -I tty=tty1
    # the module's own word that the face passed (greetd's stack goes on to pam_kwallet5, which
    # prompts "Password:" itself when no keyring password was handed on)
    local face; face=$(jsince $s1 | grep -o 'pam_biometricd(greetd:auth): user=alice outcome=[a-z]* factor=[a-z]*' | head -1)
    DETAIL="systemctl suspend (logind; S3, woken by the host over QMP): back after ${slept}s (share unmounted around it); logind/kernel: $(grep -E 'PM: suspend (entry|exit)|The system will suspend|System returned from sleep' <<< "$j" | tr '\n' '|' | cut -c1-200); daemon: $(grep -E 'going to sleep|resumed from sleep' <<< "$j" | tr '\n' '|' | cut -c1-250); first login by face after the resume: exit $RC in ${PT}s, module: $face; $OUT"
    number "desktop: first face login after a resume (TCG): ${PT} s"
    [ $RC = 0 ] && grep -q 'successfully authenticated' $S/$PHASE-resume.out && grep -q 'outcome=success factor=face' <<< "$face" \
        && grep -q 'resumed from sleep' <<< "$j" && grep -q 'going to sleep' <<< "$j" && grep -q 'PM: suspend exit' <<< "$j"
}
check resume-then-face-at-first-login c_resume
stop_feed

c_journal() {
    journalctl --no-pager -o cat > /tmp/journal.txt 2>/dev/null
    local found=""
    grep -qF "$PW" /tmp/journal.txt && found="$found password"
    grep -qF "$SECRET" /tmp/journal.txt && found="$found keyring-secret"
    DETAIL="journalctl ($(wc -l < /tmp/journal.txt) lines) searched for alice's password and her keyring secret: found: ${found:-nothing}"
    [ -z "$found" ]
}
check journal-no-password c_journal

journalctl -b --no-pager -o short-monotonic > $S/$PHASE-journal.txt 2>&1
log "desktop phase done after $(elapsed "$GUEST_T0")s: poweroff"
echo done > $S/state; sync
systemctl poweroff
