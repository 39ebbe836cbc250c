// run_code's prelude: evaluated once per run before the program, on the base prelude's kit
// (`base.js`), it installs the program's whole global API — `tools`, `ToolCallError`, `console`
// — over three host functions it receives as arguments (so none of them is reachable from the
// program), and returns what the host drives the run with: `start(body)`,
// `settle(n, ok, text, code)` and `describe(error)`.
(function (kit, hostLog, hostCall, catalogJson) {
  "use strict";
  const catalog = JSON.parse(catalogJson);
  const objectProto = Object.prototype;
  const { ToolCallError, identifier, lossless } = kit;
  let over = null;

  const fail = (name, message) => Promise.reject(new ToolCallError(message, undefined, name));

  function dispatch(name, count, args) {
    if (over !== null) return fail(name, `run_code run is over (${over}); ${name} not dispatched`);
    if (count === 0 || args === undefined) {
      return fail(name, "tool arguments must be lossless JSON (call the tool with an arguments object, e.g. `{}`)");
    }
    let json;
    try {
      const why = lossless(args, "arguments", new Set());
      if (why !== null) return fail(name, `tool arguments must be lossless JSON: ${why}`);
      json = JSON.stringify(args);
    } catch (e) {
      return fail(name, `tool arguments must be lossless JSON: ${describe(e)}`);
    }
    const refused = () => new ToolCallError(`run_code call limit reached; ${name} not dispatched`, undefined, name);
    return kit.send(name, json, name, refused);
  }

  const settle = kit.settler(kit.toolFailure);

  function search(query) {
    const words = String(query == null ? "" : query).toLowerCase().split(/[^\p{L}\p{N}_$-]+/u).filter(Boolean);
    const hits = [];
    for (const tool of catalog) {
      const name = tool.name.toLowerCase();
      const text = `${name} ${tool.description.toLowerCase()}`;
      let score = 0;
      for (const word of words) {
        if (name.includes(word)) score += 2;
        else if (text.includes(word)) score += 1;
      }
      if (score > 0 || words.length === 0) hits.push([score, tool]);
    }
    hits.sort((a, b) => b[0] - a[0] || (a[1].name < b[1].name ? -1 : a[1].name > b[1].name ? 1 : 0));
    return Promise.resolve(hits.map(([, t]) => ({ name: t.name, description: t.description, declaration: t.declaration })));
  }

  const tools = Object.create(null);
  Object.defineProperty(tools, "$search", { value: search, enumerable: false, writable: false, configurable: false });
  for (const { name } of catalog) {
    const binding = function (...args) { return dispatch(name, args.length, args[0]); };
    Object.defineProperty(binding, "name", { value: name });
    Object.defineProperty(tools, name, { value: binding, enumerable: true, writable: false, configurable: false });
  }
  Object.freeze(tools);

  // console: strings as they are, anything else inspected (depth 4, 100 items, 10000 chars).
  const MAX_ITEMS = 100;
  const MAX_CHARS = 10000;
  const plural = (n, word) => `${n} more ${word}${n === 1 ? "" : "s"}`;
  function quote(s) {
    let more = "";
    if (s.length > MAX_CHARS) {
      more = `... ${plural(s.length - MAX_CHARS, "character")}`;
      s = s.slice(0, MAX_CHARS);
    }
    return `'${s.replace(/\\/g, "\\\\").replace(/'/g, "\\'").replace(/\n/g, "\\n")}'${more}`;
  }
  function inspect(v, depth, seen) {
    switch (typeof v) {
      case "string": return quote(v);
      case "number": return Object.is(v, -0) ? "-0" : String(v);
      case "bigint": return `${v}n`;
      case "boolean": return String(v);
      case "undefined": return "undefined";
      case "symbol": return v.toString();
      case "function": return v.name ? `[Function: ${v.name}]` : "[Function (anonymous)]";
    }
    if (v === null) return "null";
    if (seen.includes(v)) return "[Circular]";
    if (v instanceof Error) return describe(v);
    if (v instanceof Date) return Number.isNaN(v.getTime()) ? "Invalid Date" : v.toISOString();
    if (v instanceof RegExp) return String(v);
    if (v instanceof Promise) return "Promise { <pending> }";
    const isArray = Array.isArray(v);
    if (depth > 4) return isArray ? "[Array]" : "[Object]";
    seen.push(v);
    try {
      const parts = [];
      if (isArray) {
        const n = Math.min(v.length, MAX_ITEMS);
        for (let i = 0; i < n; i++) parts.push(i in v ? inspect(v[i], depth + 1, seen) : "<empty>");
        if (v.length > MAX_ITEMS) parts.push(`... ${plural(v.length - MAX_ITEMS, "item")}`);
        return parts.length ? `[ ${parts.join(", ")} ]` : "[]";
      }
      if (v instanceof Map || v instanceof Set) {
        let i = 0;
        for (const entry of v) {
          if (i++ === MAX_ITEMS) { parts.push(`... ${plural(v.size - MAX_ITEMS, "item")}`); break; }
          parts.push(v instanceof Map
            ? `${inspect(entry[0], depth + 1, seen)} => ${inspect(entry[1], depth + 1, seen)}`
            : inspect(entry, depth + 1, seen));
        }
        const head = `${v instanceof Map ? "Map" : "Set"}(${v.size})`;
        return parts.length ? `${head} { ${parts.join(", ")} }` : `${head} {}`;
      }
      for (const key of Object.keys(v)) {
        const d = Object.getOwnPropertyDescriptor(v, key);
        const shown = d === undefined ? "undefined"
          : "value" in d ? inspect(d.value, depth + 1, seen)
          : d.set ? "[Getter/Setter]" : "[Getter]";
        parts.push(`${identifier.test(key) ? key : quote(key)}: ${shown}`);
      }
      const proto = Object.getPrototypeOf(v);
      let prefix = "";
      if (proto === null) prefix = "[Object: null prototype] ";
      else if (proto !== objectProto) {
        const ctor = proto.constructor;
        if (typeof ctor === "function" && ctor.name) prefix = `${ctor.name} `;
      }
      return parts.length ? `${prefix}{ ${parts.join(", ")} }` : `${prefix}{}`;
    } finally {
      seen.pop();
    }
  }
  const format = (args) => args.map((a) => (typeof a === "string" ? a : inspect(a, 0, []))).join(" ");
  const console = {};
  for (const level of ["log", "info", "warn", "error", "debug"]) {
    console[level] = function (...args) { hostLog(format(args)); };
  }
  Object.freeze(console);

  // What a thrown value says (see the kit); an object with a `message` says its message, anything
  // else is inspected.
  const describe = kit.describer((e) => {
    if (e !== null && typeof e === "object" && typeof e.message === "string") return e.message;
    return inspect(e, 0, []);
  });

  kit.install([["tools", tools], ["ToolCallError", ToolCallError], ["console", console]]);

  return {
    start(body) {
      return (async () => {
        let v;
        try {
          v = await body();
        } catch (e) {
          over = "failed";
          throw e;
        }
        over = "completed";
        return kit.losslessResult(v);
      })();
    },
    settle,
    describe,
  };
})
