#!/usr/bin/env python3
"""The first answer word in an editor (`cairn acp`) and in the TUI, against
the same scripted server (issue #33's figure: ACP within 10 ms of the TUI).

ACP, over raw JSON-RPC on the pipes: `initialize` -> the first
`agent_message_chunk` of a prompt (with `session/new` in between), and
`session/prompt` -> that chunk; RSS of `cairn acp` idle (after
`session/new`) and at the first chunk. TUI, in a fresh 120x40 pty (the
terminal queries answered as `first_frame.py` does): Enter -> the answer's
first words on screen. Standard library only; run through
`benches/first_token.sh`, which starts the server and the project.

    python3 benches/first_token.py --runs 5 --answer "asked" -- target/release/cairn
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from first_frame import ESCAPES, QUERIES, spawn, stop  # noqa: E402


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return float("nan")


def acp_once(binary):
    """(initialize -> first chunk ms, prompt -> first chunk ms, idle MiB, turn MiB)."""
    child = subprocess.Popen([binary, "acp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, bufsize=1)

    def send(message):
        child.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        child.stdin.flush()

    def until(wanted):
        while True:
            line = child.stdout.readline()
            if not line:
                raise SystemExit("cairn acp closed its output")
            message = json.loads(line)
            if wanted(message):
                return message

    try:
        started = time.perf_counter()
        send({"id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}})
        until(lambda m: m.get("id") == 1)
        send({"id": 2, "method": "session/new", "params": {"cwd": os.getcwd(), "mcpServers": []}})
        session = until(lambda m: m.get("id") == 2)["result"]["sessionId"]
        setup = time.perf_counter() - started
        idle = rss_mib(child.pid)
        prompted = time.perf_counter()
        send({"id": 3, "method": "session/prompt",
              "params": {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}})
        until(lambda m: m.get("params", {}).get("update", {}).get("sessionUpdate") == "agent_message_chunk")
        first = time.perf_counter() - prompted
        turn = rss_mib(child.pid)
        until(lambda m: m.get("id") == 3)
        return (setup + first) * 1000, first * 1000, idle, turn
    finally:
        child.stdin.close()
        child.wait(timeout=10)


def read_until(fd, raw, text, timeout):
    """Reads the pty until TEXT shows (escapes removed); (raw, found)."""
    deadline = time.monotonic() + timeout
    import select
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if not ready:
            continue
        data = os.read(fd, 65536)
        if not data:
            return raw, False
        raw += data
        for query, answer in QUERIES.items():
            if query in data:
                os.write(fd, answer)
        if text.encode() in ESCAPES.sub(b"", raw):
            return raw, True
    return raw, False


def tui_once(binary, ready_text, answer):
    """Enter -> ANSWER on screen, in ms."""
    pid, fd = spawn([binary], 120, 40)
    try:
        raw, ready = read_until(fd, b"", ready_text, 10)
        if not ready:
            raise SystemExit(f"the TUI never showed {ready_text!r}")
        os.write(fd, b"hi")
        read_until(fd, b"", "hi", 2)
        entered = time.monotonic()
        os.write(fd, b"\r")
        screen, found = read_until(fd, b"", answer, 10)
        if not found:
            tail = ESCAPES.sub(b"", screen)[-600:].decode(errors="replace")
            raise SystemExit(f"the answer {answer!r} never showed; the screen's last output:\n{tail}")
        return (time.monotonic() - entered) * 1000
    finally:
        stop(pid)
        os.close(fd)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--ready", default="test-model", help="text of the TUI's first frame")
    parser.add_argument("--answer", default="asked", help="the answer's first words")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    binary = [c for c in args.command if c != "--"][0]
    acp = [acp_once(binary) for _ in range(args.runs)]
    tui = [tui_once(binary, args.ready, args.answer) for _ in range(args.runs)]
    median = lambda xs: statistics.median(xs)  # noqa: E731
    print(f"acp  initialize -> first chunk   {median([a[0] for a in acp]):7.1f} ms (median of {args.runs})")
    print(f"acp  session/prompt -> first chunk {median([a[1] for a in acp]):5.1f} ms")
    print(f"tui  Enter -> first answer words  {median(tui):7.1f} ms")
    print(f"acp  minus tui (prompt -> first)  {median([a[1] for a in acp]) - median(tui):+7.1f} ms")
    print(f"acp  RSS idle {median([a[2] for a in acp]):.1f} MiB, in a turn {median([a[3] for a in acp]):.1f} MiB")


if __name__ == "__main__":
    main()
