"""A scripted MCP server over stdio for the bridge's edge cases, written against the wire
protocol (newline-delimited JSON-RPC) rather than an SDK, so it can misbehave on purpose:
paginated tools/list, a legacy `toolResult` answer, every content kind, a structuredContent that
violates its own outputSchema, a call that never answers, progress, stderr floods, a tool list
that changes, a crash on demand, and its own environment for the scrubbing test.

Every start appends a line to $SCRIPTED_STATE/starts; every notifications/cancelled it receives
is appended to $SCRIPTED_STATE/cancelled.
"""

import base64
import json
import os
import sys
import time

STATE = os.environ.get("SCRIPTED_STATE", ".")
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 16).decode()

with open(os.path.join(STATE, "starts"), "a") as f:
    f.write(f"{os.getpid()}\n")

extra_tools = []


def tool(name, description="", output_schema=None, execution=None):
    t = {"name": name, "description": description, "inputSchema": {"type": "object"}}
    if output_schema is not None:
        t["outputSchema"] = output_schema
    if execution is not None:
        t["execution"] = execution
    return t


def tools():
    point = {
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
        "required": ["x", "y"],
    }
    return [
        tool("kinds", "every content kind"),
        tool("legacy", "answers with a legacy toolResult"),
        tool("point", "structured content that matches", point),
        tool("bad_point", "structured content that does not match", point),
        tool("loose", "an outputSchema toolhost cannot use", {"type": "object", "$ref": "https://example.invalid/schema.json"}),
        tool("fail", "isError"),
        tool("never", "never answers"),
        tool("progress", "reports progress, then answers"),
        tool("flood", "floods stderr, then answers with a large text"),
        tool("change", "adds a tool and says so"),
        tool("crash", "exits"),
        tool("env", "its environment's names"),
        tool("dotted.name", "a name that needs sanitizing"),
        tool("tasky", "must run as a task", execution={"taskSupport": "required"}),
        tool("chatter", "floods stdout with notifications, then answers"),
        tool("ask", "asks the person through elicitation, answers with what came back"),
        tool("roots", "asks the client for its roots"),
        tool("sample", "asks the client to sample a model"),
    ] + extra_tools


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text(t):
    return {"type": "text", "text": t}


def ask_client(method, params):
    """Sends a request to the client and answers the tool call with its result (or error)."""
    send({"jsonrpc": "2.0", "id": "to-client-1", "method": method, "params": params})
    # Wait for the answer to this request (nothing else is sent meanwhile by the test).
    for reply in sys.stdin:
        reply = json.loads(reply)
        if reply.get("id") == "to-client-1":
            return {"content": [text(json.dumps(reply.get("result", reply.get("error")), sort_keys=True))]}
    return None


def call(msg_id, name, args, meta):
    if name == "kinds":
        return {"content": [
            text("plain text"),
            {"type": "resource_link", "name": "README", "uri": "file:///w/README.md"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///w/a.txt", "text": "a"}},
            {"type": "image", "data": PNG, "mimeType": "image/png"},
            text("after the image"),
        ]}
    if name == "legacy":
        return {"toolResult": {"answer": 42}}
    if name == "point":
        return {"content": [text('{"x": 1, "y": 2}')], "structuredContent": {"x": 1, "y": 2}}
    if name == "bad_point":
        return {"content": [text("oops")], "structuredContent": {"x": "one"}}
    if name == "loose":
        return {"content": [text("loose")], "structuredContent": {"anything": [1, 2]}}
    if name == "fail":
        return {"content": [text("the tool failed: " + str(args.get("why", "no reason")))], "isError": True}
    if name == "never":
        return None
    if name == "progress":
        token = meta.get("progressToken")
        if token is not None:
            for i in (1, 2):
                send({"jsonrpc": "2.0", "method": "notifications/progress",
                      "params": {"progressToken": token, "progress": i, "total": 2, "message": f"step {i}"}})
                # The client handles notifications concurrently (with each other and with
                # answers), so a pause after each keeps the test about delivery, not races.
                time.sleep(0.3)
        return {"content": [text("done")]}
    if name == "flood":
        chunk = "x" * 65536 + "\n"
        for _ in range(320):  # 20 MiB
            sys.stderr.write(chunk)
        sys.stderr.flush()
        return {"content": [text("y" * 1_000_000)]}
    if name == "change":
        extra_tools.append(tool("added", "appeared after a change"))
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        return {"content": [text("changed")]}
    if name == "added":
        return {"content": [text("the new tool")]}
    if name == "crash":
        os._exit(3)
    if name == "env":
        return {"content": [text(" ".join(sorted(os.environ)))]}
    if name == "dotted.name":
        return {"content": [text("dotted")]}
    if name == "chatter":
        lines = []
        for i in range(20000):
            lines.append(json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                                     "params": {"level": "info", "data": "chatter " + "z" * 200 + str(i)}}))
            lines.append(json.dumps({"jsonrpc": "2.0", "method": "notifications/progress",
                                     "params": {"progressToken": f"nobody-{i}", "progress": i}}))
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()
        return {"content": [text("after the chatter")]}
    if name == "tasky":
        return {"content": [text("tasky ran without a task")]}
    if name == "ask":
        return ask_client("elicitation/create", {
            "mode": "form",
            "message": "Pick a color",
            "requestedSchema": {"type": "object", "properties": {
                "color": {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]},
                "count": {"type": "integer", "title": "How many"},
            }, "required": ["color"]},
        })
    if name == "roots":
        return ask_client("roots/list", {})
    if name == "sample":
        return ask_client("sampling/createMessage", {
            "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10})
    return {"content": [text(f"unknown tool {name}")], "isError": True}


PAGE = 5

for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    msg = json.loads(line)
    method = msg.get("method")
    msg_id = msg.get("id")
    params = msg.get("params") or {}
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": msg_id, "result": {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "scripted", "version": "1"},
        }})
    elif method == "tools/list":
        start = int(params.get("cursor") or 0)
        page = tools()[start:start + PAGE]
        result = {"tools": page}
        if start + PAGE < len(tools()):
            result["nextCursor"] = str(start + PAGE)
        send({"jsonrpc": "2.0", "id": msg_id, "result": result})
    elif method == "tools/call":
        result = call(msg_id, params.get("name"), params.get("arguments") or {}, params.get("_meta") or {})
        if result is not None:
            send({"jsonrpc": "2.0", "id": msg_id, "result": result})
    elif method == "notifications/cancelled":
        with open(os.path.join(STATE, "cancelled"), "a") as f:
            f.write(json.dumps(params) + "\n")
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": msg_id, "result": {}})
    elif msg_id is not None:
        send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": f"no {method}"}})
