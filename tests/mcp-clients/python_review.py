"""An MCP agent whose edit waits for the person's review (Python `mcp` 2.3.0 over stdio).

Usage: python_review.py <toolhost binary> <workspace> <state dir>

Starts `toolhost mcp` in the workspace, so it attaches to the editor's `toolhost serve` there (the
test runs one with review mode on and a scripted person who answers after a few seconds). Reads
a.txt, then edits it with a progress callback, and prints one JSON line: the progress messages
received while the call waited and the call's result (isError, text).
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main(binary, workspace, state):
    params = StdioServerParameters(
        command=binary,
        args=["mcp"],
        cwd=workspace,
        env={
            "PATH": os.environ.get("PATH", ""),
            "HOME": state,
            "XDG_STATE_HOME": state,
            "XDG_CONFIG_HOME": os.path.join(state, "config"),
        },
    )
    progress = []

    async def on_progress(value, total, message):
        progress.append(message or "")

    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("read", {"file_path": "a.txt"})
            result = await session.call_tool(
                "edit",
                {"file_path": "a.txt", "old_string": " old", "new_string": " new", "replace_all": True},
                progress_callback=on_progress,
            )
            text = "\n".join(block.text for block in result.content if block.type == "text")
            print(json.dumps({"progress": progress, "isError": result.is_error, "text": text}))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
