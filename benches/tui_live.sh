#!/usr/bin/env bash
# TUI figures (issue 6) with the release binary against the scripted server:
#   1. first frame: spawn -> status line drawn, in a 120x40 pty (median of 5)
#   2. idle CPU over 10 s in tmux (target < 0.5% of a core)
#   3. CPU while streaming 200 tokens/s over 10 s (target < 10% of a core)
#   4. RSS and first frame with a 5,000-message session open (target < 80 MB)
#
# Usage: benches/tui_live.sh   (SKIP_BUILD=1 reuses target/release;
#        KEEP_WORK=1 keeps the temp dir with screen captures and logs;
#        SEED_BIN=path runs a built seed_session binary instead of cargo)
set -euo pipefail
source "$(dirname "$0")/common.sh"

SESSION="cairn-bench-$$"
LABEL="test-model" # the status line shows provider/model
WINDOW=10          # seconds of each CPU window
TICKS="$(getconf CLK_TCK)"

kill_tmux() { tmux kill-session -t "$SESSION" 2>/dev/null || true; }
trap 'kill_tmux; cleanup' EXIT

# user+sys CPU ticks of a process, its exited threads included
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
rss_kb() { awk -v key="$2:" '$1 == key { print $2 }' "/proc/$1/status"; }

# percent of one core used by PID over WINDOW seconds
cpu_percent() {
    local pid="$1" before after
    before="$(cpu_ticks "$pid")"
    sleep "$WINDOW"
    after="$(cpu_ticks "$pid")"
    echo "scale=2; ($after - $before) * 100 / ($TICKS * $WINDOW)" | bc -l
}

# start_tui ARGS...: the TUI in a detached 120x40 tmux pane; prints its pid
start_tui() {
    kill_tmux
    tmux new-session -d -s "$SESSION" -x 120 -y 40 -c "$WORK/project" \
        "exec env CAIRN_DATA_DIR='$CAIRN_DATA_DIR' XDG_CONFIG_HOME='$XDG_CONFIG_HOME' '$BIN' $*"
    tmux list-panes -t "$SESSION" -F '#{pane_pid}'
}

wait_for_screen() {
    local text="$1"
    for _ in $(seq 200); do
        if tmux capture-pane -p -t "$SESSION" 2>/dev/null | grep -qF "$text"; then return 0; fi
        sleep 0.05
    done
    echo "the TUI never showed '$text'; screen:" >&2
    tmux capture-pane -p -t "$SESSION" >&2 || true
    return 1
}

build_release
PORT="$(free_port)"
make_project "$PORT"
cd "$WORK/project"

if "$BIN" </dev/null 2>&1 | grep -q "not built yet"; then
    echo "this build of cairn has no TUI yet (\`cairn\` prints 'not built yet'): nothing to measure" >&2
    exit 2
fi

start_server "$PORT" --scenario chat
echo "== 1. first frame (spawn -> '$LABEL' on screen, 120x40 pty)"
python3 "$ROOT/benches/first_frame.py" --until "$LABEL" --runs 5 -- "$BIN"

echo
echo "== 2. idle CPU over ${WINDOW} s"
pid="$(start_tui)"
wait_for_screen "$LABEL"
sleep 1
echo "idle: $(cpu_percent "$pid")% of a core (target < 0.5%), RSS $(rss_kb "$pid" VmRSS) kB"
tmux send-keys -t "$SESSION" -l "what does the gauge count?"
tmux send-keys -t "$SESSION" Enter
wait_for_screen "You asked"
tmux capture-pane -p -t "$SESSION" >"$WORK/screen-chat.txt"
sleep 2
echo "idle after one answer: $(cpu_percent "$pid")% of a core"
kill_tmux
stop_server

echo
echo "== 3. CPU while streaming 200 tokens/s"
start_server "$PORT" --scenario tokens 4000 --rate 200
pid="$(start_tui)"
wait_for_screen "$LABEL"
tmux send-keys -t "$SESSION" -l "stream a long answer"
tmux send-keys -t "$SESSION" Enter
sleep 3 # the stream runs 20 s: measure in its middle
echo "streaming: $(cpu_percent "$pid")% of a core (target < 10%), RSS $(rss_kb "$pid" VmRSS) kB"
tmux capture-pane -p -t "$SESSION" >"$WORK/screen-stream.txt"
kill_tmux
stop_server

echo
echo "== 4. a 5,000-message session open"
start_server "$PORT" --scenario chat
if [ -n "${SEED_BIN:-}" ]; then # a built seed_session binary, to skip cargo
    seeded="$("$SEED_BIN" "$CAIRN_DATA_DIR" "$WORK/project" 5000)"
else
    seeded="$(cd "$ROOT" && cargo bench --quiet --bench seed_session -- "$CAIRN_DATA_DIR" "$WORK/project" 5000)"
fi
echo "seeded session $seeded"
python3 "$ROOT/benches/first_frame.py" --until "$LABEL" --runs 3 -- "$BIN" --session "$seeded"
pid="$(start_tui --session "$seeded")"
wait_for_screen "$LABEL"
sleep 2
echo "5,000 messages: RSS $(rss_kb "$pid" VmRSS) kB, peak $(rss_kb "$pid" VmHWM) kB (target < 80 MB)"
echo "idle with 5,000 messages: $(cpu_percent "$pid")% of a core"
tmux capture-pane -p -t "$SESSION" >"$WORK/screen-large.txt"
kill_tmux

if [ -n "${KEEP_WORK:-}" ]; then echo "screens and logs kept in $WORK"; fi
