// A stdio MCP server that does no work: it answers `initialize`, `tools/list` and each
// `tools/call` of `read` with answers recorded beforehand (keyed by the call's `offset`), so a
// client reading through it measures what the client and the pipe cost alone.
// Used by bench_mcp.mjs for the floor of the "2 MB file read whole" row.
//
// Usage: node replay_server.mjs <recording.json>
//   recording: {"tools": <tools/list result>, "pages": {"<offset>": <tools/call result>}}
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";

const recording = JSON.parse(readFileSync(process.argv[2], "utf8"));
// Serialized once: answering is a string concatenation.
const tools = JSON.stringify(recording.tools);
const pages = Object.fromEntries(Object.entries(recording.pages).map(([k, v]) => [k, JSON.stringify(v)]));

const answer = (id, result) =>
  process.stdout.write(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${result}}\n`);

createInterface({ input: process.stdin }).on("line", (line) => {
  const message = JSON.parse(line);
  if (message.id === undefined) return;
  switch (message.method) {
    case "initialize":
      answer(message.id, JSON.stringify({
        protocolVersion: message.params.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: "replay", version: "1.0.0" },
      }));
      break;
    case "tools/list":
      answer(message.id, tools);
      break;
    case "tools/call": {
      const page = pages[String(message.params.arguments?.offset ?? 1)];
      if (page) answer(message.id, page);
      else process.stdout.write(`${JSON.stringify({ jsonrpc: "2.0", id: message.id, error: { code: -32602, message: "not recorded" } })}\n`);
      break;
    }
    default:
      answer(message.id, "{}");
  }
});
