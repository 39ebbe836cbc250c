// The MCP Servers view's model: `toolhost/mcpServers` statuses from the wire, their tree items
// (labels, descriptions, icons, tooltips, tools as children), the unavailable row, and keeping the
// list current (answers, changed notifications replacing the list, stale answers, resets).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  changeLines,
  McpServersModel,
  McpServersSync,
  serverDescription,
  serverTooltip,
  stateIcon,
  unavailableLabel,
  type SyncHost,
} from '../src/mcpServers';
import { asMcpServerStatus, asMcpServersResult, MCP_SERVER_STATES, methods, type McpServerStatus } from '../src/protocol';

const echo: McpServerStatus = {
  name: 'echo',
  transport: 'stdio',
  state: 'ready',
  tools: ['mcp__echo__weather', 'mcp__echo__shout'],
  protocolVersion: '2025-06-18',
  attempts: 0,
};
const web: McpServerStatus = { name: 'web', transport: 'streamable-http', state: 'reconnecting', tools: [], error: 'connection refused', attempts: 3 };

describe('MCP servers: the wire', () => {
  it('the method names', () => {
    assert.equal(methods.mcpServers, 'toolhost/mcpServers');
    assert.equal(methods.mcpServersChanged, 'toolhost/mcpServersChanged');
    assert.deepEqual([...MCP_SERVER_STATES], ['idle', 'starting', 'ready', 'reconnecting', 'failed', 'stopped']);
  });

  it('statuses are taken as sent; junk servers are skipped and junk fields fall back to what says least', () => {
    assert.deepEqual(asMcpServersResult({ servers: [echo, web] }), { servers: [echo, web] });
    assert.deepEqual(asMcpServersResult({ servers: [] }), { servers: [] });
    assert.equal(asMcpServersResult({}), undefined);
    assert.equal(asMcpServersResult(null), undefined);
    assert.equal(asMcpServersResult({ servers: 'echo' }), undefined);
    assert.deepEqual(asMcpServersResult({ servers: [3, { name: '' }, { state: 'ready' }, echo] }), { servers: [echo] });
    assert.deepEqual(asMcpServerStatus({ name: 'x', tools: ['a', 3, ''], attempts: -1, error: '', protocolVersion: 7 }), {
      name: 'x',
      transport: 'stdio',
      state: 'idle',
      tools: ['a'],
      attempts: 0,
    });
    // a state this client does not know is kept (shown by name)
    assert.equal(asMcpServerStatus({ ...echo, state: 'paused' })?.state, 'paused');
  });
});

describe('MCP servers: tree items', () => {
  it('an icon per state: ready passes, starting/reconnecting spin, failed is an error, idle/stopped/unknown an empty circle', () => {
    assert.deepEqual(stateIcon('ready'), { id: 'pass', color: 'testing.iconPassed' });
    assert.deepEqual(stateIcon('starting'), { id: 'sync~spin' });
    assert.deepEqual(stateIcon('reconnecting'), { id: 'sync~spin' });
    assert.deepEqual(stateIcon('failed'), { id: 'error', color: 'errorForeground' });
    assert.deepEqual(stateIcon('idle'), { id: 'circle-outline' });
    assert.deepEqual(stateIcon('stopped'), { id: 'circle-outline' });
    assert.deepEqual(stateIcon('paused'), { id: 'circle-outline' });
  });

  it('the description: the state, then the number of tools (a ready server always counts them)', () => {
    assert.equal(serverDescription(echo), 'ready · 2 tools');
    assert.equal(serverDescription({ ...echo, tools: ['mcp__echo__shout'] }), 'ready · 1 tool');
    assert.equal(serverDescription({ ...echo, tools: [] }), 'ready · 0 tools');
    assert.equal(serverDescription({ ...echo, state: 'starting', tools: [] }), 'starting');
    assert.equal(serverDescription({ ...echo, state: 'idle', tools: [] }), 'idle');
    assert.equal(serverDescription({ ...echo, state: 'failed', tools: [], error: 'exit 1' }), 'failed');
    assert.equal(serverDescription(web), 'reconnecting (attempt 3)');
    assert.equal(serverDescription({ ...web, attempts: 0 }), 'reconnecting');
    // the tools of the last generation stay listed while it reconnects
    assert.equal(serverDescription({ ...echo, state: 'reconnecting', attempts: 1 }), 'reconnecting (attempt 1) · 2 tools');
  });

  it('the tooltip: transport, protocol version, tools, attempts, the error', () => {
    assert.equal(serverTooltip(echo), 'MCP server echo: ready\ntransport: stdio\nprotocol version: 2025-06-18\n2 tools');
    assert.equal(
      serverTooltip(web),
      'MCP server web: reconnecting\ntransport: streamable-http\n0 tools\nreconnect attempts in this outage: 3\nerror: connection refused',
    );
  });

  it('servers are the top rows in the server\'s order, each with its tools (public names) as children', () => {
    const model = new McpServersModel();
    model.replace([web, echo]);
    assert.deepEqual(model.roots(), [
      { type: 'server', name: 'web' },
      { type: 'server', name: 'echo' },
    ]);
    const [first, second] = model.roots();
    assert.ok(first && second);
    assert.deepEqual(model.item(second), {
      id: 'mcp-server:echo',
      label: 'echo',
      description: 'ready · 2 tools',
      tooltip: serverTooltip(echo),
      icon: { id: 'pass', color: 'testing.iconPassed' },
      collapsible: 'collapsed',
      contextValue: 'mcpServer',
    });
    assert.equal(model.item(first).collapsible, 'none', 'no tools, nothing to expand');
    assert.deepEqual(model.item(first).icon, { id: 'sync~spin' });
    assert.deepEqual(model.children(first), []);
    const tools = model.children(second);
    assert.deepEqual(tools, [
      { type: 'tool', server: 'echo', name: 'mcp__echo__weather' },
      { type: 'tool', server: 'echo', name: 'mcp__echo__shout' },
    ]);
    const tool = tools[0];
    assert.ok(tool);
    assert.deepEqual(model.item(tool), {
      id: 'mcp-tool:echo/mcp__echo__weather',
      label: 'mcp__echo__weather',
      tooltip: "mcp__echo__weather: a tool of the MCP server echo, in toolhost's registry under this name",
      icon: { id: 'tools' },
      collapsible: 'none',
      contextValue: 'mcpTool',
    });
    assert.deepEqual(model.children(tool), []);
    // a row of a server that is gone (the tree asks late) shows as stopped
    assert.equal(model.item({ type: 'server', name: 'gone' }).description, 'stopped');
  });

  it('the unavailable row: one item "MCP bridge not available: <message>", nothing else', () => {
    const model = new McpServersModel();
    model.replace([echo]);
    model.fail('Unhandled method toolhost/mcpServers');
    assert.equal(model.state, 'unavailable');
    const roots = model.roots();
    assert.deepEqual(roots, [{ type: 'unavailable', message: 'MCP bridge not available: Unhandled method toolhost/mcpServers' }]);
    assert.equal(unavailableLabel('x'), 'MCP bridge not available: x');
    const item = model.item(roots[0]!);
    assert.equal(item.label, 'MCP bridge not available: Unhandled method toolhost/mcpServers');
    assert.deepEqual(item.icon, { id: 'warning', color: 'editorWarning.foreground' });
    assert.equal(item.contextValue, 'mcpUnavailable');
    assert.equal(model.children(roots[0]!).length, 0);
    assert.deepEqual(model.servers, []);
  });

  it('no servers configured: loaded with no rows (the welcome text shows); before any answer: unknown', () => {
    const model = new McpServersModel();
    assert.equal(model.state, 'unknown');
    assert.deepEqual(model.roots(), []);
    model.replace([]);
    assert.equal(model.state, 'loaded');
    assert.deepEqual(model.roots(), []);
  });

  it('change lines for the log: appeared, changed state or tools, removed', () => {
    assert.deepEqual(changeLines([], [echo]), ['MCP server echo: ready · 2 tools']);
    assert.deepEqual(changeLines([echo], [echo]), []);
    assert.deepEqual(changeLines([echo], [{ ...echo, state: 'failed', tools: [], error: 'exit 1' }]), ['MCP server echo: failed (exit 1)']);
    assert.deepEqual(changeLines([echo, web], [web]), ['MCP server echo: removed']);
  });
});

/** A scripted language client: answers come when the test says so. */
class FakeHost implements SyncHost {
  isRunning = true;
  requests: { resolve(value: unknown): void; reject(err: unknown): void }[] = [];
  changes = 0;
  lines: string[] = [];
  running(): boolean {
    return this.isRunning;
  }
  request(): Promise<unknown> {
    return new Promise((resolve, reject) => this.requests.push({ resolve, reject }));
  }
  changed(): void {
    this.changes += 1;
  }
  log(line: string): void {
    this.lines.push(line);
  }
}

function setup(): { model: McpServersModel; host: FakeHost; sync: McpServersSync } {
  const model = new McpServersModel();
  const host = new FakeHost();
  return { model, host, sync: new McpServersSync(model, host) };
}

describe('MCP servers: keeping the list current', () => {
  it('the server running: asks toolhost/mcpServers and shows the answer', async () => {
    const { model, host, sync } = setup();
    sync.serverRunning(true);
    assert.equal(host.requests.length, 1);
    host.requests[0]?.resolve({ servers: [echo] });
    await sync.settled();
    assert.equal(model.state, 'loaded');
    assert.deepEqual(model.servers, [echo]);
    assert.ok(host.changes > 0);
    assert.deepEqual(host.lines, ['MCP server echo: ready · 2 tools']);
  });

  it('a changed notification replaces the whole list (a server missing from it is gone)', async () => {
    const { model, host, sync } = setup();
    void sync.refresh();
    host.requests[0]?.resolve({ servers: [echo, web] });
    await sync.settled();
    const before = host.changes;
    sync.notified({ servers: [{ ...web, state: 'ready', tools: ['mcp__web__get'], attempts: 0 }] });
    assert.equal(host.changes, before + 1);
    assert.deepEqual(model.servers.map((s) => `${s.name}:${s.state}`), ['web:ready']);
    assert.deepEqual(model.children({ type: 'server', name: 'web' }), [{ type: 'tool', server: 'web', name: 'mcp__web__get' }]);
    assert.deepEqual(model.children({ type: 'server', name: 'echo' }), []);
    sync.notified({ servers: [] });
    assert.equal(model.state, 'loaded');
    assert.deepEqual(model.roots(), []);
  });

  it('an answer older than a notification that came meanwhile is dropped', async () => {
    const { model, host, sync } = setup();
    const refreshed = sync.refresh();
    sync.notified({ servers: [{ ...echo, state: 'failed', tools: [], error: 'exit 1' }] });
    host.requests[0]?.resolve({ servers: [echo] });
    await refreshed;
    assert.equal(model.find('echo')?.state, 'failed');
    // and of two refreshes, only the last answer counts
    const first = sync.refresh();
    const second = sync.refresh();
    host.requests[2]?.resolve({ servers: [web] });
    host.requests[1]?.resolve({ servers: [echo] });
    await Promise.all([first, second]);
    assert.deepEqual(model.servers.map((s) => s.name), ['web']);
  });

  it('an error answer (MethodNotFound from a server without the bridge) becomes the one unavailable row', async () => {
    const { model, host, sync } = setup();
    void sync.refresh();
    host.requests[0]?.reject(new Error('Unhandled method toolhost/mcpServers'));
    await sync.settled();
    assert.equal(model.state, 'unavailable');
    assert.equal(model.error, 'Unhandled method toolhost/mcpServers');
    assert.deepEqual(model.roots(), [{ type: 'unavailable', message: 'MCP bridge not available: Unhandled method toolhost/mcpServers' }]);
    assert.deepEqual(host.lines, ['toolhost/mcpServers failed: Unhandled method toolhost/mcpServers']);
    // a later notification (a server that has the bridge after all) brings the list
    sync.notified({ servers: [echo] });
    assert.equal(model.state, 'loaded');
    assert.equal(model.error, undefined);
  });

  it('a malformed answer is shown as unavailable, not trusted', async () => {
    const { model, host, sync } = setup();
    void sync.refresh();
    host.requests[0]?.resolve({ list: [] });
    await sync.settled();
    assert.equal(model.state, 'unavailable');
    assert.match(model.error ?? '', /^unexpected answer to toolhost\/mcpServers: \{"list":\[\]\}$/);
  });

  it('the server stopping forgets the list; a request failing because it stopped shows no error', async () => {
    const { model, host, sync } = setup();
    void sync.refresh();
    host.requests[0]?.resolve({ servers: [echo] });
    await sync.settled();
    sync.serverRunning(false);
    assert.equal(model.state, 'unknown');
    assert.deepEqual(model.roots(), []);
    host.isRunning = true;
    const refreshed = sync.refresh();
    host.isRunning = false;
    host.requests[1]?.reject(new Error('the toolhost server is not running (stopped)'));
    await refreshed;
    assert.equal(model.state, 'unknown');
    // Refresh while nothing runs asks nothing
    await sync.refresh();
    assert.equal(host.requests.length, 2);
    assert.equal(model.state, 'unknown');
  });
});
