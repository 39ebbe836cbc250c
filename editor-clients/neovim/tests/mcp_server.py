#!/usr/bin/env python3
"""A small MCP server over stdio (newline-delimited JSON-RPC), standard library only, for the
end-to-end test of MCP cards: toolhost's bridge starts it and offers its tools as
`mcp__<server>__<tool>`.

Tools:
- `weather {city}`: text and structured content (it declares an output schema);
- `broken {}`: a tool error (`isError: true`).
"""
import json
import sys

WEATHER_SCHEMA = {
    "type": "object",
    "properties": {
        "location": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "country": {"type": "string"}},
            "required": ["city", "country"],
        },
        "celsius": {"type": "number"},
        "conditions": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["location", "celsius", "conditions"],
}

TOOLS = [
    {
        "name": "weather",
        "description": "The weather in a city (always mild).",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        "outputSchema": WEATHER_SCHEMA,
    },
    {
        "name": "broken",
        "description": "Always fails.",
        "inputSchema": {"type": "object", "properties": {}},
    },
]


def write(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def call(name, arguments):
    if name == "weather":
        city = str(arguments.get("city", "?"))
        value = {
            "location": {"city": city, "country": "Nowhere"},
            "celsius": 21.5,
            "conditions": ["sunny", "calm"],
        }
        return {
            "content": [{"type": "text", "text": f"{city}: 21.5 °C, sunny"}],
            "structuredContent": value,
            "isError": False,
        }
    if name == "broken":
        return {"content": [{"type": "text", "text": "the tool broke"}], "isError": True}
    return None


def main():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        method, mid = msg.get("method"), msg.get("id")
        if mid is None or method is None:
            continue  # notifications, and answers to requests this server never sends
        params = msg.get("params") or {}
        if method == "initialize":
            write({"jsonrpc": "2.0", "id": mid, "result": {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "nvim-test-weather", "version": "1.0.0"},
            }})
        elif method == "tools/list":
            write({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            result = call(params.get("name"), params.get("arguments") or {})
            if result is None:
                write({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "unknown tool"}})
            else:
                write({"jsonrpc": "2.0", "id": mid, "result": result})
        elif method == "ping":
            write({"jsonrpc": "2.0", "id": mid, "result": {}})
        else:
            write({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "method not found"}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
