# Shared by the benches/*.sh scripts (sourced, not run): a temp project wired
# to the scripted server, the server's start and stop, and small statistics.
# It never touches the user's real config or data: everything lives in $WORK.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${BIN:-$ROOT/target/release/cairn}" # BIN=path runs another build
WORK="$(mktemp -d "${TMPDIR:-/tmp}/cairn-bench.XXXXXX")"
SERVER_PID=""

cleanup() {
    if [ -n "$SERVER_PID" ]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    if [ -z "${KEEP_WORK:-}" ]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT

build_release() {
    if [ -z "${SKIP_BUILD:-}" ]; then
        (cd "$ROOT" && cargo build --release --quiet)
    fi
    [ -x "$BIN" ] || { echo "no release binary at $BIN" >&2; exit 1; }
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# A project, data dir and config home; exports what the binary reads.
make_project() {
    local port="$1"
    mkdir -p "$WORK/project/.git" "$WORK/data" "$WORK/config"
    cat > "$WORK/project/cairn.toml" <<EOF
model = "scripted/test-model"
[provider.scripted]
wire = "openai"
base_url = "http://127.0.0.1:$port/v1"
[provider.scripted.models."test-model"]
context = 200000
output = 32000
EOF
    export CAIRN_DATA_DIR="$WORK/data"
    export XDG_CONFIG_HOME="$WORK/config"
}

# start_server PORT ARGS...: runs the scripted server until the script exits.
start_server() {
    local port="$1"
    shift
    python3 "$ROOT/benches/scripted_server.py" --port "$port" "$@" 2>"$WORK/server.log" &
    SERVER_PID=$!
    for _ in $(seq 50); do
        if curl -fs "http://127.0.0.1:$port/props" >/dev/null 2>&1; then return 0; fi
        sleep 0.1
    done
    echo "the scripted server did not start; its log:" >&2
    cat "$WORK/server.log" >&2
    exit 1
}

stop_server() {
    if [ -n "$SERVER_PID" ]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=""
    fi
}

# median of the numbers on stdin
median() {
    sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
