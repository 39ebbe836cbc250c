// The MCP Servers view's model: the external MCP servers toolhost's bridge runs
// (`toolhost/mcpServers`, then every `toolhost/mcpServersChanged`, each carrying the whole list),
// how each becomes a tree item (label, description, icon, tooltip) with its tools as children, and
// the rules of keeping the list current (McpServersSync). Kept apart from the TreeDataProvider
// (mcpServersView.ts) so it is testable without VS Code. Pure: no `vscode` import.

import { asMcpServersResult, type McpServerStatus, type McpServersResult } from './protocol';

/** A row of the view: a server, one of its tools, or the one row saying the bridge cannot be
 * asked (an older server answers MethodNotFound). */
export type McpNode =
  | { type: 'server'; name: string }
  | { type: 'tool'; server: string; name: string }
  | { type: 'unavailable'; message: string };

/** What the view knows: nothing yet (no server running, or the answer not in), the list, or why
 * there is none. The view's welcome text depends on it (context key `toolhost.mcpServers.state`). */
export type McpViewState = 'unknown' | 'loaded' | 'unavailable';

/** A codicon with an optional theme colour id. */
export interface IconView {
  id: string;
  color?: string;
}

/** A tree item, apart from VS Code's classes. */
export interface ItemView {
  id: string;
  label: string;
  description?: string;
  tooltip: string;
  icon: IconView;
  collapsible: 'none' | 'collapsed';
  /** `viewItem` in menus: `mcpServer`, `mcpTool`, `mcpUnavailable`. */
  contextValue: string;
}

/** The icon of a server's state: ready passes, starting and reconnecting spin, failed is an error,
 * idle and stopped (and a state this client does not know) an empty circle. */
export function stateIcon(state: string): IconView {
  switch (state) {
    case 'ready':
      return { id: 'pass', color: 'testing.iconPassed' };
    case 'starting':
    case 'reconnecting':
      return { id: 'sync~spin' };
    case 'failed':
      return { id: 'error', color: 'errorForeground' };
    default:
      return { id: 'circle-outline' };
  }
}

function toolCount(n: number): string {
  return `${n} ${n === 1 ? 'tool' : 'tools'}`;
}

/** `ready · 3 tools`: the state, then the tools once there are any or the server is ready (a
 * ready server with none says so). A reconnecting server counts its attempts. */
export function serverDescription(status: McpServerStatus): string {
  const parts = [status.state];
  if (status.state === 'reconnecting' && status.attempts > 0) {
    parts[0] = `reconnecting (attempt ${status.attempts})`;
  }
  if (status.tools.length > 0 || status.state === 'ready') {
    parts.push(toolCount(status.tools.length));
  }
  return parts.join(' · ');
}

/** Everything the row cannot show: transport, protocol version, the last error, attempts. */
export function serverTooltip(status: McpServerStatus): string {
  const lines = [`MCP server ${status.name}: ${status.state}`, `transport: ${status.transport}`];
  if (status.protocolVersion !== undefined) {
    lines.push(`protocol version: ${status.protocolVersion}`);
  }
  lines.push(toolCount(status.tools.length));
  if (status.attempts > 0) {
    lines.push(`reconnect attempts in this outage: ${status.attempts}`);
  }
  if (status.error !== undefined) {
    lines.push(`error: ${status.error}`);
  }
  return lines.join('\n');
}

/** The row saying the bridge cannot be asked. */
export function unavailableLabel(message: string): string {
  return `MCP bridge not available: ${message}`;
}

export class McpServersModel {
  private list: McpServerStatus[] = [];
  private why: string | undefined;
  private stateValue: McpViewState = 'unknown';

  get state(): McpViewState {
    return this.stateValue;
  }

  /** The servers as last reported (empty unless loaded). */
  get servers(): McpServerStatus[] {
    return this.list.map((s) => ({ ...s, tools: [...s.tools] }));
  }

  /** Why there is no list (when unavailable). */
  get error(): string | undefined {
    return this.why;
  }

  /** The whole list, as an answer or a changed notification brings it: it replaces what was
   * there (a server missing from it is gone). */
  replace(servers: readonly McpServerStatus[]): void {
    this.list = servers.map((s) => ({ ...s, tools: [...s.tools] }));
    this.why = undefined;
    this.stateValue = 'loaded';
  }

  /** The server could not be asked (MethodNotFound from a server without the bridge, or another
   * error): one row says why. */
  fail(message: string): void {
    this.list = [];
    this.why = message;
    this.stateValue = 'unavailable';
  }

  /** Nothing known (the toolhost server stopped, or a new one is starting). */
  reset(): void {
    this.list = [];
    this.why = undefined;
    this.stateValue = 'unknown';
  }

  find(name: string): McpServerStatus | undefined {
    return this.list.find((s) => s.name === name);
  }

  /** The top rows: the servers in the server's order, or the one unavailable row. */
  roots(): McpNode[] {
    if (this.stateValue === 'unavailable') {
      return [{ type: 'unavailable', message: unavailableLabel(this.why ?? 'no answer') }];
    }
    return this.list.map((s) => ({ type: 'server', name: s.name }));
  }

  /** A server's tools (public names); nothing under the others. */
  children(node: McpNode): McpNode[] {
    if (node.type !== 'server') {
      return [];
    }
    return (this.find(node.name)?.tools ?? []).map((name) => ({ type: 'tool', server: node.name, name }));
  }

  /** The item of a row (a server no longer listed shows as stopped, without tools, until the view
   * asks again). */
  item(node: McpNode): ItemView {
    switch (node.type) {
      case 'unavailable':
        return {
          id: 'mcp-unavailable',
          label: node.message,
          tooltip: `${node.message}\nThis toolhost server does not answer toolhost/mcpServers: update it, or restart it (toolhost: Restart Server).`,
          icon: { id: 'warning', color: 'editorWarning.foreground' },
          collapsible: 'none',
          contextValue: 'mcpUnavailable',
        };
      case 'tool':
        return {
          id: `mcp-tool:${node.server}/${node.name}`,
          label: node.name,
          tooltip: `${node.name}: a tool of the MCP server ${node.server}, in toolhost's registry under this name`,
          icon: { id: 'tools' },
          collapsible: 'none',
          contextValue: 'mcpTool',
        };
      case 'server': {
        const status = this.find(node.name) ?? { name: node.name, transport: 'stdio', state: 'stopped', tools: [], attempts: 0 };
        return {
          id: `mcp-server:${status.name}`,
          label: status.name,
          description: serverDescription(status),
          tooltip: serverTooltip(status),
          icon: stateIcon(status.state),
          collapsible: status.tools.length > 0 ? 'collapsed' : 'none',
          contextValue: 'mcpServer',
        };
      }
    }
  }
}

/** Log lines for what changed between two lists: a server that appeared, changed state or its
 * number of tools, or went away. */
export function changeLines(before: readonly McpServerStatus[], after: readonly McpServerStatus[]): string[] {
  const lines: string[] = [];
  for (const s of after) {
    const old = before.find((b) => b.name === s.name);
    if (!old || old.state !== s.state || old.tools.length !== s.tools.length || old.error !== s.error) {
      lines.push(`MCP server ${s.name}: ${serverDescription(s)}${s.error !== undefined ? ` (${s.error})` : ''}`);
    }
  }
  for (const b of before) {
    if (!after.some((s) => s.name === b.name)) {
      lines.push(`MCP server ${b.name}: removed`);
    }
  }
  return lines;
}

/** What McpServersSync needs of the language client and the view. */
export interface SyncHost {
  /** Whether the toolhost server runs (requests can be sent). */
  running(): boolean;
  /** Sends `toolhost/mcpServers` with `{}`. */
  request(): Promise<unknown>;
  /** Something changed: draw the view again. */
  changed(): void;
  log(line: string): void;
}

/** Keeps a model current: asks when the toolhost server runs (again) and on Refresh, takes every
 * changed notification as the whole new list, forgets everything when the server stops. */
export class McpServersSync {
  /** Bumped by every list that arrives and every reset: an answer to a request sent before it is
   * older than what the view shows, and is dropped (a changed notification carries the whole
   * list, so nothing is lost). */
  private generation = 0;
  private last: Promise<void> = Promise.resolve();

  constructor(
    readonly model: McpServersModel,
    private readonly host: SyncHost,
  ) {}

  /** The toolhost server's state changed: running asks for the list, anything else forgets it. */
  serverRunning(running: boolean): void {
    if (running) {
      void this.refresh();
    } else {
      this.generation += 1;
      this.model.reset();
      this.host.changed();
    }
  }

  /** `toolhost/mcpServersChanged`: the new list, whatever was asked before. */
  notified(result: McpServersResult): void {
    this.generation += 1;
    this.apply(result.servers);
  }

  /** Asks the server for the list now. */
  refresh(): Promise<void> {
    this.last = this.load();
    return this.last;
  }

  /** The refresh in progress (done when there is none). */
  settled(): Promise<void> {
    return this.last;
  }

  private async load(): Promise<void> {
    if (!this.host.running()) {
      this.model.reset();
      this.host.changed();
      return;
    }
    const generation = ++this.generation;
    let raw: unknown;
    try {
      raw = await this.host.request();
    } catch (err) {
      // Dropped when a newer list came meanwhile, or the server went away (its state change
      // resets the view).
      if (generation !== this.generation || !this.host.running()) {
        return;
      }
      const message = err instanceof Error ? err.message : String(err);
      this.host.log(`toolhost/mcpServers failed: ${message}`);
      this.model.fail(message);
      this.host.changed();
      return;
    }
    if (generation !== this.generation) {
      return;
    }
    const result = asMcpServersResult(raw);
    if (!result) {
      this.model.fail(`unexpected answer to toolhost/mcpServers: ${JSON.stringify(raw)}`);
      this.host.changed();
      return;
    }
    this.apply(result.servers);
  }

  private apply(servers: McpServerStatus[]): void {
    for (const line of changeLines(this.model.servers, servers)) {
      this.host.log(line);
    }
    this.model.replace(servers);
    this.host.changed();
  }
}
