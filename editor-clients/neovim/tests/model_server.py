#!/usr/bin/env python3
"""A scripted OpenAI-compatible chat completions server for the tests of `:Toolhost ask`, standard
library only. toolhost's own agent reaches it through `[agent] base_url` in the user
configuration. It listens on 127.0.0.1 (a free port, printed as the first line of stdout) and
answers `POST /v1/chat/completions` with a server-sent event stream (`data: {json}` chunks, then
`data: [DONE]`).

What it answers depends on the request's last message:
- the answer of a tool call (`role: tool`): the answer `a.txt says hello world.` in three content
  chunks, then `finish_reason: stop`, then usage (320 prompt, 17 completion tokens);
- a user message that mentions `a.txt`: one `read` call of `a.txt` (id `m0`), then usage (120
  prompt, 10 completion tokens);
- any other user message: `Second answer.` in two chunks and usage (200 prompt, 8 completion
  tokens) — or, with `--slow`, `tick ` every 50 ms for about 30 s (a run to stop).

`--record FILE` appends every request body to FILE as one JSON line.

`serve` is the HTTP/SSE loop of the scripted model servers: this one and anthropic_server.py.
"""
import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS = None


def usage(prompt, completion):
    return {
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def content(text):
    return {"choices": [{"delta": {"content": text}}]}


STOP = {"choices": [{"delta": {}, "finish_reason": "stop"}]}


def script(body):
    """The chunks of the answer to `body`, or a generator of them for the slow answer."""
    messages = body.get("messages") or [{}]
    last = messages[-1]
    if last.get("role") == "tool":
        return [content("a.txt says "), content("hello"), content(" world."), STOP, usage(320, 17)]
    text = last.get("content") if isinstance(last.get("content"), str) else ""
    if "a.txt" in text:
        call = {
            "index": 0,
            "id": "m0",
            "type": "function",
            "function": {"name": "read", "arguments": json.dumps({"file_path": "a.txt"})},
        }
        return [
            {"choices": [{"delta": {"tool_calls": [call]}, "finish_reason": "tool_calls"}]},
            usage(120, 10),
        ]
    if ARGS.slow:
        return slow()
    return [content("Second "), content("answer."), STOP, usage(200, 8)]


def slow():
    for _ in range(600):
        yield content("tick ")
        time.sleep(0.05)
    yield STOP
    yield usage(50, 600)


def serve(answer, record=None):
    """Serves POST requests on 127.0.0.1 — a free port, printed as the first line of stdout —
    until interrupted. `answer(path, body)` gives the reply to a request and its JSON body: None
    (404), a dict (a JSON object), or an iterable of server-sent events `(event, data)` — `event`
    None for a bare `data:` line, `data` a JSON value or, a string, sent as it is — written and
    flushed as they come (a slow answer streams), the connection closed after. The body of every
    request answered with events is appended to `record` as one JSON line."""
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            reply = answer(self.path, body)
            if reply is None:
                self.send_error(404)
                return
            if isinstance(reply, dict):
                payload = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                return
            if record:
                with lock, open(record, "a", encoding="utf-8") as f:
                    f.write(json.dumps(body) + "\n")
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            try:
                for event, data in reply:
                    line = data if isinstance(data, str) else json.dumps(data)
                    head = f"event: {event}\n" if event else ""
                    self.wfile.write(f"{head}data: {line}\n\n".encode())
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped reading (a cancelled run)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


def answer(path, body):
    """The chat completions endpoint: the script's chunks as `data:` events, then `[DONE]`."""
    if not path.endswith("/chat/completions"):
        return None
    return stream(script(body))


def stream(chunks):
    """The chunks as bare `data:` events, then the `[DONE]` that ends an OpenAI stream."""
    for chunk in chunks:
        yield None, chunk
    yield None, "[DONE]"


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--record", help="append each request body to this file (JSON lines)")
    parser.add_argument("--slow", action="store_true", help="plain answers stream slowly")
    ARGS = parser.parse_args()
    serve(answer, ARGS.record)


if __name__ == "__main__":
    sys.exit(main())
