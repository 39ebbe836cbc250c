#!/usr/bin/env python3
"""A stand-in LSP server for one test: it asks the editor `toolhost/lspQuery` over stdio the way
the real server's `lsp` tool will, so the test covers Neovim's real server->client request path.

The client sends `fake/query` {operation, uri, position}; the server sends that as a
`toolhost/lspQuery` request, waits for the editor's response and returns it as
`{"response": <the JSON-RPC response message>}`.
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
        elif method == "shutdown":
            write({"jsonrpc": "2.0", "id": mid, "result": None})
        elif method == "exit":
            return 0
        elif mid is not None:
            write({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "unhandled " + str(method)}})


if __name__ == "__main__":
    sys.exit(main())
