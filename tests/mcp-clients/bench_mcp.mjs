// toolhost mcp against the reference filesystem server, both started over stdio and driven by the
// same TypeScript SDK client code on the same workspace, their measurements interleaved (a block
// of one, then a block of the other) so a burst of load elsewhere on the machine hits both.
// Prints one table: measure, toolhost, reference, ratio (toolhost / reference; <= 1.00 wins).
//
// Usage: node bench_mcp.mjs <toolhost binary> <reference entry (dist/index.js)> <scratch dir> [quick]
// The scratch dir gets the workspace (about 5,000 files, a 200-line file, a 2 MB file), the
// toolhost state and config folders. Run by `cargo bench -p toolhost-tests --bench mcp_vs_reference`.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";

// The SDK lives under the repository's .client-tools/npm (installed by `cargo xtask test`).
const require = createRequire(new URL("../../.client-tools/npm/", import.meta.url));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");

const [toolhostArg, referenceArg, scratch, mode] = process.argv.slice(2);
// The servers run in the workspace: relative paths would resolve against it.
const toolhostBin = resolve(toolhostArg);
const referenceEntry = resolve(referenceArg);
const quick = mode === "quick";
const scale = (n) => (quick ? Math.max(2, Math.ceil(n / 20)) : n);

// ---- the workspace -------------------------------------------------------------------------
const root = join(scratch, "ws");
function generate() {
  const words = ["alpha", "beta", "gamma", "delta", "needle", "omega", "sigma", "kappa"];
  let files = 0;
  for (let d = 0; d < 50; d++) {
    for (let s = 0; s < 4; s++) {
      const dir = join(root, "src", `pkg${d}`, `mod${s}`);
      mkdirSync(dir, { recursive: true });
      for (let f = 0; f < 25; f++) {
        const ext = ["ts", "rs", "py", "md", "json"][f % 5];
        const body = Array.from({ length: 30 }, (_, i) =>
          `${words[(d + s + f + i) % words.length]} line ${i} of file ${f} in ${d}/${s}`).join("\n");
        writeFileSync(join(dir, `file${f}.${ext}`), body + "\n");
        files++;
      }
    }
  }
  const small = Array.from({ length: 40 }, (_, i) => `line ${i + 1}: the quick brown fox`).join("\n");
  writeFileSync(join(root, "small.txt"), small + "\n");
  const lines200 = Array.from({ length: 200 }, (_, i) => `const value_${i} = ${i}; // line ${i + 1}`);
  // One copy per server: each edits only its own, so neither sees the other's changes.
  writeFileSync(join(root, "edit_toolhost.ts"), lines200.join("\n") + "\n");
  writeFileSync(join(root, "edit_reference.ts"), lines200.join("\n") + "\n");
  // 2 MB of 50-byte lines.
  const big = Array.from({ length: 41943 }, (_, i) => `${String(i + 1).padStart(8, "0")} ${"x".repeat(40)}`);
  writeFileSync(join(root, "big.txt"), big.join("\n") + "\n");
  return files + 5;
}

// ---- the servers ---------------------------------------------------------------------------
function toolhostEnv(durability) {
  const config = join(scratch, `config-${durability}`);
  mkdirSync(join(config, "toolhost"), { recursive: true });
  writeFileSync(join(config, "toolhost", "config.toml"), `[session]\ndurability = "${durability}"\n`);
  return {
    ...process.env,
    XDG_STATE_HOME: join(scratch, `state-${durability}`),
    XDG_CONFIG_HOME: config,
    TOOLHOST_LOG: "warn",
  };
}

const servers = {
  toolhost: {
    spawn: () => ({ command: toolhostBin, args: ["mcp", "--standalone"], env: toolhostEnv("batched"), cwd: root }),
    read: (path) => ({ name: "read", arguments: { file_path: path } }),
    glob: { name: "glob", arguments: { pattern: "**/*.ts" } },
    grep: { name: "grep", arguments: { pattern: "needle", include: "*.ts" } },
    edit: (from, to) => ({ name: "edit", arguments: { file_path: "edit_toolhost.ts", old_string: from, new_string: to } }),
  },
  "toolhost (every-call)": {
    spawn: () => ({ command: toolhostBin, args: ["mcp", "--standalone"], env: toolhostEnv("every-call"), cwd: root }),
  },
  reference: {
    spawn: () => ({ command: process.execPath, args: [referenceEntry, root], env: { ...process.env }, cwd: root }),
    read: (path) => ({ name: "read_text_file", arguments: { path: join(root, path) } }),
    glob: { name: "search_files", arguments: { path: root, pattern: "**/*.ts" } },
    grep: { name: "search_files", arguments: { path: root, pattern: "**/*needle*" } },
    edit: (from, to) => ({
      name: "edit_file",
      arguments: { path: join(root, "edit_reference.ts"), edits: [{ oldText: from, newText: to }] },
    }),
  },
};
servers["toolhost (every-call)"] = { ...servers.toolhost, ...servers["toolhost (every-call)"] };
servers["toolhost (every-call)"].edit = (from, to) => ({
  name: "edit",
  arguments: { file_path: "edit_every_call.ts", old_string: from, new_string: to },
});

async function start(name) {
  const spec = servers[name].spawn();
  const transport = new StdioClientTransport({ ...spec, stderr: "inherit" });
  const client = new Client({ name: "bench", version: "1.0.0" });
  const began = performance.now();
  await client.connect(transport);
  const tools = await client.listTools();
  const ms = performance.now() - began;
  if (!tools.tools.length) throw new Error(`${name} lists no tools`);
  return { client, transport, pid: transport.pid, coldMs: ms };
}

async function call(session, params) {
  const result = await session.client.callTool(params, undefined, { timeout: 120000 });
  if (result.isError) throw new Error(`${params.name}: ${JSON.stringify(result.content).slice(0, 300)}`);
  return result;
}

function vmHwmKb(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmHWM:\s+(\d+)/.exec(status)[1]);
}

const pct = (samples, p) => {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.round((sorted.length - 1) * p))];
};
const median = (samples) => pct(samples, 0.5);

// Runs `body(name, session)` for each server in turn, `rounds` times, collecting its samples.
async function interleaved(names, sessions, rounds, body) {
  const samples = Object.fromEntries(names.map((n) => [n, []]));
  for (let r = 0; r < rounds; r++) {
    for (const name of r % 2 ? [...names].reverse() : names) {
      samples[name].push(...(await body(name, sessions[name])));
    }
  }
  return samples;
}

async function timed(session, params) {
  const t = performance.now();
  await call(session, params);
  return performance.now() - t;
}

// ---- the measures --------------------------------------------------------------------------
const text = (r) => (r.content ?? []).map((c) => c.text ?? "").join("");

/// Reads the 2 MB file whole: toolhost as a model pages it (following each footer's offset),
/// the reference in its one call. Returns [ms, calls]; `pages`, when given, gets each page's
/// result by its offset.
async function readWhole(name, session, pages) {
  const t = performance.now();
  if (name === "reference") {
    await call(session, servers.reference.read("big.txt"));
    return [performance.now() - t, 1];
  }
  let offset = 1;
  let calls = 0;
  for (;;) {
    const params = servers.toolhost.read("big.txt");
    params.arguments.offset = offset;
    const result = await call(session, params);
    if (pages) pages[offset] = result;
    const page = text(result);
    calls++;
    const next = /Use offset=(\d+)/.exec(page);
    if (!next) break;
    offset = Number(next[1]);
  }
  return [performance.now() - t, calls];
}

async function main() {
  const files = generate();
  const bigWritten = Date.now();
  writeFileSync(join(root, "edit_every_call.ts"), readFileSync(join(root, "edit_toolhost.ts")));
  const names = ["toolhost", "reference"];
  const all = ["toolhost", "reference", "toolhost (every-call)"];
  const rows = [];
  const row = (measure, t, r, unit, note = "") => rows.push({ measure, t, r, unit, note });

  // Cold start to tools/list: a fresh process each time.
  const cold = Object.fromEntries(names.map((n) => [n, []]));
  for (let i = 0; i < scale(7); i++) {
    for (const name of i % 2 ? [...names].reverse() : names) {
      const s = await start(name);
      cold[name].push(s.coldMs);
      await s.client.close();
    }
  }
  row("cold start to tools/list, median", median(cold.toolhost), median(cold.reference), "ms");

  const sessions = {};
  for (const name of all) sessions[name] = await start(name);

  // Warm-up: every tool once (and the read ledger entries edits need).
  for (const name of all) {
    await call(sessions[name], servers[name].read("small.txt"));
    await call(sessions[name], servers[name].glob);
    await call(sessions[name], servers[name].grep);
  }
  await call(sessions.toolhost, servers.toolhost.read("edit_toolhost.ts"));
  await call(sessions["toolhost (every-call)"], servers.toolhost.read("edit_every_call.ts"));

  // Small reads, sequential.
  const reads = await interleaved(all, sessions, scale(20), async (name, s) => {
    const out = [];
    for (let i = 0; i < 50; i++) out.push(await timed(s, servers[name].read("small.txt")));
    return out;
  });
  row("small read p50", pct(reads.toolhost, 0.5), pct(reads.reference, 0.5), "ms");
  row("small read p99", pct(reads.toolhost, 0.99), pct(reads.reference, 0.99), "ms");

  // Glob and the nearest reference tool for grep.
  const globs = await interleaved(names, sessions, scale(10), async (name, s) => [await timed(s, servers[name].glob)]);
  row("glob **/*.ts, median", median(globs.toolhost), median(globs.reference), "ms", "reference: search_files");
  const greps = await interleaved(names, sessions, scale(10), async (name, s) => [await timed(s, servers[name].grep)]);
  row("grep needle in *.ts, median", median(greps.toolhost), median(greps.reference), "ms",
    "reference has no content search: search_files **/*needle*");

  // Edits of the 200-line file: replace a line and put it back, alternately.
  const edits = await interleaved(all, sessions, scale(10), async (name, s) => {
    const out = [];
    for (let i = 0; i < 10; i++) {
      const line = (i * 17) % 200;
      const from = `const value_${line} = ${line};`;
      const to = `const value_${line} = ${line + 1000};`;
      out.push(await timed(s, servers[name].edit(from, to)));
      out.push(await timed(s, servers[name].edit(to, from)));
    }
    return out;
  });
  row("edit of a 200-line file p50", median(edits.toolhost), median(edits.reference), "ms");

  // Eight reads in flight: calls per second over a fixed number of calls.
  const inFlight = {};
  for (const round of [0, 1]) {
    for (const name of round ? [...all].reverse() : all) {
      const total = scale(4000);
      let next = 0;
      const t = performance.now();
      const worker = async () => {
        while (next < total) {
          next++;
          await call(sessions[name], servers[name].read("small.txt"));
        }
      };
      await Promise.all(Array.from({ length: 8 }, worker));
      const rate = total / ((performance.now() - t) / 1000);
      inFlight[name] = Math.max(inFlight[name] ?? 0, rate);
    }
  }
  row("8 reads in flight (calls/s, higher wins)", inFlight.toolhost, inFlight.reference, "calls/s");

  // The 2 MB file, whole. Its line index is kept once the file is two seconds old.
  while (Date.now() - bigWritten < 2500) await new Promise((r) => setTimeout(r, 100));
  const whole = { toolhost: [], reference: [], replay: [] };
  let pages = 0;
  const recorded = {};
  for (let i = 0; i < scale(7); i++) {
    for (const name of i % 2 ? [...names].reverse() : names) {
      const [ms, calls] = await readWhole(name, sessions[name], i === 0 ? recorded : undefined);
      whole[name].push(ms);
      if (name === "toolhost") pages = calls;
    }
  }
  row("2 MB file read whole, median", median(whole.toolhost), median(whole.reference), "ms",
    `toolhost pages it in ${pages} calls (first time ${whole.toolhost[0].toFixed(1)} ms)`);

  // The floor of that row: the same client reading toolhost's own pages from a server that does
  // no work (tests/mcp-clients/replay_server.mjs), interleaved with the reference once more.
  const recording = join(scratch, "replay.json");
  writeFileSync(recording, JSON.stringify({ tools: await sessions.toolhost.client.listTools(), pages: recorded }));
  servers.replay = {
    spawn: () => ({ command: process.execPath, args: [new URL("replay_server.mjs", import.meta.url).pathname, recording], env: { ...process.env }, cwd: root }),
  };
  sessions.replay = await start("replay");
  const floorNames = ["replay", "reference"];
  const floorRef = [];
  for (let i = 0; i < scale(7); i++) {
    for (const name of i % 2 ? [...floorNames].reverse() : floorNames) {
      const [ms] = await readWhole(name === "replay" ? "toolhost" : name, sessions[name]);
      (name === "replay" ? whole.replay : floorRef).push(ms);
    }
  }
  await sessions.replay.client.close();

  const rss = Object.fromEntries(all.map((n) => [n, vmHwmKb(sessions[n].pid) / 1024]));
  row("peak RSS (VmHWM)", rss.toolhost, rss.reference, "MiB");

  // The cost of durability = every-call, on what it touches.
  const extra = [
    ["small read p50, every-call", pct(reads["toolhost (every-call)"], 0.5), pct(reads.toolhost, 0.5), "ms"],
    ["small read p99, every-call", pct(reads["toolhost (every-call)"], 0.99), pct(reads.toolhost, 0.99), "ms"],
    ["8 reads in flight, every-call", inFlight["toolhost (every-call)"], inFlight.toolhost, "calls/s"],
    ["edit p50, every-call", median(edits["toolhost (every-call)"]), median(edits.toolhost), "ms"],
  ];
  for (const name of all) await sessions[name].client.close();

  const fmt = (v, unit) => (unit === "calls/s" ? v.toFixed(0) : unit === "MiB" ? v.toFixed(1) : v.toFixed(3));
  console.log(`workspace: ${files} files; ${quick ? "quick run" : "full run"}`);
  console.log("| measure | toolhost | reference | ratio | unit | note |");
  console.log("|---|---|---|---|---|---|");
  let wins = true;
  for (const { measure, t, r, unit, note } of rows) {
    // For a rate, the ratio is of times per call, so <= 1 still means toolhost wins.
    const ratio = unit === "calls/s" ? r / t : t / r;
    wins &&= ratio <= 1;
    console.log(`| ${measure} | ${fmt(t, unit)} | ${fmt(r, unit)} | ${ratio.toFixed(2)} | ${unit} | ${note} |`);
  }
  console.log("");
  console.log("durability: toolhost every-call against the default (batched)");
  console.log("| measure | every-call | batched | ratio | unit |");
  console.log("|---|---|---|---|---|");
  for (const [measure, e, b, unit] of extra) {
    const ratio = unit === "calls/s" ? b / e : e / b;
    console.log(`| ${measure} | ${fmt(e, unit)} | ${fmt(b, unit)} | ${ratio.toFixed(2)} | ${unit} |`);
  }
  console.log("");
  console.log("the floor of the 2 MB row: toolhost's own pages from a server that does no work, same client");
  console.log("| measure | replayed pages | reference | ratio | unit |");
  console.log("|---|---|---|---|---|");
  console.log(`| 2 MB file read whole, median | ${median(whole.replay).toFixed(3)} | ${median(floorRef).toFixed(3)} | ${(median(whole.replay) / median(floorRef)).toFixed(2)} | ms |`);
  console.log(JSON.stringify({ wins }));
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
