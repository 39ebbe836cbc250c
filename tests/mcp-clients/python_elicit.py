"""An MCP client whose user answers toolhost's questions (Python `mcp` 2.3.0 over stdio).

Usage: python_elicit.py <toolhost binary> <workspace> <state dir> <session|client>

`session`: a `ClientSession` with the initialize handshake (protocol 2025-11-25), where toolhost
asks with `elicitation/create`. `client`: the high-level `Client` in its default mode, which
negotiates 2026-07-28 through `server/discover`; there toolhost answers `tools/call` with an
input-required result and the client retries with the answer. Either way the elicitation callback
is the user: it picks "SQLite" for the first question and declines the second. Prints one JSON
line: the protocol, each call's isError and text, the forms the user saw and (`session`) the
prompts listed, the first one's text included.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters, types
from mcp.client import Client
from mcp.client.stdio import stdio_client

QUESTION = {
    "questions": [
        {
            "id": "db",
            "question": "Which database?",
            "header": "DB",
            "options": [{"label": "Postgres"}, {"label": "SQLite", "description": "a file"}],
        }
    ]
}
SECOND = {"questions": [{"id": "go", "question": "Deploy now?", "options": [{"label": "Yes"}, {"label": "No"}]}]}


def text_of(result):
    return "\n".join(block.text for block in result.content if block.type == "text")


async def main(binary, workspace, state, mode):
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
    forms = []

    async def on_elicit(context, request):
        forms.append({"message": request.message, "schema": request.requested_schema})
        if len(forms) == 1:
            return types.ElicitResult(action="accept", content={"db": "SQLite"})
        return types.ElicitResult(action="decline")

    calls = []
    prompts = []
    if mode == "session":
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, elicitation_callback=on_elicit) as session:
                init = await session.initialize()
                protocol = init.protocol_version
                for args in (QUESTION, SECOND):
                    result = await session.call_tool("ask_user_question", args)
                    calls.append({"isError": result.is_error, "text": text_of(result)})
                # The workspace's skills are prompts too.
                listed = await session.list_prompts()
                prompts = [{"name": p.name, "description": p.description} for p in listed.prompts]
                if prompts:
                    got = await session.get_prompt(prompts[0]["name"])
                    prompts[0]["text"] = got.messages[0].content.text
    else:
        async with Client(params, elicitation_callback=on_elicit) as client:
            protocol = client.protocol_version
            for args in (QUESTION, SECOND):
                result = await client.call_tool("ask_user_question", args)
                calls.append({"isError": result.is_error, "text": text_of(result)})
    print(json.dumps({"protocol": protocol, "calls": calls, "forms": forms, "prompts": prompts}))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
