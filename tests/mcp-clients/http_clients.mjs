// Several TypeScript SDK clients (StreamableHTTPClientTransport) at once against one
// `toolhost mcp --http` endpoint, each its own session: client i reads `f<i>.txt` (whose text
// names it) and runs a `bash` command printing its own marker with a progress token, so each
// answer and each progress notification can be checked to be its own. Then the endpoint's
// refusals: no token (401), a foreign Origin (403), an unknown session (404), and a session
// ended with DELETE (404 afterwards).
//
// Usage: node http_clients.mjs <url> <token-file> <clients>
// The last line printed is a JSON summary.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

// The SDK lives under the repository's .client-tools/npm (installed by `cargo xtask
// install-deps`), not beside this script.
const require = createRequire(new URL("../../.client-tools/npm/", import.meta.url));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");

const [url, tokenFile, count] = process.argv.slice(2);
const token = readFileSync(tokenFile, "utf8").trim();
const auth = { Authorization: `Bearer ${token}` };

async function agent(i) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: auth },
  });
  const client = new Client({ name: "sdk-agent", version: "1.0.0" });
  const notifications = [];
  client.fallbackNotificationHandler = async (n) => notifications.push(n.method);
  await client.connect(transport);
  const tools = await client.listTools();
  const read = await client.callTool({ name: "read", arguments: { file_path: `f${i}.txt` } });
  const progress = [];
  const bash = await client.callTool(
    { name: "bash", arguments: { command: `echo marker-${i}; sleep 3; echo done-${i}`, description: `client ${i}` } },
    undefined,
    { onprogress: (p) => progress.push(p.message ?? ""), timeout: 60000 },
  );
  const text = (r) => (r.content ?? []).map((c) => c.text ?? "").join("\n");
  const result = {
    i,
    sessionId: transport.sessionId,
    tools: tools.tools.length,
    read: text(read),
    readError: read.isError === true,
    bash: text(bash),
    bashError: bash.isError === true,
    progress,
    notifications,
  };
  return { result, client, transport };
}

async function status(init) {
  const response = await fetch(url, init);
  await response.text();
  return response.status;
}

const initialize = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "probe", version: "1" } },
});
const post = (headers, body = initialize) => ({
  method: "POST",
  headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream", ...headers },
  body,
});

const started = Date.now();
const agents = await Promise.all(Array.from({ length: Number(count) }, (_, i) => agent(i)));
const elapsedMs = Date.now() - started;

const refusals = {
  noToken: await status(post({})),
  wrongToken: await status(post({ Authorization: "Bearer nope" })),
  foreignOrigin: await status(post({ ...auth, Origin: "https://evil.example" })),
  loopbackOrigin: await status(post({ ...auth, Origin: "http://localhost:3000" })),
  unknownSession: await status(
    post(
      { ...auth, "Mcp-Session-Id": "no-such-session", "MCP-Protocol-Version": "2025-11-25" },
      JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }),
    ),
  ),
};
// The first agent ends its session; the session id is then unknown.
const ended = agents[0].transport.sessionId;
await agents[0].transport.terminateSession();
refusals.afterDelete = await status(
  post(
    { ...auth, "Mcp-Session-Id": ended, "MCP-Protocol-Version": "2025-11-25" },
    JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/list", params: {} }),
  ),
);
for (const { client } of agents) {
  await client.close();
}
console.log(JSON.stringify({ elapsedMs, agents: agents.map((a) => a.result), refusals }));
