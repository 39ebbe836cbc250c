// toolhost as an MCP server for VS Code's own agent mode: the definition the extension's
// MCP server definition provider returns (`toolhost mcp` over stdio, in the first workspace
// folder, with the same binary and environment as `toolhost serve`, so it attaches to the
// editor's server and its calls show up as cards), and the feature-detected registration
// (`vscode.lm.registerMcpServerDefinitionProvider` is stable from VS Code 1.101; on older
// versions it is missing or a proposal this extension may not use). Pure: no `vscode` import —
// the API is passed in, so `node --test` covers it with fakes.

import type { Resolved } from './serverPath';

/** The id in `contributes.mcpServerDefinitionProviders` (package.json). */
export const MCP_PROVIDER_ID = 'toolhost';
/** The label of the one server the provider offers. */
export const MCP_SERVER_LABEL = 'toolhost';

/** What VS Code should start: `command args…` in `cwd` with `env` over its own environment. */
export interface McpStdioDefinition {
  label: string;
  command: string;
  args: string[];
  /** The workspace folder (a path; VS Code's definition takes it as a `Uri`). */
  cwd: string;
  env: Record<string, string>;
}

export interface McpDefinitionInput {
  /** The `toolhost` binary, resolved exactly as for `toolhost serve`. */
  server: Resolved;
  /** The first workspace folder. */
  workspaceFolder: string | undefined;
  /** `toolhost.serverEnv`: the server's extra environment (e.g. `XDG_STATE_HOME`, which decides
   * where the attach socket is), so `toolhost mcp` finds the editor's server. */
  serverEnv: Record<string, unknown> | undefined;
  /** `toolhost.serverArgs`: only `--session-dir` carries over (used when `toolhost mcp` runs on
   * its own because no editor server is listening). */
  serverArgs: readonly unknown[] | undefined;
}

export type McpDefinitionResult = { ok: true; definition: McpStdioDefinition } | { ok: false; message: string };

/** The `--session-dir` of the serve arguments (`--session-dir DIR` or `--session-dir=DIR`). */
function sessionDirArgs(serverArgs: readonly unknown[]): string[] {
  for (let i = 0; i < serverArgs.length; i++) {
    const arg = serverArgs[i];
    if (arg === '--session-dir' && typeof serverArgs[i + 1] === 'string') {
      return ['--session-dir', serverArgs[i + 1] as string];
    }
    if (typeof arg === 'string' && arg.startsWith('--session-dir=')) {
      return ['--session-dir', arg.slice('--session-dir='.length)];
    }
  }
  return [];
}

/** The MCP server definition for the window: `toolhost mcp` in the first workspace folder, or why
 * there is none (no folder open, no binary). */
export function mcpServerDefinition(input: McpDefinitionInput): McpDefinitionResult {
  if (!input.workspaceFolder) {
    return { ok: false, message: 'no workspace folder is open' };
  }
  if (!input.server.ok) {
    return { ok: false, message: input.server.message };
  }
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(input.serverEnv ?? {})) {
    if (typeof value === 'string') {
      env[key] = value;
    }
  }
  return {
    ok: true,
    definition: {
      label: MCP_SERVER_LABEL,
      command: input.server.command,
      args: ['mcp', ...sessionDirArgs(input.serverArgs ?? [])],
      cwd: input.workspaceFolder,
      env,
    },
  };
}

// ---- the VS Code API, as far as this extension uses it (stable in 1.101; absent or a proposal
// before). Declared here because @types/vscode stays at the oldest version the extension runs on.

export interface DisposableLike {
  dispose(): unknown;
}

/** `vscode.Event<void>`. */
export type EventLike = (listener: () => unknown) => DisposableLike;

/** `vscode.McpServerDefinitionProvider`. */
export interface McpServerDefinitionProviderLike<T> {
  readonly onDidChangeMcpServerDefinitions?: EventLike;
  provideMcpServerDefinitions(token: unknown): T[] | Promise<T[]>;
}

/** An instance of `vscode.McpStdioServerDefinition`; `cwd` is a `vscode.Uri`. */
export interface McpStdioServerDefinitionLike {
  readonly label: string;
  command: string;
  args: string[];
  env: Record<string, string | number | null>;
  cwd?: unknown;
  version?: string;
}

/** `new vscode.McpStdioServerDefinition(label, command, args?, env?, version?)`. */
export type McpStdioServerDefinitionCtor = new (
  label: string,
  command: string,
  args?: string[],
  env?: Record<string, string | number | null>,
  version?: string,
) => McpStdioServerDefinitionLike;

/** The parts of the `vscode` namespace the registration needs (any of them may be missing). */
export interface McpApiLike {
  version?: string;
  lm?: { registerMcpServerDefinitionProvider?: unknown };
  McpStdioServerDefinition?: unknown;
}

export type McpRegistration =
  | { registered: true; disposable: DisposableLike; message: string }
  | { registered: false; message: string };

/** Registers `provider` under {@link MCP_PROVIDER_ID} when this VS Code has the API, and says what
 * happened in one line (logged by the caller): registered, or skipped and why — the API is
 * missing, or (VS Code 1.100) present only as a proposal, whose use throws. */
export function registerMcpProvider(
  api: McpApiLike,
  provider: (ctor: McpStdioServerDefinitionCtor) => McpServerDefinitionProviderLike<McpStdioServerDefinitionLike>,
): McpRegistration {
  const version = api.version ? `VS Code ${api.version}` : 'this VS Code';
  const skipped = (why: string): McpRegistration => ({
    registered: false,
    message: `MCP server definition provider not registered: ${why} (${version}; the API is stable from VS Code 1.101); agent mode can still run \`toolhost mcp\` from an mcp.json entry`,
  });
  const register = api.lm?.registerMcpServerDefinitionProvider;
  if (typeof register !== 'function') {
    return skipped('vscode.lm.registerMcpServerDefinitionProvider is missing');
  }
  const ctor = api.McpStdioServerDefinition;
  if (typeof ctor !== 'function') {
    return skipped('vscode.McpStdioServerDefinition is missing');
  }
  try {
    const disposable = (register as (id: string, p: unknown) => DisposableLike).call(
      api.lm,
      MCP_PROVIDER_ID,
      provider(ctor as McpStdioServerDefinitionCtor),
    );
    return {
      registered: true,
      disposable,
      message: `MCP server definition provider "${MCP_PROVIDER_ID}" registered: agent mode can run \`toolhost mcp\` (${version})`,
    };
  } catch (err) {
    return skipped(err instanceof Error ? err.message.split('\n')[0] ?? err.message : String(err));
  }
}

/** The VS Code definition object for `definition`; `toUri` turns the cwd path into a `Uri`. */
export function toVscodeDefinition(
  ctor: McpStdioServerDefinitionCtor,
  definition: McpStdioDefinition,
  toUri: (path: string) => unknown,
): McpStdioServerDefinitionLike {
  const server = new ctor(definition.label, definition.command, [...definition.args], { ...definition.env });
  server.cwd = toUri(definition.cwd);
  return server;
}
