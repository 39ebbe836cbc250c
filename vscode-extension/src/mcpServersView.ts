// The "MCP Servers" view in the toolhost container: a tree of the external MCP servers toolhost's
// bridge runs, each with its state and its tools. The list and its rows come from mcpServers.ts
// (asked with `toolhost/mcpServers` whenever the toolhost server runs and on Refresh, replaced by
// every `toolhost/mcpServersChanged`); this file turns the rows into VS Code's tree items and keeps
// the context key the welcome texts depend on and the view's badge (failed servers).

import * as vscode from 'vscode';
import type { ServerState } from './controller';
import { McpServersModel, McpServersSync, type ItemView, type McpNode, type McpViewState } from './mcpServers';
import { methods, type McpServerStatus, type McpServersResult } from './protocol';

export const MCP_VIEW_ID = 'toolhost.mcpServers';
export const MCP_COMMANDS = {
  refresh: 'toolhost.mcpServers.refresh',
  show: 'toolhost.mcpServers.show',
} as const;
/** What the view knows (`unknown`, `loaded`, `unavailable`), for its `viewsWelcome` texts. */
export const MCP_STATE_CONTEXT = 'toolhost.mcpServers.state';

/** What the view needs of the language client (the controller). */
export interface McpServersSource {
  readonly state: ServerState;
  readonly onDidChangeState: vscode.Event<ServerState>;
  readonly onDidChangeMcpServers: vscode.Event<McpServersResult>;
  request<R>(method: string, params: unknown): Promise<R>;
}

/** The view's state, for the API (tests). */
export interface McpServersSnapshot {
  state: McpViewState;
  servers: McpServerStatus[];
  error?: string;
  /** Every row as the tree shows it: the top rows, each followed by its children. */
  items: ItemView[];
}

export class McpServersView implements vscode.TreeDataProvider<McpNode>, vscode.Disposable {
  private readonly model = new McpServersModel();
  private readonly sync: McpServersSync;
  private readonly changed = new vscode.EventEmitter<McpNode | undefined>();
  private readonly disposables: vscode.Disposable[] = [];
  private readonly treeView: vscode.TreeView<McpNode>;

  readonly onDidChangeTreeData = this.changed.event;

  constructor(source: McpServersSource, output: vscode.OutputChannel) {
    this.sync = new McpServersSync(this.model, {
      running: () => source.state === 'running',
      request: () => source.request<unknown>(methods.mcpServers, {}),
      changed: () => this.update(),
      log: (line) => output.appendLine(`[toolhost] ${line}`),
    });
    this.treeView = vscode.window.createTreeView(MCP_VIEW_ID, { treeDataProvider: this });
    this.disposables.push(
      this.changed,
      this.treeView,
      source.onDidChangeState((state) => this.sync.serverRunning(state === 'running')),
      source.onDidChangeMcpServers((result) => this.sync.notified(result)),
    );
    this.update();
    if (source.state === 'running') {
      void this.sync.refresh();
    }
  }

  /** Asks the server for the list now (the view's Refresh). */
  refresh(): Promise<void> {
    return this.sync.refresh();
  }

  /** Waits for the refresh in progress, if any. */
  settled(): Promise<void> {
    return this.sync.settled();
  }

  private update(): void {
    void vscode.commands.executeCommand('setContext', MCP_STATE_CONTEXT, this.model.state);
    const failed = this.model.servers.filter((s) => s.state === 'failed').length;
    this.treeView.badge =
      failed > 0 ? { value: failed, tooltip: `${failed} MCP ${failed === 1 ? 'server' : 'servers'} failed` } : undefined;
    this.changed.fire(undefined);
  }

  snapshot(): McpServersSnapshot {
    const items: ItemView[] = [];
    for (const node of this.model.roots()) {
      items.push(this.model.item(node));
      for (const child of this.model.children(node)) {
        items.push(this.model.item(child));
      }
    }
    const error = this.model.error;
    return { state: this.model.state, servers: this.model.servers, ...(error === undefined ? {} : { error }), items };
  }

  getTreeItem(node: McpNode): vscode.TreeItem {
    const view = this.model.item(node);
    const item = new vscode.TreeItem(
      view.label,
      view.collapsible === 'collapsed' ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None,
    );
    item.id = view.id;
    item.description = view.description;
    item.tooltip = view.tooltip;
    item.contextValue = view.contextValue;
    item.iconPath = new vscode.ThemeIcon(view.icon.id, view.icon.color === undefined ? undefined : new vscode.ThemeColor(view.icon.color));
    return item;
  }

  getChildren(node?: McpNode): McpNode[] {
    return node ? this.model.children(node) : this.model.roots();
  }

  getParent(node: McpNode): McpNode | undefined {
    return node.type === 'tool' ? { type: 'server', name: node.server } : undefined;
  }

  dispose(): void {
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}
