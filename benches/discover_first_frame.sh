#!/bin/bash
# What the search for local model servers (issue 16) costs the TUI: time to first frame
# with a configured model (no search / nothing listens / one server answers) and, with
# nothing configured, until the first-run screen and until the search result is on it.
# Release binary: `cargo build --release`, then `benches/discover_first_frame.sh` (RUNS=10).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${BIN:-$HERE/../target/release/cairn}
FF=$HERE/first_frame.py
PORT=8771
W=$(mktemp -d)
mkdir -p $W/proj/.git $W/bare/.git $W/data $W/config
python3 $HERE/scripted_server.py --port $PORT --scenario chat >/dev/null 2>&1 &
SRV=$!
sleep 1
cat > $W/proj/cairn.toml <<TOML
model = "scripted/test-model"
[provider.scripted]
wire = "openai"
base_url = "http://127.0.0.1:$PORT/v1"
[provider.scripted.models."test-model"]
context = 200000
TOML
export CAIRN_DATA_DIR=$W/data XDG_CONFIG_HOME=$W/config
unset ANTHROPIC_API_KEY OPENAI_API_KEY OPENROUTER_API_KEY CAIRN_MODEL
RUNS=${RUNS:-10}
cd $W/proj
echo "== configured session, no search (CAIRN_LOCAL_SERVERS='')"
CAIRN_LOCAL_SERVERS= python3 $FF --until scripted/test-model --runs $RUNS -- $BIN | tail -1
echo "== configured session, search of the 4 default ports, nothing listens"
env -u CAIRN_LOCAL_SERVERS python3 $FF --until scripted/test-model --runs $RUNS -- $BIN | tail -1
echo "== configured session, one server answers (llama-server shaped)"
CAIRN_LOCAL_SERVERS=llamacpp=http://127.0.0.1:$PORT python3 $FF --until scripted/test-model --runs $RUNS -- $BIN | tail -1
cd $W/bare
echo "== nothing configured: first frame of the first-run screen, default ports, nothing listens"
env -u CAIRN_LOCAL_SERVERS python3 $FF --until "Welcome to cairn" --runs $RUNS -- $BIN | tail -1
echo "== nothing configured: until the search result is on screen, nothing listens"
env -u CAIRN_LOCAL_SERVERS python3 $FF --until "answered (" --runs $RUNS -- $BIN | tail -1
echo "== nothing configured: until the found server is on screen, one answers"
CAIRN_LOCAL_SERVERS=llamacpp=http://127.0.0.1:$PORT python3 $FF --until "cairn found local model servers" --runs $RUNS -- $BIN | tail -1
kill $SRV
rm -rf $W
