// The `workflow` prelude: evaluated once per run before the script, on the base prelude's kit
// (`base.js`), it installs the script's globals — `args`, `agent`, `parallel`, `pipeline`,
// `phase`, `log` — over the two host functions it receives (so neither is reachable from the
// script), takes away the clock and randomness (a resumed run re-runs the script and must make
// the same calls), and returns what the host drives the run with: `start(body)`,
// `settle(n, ok, text, code)` and `describe(error)`.
(function (kit, hostLog, hostCall, dataJson) {
  "use strict";
  const data = JSON.parse(dataJson);
  const MAX_AGENTS = 1000;
  const MAX_ITEMS = 4096;
  const OPTIONS = ["label", "phase", "schema"];
  let agents = 0;
  let currentPhase = null;
  // A fatal error (an unknown option, a bad schema, a cap) ends the run even if the script
  // catches it: it is rethrown when the script returns.
  let fatal = null;

  class WorkflowError extends Error {}
  Object.defineProperty(WorkflowError.prototype, "name", {
    value: "WorkflowError", writable: true, configurable: true, enumerable: false,
  });

  function fail(message) {
    const e = new WorkflowError(message);
    if (fatal === null) fatal = e;
    return e;
  }

  function request(name, args) {
    const refused = () => fail(`the run is over or its call limit is reached; ${name} not started`);
    return kit.send(name, JSON.stringify(args), name, refused);
  }

  // A failed request is fatal to the run.
  const settle = kit.settler((text) => fail(text));

  function agent(prompt, options) {
    try {
      if (typeof prompt !== "string" || prompt.trim() === "") {
        throw fail("agent(prompt): the prompt must be a non-empty string");
      }
      const given = options === undefined || options === null ? {} : options;
      if (typeof given !== "object" || Array.isArray(given)) throw fail("agent(prompt, options): options must be an object");
      for (const key of Object.keys(given)) {
        if (!OPTIONS.includes(key)) throw fail(`unknown agent option "${key}" (expected label, phase or schema)`);
      }
      for (const key of ["label", "phase"]) {
        if (given[key] !== undefined && typeof given[key] !== "string") throw fail(`agent option "${key}" must be a string`);
      }
      if (given.schema !== undefined && (given.schema === null || typeof given.schema !== "object" || Array.isArray(given.schema))) {
        throw fail('agent option "schema" must be a JSON Schema object');
      }
      if (agents >= MAX_AGENTS) throw fail(`a workflow run starts at most ${MAX_AGENTS} agents`);
      agents += 1;
      const args = { prompt };
      if (given.label !== undefined) args.label = given.label;
      const phase = given.phase !== undefined ? given.phase : currentPhase;
      if (phase !== null) args.phase = phase;
      if (given.schema !== undefined) args.schema = given.schema;
      return request("agent", args);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  function items(what, list) {
    if (!Array.isArray(list)) throw fail(`${what} expects an array`);
    if (list.length > MAX_ITEMS) throw fail(`${what} takes at most ${MAX_ITEMS} items (got ${list.length})`);
    return list;
  }

  // Every thunk started, then all their results (a barrier).
  async function parallel(thunks) {
    items("parallel", thunks);
    return Promise.all(thunks.map((thunk) => {
      if (typeof thunk !== "function") return Promise.reject(fail("parallel expects an array of functions"));
      try {
        return Promise.resolve(thunk());
      } catch (e) {
        return Promise.reject(e);
      }
    }));
  }

  // Each item through every stage in turn, items independent of each other (no barrier
  // between stages): stage k of an item starts as soon as its stage k-1 ends.
  async function pipeline(list, ...stages) {
    items("pipeline", list);
    for (const stage of stages) {
      if (typeof stage !== "function") throw fail("pipeline stages must be functions");
    }
    return Promise.all(list.map(async (item, i) => {
      let prev = item;
      for (const stage of stages) prev = await stage(prev, item, i);
      return prev;
    }));
  }

  function phase(title) {
    if (typeof title !== "string" || title.trim() === "") throw fail("phase(title): the title must be a non-empty string");
    currentPhase = title;
    request("phase", { title }).catch(() => {});
  }

  function log(message) {
    hostLog(typeof message === "string" ? message : JSON.stringify(message));
  }

  // What a thrown value says (see the kit); anything else as JSON.
  const describe = kit.describer((e) => JSON.stringify(e));

  // No clock and no randomness: `Date` only of given times, no `Date.now`, no `Math.random`.
  const RealDate = Date;
  class GivenDate extends RealDate {
    constructor(...parts) {
      if (parts.length === 0) throw new TypeError("workflow scripts have no clock: new Date() needs a time");
      super(...parts);
    }
  }
  Object.defineProperty(GivenDate, "now", { value: undefined, writable: false, configurable: false });
  Object.defineProperty(Math, "random", { value: undefined, writable: false, configurable: false });

  const globals = [
    ["args", data.args === undefined ? null : data.args],
    ["agent", agent], ["parallel", parallel], ["pipeline", pipeline], ["phase", phase], ["log", log],
    ["Date", GivenDate],
  ];
  kit.install(globals);

  return {
    start(body) {
      return (async () => {
        const v = await body();
        if (fatal !== null) throw fatal;
        return kit.jsonResult(v, describe);
      })().catch((e) => { throw fatal !== null ? fatal : e; });
    },
    settle,
    describe,
  };
})
