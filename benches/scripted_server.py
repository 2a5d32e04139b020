#!/usr/bin/env python3
"""A scripted OpenAI-compatible chat server for manual trials and CLI benchmarks.

Owns nothing of cairn: it only speaks the Chat Completions streaming wire
(chat.completion.chunk events, a final usage chunk, [DONE]) and llama-server's
GET /props, and answers every request until killed. It never calls a real model
and never reads the project it is used in. Standard library only.

    python3 benches/scripted_server.py --port 8765 --scenario chat
    python3 benches/scripted_server.py --port 8765 --scenario tokens 20000 [--rate 200]
    python3 benches/scripted_server.py --port 8765 --scenario tools
    python3 benches/scripted_server.py --port 8765 --script steps.json

Scenarios:
  tokens N   every request gets one streamed answer of N tokens (one chunk per
             token), as fast as possible or at --rate tokens per second.
  tools      a read -> bash -> answer sequence, decided from the request itself
             (no tool result since the last user message: read; one: bash; two:
             the final answer), so it repeats for every new user message.
  chat       a short streamed Markdown answer quoting what was asked; a summary
             request (compaction) gets a summary-shaped answer.

A --script file is a JSON list of steps served in order, then from the start
again. Each step is one of:
  {"text": "markdown answer", "prompt_tokens": 1200, "rate": 50}
  {"tool": "bash", "arguments": {"command": "ls"}}
  {"status": 500, "body": {"error": {"message": "overloaded"}}}
  {"sse_file": "/work/shared/fixtures/llama-server/smollm2-stream.sse.txt"}
Relative sse_file paths are read relative to the script file.
"""

import argparse
import itertools
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "test-model"

# Words the token stream is made of: Markdown-ish prose with code and lists,
# so a front end renders something realistic while it streams.
TOKEN_WORDS = (
    "The loop reads the session back from the store , orders it for the model ,"
    " and sends one request per step . Tool calls run in parallel when they are"
    " read only ; `bash` waits for permission unless yolo is set . The gauge"
    " counts what was added since the last usage report , so it never drifts ."
).split()

SUMMARY_ANSWER = """## Goal

Keep working on the user's request: {asked}

## Instructions

- Answer in short Markdown; run the tests before claiming success.

## Discoveries

- The scripted server answered every request; no real model was involved.

## Accomplished

- User messages so far: {turns}; the last one is quoted in the goal.

## Relevant files / directories

- `src/session/run.rs`
- `src/session/compaction.rs`
"""


def log(message):
    stamp = time.strftime("%H:%M:%S")
    sys.stderr.write(f"[{stamp}] {message}\n")
    sys.stderr.flush()


def text_of(content):
    """The text of an OpenAI message content (a string or a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def last_user_text(messages):
    for message in reversed(messages):
        if message.get("role") == "user":
            return text_of(message.get("content"))
    return ""


def tool_results_since_last_user(messages):
    count = 0
    for message in reversed(messages):
        role = message.get("role")
        if role == "user":
            break
        if role == "tool":
            count += 1
    return count


def estimate_prompt_tokens(request):
    """About 4 characters a token over everything the model would read."""
    size = len(json.dumps(request.get("messages", []), ensure_ascii=False))
    size += len(json.dumps(request.get("tools", []), ensure_ascii=False))
    return max(1, size // 4)


def is_summary_request(text):
    # The prompt may follow other text when merged into the last user message.
    return "Provide a detailed prompt for continuing" in text or "anchored summary" in text


def chunk(delta, finish=None):
    body = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return "data: " + json.dumps(body, ensure_ascii=False) + "\n\n"


def usage_chunk(prompt, completion):
    body = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": MODEL,
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }
    return "data: " + json.dumps(body) + "\n\n"


def split_tokens(text):
    """Pieces of about one token each: words with their trailing space or newline."""
    pieces, current = [], ""
    for char in text:
        current += char
        if char in " \n":
            pieces.append(current)
            current = ""
    if current:
        pieces.append(current)
    return pieces


class TextAnswer:
    """A streamed text answer: one chunk per token, optionally paced."""

    def __init__(self, tokens, prompt_tokens, rate=None):
        self.tokens = tokens
        self.prompt_tokens = prompt_tokens
        self.rate = rate

    def events(self):
        yield chunk({"role": "assistant", "content": ""})
        for token in self.tokens:
            yield chunk({"content": token})
        yield chunk({}, "stop")
        yield usage_chunk(self.prompt_tokens, len(self.tokens))
        yield "data: [DONE]\n\n"

    def describe(self):
        rate = f" at {self.rate}/s" if self.rate else ""
        return f"text answer, {len(self.tokens)} tokens{rate}"


class ToolCall:
    """One streamed tool call, its arguments split across chunks."""

    counter = itertools.count(1)

    def __init__(self, name, arguments, prompt_tokens, call_id=None):
        self.name = name
        self.arguments = json.dumps(arguments)
        self.prompt_tokens = prompt_tokens
        self.call_id = call_id or f"call_{next(ToolCall.counter)}"
        self.rate = None

    def events(self):
        half = len(self.arguments) // 2
        yield chunk({
            "role": "assistant",
            "content": None,
            "tool_calls": [{
                "index": 0, "id": self.call_id, "type": "function",
                "function": {"name": self.name, "arguments": ""},
            }],
        })
        for piece in (self.arguments[:half], self.arguments[half:]):
            yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
        yield chunk({}, "tool_calls")
        yield usage_chunk(self.prompt_tokens, 30)
        yield "data: [DONE]\n\n"

    def describe(self):
        return f"tool call {self.name} {self.arguments}"


class RawSse:
    """A recorded SSE body replayed as is (e.g. a llama-server fixture)."""

    def __init__(self, path):
        self.path = path
        self.rate = None

    def events(self):
        with open(self.path, encoding="utf-8") as file:
            body = file.read()
        for event in body.split("\n\n"):
            if event.strip():
                yield event + "\n\n"

    def describe(self):
        return f"replay {self.path}"


class HttpError:
    def __init__(self, status, body):
        self.status = status
        self.body = body

    def describe(self):
        return f"HTTP {self.status}"


def token_stream(count):
    words = itertools.cycle(TOKEN_WORDS)
    tokens = []
    for index in range(count):
        # A paragraph break now and then keeps the Markdown renderer honest.
        tokens.append(next(words) + ("\n\n" if index % 60 == 59 else " "))
    return tokens


class Scenario:
    """Decides the answer to one request body."""

    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.script = None
        if args.script:
            with open(args.script, encoding="utf-8") as file:
                steps = json.load(file)
            if not isinstance(steps, list) or not steps:
                raise SystemExit(f"{args.script}: expected a non-empty JSON list of steps")
            self.script = itertools.cycle(enumerate(steps))
            self.script_dir = os.path.dirname(os.path.abspath(args.script))
        elif args.scenario and args.scenario[0] == "tokens":
            if len(args.scenario) != 2 or not args.scenario[1].isdigit():
                raise SystemExit("usage: --scenario tokens N")
            self.tokens = token_stream(int(args.scenario[1]))
        elif not args.scenario or args.scenario[0] not in ("tools", "chat") or len(args.scenario) != 1:
            raise SystemExit("--scenario must be `tokens N`, `tools` or `chat` (or give --script)")

    def answer(self, request):
        messages = request.get("messages", [])
        prompt_tokens = estimate_prompt_tokens(request)
        if self.script is not None:
            with self.lock:
                index, step = next(self.script)
            return self.scripted(step, prompt_tokens)
        name = self.args.scenario[0]
        if name == "tokens":
            return TextAnswer(self.tokens, prompt_tokens, self.args.rate)
        if name == "tools":
            return self.tools(messages, prompt_tokens)
        return self.chat(messages, prompt_tokens)

    def scripted(self, step, prompt_tokens):
        if "status" in step:
            return HttpError(step["status"], step.get("body", {"error": {"message": "scripted error"}}))
        if "sse_file" in step:
            return RawSse(os.path.join(self.script_dir, step["sse_file"]))
        if "tool" in step:
            return ToolCall(step["tool"], step.get("arguments", {}), step.get("prompt_tokens", prompt_tokens), step.get("id"))
        if "text" in step:
            rate = step.get("rate", self.args.rate)
            return TextAnswer(split_tokens(step["text"]), step.get("prompt_tokens", prompt_tokens), rate)
        raise SystemExit(f"script step {step!r} has none of text, tool, status, sse_file")

    def tools(self, messages, prompt_tokens):
        done = tool_results_since_last_user(messages)
        if done == 0:
            return ToolCall("read", {"filePath": self.args.read_path}, prompt_tokens)
        if done == 1:
            return ToolCall("bash", {"command": self.args.bash_command}, prompt_tokens)
        answer = "I read the file and ran the command; both tool results are above. **Done.**\n"
        return TextAnswer(split_tokens(answer), prompt_tokens, self.args.rate)

    def chat(self, messages, prompt_tokens):
        asked = last_user_text(messages).strip()
        if is_summary_request(asked):
            turns = sum(1 for m in messages if m.get("role") == "user") - 1
            previous = ""
            for message in messages[:-1]:
                if message.get("role") == "user":
                    previous = text_of(message.get("content")).strip()
            body = SUMMARY_ANSWER.format(asked=one_line(previous) or "(nothing yet)", turns=turns)
        else:
            body = (
                f"You asked: *{one_line(asked)}*\n\n"
                "Here is what I would do:\n\n"
                "1. Read the files involved with `read`.\n"
                "2. Make the smallest change that fixes it.\n"
                "3. Run the tests:\n\n"
                "```sh\ncargo test --all-targets\n```\n\n"
                f"Your message was {len(asked)} characters long.\n"
            )
        return TextAnswer(split_tokens(body), prompt_tokens, self.args.rate or 60)


def one_line(text, limit=120):
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    scenario = None
    n_ctx = 200_000

    def log_message(self, format, *args):
        pass  # our own one-line log per request instead

    def do_GET(self):
        if self.path.rstrip("/").endswith("/props"):
            self.send_json(200, {
                "default_generation_settings": {"n_ctx": self.n_ctx, "model": MODEL},
                "total_slots": 1,
                "model_path": f"/models/{MODEL}.gguf",
            })
        elif self.path.rstrip("/").endswith("/models"):
            self.send_json(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
        else:
            self.send_json(404, {"error": {"message": f"no route {self.path}"}})
        log(f"GET {self.path}")

    def do_POST(self):
        # Wall-clock receipt time, for "time to first request" figures
        # (benches/bounds.sh compares it with when it started cairn).
        log(f"POST {self.path} received at {time.time():.3f}")
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self.send_json(404, {"error": {"message": f"no route {self.path}"}})
            log(f"POST {self.path} -> 404")
            return
        try:
            request = json.loads(raw)
        except ValueError as error:
            self.send_json(400, {"error": {"message": f"invalid JSON: {error}"}})
            log(f"POST {self.path} -> 400 invalid JSON")
            return
        messages = request.get("messages", [])
        asked = one_line(last_user_text(messages), 60)
        answer = self.scenario.answer(request)
        started = time.monotonic()
        if isinstance(answer, HttpError):
            self.send_json(answer.status, answer.body)
            outcome = answer.describe()
        else:
            outcome = answer.describe() + self.stream(answer)
        elapsed = time.monotonic() - started
        log(f"POST {self.path} {len(raw)} B, {len(messages)} messages, "
            f"{len(request.get('tools', []))} tools, last user {asked!r} -> {outcome} in {elapsed:.3f} s")

    def send_json(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def stream(self, answer):
        """Writes the events as HTTP chunks; returns a note when the client left."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        started = time.monotonic()
        interval = 1.0 / answer.rate if answer.rate else 0.0
        try:
            for index, event in enumerate(answer.events()):
                if interval:
                    # An absolute schedule: slow writes do not make the rate drift.
                    delay = started + index * interval - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                data = event.encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            return " (client closed the stream)"
        return ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--scenario", nargs="+", metavar="NAME", help="tokens N | tools | chat")
    parser.add_argument("--script", help="JSON list of steps, served in order and repeated")
    parser.add_argument("--rate", type=float, help="tokens per second (default: as fast as possible; chat: 60)")
    parser.add_argument("--n-ctx", type=int, default=200_000, help="context size reported by GET /props")
    parser.add_argument("--read-path", default="README.md", help="file the tools scenario reads")
    parser.add_argument("--bash-command", default="ls -la", help="command the tools scenario runs")
    args = parser.parse_args()
    if not args.script and not args.scenario:
        parser.error("give --scenario or --script")
    Handler.scenario = Scenario(args)
    Handler.n_ctx = args.n_ctx
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    what = f"script {args.script}" if args.script else "scenario " + " ".join(args.scenario)
    log(f"listening on http://{args.host}:{server.server_address[1]}/v1 ({what})")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
