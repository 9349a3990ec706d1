#!/usr/bin/env bash
# `ptadvise run` and signals, end to end with a real Python program under the torch backend: INT, TERM,
# HUP and USR1 sent to ptadvise reach the program; a ptadvise killed with SIGKILL leaves no orphan (the
# program gets SIGTERM); a signal ptadvise was started with ignored (`nohup`, `trap '' SIG`) stays
# ignored in the program; an --out nobody can write into is refused before the program starts.
set -u
source "$(dirname "$0")/torch_run_setup.sh"
# Waits up to 60 s until file $1 has at least $2 lines.
wait_lines() {
  for _ in $(seq 1200); do
    [[ -f $1 && $(wc -l <"$1") -ge $2 ]] && return 0
    sleep 0.05
  done
  fail "timed out waiting for $2 lines in $1"
}
# Background jobs get their own process group (job control) and keep SIGINT: only ptadvise is signalled.
set -m

# 1. Each signal sent to ptadvise alone reaches the program once; it exits 40 + the signals it saw.
cat >"$work/forwarded.py" <<'PY'
import signal, sys, time
log, ready = sys.argv[1], sys.argv[2]
seen = []
def note(number, frame):
    seen.append(signal.Signals(number).name)
    with open(log, "a") as out:
        out.write(signal.Signals(number).name + "\n")
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1):
    signal.signal(s, note)
open(ready, "w").close()
deadline = time.time() + 60
while len(seen) < 4 and time.time() < deadline:
    time.sleep(0.01)
time.sleep(0.3)  # a signal delivered twice would show up here
sys.exit(40 + len(seen))
PY
"$ptadvise" run --out "$work/out1" --capture torch -- "$python" "$work/forwarded.py" "$work/log1" "$work/ready1" \
  2>"$work/stderr1" &
pid=$!
wait_lines "$work/ready1" 0
count=0
for sig in INT TERM HUP USR1; do
  kill -s "$sig" "$pid"
  count=$((count + 1))
  wait_lines "$work/log1" $count
done
wait "$pid"
code=$?
[[ $code -eq 44 ]] || fail "the program saw $((code - 40)) of 4 signals (exit $code): $(tr '\n' ' ' <"$work/log1")"
[[ $(tr '\n' ' ' <"$work/log1") == "SIGINT SIGTERM SIGHUP SIGUSR1 " ]] || fail "signals seen: $(cat "$work/log1")"

# 2. ptadvise killed outright: the program gets SIGTERM instead of running on unobserved.
cat >"$work/orphan.py" <<'PY'
import os, signal, sys, time
log, ready = sys.argv[1], sys.argv[2]
def note(number, frame):
    with open(log, "a") as out:
        out.write("%s %d\n" % (signal.Signals(number).name, os.getpid()))
    sys.exit(0)
signal.signal(signal.SIGTERM, note)
open(ready, "w").close()
time.sleep(60)
sys.exit(9)
PY
"$ptadvise" run --out "$work/out2" --capture torch -- "$python" "$work/orphan.py" "$work/log2" "$work/ready2" \
  2>"$work/stderr2" &
pid=$!
wait_lines "$work/ready2" 0
kill -KILL "$pid"
wait "$pid" 2>/dev/null
wait_lines "$work/log2" 1
grep -q "^SIGTERM " "$work/log2" || fail "the orphaned program did not get SIGTERM: $(cat "$work/log2")"

# 3. Ignored when ptadvise starts: ignored in the program (it signals itself, then exits 5).
nohup "$ptadvise" run --out "$work/out3" --capture torch -- "$python" -c \
  "import os, signal, sys; os.kill(os.getpid(), signal.SIGHUP); sys.exit(5)" >"$work/stdout3" 2>"$work/stderr3"
code=$?
[[ $code -eq 5 ]] || fail "under nohup, a program sending itself SIGHUP gave $code, expected 5"
(trap '' USR1; exec "$ptadvise" run --out "$work/out4" --capture torch -- "$python" -c \
  "import os, signal, sys; os.kill(os.getpid(), signal.SIGUSR1); sys.exit(6)" 2>"$work/stderr4")
code=$?
[[ $code -eq 6 ]] || fail "with SIGUSR1 ignored, a program sending itself SIGUSR1 gave $code, expected 6"

# 4. An --out nobody can write into (sysfs, root included): exit 2, one line, and the program never runs.
"$ptadvise" run --out /sys/kernel --capture torch -- "$python" -c "open('$work/started', 'w')" 2>"$work/stderr5"
code=$?
[[ $code -eq 2 ]] || fail "an unwritable --out gave $code, expected 2"
[[ $(wc -l <"$work/stderr5") -eq 1 ]] || fail "an unwritable --out printed more than one line"
grep -q "^ptadvise: error: cannot write into the output directory '/sys/kernel': " "$work/stderr5" ||
  fail "unexpected message: $(cat "$work/stderr5")"
[[ ! -e $work/started ]] || fail "the program ran although --out was unwritable"
echo "ok: INT, TERM, HUP, USR1 forwarded once each; SIGTERM to the orphan; ignored signals stay ignored; unwritable --out refused"
