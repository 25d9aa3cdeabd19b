# Helpers of both guest runners, phases.sh (the base scenario) and desktop.sh: Tests/system/run.sh
# copies this file to the 9p share beside them. Sourced once the runner has set S (the share),
# RESULTS, NUMBERS, PHASE, CHECK_PREFIX (what each result's name starts with) and CAP/OUTDEV.
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }
log() { echo "[$(cut -d' ' -f1 /proc/uptime)] $*"; }
number() { echo "$*" >> $NUMBERS; log "NUMBER $*"; }

# check NAME FUNCTION: the function sets DETAIL and returns 0 pass, 1 fail, 2 skip.
check() {
    local name=$1 fn=$2 t rc status=PASS
    # SYSTEST_ONLY (run.sh): a rerun of some checks; the others are not run and not reported
    [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $name "* ]] || return 0
    t=$(now); DETAIL=""
    log "=== $name"
    $fn; rc=$?
    [ $rc -eq 1 ] && status=FAIL; [ $rc -eq 2 ] && status=SKIP; [ $rc -gt 2 ] && status=FAIL
    DETAIL=$(tr '\n' ' ' <<< "$DETAIL" | cut -c1-700)
    echo "$status $CHECK_PREFIX$name $(elapsed "$t") $DETAIL" >> $RESULTS
    log "=== $status $name: $DETAIL"
    sync
}

json_field() {  # json_field FILE PYTHON-EXPR-ON-d (last JSON line of FILE)
    python3 -c 'import json,sys
lines=[l for l in open(sys.argv[1]) if l.strip().startswith("{")]
d=json.loads(lines[-1]) if lines else {}
try: v=eval(sys.argv[2])
except Exception: v=None
print("" if v is None else (json.dumps(v) if isinstance(v,(dict,list,bool)) else v))' "$1" "$2"
}

# ---- the camera: frames written to video1 come back on video0 (as Tests/hil) --------------------
# The capture side (HDMI input, loop, 640x480 YUYV) is set once, before any check: a feed changed
# while the daemon streams it (kde-face's wall, then the face) must leave it alone, as vivid
# refuses a new input or format on a busy queue (EBUSY).
camera_setup() {
    v4l2-ctl -d $CAP -i 3 >/dev/null && v4l2-ctl -d $CAP --set-dv-bt-timings index=0 >/dev/null &&
        v4l2-ctl -d $CAP -v width=640,height=480,pixelformat=YUYV >/dev/null &&
        v4l2-ctl -d $CAP -c loop_video=1,osd_text_mode=2 >/dev/null
}
WRITER="" WRITER_LOG=$S/writer.log
feed() {  # feed NAME [HOLD]: what the camera shows from now on (also while it is streaming)
    local file=/tmp/frames/$1.YUYV
    [ -f "$file" ] || { mkdir -p /tmp/frames; cp "$S/frames/$1.YUYV" "$file"; }
    stop_feed
    v4l2-ctl -d $OUTDEV -o 1 >/dev/null && v4l2-ctl -d $OUTDEV --set-dv-bt-timings index=0 >/dev/null || return 1
    [ -x /tmp/vout ] || install -m 0755 $S/vout /tmp/vout
    /tmp/vout $OUTDEV "$file" 640 480 YUYV "${2:-1}" >> $WRITER_LOG 2>&1 &
    WRITER=$!
    sleep 0.5
    kill -0 $WRITER 2>/dev/null
}
stop_feed() { [ -n "$WRITER" ] && { kill $WRITER 2>/dev/null; wait $WRITER 2>/dev/null; }; WRITER=""; }
