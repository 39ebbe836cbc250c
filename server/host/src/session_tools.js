// The prelude of a session tool's body (a tool the agent defined with `tool_define`): evaluated
// once per run before the body, it installs the body's globals — `input` (the call's arguments,
// also as `args`), `tools.<name>(arguments)` (any other tool, each call a real call under the
// defined tool's call), `ToolCallError` and `console` — over the two host functions it receives,
// and returns what the host drives the run with: `start(body)`, `settle(n, ok, text, code)` and
// `describe(error)`. It builds on the kit of run_code's base prelude (`ToolCallError`, requests
// and their settling, `describe`, result encoding; `toolhost_tools_code::program`). With
// `data.check` the body is compiled and never started (a definition's code is checked this way
// when it is defined).
(function (kit, hostLog, hostCall, dataJson) {
  "use strict";
  const data = JSON.parse(dataJson);
  const { ToolCallError } = kit;

  function call(name, args) {
    if (typeof name !== "string") return Promise.reject(new TypeError("tools.<name>: the name must be a string"));
    const given = args === undefined ? {} : args;
    const refused = () => new ToolCallError(`the run is over or its call limit is reached; ${name} not started`, undefined, name);
    return kit.send("tool", JSON.stringify({ name, arguments: given }), name, refused);
  }

  const settle = kit.settler(kit.toolFailure);

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

  // What a thrown value says (see the kit); anything else as JSON.
  const describe = kit.describer((e) => JSON.stringify(e));

  const input = data.input === undefined ? null : data.input;
  const globals = [
    ["input", input], ["args", input], ["tools", tools], ["ToolCallError", ToolCallError],
    ["console", console],
  ];
  kit.install(globals);

  return {
    start(body) {
      if (data.check === true) return Promise.resolve("u");
      return (async () => {
        return kit.jsonResult(await body(), describe);
      })();
    },
    settle,
    describe,
  };
})
