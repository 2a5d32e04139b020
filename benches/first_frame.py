#!/usr/bin/env python3
"""Time from spawning a TUI in a fresh pseudo-terminal until its first frame.

Owns only the measurement: it runs the command in a pty of the given size,
answers the terminal queries a TUI may send at start (cursor position, device
attributes) so the program never waits on a missing terminal, and reports when
TEXT first appears in the output with escape sequences removed. The child is
killed afterwards; it never types into the program. Standard library only.

    python3 benches/first_frame.py --until scripted/test-model --runs 5 -- cairn
"""

import argparse
import os
import pty
import re
import select
import signal
import struct
import sys
import termios
import fcntl
import time

# CSI ... final byte, OSC ... BEL/ST, and two-byte escapes.
ESCAPES = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
QUERIES = {
    b"\x1b[6n": b"\x1b[1;1R",  # cursor position
    b"\x1b[c": b"\x1b[?62;22c",  # primary device attributes
}


def spawn(command, cols, rows):
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = os.environ.get("TERM", "xterm-256color")
        os.execvp(command[0], command)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    return pid, fd


def measure(command, cols, rows, until, timeout):
    """(ms to first output byte, ms to TEXT) for one start; TEXT ms is None on timeout."""
    started = time.monotonic()
    pid, fd = spawn(command, cols, rows)
    raw = b""
    first_byte = None
    found = None
    try:
        while time.monotonic() - started < timeout:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if not ready:
                if waited_out(pid):
                    break
                continue
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            if first_byte is None:
                first_byte = (time.monotonic() - started) * 1000
            raw += data
            for query, answer in QUERIES.items():
                if query in data:
                    os.write(fd, answer)
            if until.encode() in ESCAPES.sub(b"", raw):
                found = (time.monotonic() - started) * 1000
                break
    finally:
        stop(pid)
        os.close(fd)
    return first_byte, found, raw


def waited_out(pid):
    done, _ = os.waitpid(pid, os.WNOHANG)
    return done == pid


def stop(pid):
    try:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            if waited_out(pid):
                return
            time.sleep(0.02)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cols", type=int, default=120)
    parser.add_argument("--rows", type=int, default=40)
    parser.add_argument("--until", required=True, help="text whose appearance marks the first frame")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("command", nargs="+")
    args = parser.parse_args()
    times = []
    for run in range(1, args.runs + 1):
        first_byte, found, raw = measure(args.command, args.cols, args.rows, args.until, args.timeout)
        if found is None:
            text = ESCAPES.sub(b"", raw).decode(errors="replace")
            sys.stderr.write(f"run {run}: {args.until!r} never appeared within {args.timeout} s; output:\n{text[:2000]}\n")
            sys.exit(1)
        print(f"run {run}: first byte {first_byte:.1f} ms, first frame {found:.1f} ms")
        times.append(found)
    times.sort()
    print(f"first frame: median {times[len(times) // 2]:.1f} ms, min {times[0]:.1f} ms, max {times[-1]:.1f} ms")


if __name__ == "__main__":
    main()
