#!/usr/bin/env python3
"""A stand-in LSP server for tests that need the server to say what a test scripts.

- `fake/query` {operation, uri, position}: the server sends that as a `toolhost/lspQuery`
  request (the way the real server's `lsp` tool does, so the test covers Neovim's real
  server->client request path), waits for the editor's response and returns it as
  `{"response": <the JSON-RPC response message>}`.
- `fake/notify` {method, params}: the server sends that notification (cards, live output,
  `toolhost/mcpServersChanged`, ...) before it answers `{}`, so it has been handled by the time
  the answer arrives.
- `fake/setMcpServers` {servers, notify?}: what `toolhost/mcpServers` answers from now on,
  `{"servers": servers}`; with `servers` null (the start) it answers -32601, like a server from
  before the MCP bridge. With `notify`, also sends `toolhost/mcpServersChanged {servers}`.
"""
import json
import sys

stdin = sys.stdin.buffer
stdout = sys.stdout.buffer


def read():
    length = None
    while True:
        line = stdin.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    return json.loads(stdin.read(length))


def write(message):
    body = json.dumps(message).encode()
    stdout.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stdout.flush()


def main():
    next_id = 1000
    provider = False
    mcp_servers = None
    while True:
        msg = read()
        if msg is None:
            return 1
        method, mid = msg.get("method"), msg.get("id")
        if method == "initialize":
            caps = msg["params"].get("capabilities", {})
            provider = bool(caps.get("experimental", {}).get("toolhost", {}).get("lspProvider"))
            write({"jsonrpc": "2.0", "id": mid, "result": {
                "capabilities": {"textDocumentSync": 1,
                                 "experimental": {"toolhost": {"version": "fake", "sessionId": "fake"}}},
                "serverInfo": {"name": "fake-toolhost"}}})
        elif method == "fake/query":
            if not provider:
                write({"jsonrpc": "2.0", "id": mid, "error": {"code": -32600, "message": "no lspProvider capability"}})
                continue
            next_id += 1
            write({"jsonrpc": "2.0", "id": next_id, "method": "toolhost/lspQuery", "params": msg["params"]})
            while True:
                reply = read()
                if reply is None:
                    return 1
                if reply.get("id") == next_id and "method" not in reply:
                    break
            write({"jsonrpc": "2.0", "id": mid, "result": {"response": reply}})
        elif method == "fake/notify":
            write({"jsonrpc": "2.0", "method": msg["params"]["method"], "params": msg["params"].get("params")})
            write({"jsonrpc": "2.0", "id": mid, "result": {}})
        elif method == "fake/setMcpServers":
            mcp_servers = msg["params"].get("servers")
            if msg["params"].get("notify"):
                write({"jsonrpc": "2.0", "method": "toolhost/mcpServersChanged",
                       "params": {"servers": mcp_servers or []}})
            write({"jsonrpc": "2.0", "id": mid, "result": {}})
        elif method == "toolhost/mcpServers" and mcp_servers is not None:
            write({"jsonrpc": "2.0", "id": mid, "result": {"servers": mcp_servers}})
        elif method == "shutdown":
            write({"jsonrpc": "2.0", "id": mid, "result": None})
        elif method == "exit":
            return 0
        elif mid is not None:
            write({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "unhandled " + str(method)}})


if __name__ == "__main__":
    sys.exit(main())
