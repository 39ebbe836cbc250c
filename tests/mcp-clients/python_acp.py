"""The official Python ACP SDK (agent-client-protocol 0.12.1) as an editor driving `toolhost acp`.

Usage: python_acp.py <toolhost binary> <workspace> <state dir> <config dir> <scenario>

The editor side is played here: it records every session/update, answers permission requests
with a scripted choice, and (when it offers its file system) holds an unsaved buffer for a.txt
that reads see and writes replace — nothing it receives is written to disk. Scenarios:

- task: ask mode with the client's files and an MCP server of its own; one prompt (read, edit with a permission request,
  answer), then a second process loads the session (the log replayed as updates) and prompts
  again, continuing the chat.
- modes: no client files; an edit denied, `set_session_mode` to auto (a todo list, a command and a
  write run without asking), a prompt cancelled mid-stream, plan mode (an edit refused, the plan approved through
  a permission request, the mode announced as accept-edits).
- questions: a client that offers forms answers the agent's questions (a choice, several choices
  with an "other" answer, free text) in one form, then declines one; a client without forms gets
  a single-choice question as a permission request, and a free-text one cannot be asked.

Prints one JSON line with what was seen; the Rust test asserts on it.
"""

import asyncio
import json
import os
import sys

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import (
    AcceptElicitationResponse,
    AllowedOutcome,
    ClientCapabilities,
    DeclineElicitationResponse,
    DeniedOutcome,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    FileSystemCapabilities,
    Implementation,
    McpServerStdio,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


class Editor:
    """An ACP client: records what the agent sends, answers with the scripted choices."""

    def __init__(self, root, buffers=None, choices=None, forms=None):
        self.root = root
        self.updates = []
        self.permissions = []
        self.elicitations = []
        # Successive forms' answers: the content to accept with, or "decline".
        self.forms = list(forms or [])
        self.reads = []
        self.writes = []
        self.buffers = dict(buffers or {})
        # Option kinds picked for successive permission requests (the last one repeats).
        self.choices = list(choices or ["allow_once"])

    async def session_update(self, session_id, update, **kwargs):
        self.updates.append(dump(update))

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        self.permissions.append(
            {"toolCall": dump(tool_call), "options": [[o.option_id, o.kind] for o in options]}
        )
        kind = self.choices.pop(0) if len(self.choices) > 1 else self.choices[0]
        if kind == "cancel":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        option = next(o for o in options if o.kind == kind)
        return RequestPermissionResponse(
            outcome=AllowedOutcome(option_id=option.option_id, outcome="selected")
        )

    async def create_elicitation(self, message, mode, **kwargs):
        self.elicitations.append({"message": message, "mode": dump(mode)})
        answer = self.forms.pop(0)
        if answer == "decline":
            return DeclineElicitationResponse(action="decline")
        return AcceptElicitationResponse(action="accept", content=answer)

    async def read_text_file(self, session_id, path, line=None, limit=None, **kwargs):
        self.reads.append(path)
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        with open(path, encoding="utf-8") as f:
            return ReadTextFileResponse(content=f.read())

    async def write_text_file(self, session_id, path, content, **kwargs):
        self.writes.append({"path": path, "content": content})
        self.buffers[path] = content
        return WriteTextFileResponse()

    def drain(self):
        updates, self.updates = self.updates, []
        return updates


def agent_env(state, config):
    # The SDK starts the agent with a trimmed environment: pass what toolhost needs.
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": state,
        "XDG_STATE_HOME": state,
        "XDG_CONFIG_HOME": config,
        "TOOLHOST_LOG_FILE": os.path.join(state, "acp.log"),
    }


def agent(editor, binary, root, state, config, **connection):
    """`toolhost acp` started for `editor` in `root`, its stderr dropped."""
    return spawn_agent_process(
        editor, binary, "acp", env=agent_env(state, config), cwd=root,
        transport_kwargs={"stderr": asyncio.subprocess.DEVNULL}, **connection,
    )


async def settle(editor, rounds=25):
    """Updates are handled as tasks: give the last ones time to arrive."""
    for _ in range(rounds):
        await asyncio.sleep(0.02)


async def start(conn, files, forms=False):
    caps = ClientCapabilities(
        fs=FileSystemCapabilities(read_text_file=files, write_text_file=files),
        elicitation=ElicitationCapabilities(form=ElicitationFormCapabilities()) if forms else None,
    )
    init = await conn.initialize(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=caps,
        client_info=Implementation(name="acp-test", version="1"),
    )
    return dump(init)


async def task(binary, root, state, config):
    a_txt = os.path.join(root, "a.txt")
    out = {}
    editor = Editor(root, buffers={a_txt: "hello from the buffer\n"})
    async with agent(editor, binary, root, state, config) as (conn, _proc):
        out["initialize"] = await start(conn, True)
        # An MCP server of the editor's settings: its tools join the session's.
        structured = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mcp-servers", "structured.py")
        tools = McpServerStdio(name="py tools", command=sys.executable, args=[structured], env=[])
        session = await conn.new_session(cwd=root, mcp_servers=[tools])
        out["new"] = dump(session)
        response = await conn.prompt(
            session_id=session.session_id,
            prompt=[text_block("change buffer to client in a.txt")],
        )
        out["stop"] = response.stop_reason
        await settle(editor)
        out["live"] = editor.drain()
        out["permissions"] = editor.permissions
        out["reads"] = editor.reads
        out["writes"] = editor.writes
    with open(a_txt, encoding="utf-8") as f:
        out["disk"] = f.read()
    # A second editor process: the session is loaded from its log and continued.
    again = Editor(root, buffers=dict(editor.buffers))
    async with agent(again, binary, root, state, config) as (conn, _proc):
        await start(conn, True)
        loaded = await conn.load_session(cwd=root, session_id=session.session_id, mcp_servers=[])
        out["loaded"] = dump(loaded) if loaded is not None else None
        await settle(again)
        out["replay"] = again.drain()
        response = await conn.prompt(
            session_id=session.session_id, prompt=[text_block("what did you change?")]
        )
        out["secondStop"] = response.stop_reason
        await settle(again)
        out["second"] = again.drain()
        try:
            await conn.load_session(cwd=root, session_id="no-such-session", mcp_servers=[])
            out["unknownLoad"] = "accepted"
        except Exception as err:  # the SDK raises RequestError
            out["unknownLoad"] = str(err)
    return out


async def modes(binary, root, state, config):
    out = {}
    editor = Editor(root, choices=["reject_once"])
    async with agent(editor, binary, root, state, config) as (conn, _proc):
        await start(conn, False)
        session = await conn.new_session(cwd=root, mcp_servers=[])
        sid = session.session_id
        # 1. ask: the edit is denied.
        response = await conn.prompt(session_id=sid, prompt=[text_block("edit a.txt")])
        out["denyStop"] = response.stop_reason
        await settle(editor)
        out["deny"] = editor.drain()
        out["denyPermissions"] = editor.permissions
        with open(os.path.join(root, "a.txt"), encoding="utf-8") as f:
            out["afterDeny"] = f.read()
        # 2. auto: a write runs without asking.
        editor.permissions = []
        await conn.set_session_mode(session_id=sid, mode_id="auto")
        response = await conn.prompt(session_id=sid, prompt=[text_block("write b.txt")])
        out["autoStop"] = response.stop_reason
        await settle(editor)
        out["auto"] = editor.drain()
        out["autoPermissions"] = editor.permissions
        editor.permissions = []
        # 3. a prompt cancelled while the model streams.
        prompt = asyncio.ensure_future(
            conn.prompt(session_id=sid, prompt=[text_block("take your time")])
        )
        for _ in range(200):
            await asyncio.sleep(0.02)
            if any(u.get("sessionUpdate") == "agent_message_chunk" for u in editor.updates):
                break
        await conn.cancel(session_id=sid)
        response = await asyncio.wait_for(prompt, 20)
        out["cancelStop"] = response.stop_reason
        await settle(editor)
        out["cancel"] = editor.drain()
        # 4. plan: an edit is refused, the plan approved, the mode becomes accept-edits.
        editor.choices = ["allow_once"]
        editor.permissions = []
        await conn.set_session_mode(session_id=sid, mode_id="plan")
        response = await conn.prompt(session_id=sid, prompt=[text_block("plan the change")])
        out["planStop"] = response.stop_reason
        await settle(editor)
        out["plan"] = editor.drain()
        out["planPermissions"] = editor.permissions
        try:
            await conn.set_session_mode(session_id=sid, mode_id="yolo")
            out["badMode"] = "accepted"
        except Exception as err:
            out["badMode"] = str(err)
    return out


async def questions(binary, root, state, config):
    out = {}
    answer = {"db": "SQLite", "db__other": "", "targets": ["linux", "mac"],
              "targets__other": "bsd", "name": "toolhost"}
    editor = Editor(root, forms=[answer, "decline"])
    # The Python SDK routes elicitation/create only with its unstable protocol switched on.
    forms_on = {"use_unstable_protocol": True}
    async with agent(editor, binary, root, state, config, **forms_on) as (conn, _proc):
        await start(conn, False, forms=True)
        session = await conn.new_session(cwd=root, mcp_servers=[])
        response = await conn.prompt(session_id=session.session_id, prompt=[text_block("ask me")])
        out["formStop"] = response.stop_reason
        response = await conn.prompt(session_id=session.session_id, prompt=[text_block("again")])
        out["declineStop"] = response.stop_reason
        await settle(editor)
        out["formUpdates"] = editor.drain()
        out["forms"] = editor.elicitations
        out["formPermissions"] = editor.permissions
    plain = Editor(root, choices=["allow_once"])
    async with agent(plain, binary, root, state, config) as (conn, _proc):
        await start(conn, False)
        session = await conn.new_session(cwd=root, mcp_servers=[])
        response = await conn.prompt(session_id=session.session_id, prompt=[text_block("pick")])
        out["choiceStop"] = response.stop_reason
        await settle(plain)
        out["choiceUpdates"] = plain.drain()
        out["choicePermissions"] = plain.permissions
        out["choiceForms"] = plain.elicitations
    return out


async def program(binary, root, state, config):
    """A prompt whose answer is one run_code program: its nested calls stream as tool calls
    (each naming its program in _meta), its nested edit asks for permission."""
    out = {}
    editor = Editor(root, choices=["allow_once"])
    async with agent(editor, binary, root, state, config) as (conn, _proc):
        await start(conn, False)
        session = await conn.new_session(cwd=root, mcp_servers=[])
        response = await conn.prompt(
            session_id=session.session_id, prompt=[text_block("fix a.txt with a program")]
        )
        out["stop"] = response.stop_reason
        await settle(editor)
        out["live"] = editor.drain()
        out["permissions"] = editor.permissions
    return out


async def main(binary, root, state, config, scenario):
    run = {"task": task, "modes": modes, "questions": questions, "program": program}[scenario]
    out = await asyncio.wait_for(run(binary, root, state, config), 120)
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))
