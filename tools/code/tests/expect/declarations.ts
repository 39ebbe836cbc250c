type ToolArgsMap = {
  "__proto__": { [key: string]: unknown };
  "big": {
    n: number;
  };
  "echo": {
    /** A number. */
    i?: number;
  };
  "edit": { [key: string]: unknown };
  "fail": { [key: string]: unknown };
  "my-tool": { [key: string]: unknown };
  "read": {
    /** The file. */
    path: string;
    offset?: number;
    mode?: "text" | "bytes";
    range?: [number, number];
    tags?: (string | null)[];
    opts?: {
      deep?: boolean;
    };
    "weird key"?: unknown;
  };
  "slow": { [key: string]: unknown };
  "wait": { [key: string]: unknown };
};
type ToolOutputMap = {
  "__proto__": unknown;
  "big": string;
  "echo": { [key: string]: unknown };
  "edit": unknown;
  "fail": unknown;
  "my-tool": unknown;
  "read": {
    lines: string[];
    total?: number | null;
    kind: "file";
    meta?: { [key: string]: number };
  };
  "slow": { [key: string]: unknown };
  "wait": unknown;
};
type ToolName = keyof ToolArgsMap;
declare const tools: {
  /** A tool named like the prototype accessor. */
  __proto__(args: ToolArgsMap["__proto__"]): Promise<ToolOutputMap["__proto__"]>;
  /** Returns a string of n bytes. */
  big(args: ToolArgsMap["big"]): Promise<ToolOutputMap["big"]>;
  /** Returns its arguments. */
  echo(args: ToolArgsMap["echo"]): Promise<ToolOutputMap["echo"]>;
  /** An exclusive call that takes 20 ms. */
  edit(args: ToolArgsMap["edit"]): Promise<ToolOutputMap["edit"]>;
  /** Always fails. */
  fail(args: ToolArgsMap["fail"]): Promise<ToolOutputMap["fail"]>;
  /** A tool whose name is not an identifier. */
  "my-tool"(args: ToolArgsMap["my-tool"]): Promise<ToolOutputMap["my-tool"]>;
  /** Reads a file. */
  read(args: ToolArgsMap["read"]): Promise<ToolOutputMap["read"]>;
  /** Waits 20 ms, then returns {}. */
  slow(args: ToolArgsMap["slow"]): Promise<ToolOutputMap["slow"]>;
  /** Waits until cancelled. */
  wait(args: ToolArgsMap["wait"]): Promise<ToolOutputMap["wait"]>;
  /** The tools whose name or description has the query's words, best match first, each with its declaration. */
  $search(query: string): Promise<{ name: string; description: string; declaration: string }[]>;
};
declare class ToolCallError extends Error {
  readonly name: "ToolCallError";
  /** The failure's stable code, when it has one. */
  readonly code: string | undefined;
  /** The tool that was called. */
  readonly toolName: string;
}
