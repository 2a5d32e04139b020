#!/usr/bin/env bash
# Long-session figures (issue 18) with the release binary: for sessions of
# 1,000, 5,000, 20,000 and 100,000 messages written through the store's own
# write path (benches/seed_session.rs), compacted as they went (a completed
# compaction point 100 messages before the end) or never compacted:
#   1. TUI first frame: spawn -> status line drawn, 120x40 pty (median of 3)
#   2. TUI RSS 3 s after opening (VmRSS) and its peak so far (VmHWM)
#
# Usage: benches/long_session.sh [SIZES...]   (default: 1000 5000 20000 100000;
#        SKIP_BUILD=1 reuses target/release; KINDS="compacted never" by default;
#        SEED_BIN=path runs a built seed_session binary instead of cargo)
set -euo pipefail
source "$(dirname "$0")/common.sh"

SIZES="${*:-1000 5000 20000 100000}"
KINDS="${KINDS:-compacted never}"
SESSION="cairn-long-$$"
LABEL="test-model"

kill_tmux() { tmux kill-session -t "$SESSION" 2>/dev/null || true; }
trap 'kill_tmux; cleanup' EXIT

rss_kb() { awk -v key="$2:" '$1 == key { print $2 }' "/proc/$1/status"; }

build_release
if [ -z "${SEED_BIN:-}" ]; then
    (cd "$ROOT" && cargo bench --quiet --bench seed_session --no-run 2>/dev/null) || true
fi
PORT="$(free_port)"
make_project "$PORT"
start_server "$PORT" --scenario chat

for kind in $KINDS; do
    for size in $SIZES; do
        data="$WORK/data-$kind-$size"
        mkdir -p "$data"
        arg=""
        if [ "$kind" = compacted ]; then arg=compacted; fi
        if [ -n "${SEED_BIN:-}" ]; then
            seeded="$("$SEED_BIN" "$data" "$WORK/project" "$size" $arg 2>/dev/null)"
        else
            seeded="$(cd "$ROOT" && cargo bench --quiet --bench seed_session -- "$data" "$WORK/project" "$size" $arg 2>/dev/null)"
        fi
        echo "== $size messages, $kind"
        (cd "$WORK/project" && CAIRN_DATA_DIR="$data" python3 "$ROOT/benches/first_frame.py" \
            --until "$LABEL" --runs 3 -- "$BIN" --session "$seeded")
        kill_tmux
        tmux new-session -d -s "$SESSION" -x 120 -y 40 -c "$WORK/project" \
            "exec env CAIRN_DATA_DIR='$data' XDG_CONFIG_HOME='$XDG_CONFIG_HOME' '$BIN' --session $seeded"
        pid="$(tmux list-panes -t "$SESSION" -F '#{pane_pid}')"
        sleep 3
        echo "RSS 3 s after opening: $(rss_kb "$pid" VmRSS) kB, peak $(rss_kb "$pid" VmHWM) kB"
        kill_tmux
    done
done
