"""An ACP agent on the official Python SDK that works only through its client's terminals
(`terminal/create`, `output`, `wait_for_exit`, `kill`, `release`): what `toolhost serve` must run
on its own shell when it hosts such an agent. Each prompt names what to do:

- `run`: `printf` through a terminal, waits for it, reads its output, releases it;
- `fail`: a whole shell line that prints and exits 3;
- `kill`: a `sleep 30` killed after it started, then waited for.

It answers with one line saying what it saw (`exit 0: hello from the terminal`).
"""

import asyncio

from acp import PROTOCOL_VERSION, run_agent, update_agent_message_text
from acp.schema import AgentCapabilities, InitializeResponse, NewSessionResponse, PromptResponse


class TerminalAgent:
    def on_connect(self, conn):
        self.conn = conn

    async def initialize(self, protocol_version, client_capabilities=None, client_info=None, **_):
        self.terminals = bool(client_capabilities and client_capabilities.terminal)
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION, agent_capabilities=AgentCapabilities()
        )

    async def new_session(self, cwd, mcp_servers=None, **_):
        self.cwd = cwd
        return NewSessionResponse(session_id="terminal-session")

    async def cancel(self, session_id, **_):
        return None

    async def run(self, session_id, command, args=None):
        created = await self.conn.create_terminal(
            session_id=session_id, command=command, args=args, cwd=self.cwd
        )
        return created.terminal_id

    async def prompt(self, session_id, prompt, **_):
        task = prompt[0].text.strip()
        if not self.terminals:
            said = "the client offers no terminals"
        elif task == "kill":
            terminal = await self.run(session_id, "sleep", ["30"])
            await asyncio.sleep(0.5)
            await self.conn.kill_terminal(session_id=session_id, terminal_id=terminal)
            exit = await self.conn.wait_for_terminal_exit(session_id=session_id, terminal_id=terminal)
            said = f"killed: exit {exit.exit_code} signal {exit.signal}"
            await self.conn.release_terminal(session_id=session_id, terminal_id=terminal)
        else:
            if task == "fail":
                terminal = await self.run(session_id, "echo oops; exit 3")
            else:
                terminal = await self.run(session_id, "printf", ["%s\\n", "hello from the terminal"])
            exit = await self.conn.wait_for_terminal_exit(session_id=session_id, terminal_id=terminal)
            output = await self.conn.terminal_output(session_id=session_id, terminal_id=terminal)
            await self.conn.release_terminal(session_id=session_id, terminal_id=terminal)
            said = f"exit {exit.exit_code}: {output.output.strip()}"
        await self.conn.session_update(
            session_id=session_id, update=update_agent_message_text(said)
        )
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(run_agent(TerminalAgent()))
