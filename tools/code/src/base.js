// The base every program prelude builds on (run_code's `prelude.js`, `workflow.js`, a session
// tool's prelude): called with a kind's prelude and the three host arguments, it hands that
// prelude a kit of what every kind needs — `ToolCallError`, the lossless-JSON check, requests to
// the host and their settling, `describe` of a thrown value, the encodings of a result, and the
// installation of globals — and returns what the prelude returns (`{start, settle, describe}`).
// A kind's prelude is a function of `(kit, hostLog, hostCall, dataJson)`.
(function (kind, hostLog, hostCall, dataJson) {
  "use strict";
  const objectProto = Object.prototype;

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

  const identifier = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
  const member = (path, key) => identifier.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;

  // Why `value` is not lossless JSON (null when it is): only null, booleans, strings, finite
  // numbers other than -0, dense arrays and plain objects of data properties, without cycles.
  function lossless(value, path, seen) {
    switch (typeof value) {
      case "string":
      case "boolean":
        return null;
      case "number":
        if (!Number.isFinite(value)) return `${path} is ${value}`;
        if (Object.is(value, -0)) return `${path} is -0`;
        return null;
      case "undefined":
        return `${path} is undefined`;
      case "object":
        break;
      default:
        return `${path} is a ${typeof value}`;
    }
    if (value === null) return null;
    if (seen.has(value)) return `${path} is a cycle`;
    seen.add(value);
    try {
      if (Array.isArray(value)) {
        if (Object.getPrototypeOf(value) !== Array.prototype) return `${path} is not a plain array`;
        for (let i = 0; i < value.length; i++) {
          const d = Object.getOwnPropertyDescriptor(value, String(i));
          if (d === undefined) return `${path}[${i}] is a hole`;
          if (!("value" in d)) return `${path}[${i}] is a getter`;
          const why = lossless(d.value, `${path}[${i}]`, seen);
          if (why !== null) return why;
        }
        return null;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== objectProto && proto !== null) return `${path} is not a plain object`;
      for (const key of Reflect.ownKeys(value)) {
        if (typeof key === "symbol") return `${path} has a symbol key`;
        const d = Object.getOwnPropertyDescriptor(value, key);
        if (!d.enumerable) continue;
        if (!("value" in d)) return `${member(path, key)} is a getter`;
        const why = lossless(d.value, member(path, key), seen);
        if (why !== null) return why;
      }
      return null;
    } finally {
      seen.delete(value);
    }
  }

  // The host's requests in flight, by number.
  const pending = new Map();

  // Asks the host `hostCall(name, json)`: a promise the host settles later, or `refused()`
  // rejected at once when the host takes no more requests. `label` names the request to its
  // failure.
  function send(name, json, label, refused) {
    const n = hostCall(name, json);
    if (n < 0) return Promise.reject(refused());
    return new Promise((resolve, reject) => pending.set(n, { resolve, reject, label }));
  }

  // The `settle(n, ok, text, code)` the host answers requests with: the parsed value, or
  // `failure(text, code, label)` rejected.
  function settler(failure) {
    return function settle(n, ok, text, code) {
      const call = pending.get(n);
      if (call === undefined) return;
      pending.delete(n);
      if (!ok) {
        call.reject(failure(text, code == null ? undefined : code, call.label));
        return;
      }
      let value;
      try {
        value = JSON.parse(text);
      } catch (e) {
        call.reject(e);
        return;
      }
      call.resolve(value);
    };
  }

  // A failed tool call as the program sees it.
  const toolFailure = (text, code, name) => new ToolCallError(text, code, name);

  // What a thrown value says: an error's `Name: message` and where in the program it was
  // thrown; a string as it is; anything else as `other` shows it.
  function describer(other) {
    return function describe(e) {
      try {
        if (e instanceof Error) {
          let text = String(e);
          const at = /run_code\.js:(\d+):(\d+)/.exec(String(e.stack));
          if (at !== null && Number(at[1]) > 1) text += ` (line ${Number(at[1]) - 1}, column ${at[2]})`;
          return text;
        }
        if (typeof e === "string") return e;
        return other(e);
      } catch (_) {
        return "<unprintable thrown value>";
      }
    };
  }

  // A result for the host: `u` undefined, `i<why>` not lossless JSON, `v<json>`.
  function losslessResult(v) {
    if (v === undefined) return "u";
    const why = lossless(v, "result", new Set());
    if (why !== null) return `i${why}`;
    return `v${JSON.stringify(v)}`;
  }

  // A result for the host as `JSON.stringify` has it (`i<why>` when it throws).
  function jsonResult(v, describe) {
    if (v === undefined) return "u";
    let text;
    try {
      text = JSON.stringify(v);
    } catch (e) {
      return `i${describe(e)}`;
    }
    return text === undefined ? "u" : `v${text}`;
  }

  // Defines `[name, value]` globals the program can neither change nor delete.
  function install(globals) {
    for (const [name, value] of globals) {
      Object.defineProperty(globalThis, name, { value, writable: false, enumerable: false, configurable: false });
    }
  }

  const kit = {
    ToolCallError, identifier, lossless, send, settler, toolFailure, describer, losslessResult,
    jsonResult, install,
  };
  return kind(Object.freeze(kit), hostLog, hostCall, dataJson);
})
