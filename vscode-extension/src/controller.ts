// The language client of `toolhost serve`: starts the binary over stdio with the workspace
// folders and initializationOptions from settings (the process is the extension's own, so a stop
// it asks for — shutdown, exit, awaited before the next start — is not logged as an error:
// serverProcess.ts), feeds `toolhost/card` and `toolhost/callOutput` notifications into the card
// store, shows `toolhost/notice`s (a message, and a line in the output channel), answers
// `toolhost/lspQuery`, hands `toolhost/review` to review mode's UI and `toolhost/askUser` to the
// question forms, switches plan mode, passes the MCP bridge's `toolhost/mcpServersChanged` on (the
// MCP Servers view), hands the agents' `toolhost/agentUpdate` notifications to the chat
// (chatView.ts) and `toolhost/sessionChanged` to the worktree sessions (worktreeSessions.ts), and reports its state, the session's review and plan modes and what waits for the
// person (status bar, API).

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as vscode from 'vscode';
import {
  LanguageClient,
  ResponseError,
  RevealOutputChannelOn,
  State,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import type { CardStore } from './cardStore';
import { answerLspQuery, LspProviderFeature } from './lspProvider';
import { NEXT_PENDING_COMMAND } from './pending';
import type { AskUserResult } from './ask';
import { asCard } from './cards';
import { isObject } from './guards';
import {
  asCallOutput,
  asMcpServersResult,
  asNotice,
  asPlanModeState,
  methods,
  type McpServersResult,
  type NoticeParams,
  type PlanModeState,
  type SetPlanModeParams,
} from './protocol';
import { asReviewSettings, type ReviewResult, type ReviewSettings, type SetReviewParams } from './review';
import { ServerProcess, type ExitReport } from './serverProcess';
import { resolveServerPath, type Resolved } from './serverPath';
import { WORKTREE_METHODS } from './worktrees';

/** Per-start overrides of the settings (used by tests: one workspace and session per run). */
export interface ClientOverrides {
  /** The single workspace folder (path) the server gets instead of the window's folders. */
  workspaceFolder?: string;
  /** Merged over `toolhost.initializationOptions`. */
  initializationOptions?: Record<string, unknown>;
  /** Used instead of the `toolhost.serverArgs` setting. */
  serverArgs?: string[];
  serverPath?: string;
  env?: Record<string, string>;
  /** Instead of the `toolhost.lspProvider` setting. */
  lspProvider?: boolean;
  /** Whether to advertise `experimental.toolhost.review` (default: yes). */
  review?: boolean;
  /** Whether to advertise `experimental.toolhost.askUser` (default: yes). */
  askUser?: boolean;
}

/** Answers one `toolhost/askUser` request (the question forms, or a script in tests). */
export type AskHandler = (params: unknown, token: vscode.CancellationToken) => Promise<AskUserResult>;

/** Answers one `toolhost/review` request (review mode's UI, or a script in tests). */
export type ReviewHandler = (params: unknown, token: vscode.CancellationToken) => Promise<ReviewResult>;

export type ServerState = 'stopped' | 'starting' | 'running' | 'failed';

const CLIENT_ID = 'toolhost';

/** How many notices the controller remembers (for the API; the output channel has them all). */
const NOTICES_KEPT = 100;

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** The `toolhost` binary for `setting` (`toolhost.serverPath`): what `toolhost serve` runs, and
 * what the MCP server definition runs as `toolhost mcp`. */
export function resolveServerCommand(extensionPath: string, setting: string, workspaceFolder: string | undefined): Resolved {
  return resolveServerPath({
    setting,
    extensionPath,
    pathEnv: process.env.PATH,
    home: os.homedir(),
    workspaceFolder,
    platform: process.platform,
    isExecutable,
  });
}

export class ToolhostController implements vscode.Disposable {
  private client: LanguageClient | undefined;
  /** The process of `client` (started by the extension, so that a stop it asked for is not
   * reported as an error: serverProcess.ts). */
  private process: ServerProcess | undefined;
  private stateValue: ServerState = 'stopped';
  private lastError: string | undefined;
  private serverCommand: string | undefined;
  /** How the running server was started: the binary, its arguments, folder and environment (the
   * command line's `toolhost agent --best-of` runs with the same sessions folder and state). */
  private launched: { command: string; args: string[]; cwd: string | undefined; env: NodeJS.ProcessEnv } | undefined;
  private overrides: ClientOverrides = {};
  private queue: Promise<unknown> = Promise.resolve();
  private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
  private readonly noticeEmitter = new vscode.EventEmitter<NoticeParams>();
  private readonly mcpServersEmitter = new vscode.EventEmitter<McpServersResult>();
  private readonly noticeList: NoticeParams[] = [];
  private readonly statusItem: vscode.StatusBarItem;
  private readonly disposables: vscode.Disposable[] = [];
  /** Advertised client capabilities of the last start (for tests and diagnostics). */
  public lastClientCapabilities: unknown;
  private reviewHandler: ReviewHandler | undefined;
  /** The session's review settings, as the server last reported them (undefined: not known, e.g.
   * a server without review mode). */
  private reviewSettingsValue: ReviewSettings | undefined;
  private askHandler: AskHandler | undefined;
  /** How many requests (questions and reviews) wait for the person, and which (`1 question, 1
   * review`). */
  private pending = { count: 0, summary: '' };
  /** The session's plan mode as the server last reported it (undefined: not known). */
  private planModeValue: boolean | undefined;
  private agentUpdateHandler: ((params: unknown) => void) | undefined;
  private sessionChangedHandler: ((params: unknown) => void) | undefined;

  readonly onDidChangeState = this.stateEmitter.event;

  /** How the server was last started (undefined before a start). */
  get launch(): { command: string; args: string[]; cwd: string | undefined; env: NodeJS.ProcessEnv } | undefined {
    return this.launched;
  }
  readonly onDidNotice = this.noticeEmitter.event;
  /** Every `toolhost/mcpServersChanged`: the bridge's whole list of servers. */
  readonly onDidChangeMcpServers = this.mcpServersEmitter.event;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly store: CardStore,
    private readonly output: vscode.OutputChannel,
  ) {
    this.statusItem = vscode.window.createStatusBarItem('toolhost.status', vscode.StatusBarAlignment.Left, 10);
    this.statusItem.name = 'toolhost';
    this.statusItem.command = 'toolhost.ui.showPanel';
    this.disposables.push(this.statusItem, this.stateEmitter, this.noticeEmitter, this.mcpServersEmitter);
    this.render();
    this.statusItem.show();
  }

  get state(): ServerState {
    return this.stateValue;
  }

  get languageClient(): LanguageClient | undefined {
    return this.client;
  }

  /** The session the server reported in its initialize result. */
  get sessionId(): string | undefined {
    const experimental = this.client?.initializeResult?.capabilities.experimental as unknown;
    if (isObject(experimental) && isObject(experimental.toolhost)) {
      const id = experimental.toolhost.sessionId;
      return typeof id === 'string' ? id : undefined;
    }
    return undefined;
  }

  get reviewSettings(): ReviewSettings | undefined {
    return this.reviewSettingsValue;
  }

  /** Who answers `toolhost/review` (the extension's review UI). */
  setReviewHandler(handler: ReviewHandler | undefined): void {
    this.reviewHandler = handler;
  }

  /** Who answers `toolhost/askUser` (the panel's question forms). */
  setAskHandler(handler: AskHandler | undefined): void {
    this.askHandler = handler;
  }

  /** Who reads the own agent's `toolhost/agentUpdate` notifications (the chat). */
  setAgentUpdateHandler(handler: ((params: unknown) => void) | undefined): void {
    this.agentUpdateHandler = handler;
  }

  /** Who reads `toolhost/sessionChanged` (the worktree session the panel shows grew). */
  setSessionChangedHandler(handler: ((params: unknown) => void) | undefined): void {
    this.sessionChangedHandler = handler;
  }

  /** How many requests wait for the person (shown in the status bar, whose click then leads to
   * the oldest), and which (`summary`, for the tooltip). */
  setPending(count: number, summary: string): void {
    this.pending = { count, summary };
    this.render();
  }

  get planMode(): boolean | undefined {
    return this.planModeValue;
  }

  /** `toolhost/setPlanMode`: switches the session's plan mode (`{}` only reads it) and shows it in
   * the status bar. */
  async setPlanMode(params: SetPlanModeParams): Promise<PlanModeState> {
    const raw = await this.request<unknown>(methods.setPlanMode, params);
    const state = asPlanModeState(raw);
    if (!state) {
      throw new Error(`unexpected toolhost/setPlanMode result: ${JSON.stringify(raw)}`);
    }
    this.planModeValue = state.active;
    this.render();
    return state;
  }

  /** `toolhost/setReview`: changes the session's review settings (`{}` only reads them) and shows
   * the mode in the status bar. */
  async setReview(params: SetReviewParams): Promise<ReviewSettings> {
    const raw = await this.request<unknown>(methods.setReview, params);
    const settings = asReviewSettings(raw);
    if (!settings) {
      throw new Error(`unexpected toolhost/setReview result: ${JSON.stringify(raw)}`);
    }
    this.reviewSettingsValue = settings;
    this.render();
    return settings;
  }

  /** The latest notices the server sent, oldest first. */
  get notices(): NoticeParams[] {
    return [...this.noticeList];
  }

  /** A `toolhost/notice`: something the session should know that is not a call's result (a
   * background job ended). It is shown without stopping anyone (a non-modal message) and logged,
   * since a message goes away and the log stays. */
  private notice(notice: NoticeParams): void {
    this.noticeList.push(notice);
    if (this.noticeList.length > NOTICES_KEPT) {
      this.noticeList.splice(0, this.noticeList.length - NOTICES_KEPT);
    }
    this.output.appendLine(`[toolhost] notice (${notice.source}): ${notice.text}`);
    void vscode.window.showInformationMessage(`toolhost: ${notice.text}`);
    this.noticeEmitter.fire(notice);
  }

  private setState(state: ServerState, error?: string): void {
    this.stateValue = state;
    this.lastError = error;
    this.render();
    this.stateEmitter.fire(state);
  }

  private render(): void {
    const item = this.statusItem;
    const session = this.sessionId;
    switch (this.stateValue) {
      case 'starting':
        item.text = '$(sync~spin) toolhost';
        break;
      case 'running':
        item.text =
          `$(tools) toolhost${this.planModeValue ? ' · plan mode' : ''}${this.reviewSettingsValue?.mode === 'ask' ? ' · review: ask' : ''}` +
          `${this.pending.count > 0 ? ` $(bell) ${this.pending.count} waiting` : ''}`;
        break;
      case 'failed':
        item.text = '$(error) toolhost';
        break;
      default:
        item.text = '$(circle-slash) toolhost';
    }
    const lines = [`toolhost server: ${this.stateValue}`];
    if (session) {
      lines.push(`session ${session}`);
    }
    const review = this.reviewSettingsValue;
    if (review && this.stateValue === 'running') {
      lines.push(`review mode: ${review.mode} (timeout ${review.timeoutMs} ms, then ${review.fallback})`);
    }
    if (this.planModeValue && this.stateValue === 'running') {
      lines.push('plan mode: on (changes wait until a plan is approved)');
    }
    if (this.pending.count > 0) {
      lines.push(`waiting for you: ${this.pending.summary} (click: the oldest)`);
    }
    if (this.serverCommand) {
      lines.push(this.serverCommand);
    }
    if (this.lastError) {
      lines.push(this.lastError);
    }
    item.tooltip = lines.join('\n');
    item.backgroundColor =
      this.stateValue === 'failed' ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
    item.accessibilityInformation = { label: lines.join(', ') };
    item.command = this.pending.count > 0 ? NEXT_PENDING_COMMAND : 'toolhost.ui.showPanel';
  }

  /** Runs start/stop operations one after another. */
  private enqueue<T>(op: () => Promise<T>): Promise<T> {
    const next = this.queue.then(op, op);
    this.queue = next.catch(() => undefined);
    return next;
  }

  start(overrides?: ClientOverrides): Promise<void> {
    return this.enqueue(() => this.doStart(overrides));
  }

  stop(): Promise<void> {
    return this.enqueue(() => this.doStop());
  }

  /** Stops the running server (if any) and starts a new one; `overrides` replace the previous
   * ones (none: back to the plain settings). */
  restart(overrides?: ClientOverrides): Promise<void> {
    return this.enqueue(async () => {
      await this.doStop();
      await this.doStart(overrides);
    });
  }

  /** Stops the server on purpose: the client sends `shutdown` and `exit`, and the process (which
   * then exits 0) is waited for, so the next server starts only once this one is gone. */
  private async doStop(): Promise<void> {
    const client = this.client;
    const process = this.process;
    this.client = undefined;
    this.process = undefined;
    process?.stopping();
    if (client) {
      try {
        await client.dispose(5000);
      } catch (err) {
        this.output.appendLine(`[toolhost] stopping the server failed: ${String(err)}`);
      }
    }
    await process?.gone();
    this.setState('stopped');
  }

  /** A server process's exit, in the output channel: an error unless it was a clean stop. */
  private logExit(report: ExitReport): void {
    try {
      this.output.appendLine(report.text);
    } catch {
      // the channel is gone (the extension is being deactivated)
    }
  }

  private async doStart(overrides?: ClientOverrides): Promise<void> {
    if (this.client) {
      return;
    }
    this.overrides = overrides ?? {};
    const config = vscode.workspace.getConfiguration('toolhost');
    const folders = vscode.workspace.workspaceFolders ?? [];
    const firstFolder = this.overrides.workspaceFolder ?? folders[0]?.uri.fsPath;
    const resolved = resolveServerCommand(
      this.context.extensionPath,
      this.overrides.serverPath ?? config.get<string>('serverPath', ''),
      firstFolder,
    );
    if (!resolved.ok) {
      this.serverCommand = undefined;
      this.output.appendLine(`[toolhost] ${resolved.message}`);
      this.setState('failed', resolved.message);
      void vscode.window.showErrorMessage(`toolhost: ${resolved.message}`, 'Open Settings').then((pick) => {
        if (pick) {
          void vscode.commands.executeCommand('workbench.action.openSettings', 'toolhost.serverPath');
        }
      });
      return;
    }
    const args = ['serve', ...(this.overrides.serverArgs ?? config.get<string[]>('serverArgs', []))];
    this.serverCommand = `${resolved.command} ${args.join(' ')}`;
    const env = { ...process.env, ...config.get<Record<string, string>>('serverEnv', {}), ...(this.overrides.env ?? {}) };
    const command = { command: resolved.command, args, cwd: firstFolder && fs.existsSync(firstFolder) ? firstFolder : undefined, env };
    this.launched = command;
    // A function, so the extension owns the process and judges its exit (serverProcess.ts). The
    // client calls it again when it restarts a crashed server.
    const serverOptions: ServerOptions = async () => {
      const started = await ServerProcess.start(command, (report) => this.logExit(report));
      // (Called from `client.start()`, so `client` below is set by then.)
      if (this.client === client) {
        this.process = started;
      }
      return started.child;
    };
    const initializationOptions = {
      ...config.get<Record<string, unknown>>('initializationOptions', {}),
      ...(this.overrides.initializationOptions ?? {}),
    };
    const clientOptions: LanguageClientOptions = {
      // Every file document, so the server sees unsaved changes (FS_DIRTY_BUFFER).
      documentSelector: [{ scheme: 'file' }],
      initializationOptions,
      outputChannel: this.output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationFailedHandler: (error) => {
        const message = error instanceof Error ? error.message : String(error);
        this.output.appendLine(`[toolhost] initialize failed: ${message}`);
        return false;
      },
    };
    if (this.overrides.workspaceFolder) {
      const uri = vscode.Uri.file(this.overrides.workspaceFolder);
      clientOptions.workspaceFolder = { uri, name: uri.path.split('/').pop() ?? 'workspace', index: 0 };
    }
    const client = new LanguageClient(CLIENT_ID, 'toolhost', serverOptions, clientOptions);
    const lspEnabled = () => this.overrides.lspProvider ?? config.get<boolean>('lspProvider', true);
    client.registerFeature(new LspProviderFeature(lspEnabled));
    const review = this.overrides.review ?? true;
    const askUser = this.overrides.askUser ?? true;
    client.registerFeature({
      fillClientCapabilities: (caps) => {
        const experimental = (caps.experimental ?? {}) as Record<string, unknown>;
        const toolhost = (experimental.toolhost ?? {}) as Record<string, unknown>;
        // Review mode: the server asks `toolhost/review` before a write/edit is written.
        if (review) {
          toolhost.review = true;
        }
        // Questions (`ask_user_question`, `exit_plan_mode`) come as `toolhost/askUser`.
        if (askUser) {
          toolhost.askUser = true;
        }
        if (review || askUser) {
          experimental.toolhost = toolhost;
          caps.experimental = experimental;
        }
        this.lastClientCapabilities = JSON.parse(JSON.stringify(caps)) as unknown;
      },
      initialize: () => undefined,
      getState: () => ({ kind: 'static' }),
      clear: () => undefined,
    });
    client.onNotification(methods.card, (raw: unknown) => {
      const card = asCard(raw);
      if (card) {
        this.store.upsert(card);
      }
    });
    client.onNotification(methods.callOutput, (raw: unknown) => {
      const output = asCallOutput(raw);
      if (output) {
        this.store.appendOutput(output.callId, output.text);
      }
    });
    client.onNotification(methods.notice, (raw: unknown) => {
      const notice = asNotice(raw);
      if (notice) {
        this.notice(notice);
      }
    });
    client.onNotification(methods.mcpServersChanged, (raw: unknown) => {
      const result = asMcpServersResult(raw);
      if (result) {
        this.mcpServersEmitter.fire(result);
      } else {
        this.output.appendLine(`[toolhost] ignored a malformed toolhost/mcpServersChanged: ${JSON.stringify(raw)}`);
      }
    });
    client.onNotification(methods.agentUpdate, (raw: unknown) => {
      this.agentUpdateHandler?.(raw);
    });
    client.onNotification(WORKTREE_METHODS.sessionChanged, (raw: unknown) => {
      this.sessionChangedHandler?.(raw);
    });
    client.onRequest(methods.lspQuery, (params: unknown, token: vscode.CancellationToken) => answerLspQuery(params, undefined, token));
    client.onRequest(methods.review, (params: unknown, token: vscode.CancellationToken) => {
      const handler = this.reviewHandler;
      if (!handler) {
        throw new ResponseError(-32601, 'toolhost/review: no reviewer in this editor');
      }
      return handler(params, token);
    });
    client.onRequest(methods.askUser, (params: unknown, token: vscode.CancellationToken) => {
      const handler = this.askHandler;
      if (!handler) {
        throw new ResponseError(-32601, 'toolhost/askUser: nobody answers questions in this editor');
      }
      return handler(params, token);
    });
    client.onDidChangeState((event) => {
      if (this.client !== client) {
        return;
      }
      if (event.newState === State.Running) {
        this.setState('running');
      } else if (event.newState === State.Starting) {
        this.setState('starting');
      } else if (this.stateValue !== 'failed') {
        this.setState('stopped');
      }
    });
    this.client = client;
    this.setState('starting');
    this.output.appendLine(`[toolhost] starting ${this.serverCommand}`);
    try {
      await client.start();
      this.reviewSettingsValue = undefined;
      this.planModeValue = undefined;
      this.setState('running');
      this.output.appendLine(`[toolhost] running, session ${this.sessionId ?? '?'}`);
      // The review mode of this session (toolhost.toml may turn it on) for the status bar; a server
      // without review mode answers an error, and then nothing is shown.
      void client.sendRequest<unknown>(methods.setReview, {}).then(
        (raw) => {
          if (this.client === client) {
            this.reviewSettingsValue = asReviewSettings(raw);
            this.render();
          }
        },
        (err: unknown) => this.output.appendLine(`[toolhost] review mode unknown: ${err instanceof Error ? err.message : String(err)}`),
      );
      // Likewise plan mode (`[plan] active = true` starts sessions in it).
      void client.sendRequest<unknown>(methods.setPlanMode, {}).then(
        (raw) => {
          if (this.client === client) {
            this.planModeValue = asPlanModeState(raw)?.active;
            this.render();
          }
        },
        (err: unknown) => this.output.appendLine(`[toolhost] plan mode unknown: ${err instanceof Error ? err.message : String(err)}`),
      );
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.output.appendLine(`[toolhost] the server failed to start: ${message}`);
      this.client = undefined;
      const process = this.process;
      this.process = undefined;
      try {
        await client.dispose(2000);
      } catch {
        // already down
      }
      // Not a stop the extension asked for: however it ends, its exit is reported as an error.
      await process?.gone(2000);
      this.setState('failed', message);
      void vscode.window.showErrorMessage(`toolhost: the server failed to start: ${message}`, 'Show Log').then((pick) => {
        if (pick) {
          this.output.show(true);
        }
      });
    }
  }

  /** Sends a request to the running server (waits for a start in progress). Cancelling `token`
   * sends `$/cancelRequest`; the request then resolves undefined. */
  async request<R>(method: string, params: unknown, token?: vscode.CancellationToken): Promise<R> {
    await this.queue;
    const client = this.client;
    if (!client || this.stateValue !== 'running') {
      throw new Error(`the toolhost server is not running (${this.stateValue})${this.lastError ? `: ${this.lastError}` : ''}`);
    }
    return token ? client.sendRequest<R>(method, params, token) : client.sendRequest<R>(method, params);
  }

  dispose(): void {
    void this.stop();
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}
