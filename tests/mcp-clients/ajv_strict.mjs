// Compiles every tool's inputSchema and outputSchema of a tools/list result with ajv's JSON
// Schema 2020-12 draft in strict mode (ajv-formats adds the standard formats, so only a
// non-standard one is "unknown"), the validator the TypeScript SDK uses. Every warning ajv logs
// and every compile error is collected, and so is every `default` its own schema's `type` does
// not allow (ajv does not check defaults; a client that fills them in would send an invalid
// value). The last line printed is a JSON summary `{schemas, warnings: [...], errors: [...]}`.
//
// Usage: node ajv_strict.mjs <tools-list.json>   (the file holds the `result` of tools/list, or
// the whole JSON-RPC response)
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

// The packages live under the repository's .client-tools/npm (installed by `cargo xtask
// install-deps`), not beside this script.
const require = createRequire(new URL("../../.client-tools/npm/", import.meta.url));
const Ajv2020 = require("ajv/dist/2020").default;
const addFormats = require("ajv-formats").default;

const file = process.argv[2];
if (!file) {
  console.error("usage: node ajv_strict.mjs <tools-list.json>");
  process.exit(2);
}
const listed = JSON.parse(readFileSync(file, "utf8"));
const tools = (listed.result ?? listed).tools;
if (!Array.isArray(tools)) {
  console.error(`${file} holds no tools array`);
  process.exit(2);
}

const warnings = [];
const errors = [];
let current = "";
const logger = {
  log: () => {},
  warn: (...args) => warnings.push(`${current}: ${args.join(" ")}`),
  error: (...args) => errors.push(`${current}: ${args.join(" ")}`),
};

/// The JSON Schema type names `value` has.
function typesOf(value) {
  if (value === null) return ["null"];
  if (Array.isArray(value)) return ["array"];
  if (typeof value === "number") return Number.isInteger(value) ? ["integer", "number"] : ["number"];
  return [typeof value];
}

/// Every `default` under `node` that its schema's `type` refuses, as "<path>: ..." lines.
function invalidDefaults(node, path, out) {
  if (Array.isArray(node)) {
    node.forEach((child, i) => invalidDefaults(child, `${path}/${i}`, out));
    return;
  }
  if (node === null || typeof node !== "object") return;
  if ("default" in node && "type" in node) {
    const allowed = Array.isArray(node.type) ? node.type : [node.type];
    if (!typesOf(node.default).some((t) => allowed.includes(t))) {
      out.push(`${path}: default ${JSON.stringify(node.default)} is not of type ${JSON.stringify(node.type)}`);
    }
  }
  for (const [key, child] of Object.entries(node)) {
    // Values, not schemas: a default or an example may hold anything.
    if (["default", "const", "enum", "examples"].includes(key)) continue;
    invalidDefaults(child, `${path}/${key}`, out);
  }
}

let schemas = 0;
for (const tool of tools) {
  for (const key of ["inputSchema", "outputSchema"]) {
    const schema = tool[key];
    if (schema === undefined) continue;
    current = `${tool.name}.${key}`;
    // One instance per schema: `$id`-less schemas never collide, and a failure stays local.
    const ajv = new Ajv2020({ strict: true, allErrors: true, logger });
    addFormats(ajv);
    try {
      ajv.compile(schema);
    } catch (err) {
      errors.push(`${current}: ${err.message}`);
    }
    const bad = [];
    invalidDefaults(schema, "#", bad);
    errors.push(...bad.map((line) => `${current}: ${line}`));
    schemas += 1;
  }
}

for (const line of [...warnings, ...errors]) console.error(line);
console.log(JSON.stringify({ schemas, warnings, errors }));
