#!/usr/bin/env bash
# The first answer word in `cairn acp` and in the TUI against the same
# scripted server (issue #33), and `cairn acp`'s RSS idle and in a turn.
# Usage: benches/first_token.sh [RUNS]   (SKIP_BUILD=1 reuses target/release)
set -euo pipefail
source "$(dirname "$0")/common.sh"

build_release
PORT="$(free_port)"
make_project "$PORT"
start_server "$PORT" --scenario chat --rate 2000
cd "$WORK/project"
python3 "$ROOT/benches/first_token.py" --runs "${1:-5}" -- "$BIN"
