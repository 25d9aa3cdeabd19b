#!/bin/bash
# The desktop scenario's session command (Tests/system/guest/desktop.sh): greetd's agreety starts
# it as alice after her login on tty1, so it runs inside her real logind session (local, active,
# seat0, tty1) — what sudo, pkexec, a screen locker and secret-tool see on a desktop. It runs the
# commands the root side hands it: /run/systest-agent/cmd-N (a bash script) once cmd-N.ready
# exists; output in out-N, exit status in rc-N; "stop" ends the session. (/run/systest-agent is
# 1777 and "stop" is root's: this agent cannot remove it, the root side does once "started" is
# gone.)
A=/run/systest-agent
export DBUS_SESSION_BUS_ADDRESS=${DBUS_SESSION_BUS_ADDRESS:-unix:path=${XDG_RUNTIME_DIR:-/run/user/$(id -u)}/bus}
{
    echo "user=$(id -un) uid=$(id -u) session=${XDG_SESSION_ID:-none} tty=$(tty) vt=${XDG_VTNR:-?}"
    env | grep -E '^(XDG_|DBUS_|GNOME_KEYRING|SSH_AUTH_SOCK)' | sort
} > "$A/started.tmp" 2>&1
mv "$A/started.tmp" "$A/started"
n=0
while :; do
    if [ -e "$A/cmd-$n.ready" ]; then
        bash "$A/cmd-$n" > "$A/out-$n" 2>&1 < /dev/null
        echo $? > "$A/rc-$n.tmp"
        mv "$A/rc-$n.tmp" "$A/rc-$n"
        n=$((n + 1))
    elif [ -e "$A/stop" ]; then
        rm -f "$A/stop" "$A/started"
        exit 0
    else
        sleep 0.2
    fi
done
