"""The official Python MCP SDK (mcp 2.3.0) as a client of `toolhost mcp`, over stdio.

Usage: python_session.py <toolhost binary> <workspace> <state dir>

Lists the tools (output schemas under the `structured` shape), calls read, edit, grep and glob,
checks each structured_content against the tool's published output schema, checks that a failed
call is an `isError` result carrying the Native error text, and prints one JSON summary line.
Any failed expectation raises (exit code 1).
"""

import asyncio
import json
import os
import sys

import jsonschema
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def check(condition, message):
    if not condition:
        raise AssertionError(message)


async def main(binary, workspace, state):
    params = StdioServerParameters(
        command=binary,
        args=["mcp", "--standalone"],
        cwd=workspace,
        # Clients filter the server's environment: pass what it needs explicitly.
        env={
            "PATH": os.environ.get("PATH", ""),
            "HOME": state,
            "XDG_STATE_HOME": state,
            "XDG_CONFIG_HOME": os.path.join(state, "config"),
        },
    )
    summary = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            summary["protocolVersion"] = str(init.protocol_version)
            summary["server"] = init.server_info.name

            listed = await session.list_tools()
            tools = {t.name: t for t in listed.tools}
            summary["tools"] = sorted(tools)
            for name in ["read", "write", "edit", "glob", "grep", "lsp"]:
                check(name in tools, f"{name} is not listed")
                check(tools[name].output_schema is not None, f"{name} has no output schema")
                check(tools[name].output_schema.get("type") == "object", f"{name} schema")
            check(tools["read"].annotations.read_only_hint is True, "read is read-only")
            check(tools["edit"].annotations.destructive_hint is True, "edit is destructive")

            def validated(name, result):
                check(not result.is_error, f"{name} failed: {result.content}")
                check(result.structured_content is not None, f"{name}: no structured_content")
                jsonschema.validate(result.structured_content, tools[name].output_schema)
                text = result.content[0].text
                check(text, f"{name}: no Native text")
                return text

            text = validated("read", await session.call_tool("read", {"file_path": "a.txt"}))
            check("1: hello" in text, f"read text: {text!r}")
            text = validated(
                "edit",
                await session.call_tool(
                    "edit", {"file_path": "a.txt", "old_string": "world", "new_string": "there"}
                ),
            )
            check("has been updated successfully" in text, f"edit text: {text!r}")
            with open(os.path.join(workspace, "a.txt")) as f:
                check(f.read() == "hello\nthere\n", "the edit did not reach the disk")
            text = validated("grep", await session.call_tool("grep", {"pattern": "there"}))
            check("a.txt" in text, f"grep text: {text!r}")
            validated("glob", await session.call_tool("glob", {"pattern": "*.txt"}))

            failed = await session.call_tool(
                "edit", {"file_path": "a.txt", "old_string": "absent", "new_string": "x"}
            )
            check(failed.is_error is True, "a failed edit must be isError")
            check(failed.structured_content is None, "a failure has no structured_content")
            check("was not found" in failed.content[0].text, f"{failed.content}")
            meta = failed.meta or {}
            check(meta.get("toolhost/error", {}).get("code") == "FS_EDIT_NOT_FOUND", f"{meta}")
            summary["failure"] = failed.content[0].text
    print(json.dumps(summary))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
