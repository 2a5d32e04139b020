#!/usr/bin/env bash
# Resource-bound figures (issue 7) with the release binary: peak RSS and wall
# time of `cairn run` (/usr/bin/time) when the scripted model makes it
#   1. run a bash command printing 2 GB       (tail kept, spill file capped)
#   2. read a 1 GB file with no limit         (single line, then 1 GB of lines)
#   3. grep and glob a tree of 200,000 files  (100-result caps)
#   4. continue a session of 20,000 messages never compacted: peak RSS, wall
#      time and time to the first request (then the TUI's first frame and RSS)
# The CI versions (smaller) are tests/hardening_bounds.rs. Needs ~3.5 GB of
# free space in $TMPDIR.
#
# Usage: benches/bounds.sh [CASE...]   (cases: bash read tree session; default all)
#        SKIP_BUILD=1 reuses target/release; KEEP_WORK=1 keeps the temp dir;
#        SEED_BIN=path runs a built seed_session binary instead of cargo.
set -euo pipefail
source "$(dirname "$0")/common.sh"

CASES="${*:-bash read tree session}"
FILES="${FILES:-200000}"
MESSAGES="${MESSAGES:-20000}"

build_release
PORT="$(free_port)"
make_project "$PORT"
sed -i '1a yolo = true' "$WORK/project/cairn.toml" # tools run without asking
cd "$WORK/project"
"$BIN" trust >/dev/null # yolo in a project file applies once the project is trusted

# with_script JSON: restarts the scripted server on a script of steps.
with_script() {
    stop_server
    printf '%s\n' "$1" >"$WORK/steps.json"
    start_server "$PORT" --script "$WORK/steps.json"
}

# measure NAME ARGS...: cairn ARGS under /usr/bin/time; prints peak RSS and wall time.
measure() {
    local name="$1"
    shift
    /usr/bin/time -f "%M %e" -o "$WORK/time.$name" \
        "$BIN" "$@" >"$WORK/out.$name" 2>"$WORK/err.$name" || {
        echo "cairn $* failed ($name):" >&2
        tail -c 2000 "$WORK/err.$name" >&2
        exit 1
    }
    read -r rss wall < <(tail -n 1 "$WORK/time.$name")
    printf '%-28s peak RSS %7.1f MB   wall %6.2f s\n' "$name" "$(echo "$rss / 1024" | bc -l)" "$wall"
}

spill_size() { find "$CAIRN_DATA_DIR/tool-output" -type f -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }

for case in $CASES; do
    case "$case" in
    bash)
        echo "== 1. bash printing 2 GB"
        with_script '[{"tool": "bash", "arguments": {"command": "yes a line from a runaway command | head -c 2G; echo the-very-end", "timeout": 600000}}, {"text": "done"}]'
        measure bash-2GB run "print a lot"
        grep -q "done" "$WORK/out.bash-2GB" || { echo "no final answer" >&2; exit 1; }
        echo "   spill files: $(spill_size) bytes (cap 268435456); stdout $(wc -c <"$WORK/out.bash-2GB") bytes"
        ;;
    read)
        echo "== 2. read of a 1 GB file, no limit"
        # `yes` dies of SIGPIPE when head has enough: not a failure here.
        (set +o pipefail; head -c 1G /dev/zero | tr '\0' q >one-line.txt)
        (set +o pipefail; yes 'a line of a very large log file, read without a limit' | head -c 1G >lines.txt)
        with_script '[{"tool": "read", "arguments": {"path": "one-line.txt"}}, {"text": "done"}]'
        measure read-1GB-one-line run "read it"
        with_script '[{"tool": "read", "arguments": {"path": "lines.txt"}}, {"text": "done"}]'
        measure read-1GB-lines run "read it"
        rm -f one-line.txt lines.txt
        ;;
    tree)
        echo "== 3. grep and glob over $FILES files"
        python3 - "$FILES" <<'EOF'
import os, sys
files = int(sys.argv[1])
for n in range(files):
    d = f"tree/d{n // 100:05d}"
    if n % 100 == 0:
        os.makedirs(d, exist_ok=True)
    with open(f"{d}/f{n % 100:03d}.txt", "w") as f:
        f.write(f"first needle {n}\nnothing here\nsecond needle\n")
EOF
        with_script '[{"tool": "grep", "arguments": {"pattern": "needle"}}, {"text": "done"}]'
        measure "grep-${FILES}-files" run "find the needles"
        with_script '[{"tool": "glob", "arguments": {"pattern": "**/*.txt"}}, {"text": "done"}]'
        measure "glob-${FILES}-files" run "list the files"
        rm -rf tree
        ;;
    session)
        echo "== 4. a session of $MESSAGES messages"
        stop_server
        start_server "$PORT" --scenario chat
        if [ -n "${SEED_BIN:-}" ]; then
            seeded="$("$SEED_BIN" "$CAIRN_DATA_DIR" "$WORK/project" "$MESSAGES")"
        else
            seeded="$(cd "$ROOT" && cargo bench --quiet --bench seed_session -- "$CAIRN_DATA_DIR" "$WORK/project" "$MESSAGES")"
        fi
        echo "   seeded $seeded ($(du -b "$CAIRN_DATA_DIR/cairn.db" | cut -f 1) bytes of database)"
        started="$(date +%s.%N)"
        measure "run-session-${MESSAGES}" run --session "$seeded" "one more step"
        # The scripted server logs when each request arrives (wall clock).
        first="$(grep -m 1 'received at' "$WORK/server.log" | sed 's/.*received at //')"
        printf '   time to the first request (the summary): %.2f s\n' "$(echo "$first - $started" | bc -l)"
        python3 "$ROOT/benches/first_frame.py" --until test-model --runs 3 -- "$BIN" --session "$seeded"
        # The TUI's own peak: sample VmHWM while it shows the session for 3 s.
        if command -v tmux >/dev/null; then
            tmux kill-session -t "bounds-$$" 2>/dev/null || true
            tmux new-session -d -s "bounds-$$" -x 120 -y 40 -c "$WORK/project" \
                "exec env CAIRN_DATA_DIR='$CAIRN_DATA_DIR' XDG_CONFIG_HOME='$XDG_CONFIG_HOME' '$BIN' --session $seeded"
            pid="$(tmux list-panes -t "bounds-$$" -F '#{pane_pid}')"
            sleep 3
            echo "   TUI with $MESSAGES messages: RSS $(awk '$1 == "VmRSS:" { print $2 }' "/proc/$pid/status") kB, peak $(awk '$1 == "VmHWM:" { print $2 }' "/proc/$pid/status") kB"
            tmux kill-session -t "bounds-$$"
        fi
        ;;
    *)
        echo "unknown case $case (bash read tree session)" >&2
        exit 1
        ;;
    esac
done
