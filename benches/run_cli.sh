#!/usr/bin/env bash
# `cairn run` figures (issue 4): CPU time (user + sys) and peak RSS of one
# headless run that streams a 20,000-token answer from the scripted server,
# median of 5 runs (targets: CPU < 0.3 s, RSS < 30 MB), and `cairn --version`
# start-up time with hyperfine (target < 10 ms).
#
# Usage: benches/run_cli.sh [RUNS] [TOKENS]   (SKIP_BUILD=1 reuses target/release)
set -euo pipefail
source "$(dirname "$0")/common.sh"

RUNS="${1:-5}"
TOKENS="${2:-20000}"

build_release
PORT="$(free_port)"
make_project "$PORT"
start_server "$PORT" --scenario tokens "$TOKENS"
cd "$WORK/project"

printf '%-4s %8s %8s %8s %10s\n' run user_s sys_s cpu_s peak_rss_kb
for run in $(seq "$RUNS"); do
    /usr/bin/time -f "%U %S %M" -o "$WORK/time.$run" \
        "$BIN" run "stream a long answer" >"$WORK/out.$run" 2>"$WORK/err.$run" || {
        echo "cairn run failed (run $run):" >&2
        cat "$WORK/err.$run" >&2
        exit 1
    }
    read -r user sys rss < <(tail -n 1 "$WORK/time.$run")
    cpu="$(echo "$user + $sys" | bc -l)"
    echo "$cpu" >>"$WORK/cpu"
    echo "$rss" >>"$WORK/rss"
    printf '%-4s %8s %8s %8.2f %10s\n' "$run" "$user" "$sys" "$cpu" "$rss"
done

# The answer must really have arrived: the server sends TOKENS words.
words="$(wc -w <"$WORK/out.1")"
if [ "$words" -lt "$((TOKENS * 9 / 10))" ]; then
    echo "the answer printed only $words words of $TOKENS tokens; stdout:" >&2
    head -c 2000 "$WORK/out.1" >&2
    exit 1
fi

cpu_median="$(median <"$WORK/cpu")"
rss_median="$(median <"$WORK/rss")"
echo
echo "cairn run, $TOKENS-token answer, median of $RUNS runs:"
printf '  CPU (user+sys): %.3f s   (target < 0.3 s)\n' "$cpu_median"
printf '  peak RSS:       %.1f MB  (target < 30 MB)\n' "$(echo "$rss_median / 1024" | bc -l)"
echo "  answer printed: $words words"

stop_server
if command -v hyperfine >/dev/null; then
    echo
    hyperfine --warmup 5 --runs 50 --shell=none --export-json "$WORK/version.json" \
        "$BIN --version" >/dev/null
    python3 - "$WORK/version.json" <<'EOF'
import json, sys
result = json.load(open(sys.argv[1]))["results"][0]
print(f"cairn --version: mean {result['mean'] * 1000:.2f} ms ± {result['stddev'] * 1000:.2f} ms, "
      f"min {result['min'] * 1000:.2f} ms (target < 10 ms)")
EOF
else
    echo "hyperfine is not installed: skipping the --version figure" >&2
fi
