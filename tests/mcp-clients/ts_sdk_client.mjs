// The TypeScript MCP SDK's client (`@modelcontextprotocol/sdk`, installed by `cargo xtask
// install-deps` under .client-tools/npm) against `toolhost mcp --standalone` over stdio: lists the
// tools (the SDK compiles every output schema with its ajv then, warning on what it does not
// know) and calls read, glob, grep and edit (each structured result validated by the SDK against
// the tool's output schema). This process's stderr is the client's own (the SDK's warnings go
// there); the server's is collected apart and reported in the summary, the last line printed.
//
// Usage: node ts_sdk_client.mjs <toolhost binary> <workspace>   (the workspace holds `a.txt`
// with "hello\nworld\n"; the environment is passed on to the server)
import { createRequire } from "node:module";

const require = createRequire(new URL("../../.client-tools/npm/", import.meta.url));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");

const [binary, workspace] = process.argv.slice(2);
if (!binary || !workspace) {
  console.error("usage: node ts_sdk_client.mjs <toolhost binary> <workspace>");
  process.exit(2);
}

const transport = new StdioClientTransport({
  command: binary,
  args: ["mcp", "--standalone"],
  cwd: workspace,
  env: { ...process.env },
  stderr: "pipe",
});
let serverStderr = "";
transport.stderr?.on("data", (chunk) => {
  serverStderr += chunk.toString();
});
const client = new Client({ name: "ts-sdk-client", version: "1.0.0" });
await client.connect(transport);

const { tools } = await client.listTools();
const calls = {};
for (const [name, args] of [
  ["read", { file_path: "a.txt" }],
  ["glob", { pattern: "*.txt" }],
  ["grep", { pattern: "world" }],
  ["edit", { file_path: "a.txt", old_string: "world", new_string: "sdk" }],
]) {
  const result = await client.callTool({ name, arguments: args });
  calls[name] = {
    isError: result.isError ?? false,
    text: result.content?.[0]?.text ?? "",
    structured: result.structuredContent !== undefined,
  };
}
await client.close();
console.log(JSON.stringify({ tools: tools.map((t) => t.name), calls, serverStderr }));
