#!/bin/sh
# hardening_signals.sh - a command interrupted in its write phase (issue 31, item 7)
# leaves neither temporary files nor a changed output.  The write phase is made to
# block deterministically: oqc starts stopped (so its pid is known), a FIFO is put
# where it will create its temporary, and opening that FIFO for writing blocks until
# the signal comes.  The handler must remove every temporary (the FIFO included) and
# every file already written, then oqc dies of the signal.
. tests/cli/lib.sh
. tests/cli/xmlmodel.inc

m=models/tiny/conv_basic.onnx
npy_f32 "2, 3, 8, 8" "$TMP/c.npy"
echo previous >"$TMP/prev"

# interrupted SIG NAME TEMPLATE CMD ARGS...: TEMPLATE is the temporary's path with PID
# for the pid (FIFOs are made for each path of it, space separated)
interrupted() {
    sig=$1 name=$2 tmpl=$3
    shift 3
    sh -c 'kill -STOP $$; exec "$@"' sh "$OQC" "$@" >"$TMP/log" 2>&1 &
    pid=$!
    # wait until it has stopped
    for i in $(seq 1 100); do
        [ "$(ps -o stat= -p $pid 2>/dev/null | cut -c1)" = T ] && break
        sleep 0.05
    done
    for p in $tmpl; do mkfifo "$(echo "$p" | sed "s/PID/$pid/g")"; done
    kill -CONT $pid
    # wait until it blocks opening one of the FIFOs (its write phase).  Only the FIFOs
    # count: an earlier temporary of the same command open for writing (compile writes
    # several files) is not the write the signal must interrupt.
    fifos=$(for p in $tmpl; do echo "$p" | sed "s/PID/$pid/g"; done)
    blocked=
    for i in $(seq 1 400); do
        if grep -q fifo_open "/proc/$pid/wchan" 2>/dev/null ||
           ls -l "/proc/$pid/fd" 2>/dev/null | grep -qF "$fifos"; then
            blocked=1; break
        fi
        case "$(cat /proc/$pid/wchan 2>/dev/null)" in *fifo*|pipe_wait*|wait_for_partner*) blocked=1; break ;; esac
        sleep 0.05
    done
    [ -n "$blocked" ] || echo "(did not see it block: $(cat /proc/$pid/wchan 2>/dev/null))"
    kill -$sig $pid
    wait $pid; st=$?
    [ $st -gt 128 ] && ok "$name: died of SIG$sig (exit $st)" || fail "$name: exit $st: $(cat "$TMP/log")"
    left=$(find "$TMP" -name "*tmp$pid*" -o -name "*part$pid*" | head -3)
    [ -z "$left" ] && ok "$name: no temporaries left" || fail "$name: left $left"
}
cp "$TMP/prev" "$TMP/out.onnx"
interrupted INT "export-qdq" "$TMP/out.onnx.tmpPID" export-qdq "$m" --calib "$TMP/c.npy" -o "$TMP/out.onnx"
cmp -s "$TMP/out.onnx" "$TMP/prev" && ok "export-qdq: previous output kept" || fail "export-qdq: output changed"
cp "$TMP/prev" "$TMP/t.cache"; cp "$TMP/prev" "$TMP/r.html"
interrupted INT "calibrate (table)" "$TMP/t.cache.partPID.tmpPID" calibrate "$m" --data "$TMP/c.npy" -o "$TMP/t.cache" --report "$TMP/r.html"
cmp -s "$TMP/t.cache" "$TMP/prev" && cmp -s "$TMP/r.html" "$TMP/prev" && ok "calibrate: table and report kept" ||
    fail "calibrate: outputs changed"
interrupted TERM "calibrate (report)" "$TMP/r.html.partPID.tmpPID" calibrate "$m" --data "$TMP/c.npy" -o "$TMP/t.cache" --report "$TMP/r.html"
cmp -s "$TMP/t.cache" "$TMP/prev" && cmp -s "$TMP/r.html" "$TMP/prev" && ok "calibrate: table kept when the report is interrupted" ||
    fail "calibrate: outputs changed (report interrupted)"
cp "$TMP/prev" "$TMP/d.txt"
interrupted HUP "dump" "$TMP/d.txt.tmpPID" dump "$m" -o "$TMP/d.txt"
cmp -s "$TMP/d.txt" "$TMP/prev" && ok "dump: previous output kept" || fail "dump: output changed"
interrupted INT "dump --format xml (side data)" "$TMP/x.xml.data.tmpPID" dump "$m" --format xml -o "$TMP/x.xml"
[ ! -e "$TMP/x.xml" ] && [ ! -e "$TMP/x.xml.data" ] && ok "dump xml: nothing written" || fail "dump xml: output written"
cp "$TMP/prev" "$TMP/y.npy"
interrupted INT "run" "$TMP/y.npy.tmpPID" run "$m" --input "$TMP/c.npy" -o "$TMP/y.npy" -q
cmp -s "$TMP/y.npy" "$TMP/prev" && ok "run: previous output kept" || fail "run: output changed"
# compile: its files are written to temporaries one after the other; the FIFO is
# the model's C file, written after the runtime, weights, header and makefile
mkdir -p "$TMP/new/out"
interrupted INT "compile" "$TMP/new/out/.conv_basic.c.tmpPID" compile "$m" --precision fp32 -o "$TMP/new/out"
left=$(find "$TMP/new/out" -type f 2>/dev/null | head -3)
[ -z "$left" ] && ok "compile: no file left in OUTDIR" || fail "compile: left $left"
finish
