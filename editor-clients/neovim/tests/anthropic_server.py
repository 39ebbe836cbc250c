#!/usr/bin/env python3
"""A scripted Anthropic Messages server for the test of `:Toolhost agent claude`, standard library
only. The real Claude Code (the npm adapter `claude-agent-acp` the server hosts) reaches it through
`ANTHROPIC_BASE_URL` in `[acp.agents.claude.env]`. It listens on 127.0.0.1 (a free port, printed as
the first line of stdout) and answers `POST /v1/messages` with a server-sent event stream of one
content block.

A request whose `tools` offer no `Bash` is a side request of Claude Code (a title, a summary):
plain text. The main loop's answer depends on the conversation:
- its last user message asks `anything else?`: the text `Noted.`;
- no `tool_result` yet: `Read` of `<workspace>/a.txt` (Claude Code edits only a file it read);
- one: `Edit` of that file, line 1 and line 12 uppercased (two hunks);
- more: the text `Done.`.
`count_tokens` requests get a count. `--record FILE` appends every messages request body (its
`model` among the rest) to FILE as one JSON line; `--workspace DIR` is where a.txt is. The HTTP/SSE
loop is model_server.py's `serve`.
"""
import argparse
import json
import sys

from model_server import serve

ARGS = None

A_TXT = "".join(
    w + "\n"
    for w in "one two three four five six seven eight nine ten eleven twelve".split()
)
A_EDITED = "ONE" + A_TXT[len("one") : -len("twelve\n")] + "TWELVE\n"


def main_loop(body):
    """Whether the request is the agent's loop (it offers tools), not a side request."""
    return any(t.get("name") == "Bash" for t in body.get("tools") or [])


def last_user_text(body):
    for message in reversed(body.get("messages") or []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict))
    return ""


def tool_results(body):
    return sum(
        1
        for m in body.get("messages") or []
        if isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    )


def tool_use(name, call_id, arguments):
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def text(words):
    return {"type": "text", "text": words}


def script(body):
    """The one content block of the answer, and its stop reason."""
    if not main_loop(body):
        return text("Edit a.txt"), "end_turn"
    if "anything else?" in last_user_text(body):
        return text("Noted."), "end_turn"
    path = ARGS.workspace + "/a.txt"
    done = tool_results(body)
    if done == 0:
        return tool_use("Read", "toolu_read", {"file_path": path}), "tool_use"
    if done == 1:
        edit = {"file_path": path, "old_string": A_TXT, "new_string": A_EDITED}
        return tool_use("Edit", "toolu_edit", edit), "tool_use"
    return text("Done."), "end_turn"


def events(block, stop_reason):
    """The SSE events of one message holding `block`."""
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_scripted",
            "type": "message",
            "role": "assistant",
            "model": "claude-scripted",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        },
    }
    if block["type"] == "tool_use":
        opening = dict(block, input={})
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    else:
        opening = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
    yield "message_start", start
    yield "content_block_start", {"type": "content_block_start", "index": 0, "content_block": opening}
    yield "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": 0}
    yield "message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": None},
        "usage": {"output_tokens": 5},
    }
    yield "message_stop", {"type": "message_stop"}


def answer(path, body):
    """The Messages endpoint: a token count, or the scripted message as server-sent events."""
    if not path.startswith("/v1/messages"):
        return None
    if "count_tokens" in path:
        return {"input_tokens": 10}
    return events(*script(body))


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--record", help="append each request body to this file (JSON lines)")
    parser.add_argument("--workspace", required=True, help="the folder holding a.txt")
    ARGS = parser.parse_args()
    serve(answer, ARGS.record)


if __name__ == "__main__":
    sys.exit(main())
