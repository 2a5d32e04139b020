#!/bin/bash
# What MCP servers cost the TUI's start (issue 16): time to first frame with no server
# configured and with three (two answering at once, one taking 5 s to start), each an
# rmcp server (examples/mcp_fixture.rs) over stdio, configured in the user's config file.
# Release binaries: `cargo build --release --bin cairn --example mcp_fixture`, then
# `benches/mcp_first_frame.sh` (RUNS=10).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${BIN:-$HERE/../target/release/cairn}
FIXTURE=${FIXTURE:-$HERE/../target/release/examples/mcp_fixture}
FF=$HERE/first_frame.py
PORT=8772
W=$(mktemp -d)
mkdir -p $W/proj/.git $W/data $W/config/cairn
python3 $HERE/scripted_server.py --port $PORT --scenario chat >/dev/null 2>&1 &
SRV=$!
sleep 1
cat > $W/config/cairn/config.toml <<TOML
model = "scripted/test-model"
[provider.scripted]
wire = "openai"
base_url = "http://127.0.0.1:$PORT/v1"
[provider.scripted.models."test-model"]
context = 200000
TOML
cp $W/config/cairn/config.toml $W/none.toml
cat > $W/three.toml <<TOML
$(cat $W/none.toml)
[mcp.one]
command = "$FIXTURE"
[mcp.two]
command = "$FIXTURE"
[mcp.slow]
command = "$FIXTURE"
args = ["--start-delay-ms", "5000"]
TOML
export CAIRN_DATA_DIR=$W/data XDG_CONFIG_HOME=$W/config CAIRN_LOCAL_SERVERS=
unset ANTHROPIC_API_KEY OPENAI_API_KEY OPENROUTER_API_KEY CAIRN_MODEL
RUNS=${RUNS:-10}
cd $W/proj
for round in 1 2; do
  cp $W/none.toml $W/config/cairn/config.toml
  echo "== round $round: no MCP server"
  python3 $FF --until scripted/test-model --runs $RUNS -- $BIN | tail -1
  cp $W/three.toml $W/config/cairn/config.toml
  echo "== round $round: three MCP servers, one starting in 5 s"
  python3 $FF --until scripted/test-model --runs $RUNS -- $BIN | tail -1
done
kill $SRV
rm -rf $W
