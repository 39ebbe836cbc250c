// The prelude of a session tool's body (a tool the agent defined with `tool_define`): evaluated
// once per run before the body, it installs the body's globals — `input` (the call's arguments,
// also as `args`), `tools.<name>(arguments)` (any other tool, each call a real call under the
// defined tool's call), `ToolCallError` and `console` — over the two host functions it receives,
// and returns what the host drives the run with: `start(body)`, `settle(n, ok, text, code)` and
// `describe(error)`. With `data.check` the body is compiled and never started (a definition's
// code is checked this way when it is defined).
(function (hostLog, hostCall, dataJson) {
  "use strict";
  const data = JSON.parse(dataJson);
  const pending = new Map();

  class ToolCallError extends Error {
    constructor(message, code, toolName) {
      super(message);
      this.code = code;
      this.toolName = toolName;
    }
  }
  Object.defineProperty(ToolCallError.prototype, "name", {
    value: "ToolCallError", writable: true, configurable: true, enumerable: false,
  });

  function call(name, args) {
    if (typeof name !== "string") return Promise.reject(new TypeError("tools.<name>: the name must be a string"));
    const given = args === undefined ? {} : args;
    const n = hostCall("tool", JSON.stringify({ name, arguments: given }));
    if (n < 0) return Promise.reject(new ToolCallError(`the run is over or its call limit is reached; ${name} not started`, undefined, name));
    return new Promise((resolve, reject) => pending.set(n, { resolve, reject, name }));
  }

  function settle(n, ok, text, code) {
    const waiting = pending.get(n);
    if (waiting === undefined) return;
    pending.delete(n);
    if (!ok) {
      waiting.reject(new ToolCallError(text, code == null ? undefined : code, waiting.name));
      return;
    }
    let value;
    try {
      value = JSON.parse(text);
    } catch (e) {
      waiting.reject(e);
      return;
    }
    waiting.resolve(value);
  }

  // `tools.read({...})` for any tool name: the host knows which tools exist.
  const tools = new Proxy(Object.create(null), {
    get(_target, name) {
      if (typeof name !== "string") return undefined;
      return (args) => call(name, args);
    },
    set() {
      return false;
    },
  });

  function format(args) {
    return args.map((a) => {
      if (typeof a === "string") return a;
      try {
        const text = JSON.stringify(a);
        return text === undefined ? String(a) : text;
      } catch (_) {
        return String(a);
      }
    }).join(" ");
  }
  const console = {};
  for (const level of ["log", "info", "warn", "error", "debug"]) {
    console[level] = function (...args) { hostLog(format(args)); };
  }
  Object.freeze(console);

  function describe(e) {
    try {
      if (e instanceof Error) {
        let text = String(e);
        const at = /run_code\.js:(\d+):(\d+)/.exec(String(e.stack));
        if (at !== null && Number(at[1]) > 1) text += ` (line ${Number(at[1]) - 1}, column ${at[2]})`;
        return text;
      }
      if (typeof e === "string") return e;
      return JSON.stringify(e);
    } catch (_) {
      return "<unprintable thrown value>";
    }
  }

  const input = data.input === undefined ? null : data.input;
  const globals = [
    ["input", input], ["args", input], ["tools", tools], ["ToolCallError", ToolCallError],
    ["console", console],
  ];
  for (const [name, value] of globals) {
    Object.defineProperty(globalThis, name, { value, writable: false, enumerable: false, configurable: false });
  }

  return {
    start(body) {
      if (data.check === true) return Promise.resolve("u");
      return (async () => {
        const v = await body();
        if (v === undefined) return "u";
        let text;
        try {
          text = JSON.stringify(v);
        } catch (e) {
          return `i${describe(e)}`;
        }
        return text === undefined ? "u" : `v${text}`;
      })();
    },
    settle,
    describe,
  };
})
