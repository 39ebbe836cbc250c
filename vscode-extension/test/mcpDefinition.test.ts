import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  MCP_PROVIDER_ID,
  mcpServerDefinition,
  registerMcpProvider,
  toVscodeDefinition,
  type EventLike,
  type McpDefinitionInput,
  type McpServerDefinitionProviderLike,
  type McpStdioServerDefinitionLike,
} from '../src/mcpDefinition';
import { resolveServerPath } from '../src/serverPath';

function input(over: Partial<McpDefinitionInput> = {}): McpDefinitionInput {
  return {
    server: { ok: true, command: '/opt/toolhost/bin/toolhost', source: 'setting' },
    workspaceFolder: '/home/u/project',
    serverEnv: {},
    serverArgs: [],
    ...over,
  };
}

/** A stand-in for `vscode.McpStdioServerDefinition` (the 1.101 constructor). */
class FakeStdioDefinition implements McpStdioServerDefinitionLike {
  cwd?: unknown;
  constructor(
    readonly label: string,
    public command: string,
    public args: string[] = [],
    public env: Record<string, string | number | null> = {},
    public version?: string,
  ) {}
}

class FakeUri {
  constructor(readonly fsPath: string) {}
}

describe('MCP server definition (toolhost mcp for VS Code agent mode)', () => {
  it('runs `<the serve binary> mcp` in the first workspace folder with the server\'s extra environment', () => {
    const server = resolveServerPath({
      setting: '${workspaceFolder}/target/debug/toolhost',
      extensionPath: '/ext',
      pathEnv: '/usr/bin',
      home: '/home/u',
      workspaceFolder: '/home/u/project',
      platform: 'linux',
      isExecutable: (f) => f === '/home/u/project/target/debug/toolhost',
    });
    const result = mcpServerDefinition(
      input({ server, serverEnv: { XDG_STATE_HOME: '/tmp/state', NOT_A_STRING: 3 }, serverArgs: ['--stdio'] }),
    );
    assert.deepEqual(result, {
      ok: true,
      definition: {
        label: 'toolhost',
        command: '/home/u/project/target/debug/toolhost',
        args: ['mcp'],
        cwd: '/home/u/project',
        env: { XDG_STATE_HOME: '/tmp/state' },
      },
    });
  });

  it('carries `--session-dir` over from toolhost.serverArgs (both spellings), nothing else', () => {
    const args = (serverArgs: unknown[]) => {
      const r = mcpServerDefinition(input({ serverArgs }));
      return r.ok ? r.definition.args : undefined;
    };
    assert.deepEqual(args(['--session-dir', '/tmp/s']), ['mcp', '--session-dir', '/tmp/s']);
    assert.deepEqual(args(['--stdio', '--session-dir=/tmp/t']), ['mcp', '--session-dir', '/tmp/t']);
    assert.deepEqual(args(['--session-dir']), ['mcp']);
    assert.deepEqual(args([7, '--other']), ['mcp']);
  });

  it('no definition without a workspace folder or a binary (and says why)', () => {
    assert.deepEqual(mcpServerDefinition(input({ workspaceFolder: undefined })), { ok: false, message: 'no workspace folder is open' });
    const missing = mcpServerDefinition(input({ server: { ok: false, message: 'toolhost.serverPath "/nope" is not an executable file' } }));
    assert.deepEqual(missing, { ok: false, message: 'toolhost.serverPath "/nope" is not an executable file' });
  });

  it('the VS Code object: McpStdioServerDefinition(label, command, args, env) with cwd as a Uri', () => {
    const result = mcpServerDefinition(input({ serverEnv: { A: 'b' } }));
    assert.ok(result.ok);
    const server = toVscodeDefinition(FakeStdioDefinition, result.definition, (p) => new FakeUri(p));
    assert.ok(server instanceof FakeStdioDefinition);
    assert.equal(server.label, 'toolhost');
    assert.equal(server.command, '/opt/toolhost/bin/toolhost');
    assert.deepEqual(server.args, ['mcp']);
    assert.deepEqual(server.env, { A: 'b' });
    assert.ok(server.cwd instanceof FakeUri);
    assert.equal(server.cwd.fsPath, '/home/u/project');
    // copies: VS Code may keep the object; the definition stays ours
    server.args.push('x');
    assert.deepEqual(result.definition.args, ['mcp']);
  });
});

describe('MCP provider registration (feature-detected)', () => {
  const provider = (): McpServerDefinitionProviderLike<McpStdioServerDefinitionLike> => ({
    provideMcpServerDefinitions: () => [],
  });

  it('VS Code 1.101+: registers under the id of contributes.mcpServerDefinitionProviders', () => {
    const calls: { id: string; provider: McpServerDefinitionProviderLike<McpStdioServerDefinitionLike> }[] = [];
    let disposed = false;
    let listener: (() => unknown) | undefined;
    const onDidChange: EventLike = (l) => {
      listener = l;
      return { dispose: () => (listener = undefined) };
    };
    const api = {
      version: '1.101.0',
      lm: {
        registerMcpServerDefinitionProvider(id: string, p: McpServerDefinitionProviderLike<McpStdioServerDefinitionLike>) {
          assert.equal(this, api.lm, 'called as a method of vscode.lm');
          calls.push({ id, provider: p });
          return { dispose: () => (disposed = true) };
        },
      },
      McpStdioServerDefinition: FakeStdioDefinition,
    };
    const registration = registerMcpProvider(api, (ctor) => ({
      onDidChangeMcpServerDefinitions: onDidChange,
      provideMcpServerDefinitions: () => [new ctor('toolhost', '/bin/toolhost', ['mcp'])],
    }));
    assert.equal(registration.registered, true);
    assert.match(registration.message, /MCP server definition provider "toolhost" registered.*VS Code 1\.101\.0/);
    assert.equal(calls.length, 1);
    assert.equal(calls[0]?.id, MCP_PROVIDER_ID);
    const defs = calls[0]?.provider.provideMcpServerDefinitions(undefined);
    assert.ok(Array.isArray(defs) && defs[0] instanceof FakeStdioDefinition);
    // VS Code subscribes to the change event
    calls[0]?.provider.onDidChangeMcpServerDefinitions?.(() => undefined);
    assert.ok(listener);
    if (registration.registered) {
      registration.disposable.dispose();
    }
    assert.ok(disposed);
  });

  it('older VS Code: the API missing → skipped, one line saying why', () => {
    for (const api of [{ version: '1.99.0' }, { version: '1.99.0', lm: {} }, { lm: { registerMcpServerDefinitionProvider: 'no' } }]) {
      const r = registerMcpProvider(api, provider);
      assert.equal(r.registered, false);
      assert.match(r.message, /^MCP server definition provider not registered: vscode\.lm\.registerMcpServerDefinitionProvider is missing \((VS Code 1\.99\.0|this VS Code); the API is stable from VS Code 1\.101\)/);
      assert.doesNotMatch(r.message, /\n/);
    }
    const noCtor = registerMcpProvider({ lm: { registerMcpServerDefinitionProvider: () => ({ dispose() {} }) } }, provider);
    assert.equal(noCtor.registered, false);
    assert.match(noCtor.message, /vscode\.McpStdioServerDefinition is missing/);
  });

  it('VS Code 1.100: the function exists but is a proposal whose use throws → skipped with its message', () => {
    const api = {
      version: '1.100.3',
      lm: {
        registerMcpServerDefinitionProvider: () => {
          throw new Error("Extension 'toolhost.toolhost' CANNOT use API proposal: mcpConfigurationProvider.\nIts package.json#enabledApiProposals-property declares: [] but NOT mcpConfigurationProvider.");
        },
      },
      McpStdioServerDefinition: FakeStdioDefinition,
    };
    const r = registerMcpProvider(api, provider);
    assert.equal(r.registered, false);
    assert.equal(
      r.message,
      "MCP server definition provider not registered: Extension 'toolhost.toolhost' CANNOT use API proposal: mcpConfigurationProvider. (VS Code 1.100.3; the API is stable from VS Code 1.101); agent mode can still run `toolhost mcp` from an mcp.json entry",
    );
  });
});
