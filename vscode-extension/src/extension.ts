// Entry point: wires the card store, the panel, the language client, review mode and the question
// forms (`toolhost/askUser`) over one queue of what waits for the person (pending.ts), plan mode, worktree sessions (the panel's session picker and their commands), the chat with an agent — toolhost's own or one the server hosts (`toolhost/agentPrompt`, `toolhost/listAgents`) —, the MCP Servers view (the bridge's external servers), the
// `toolhost.ui.*` commands and (VS Code 1.101+) the MCP server definition provider, and returns a
// small API (used by the companion test extension).

import * as vscode from 'vscode';
import { AskSession, type AskUserResult } from './ask';
import { AskController, type AskResponder, type AskSnapshot } from './askView';
import { CardStore } from './cardStore';
import { registerCheckpointCommands } from './checkpoints';
import type { ChatExchange } from './chat';
import { CHAT_COMMANDS, ChatController, type ChatSnapshot } from './chatView';
import { resolveServerCommand, ToolhostController, type ClientOverrides, type ServerState } from './controller';
import { CardDiffProvider, DIFF_SCHEME, goToLocation } from './diffView';
import { answerLspQuery } from './lspProvider';
import {
  mcpServerDefinition,
  registerMcpProvider,
  toVscodeDefinition,
  type McpApiLike,
  type McpDefinitionResult,
} from './mcpDefinition';
import { MCP_COMMANDS, MCP_VIEW_ID, McpServersView, type McpServersSnapshot } from './mcpServersView';
import { CardsViewProvider, VIEW_ID } from './panel';
import { NEXT_PENDING_COMMAND, PendingQueue, pendingSummary } from './pending';
import type { AgentMode } from './agentProtocol';
import { asCard, type Card } from './cards';
import { isObject } from './guards';
import type { LspQueryResult } from './lspQuery';
import {
  annotationsLabel,
  methods,
  toolAnnotations,
  type CallToolResult,
  type CancelCallResult,
  type ListSessionsResult,
  type ListToolsResult,
  type NoticeParams,
  type PlanModeState,
  type ReplaySessionResult,
  type SetPlanModeParams,
  type StructuredOutputParams,
  type StructuredOutputState,
  type SessionInfo,
  type ToolDescriptor,
} from './protocol';
import { REVERT_COMMANDS } from './revert';
import { registerRevertCommands } from './revertCommands';
import { ReviewSession, reviewSummaryHtml, type ReviewMode, type ReviewResult, type ReviewSettings, type SetReviewParams } from './review';
import { REVIEW_COMMANDS, ReviewController, type ReviewResponder, type ReviewSnapshot } from './reviewView';
import { argumentSkeleton, parseArguments } from './schema';
import { sessionPickerHtml } from './worktreePicker';
import { registerWorktreeCommands, WORKTREE_COMMANDS, WorktreeSessions } from './worktreeSessions';
import { BEST_OF_COMMAND, runBestOf } from './bestOf';

export interface ToolhostApi {
  readonly store: CardStore;
  readonly controller: ToolhostController;
  state(): ServerState;
  sessionId(): string | undefined;
  request<R>(method: string, params?: unknown): Promise<R>;
  listTools(): Promise<ToolDescriptor[]>;
  callTool(name: string, args: unknown): Promise<CallToolResult>;
  /** `toolhost/cancelCall`: stops the running call `callId` (what a card's Stop button does). */
  cancelCall(callId: string): Promise<CancelCallResult>;
  /** The latest `toolhost/notice`s, oldest first. */
  notices(): NoticeParams[];
  listSessions(all?: boolean): Promise<SessionInfo[]>;
  replaySession(sessionId: string): Promise<Card[]>;
  restart(overrides?: ClientOverrides): Promise<void>;
  answerLspQuery(params: unknown): Promise<LspQueryResult>;
  openDiff(callId: string, path?: string): Promise<{ left: vscode.Uri; right: vscode.Uri } | undefined>;
  revealPanel(): Promise<void>;
  /** The MCP server definition provider: whether it was registered (and the line logged about
   * it), and the definition it would give now. */
  readonly mcp: { registered: boolean; message: string; definition(): McpDefinitionResult };
  /** `toolhost/setReview` (`{}` reads the settings); the status bar shows the mode. */
  setReview(params: SetReviewParams): Promise<ReviewSettings>;
  /** Review mode: the open reviews, and scripted answers instead of the UI (the conformance
   * runner's `review` steps; undefined: back to the UI). */
  readonly reviews: {
    open(): ReviewSnapshot[];
    setResponder(responder: ReviewResponder | undefined): void;
    /** Asks the review UI as a `toolhost/review` request would (`token`: its withdrawal). */
    ask(params: unknown, token?: vscode.CancellationToken): Promise<ReviewResult>;
  };
  /** `toolhost/setPlanMode` (`{}` reads it); the status bar shows plan mode. */
  setPlanMode(params: SetPlanModeParams): Promise<PlanModeState>;
  /** `toolhost/structuredOutput` (`{}` reads the run's state). */
  structuredOutput(params: StructuredOutputParams): Promise<StructuredOutputState>;
  /** Questions (`toolhost/askUser`): the open ones, scripted answers instead of the forms (the
   * conformance runner's `askUser` steps; undefined: back to the forms), and asking the forms as
   * a request would (`token`: its withdrawal). */
  readonly questions: {
    open(): AskSnapshot[];
    setResponder(responder: AskResponder | undefined): void;
    ask(params: unknown, token?: vscode.CancellationToken): Promise<AskUserResult>;
    /** What the Answer button of the notification does: the panel, focus in the form. */
    focus(key?: string): Promise<void>;
  };
  /** What waits for the person, questions and reviews alike, oldest first (the status bar's count;
   * `toolhost.pending.next` leads to the first). */
  pending(): PendingSnapshot[];
  /** The chat with an agent (the panel's chat box): what it shows, the agent picked for a new chat
   * (false: it cannot be), a prompt sent as from the box (resolves when the run ended), and Stop. */
  readonly chat: {
    snapshot(): ChatSnapshot;
    pickAgent(name: string): boolean;
    prompt(text: string, mode?: AgentMode): Promise<ChatExchange | undefined>;
    stop(): boolean;
  };
  /** The MCP Servers view: what it shows now, and its Refresh (`toolhost/mcpServers`). */
  readonly mcpServers: {
    snapshot(): McpServersSnapshot;
    refresh(): Promise<McpServersSnapshot>;
  };
}

/** What the tests read of a waiting request. */
export interface PendingSnapshot {
  kind: string;
  key: string;
  requestId: number | string;
}

let running: ToolhostController | undefined;

export function activate(context: vscode.ExtensionContext): ToolhostApi {
  const output = vscode.window.createOutputChannel('toolhost');
  const config = vscode.workspace.getConfiguration('toolhost');
  const store = new CardStore(config.get<number>('maxCards', 500));
  const controller = new ToolhostController(context, store, output);
  running = controller;
  const diffs = new CardDiffProvider();
  // What waits for the person, questions and reviews alike, oldest first.
  const pending = new PendingQueue();
  const reviews = new ReviewController(pending, output);
  controller.setReviewHandler((params, token) => reviews.handle(params, token));
  // (The panel is created below; the form is focused only once someone asks for it.)
  const asks: AskController = new AskController(pending, output, (key): Promise<void> => panel.focusQuestion(key));
  controller.setAskHandler((params, token) => asks.handle(params, token));

  const findCard = (callId: string): Card => {
    const card = store.find(callId);
    if (!card) {
      throw new Error(`no card with call id ${callId}`);
    }
    return card;
  };

  const request = <R>(method: string, params?: unknown): Promise<R> => controller.request<R>(method, params ?? {});
  const chat = new ChatController((params, token) => controller.request<unknown>(methods.agentPrompt, params, token), output, request);
  controller.setAgentUpdateHandler((params) => chat.handleUpdate(params));
  const cancelCall = (callId: string) => request<CancelCallResult>(methods.cancelCall, { callId });
  // Whose cards the panel shows: this workspace's, or a worktree session's (the picker above them).
  const worktrees = new WorktreeSessions({
    request,
    store,
    window: vscode.window,
    copy: (text) => vscode.env.clipboard.writeText(text),
    openFolder: (folder) => vscode.commands.executeCommand('vscode.openFolder', vscode.Uri.file(folder), { forceNewWindow: true }),
  });
  controller.setSessionChangedHandler((params) => void worktrees.sessionChanged(params).catch((err: unknown) => output.appendLine(`[toolhost] replaying the worktree session failed: ${String(err)}`)));

  const panel = new CardsViewProvider(context.extensionUri, store, {
    openDiff: (card) => diffs.openDiff(card),
    goTo: (card, index) => goToLocation(card, index),
    copy: async (card) => {
      await vscode.env.clipboard.writeText(card.text);
      vscode.window.setStatusBarMessage('toolhost: Native text copied', 2000);
    },
    stop: async (card) => {
      try {
        // The call then ends with its final (failed) card, which replaces the pending one.
        const { cancelled } = await cancelCall(card.callId);
        if (!cancelled) {
          vscode.window.setStatusBarMessage('toolhost: that call is not running any more', 4000);
        }
        return cancelled;
      } catch (err) {
        void vscode.window.showErrorMessage(`toolhost: cannot stop the call: ${err instanceof Error ? err.message : String(err)}`);
        return false;
      }
    },
    openSpill: async (card, index) => {
      const file = card.terminal?.spillPaths?.[index];
      if (file === undefined) {
        return;
      }
      try {
        await vscode.window.showTextDocument(vscode.Uri.file(file), { preview: false });
      } catch (err) {
        void vscode.window.showErrorMessage(`toolhost: cannot open ${file}: ${err instanceof Error ? err.message : String(err)}`);
      }
    },
    // Through the commands, so the buttons and the palette share one path (and its confirmation).
    revert: async (card, since) => {
      await vscode.commands.executeCommand(since ? REVERT_COMMANDS.since : REVERT_COMMANDS.revert, card.callId);
    },
    review: async (key, op) => {
      const commands: Record<string, string> = { open: REVIEW_COMMANDS.open, acceptAll: REVIEW_COMMANDS.acceptAll, rejectAll: REVIEW_COMMANDS.rejectAll, submit: REVIEW_COMMANDS.submit };
      const command = commands[op];
      if (command) {
        await vscode.commands.executeCommand(command, key);
      }
    },
    ask: (key, action): Promise<boolean> => Promise.resolve(asks.answer(key, action)),
    // Apply and Discard through the commands, so the buttons and the palette share one path.
    worktree: async (op, sessionId) => {
      const shown = worktrees.list.find((w) => w.sessionId === worktrees.shown)?.name;
      try {
        if (op === 'select') {
          await worktrees.show(sessionId === '' ? undefined : sessionId);
        } else if (op === 'refresh') {
          await worktrees.refresh();
        } else if ((op === 'apply' || op === 'discard') && shown !== undefined) {
          await vscode.commands.executeCommand(op === 'apply' ? WORKTREE_COMMANDS.apply : WORKTREE_COMMANDS.discard, shown);
        }
      } catch (err) {
        void vscode.window.showErrorMessage(`toolhost: ${err instanceof Error ? err.message : String(err)}`);
      }
    },
  }, chat);
  const showSessionPicker = () => panel.setSessions(sessionPickerHtml(worktrees.list, worktrees.shown));
  context.subscriptions.push(worktrees.onDidChange(showSessionPicker));
  showSessionPicker();
  const showPending = () => controller.setPending(pending.size, pendingSummary(pending));
  const showReviews = () => {
    panel.setReviews(reviewSummaryHtml(reviews.open(), controller.reviewSettings));
    showPending();
  };
  const showQuestions = () => {
    panel.setQuestions(asks.forms());
    showPending();
  };
  /** The oldest waiting request, whatever its kind: a question's form, focused, or a review's diff. */
  const showNextPending = async () => {
    const next = pending.next();
    if (next instanceof AskSession) {
      await panel.focusQuestion(next.key);
    } else if (next instanceof ReviewSession) {
      await vscode.commands.executeCommand(REVIEW_COMMANDS.open, next.key);
    } else {
      vscode.window.setStatusBarMessage('toolhost: nothing waits for you', 4000);
      await panel.reveal();
    }
  };

  /** Plan mode on or off: `toolhost/setPlanMode`, and the new state in the status bar. */
  const setPlanModeCommand = async (active: boolean): Promise<PlanModeState | undefined> => {
    try {
      const state = await controller.setPlanMode({ active });
      vscode.window.setStatusBarMessage(`toolhost: plan mode ${state.active ? 'on: changes wait until a plan is approved' : 'off'}`, 5000);
      return state;
    } catch (err) {
      void vscode.window.showErrorMessage(`toolhost: cannot ${active ? 'enter' : 'exit'} plan mode: ${err instanceof Error ? err.message : String(err)}`);
      return undefined;
    }
  };

  /** Off or ask, from a QuickPick (or the command's argument); the status bar shows the result. */
  const setReviewModeCommand = async (mode?: unknown): Promise<ReviewSettings | undefined> => {
    let chosen: ReviewMode | undefined = mode === 'off' || mode === 'ask' ? mode : undefined;
    if (chosen === undefined) {
      const current = controller.reviewSettings?.mode;
      const items: (vscode.QuickPickItem & { mode: ReviewMode })[] = [
        { mode: 'ask', label: 'ask', description: current === 'ask' ? 'current' : undefined, detail: 'Every write and edit waits until you accept or reject each hunk in a diff' },
        { mode: 'off', label: 'off', description: current === 'off' ? 'current' : undefined, detail: 'Writes and edits apply at once' },
      ];
      const pick = await vscode.window.showQuickPick(items, { title: 'toolhost: Review Mode', placeHolder: 'Review the agent\'s writes and edits before they are written?' });
      if (!pick) {
        return undefined;
      }
      chosen = pick.mode;
    }
    const settings = await controller.setReview({ mode: chosen });
    showReviews();
    vscode.window.setStatusBarMessage(`toolhost: review mode ${settings.mode}`, 4000);
    return settings;
  };

  const listTools = async () => (await request<ListToolsResult>(methods.listTools, {})).tools;
  const callTool = (name: string, args: unknown) =>
    request<CallToolResult>(methods.callTool, { name, arguments: args });
  const listSessions = async (all = false) =>
    (await request<ListSessionsResult>(methods.listSessions, { all })).sessions;
  const replaySession = async (sessionId: string) => {
    const result = await request<ReplaySessionResult>(methods.replaySession, { sessionId });
    const cards = (Array.isArray(result.cards) ? result.cards : []).map(asCard).filter((c): c is Card => c !== undefined);
    store.showReplay(sessionId, cards);
    if (typeof result.damage?.notice === 'string') {
      // The cards are what could be read; say what was skipped and how to repair the log.
      void vscode.window.showWarningMessage(result.damage.notice);
    }
    await panel.reveal();
    return cards;
  };

  const pickSession = async (title: string): Promise<SessionInfo | undefined> => {
    let all = false;
    for (;;) {
      const sessions = await listSessions(all);
      const current = controller.sessionId;
      type Item = vscode.QuickPickItem & { session?: SessionInfo; toggle?: boolean };
      const items: Item[] = sessions.map((s) => ({
        label: s.id,
        description: `${s.calls} ${s.calls === 1 ? 'call' : 'calls'} · ${new Date(s.createdAt).toLocaleString()}${s.id === current ? ' · current' : ''}`,
        detail: all ? s.cwd : undefined,
        session: s,
      }));
      items.push({ label: all ? '$(folder) This workspace only' : '$(globe) All workspaces…', toggle: true });
      const pick = await vscode.window.showQuickPick(items, {
        title,
        placeHolder: sessions.length === 0 ? 'No sessions yet' : 'Pick a session',
        matchOnDescription: true,
      });
      if (!pick) {
        return undefined;
      }
      if (pick.toggle) {
        all = !all;
        continue;
      }
      return pick.session;
    }
  };

  const withErrors =
    <A extends unknown[]>(fn: (...args: A) => Promise<unknown>) =>
    async (...args: A) => {
      try {
        await fn(...args);
      } catch (err) {
        void vscode.window.showErrorMessage(`toolhost: ${err instanceof Error ? err.message : String(err)}`);
      }
    };

  /** Call Tool…: the tool from a picker, or the one given (a name, or a tool row of the MCP
   * Servers view), then its arguments. */
  const callToolCommand = async (given?: unknown) => {
    const tools = await listTools();
    const name = typeof given === 'string' ? given : isObject(given) && given.type === 'tool' && typeof given.name === 'string' ? given.name : undefined;
    let tool = name === undefined ? undefined : tools.find((t) => t.name === name);
    if (name !== undefined && !tool) {
      throw new Error(`the server has no tool ${name} (any more)`);
    }
    if (!tool) {
      const pick = await vscode.window.showQuickPick(
        tools.map((t) => ({ label: t.name, description: annotationsLabel(toolAnnotations(t)), detail: t.description, tool: t })),
        { title: 'toolhost: Call Tool…', placeHolder: 'Pick a tool', matchOnDetail: true },
      );
      if (!pick) {
        return;
      }
      tool = pick.tool;
    }
    const text = await vscode.window.showInputBox({
      title: `toolhost: ${tool.name} arguments`,
      prompt: `JSON arguments for ${tool.name} (checked against its input schema)`,
      value: argumentSkeleton(tool.inputSchema),
      ignoreFocusOut: true,
      validateInput: (value) => {
        const parsed = parseArguments(value, tool.inputSchema);
        return parsed.ok ? undefined : { message: parsed.message, severity: vscode.InputBoxValidationSeverity.Error };
      },
    });
    if (text === undefined) {
      return;
    }
    const parsed = parseArguments(text, tool.inputSchema);
    if (!parsed.ok) {
      throw new Error(parsed.message);
    }
    await panel.reveal();
    const response = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: `toolhost: ${tool.name}` },
      () => callTool(tool.name, parsed.value),
    );
    // The card normally arrives as a notification; the response carries it too.
    const card = asCard(response.card);
    if (card) {
      store.upsert(card);
    }
    if (response.result.isError) {
      void vscode.window.showWarningMessage(
        `toolhost: ${tool.name} failed${response.result.error?.info?.code ? ` (${response.result.error.info.code})` : ''}: ${response.result.error?.message ?? ''}`,
      );
    }
  };

  const mcpServers = new McpServersView(controller, output);

  context.subscriptions.push(
    output,
    controller,
    mcpServers,
    reviews,
    reviews.onDidChange(showReviews),
    asks,
    asks.onDidChange(showQuestions),
    chat,
    // A tool line of the chat follows its call's card to the end.
    store.onChange((event) => {
      if (event.type === 'upsert') {
        chat.handleCard(event.card);
      }
    }),
    controller.onDidChangeState((state) => {
      // A stopped server waits for no answer: its reviews and questions close, and its chats are
      // gone (the next prompt starts a new one).
      if (state !== 'running') {
        pending.withdrawAll();
        chat.serverGone();
      } else {
        // The agents the chat box offers are the running server's.
        void chat.loadAgents(() => request<unknown>(methods.listAgents));
        // Its worktree sessions too, and the watch of the one on show (a new server has none).
        void worktrees.serverStarted().catch((err: unknown) => output.appendLine(`[toolhost] worktree sessions unknown: ${err instanceof Error ? err.message : String(err)}`));
      }
      showReviews();
      showQuestions();
    }),
    panel,
    vscode.window.registerWebviewViewProvider(VIEW_ID, panel, { webviewOptions: { retainContextWhenHidden: true } }),
    vscode.workspace.registerFileSystemProvider(DIFF_SCHEME, diffs, { isCaseSensitive: true, isReadonly: true }),
    vscode.commands.registerCommand('toolhost.ui.callTool', withErrors(callToolCommand)),
    vscode.commands.registerCommand(MCP_COMMANDS.refresh, () => mcpServers.refresh()),
    vscode.commands.registerCommand(MCP_COMMANDS.show, () => vscode.commands.executeCommand(`${MCP_VIEW_ID}.focus`)),
    vscode.commands.registerCommand(
      'toolhost.ui.showSessions',
      withErrors(async () => {
        const session = await pickSession('toolhost: Sessions (pick one to replay it)');
        if (session) {
          await replaySession(session.id);
        }
      }),
    ),
    vscode.commands.registerCommand(
      'toolhost.ui.replaySession',
      withErrors(async (sessionId?: unknown) => {
        const id = typeof sessionId === 'string' ? sessionId : (await pickSession('toolhost: Replay Session'))?.id;
        if (id) {
          await replaySession(id);
        }
      }),
    ),
    vscode.commands.registerCommand('toolhost.ui.restartServer', withErrors(() => controller.restart())),
    vscode.commands.registerCommand(NEXT_PENDING_COMMAND, showNextPending),
    vscode.commands.registerCommand('toolhost.ui.showPanel', () => vscode.commands.executeCommand(`${VIEW_ID}.focus`)),
    vscode.commands.registerCommand('toolhost.ui.showLog', () => output.show(true)),
    vscode.commands.registerCommand('toolhost.ui.clearCards', () => store.clear()),
    vscode.commands.registerCommand('toolhost.ui.setReviewMode', async (mode?: unknown) => {
      try {
        return await setReviewModeCommand(mode);
      } catch (err) {
        void vscode.window.showErrorMessage(`toolhost: cannot set the review mode: ${err instanceof Error ? err.message : String(err)}`);
        return undefined;
      }
    }),
    // Ask the Agent: the chat box, focused (or, with a prompt as the argument, that prompt sent).
    vscode.commands.registerCommand(CHAT_COMMANDS.ask, async (prompt?: unknown) => {
      if (typeof prompt === 'string' && prompt.trim() !== '') {
        await panel.reveal();
        return chat.prompt(prompt);
      }
      await panel.focusChat();
      return undefined;
    }),
    vscode.commands.registerCommand(CHAT_COMMANDS.stop, () => {
      if (!chat.stop()) {
        vscode.window.setStatusBarMessage('toolhost: the agent is not running', 3000);
      }
    }),
    vscode.commands.registerCommand(CHAT_COMMANDS.newChat, async () => {
      chat.newChat();
      await panel.focusChat();
    }),
    vscode.commands.registerCommand('toolhost.ui.enterPlanMode', () => setPlanModeCommand(true)),
    vscode.commands.registerCommand('toolhost.ui.exitPlanMode', () => setPlanModeCommand(false)),
    ...registerRevertCommands({ store, callTool, reveal: () => panel.reveal(), withErrors }),
    ...registerCheckpointCommands(vscode.commands, { store, callTool, reveal: () => panel.reveal(), window: vscode.window }, withErrors),
    ...registerWorktreeCommands(vscode.commands, worktrees, withErrors),
    vscode.commands.registerCommand(BEST_OF_COMMAND, withErrors(() => runBestOf(vscode.window, controller.launch))),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration('toolhost.maxCards')) {
        store.setMaxCards(vscode.workspace.getConfiguration('toolhost').get<number>('maxCards', 500));
      }
      const restartKeys = ['serverPath', 'serverArgs', 'serverEnv', 'initializationOptions', 'lspProvider'];
      if (restartKeys.some((key) => event.affectsConfiguration(`toolhost.${key}`))) {
        void controller.restart();
      }
    }),
  );

  // toolhost for VS Code's own agent mode: `toolhost mcp` in this workspace attaches to the server
  // started above, so agent-mode calls show up as cards like every other call.
  const mcpChanged = new vscode.EventEmitter<void>();
  const mcpDefinition = (): McpDefinitionResult => {
    const settings = vscode.workspace.getConfiguration('toolhost');
    const folder = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === 'file')?.uri.fsPath;
    return mcpServerDefinition({
      server: resolveServerCommand(context.extensionPath, settings.get<string>('serverPath', ''), folder),
      workspaceFolder: folder,
      serverEnv: settings.get<Record<string, unknown>>('serverEnv', {}),
      serverArgs: settings.get<unknown[]>('serverArgs', []),
    });
  };
  const mcp = registerMcpProvider(vscode as unknown as McpApiLike, (ctor) => ({
    onDidChangeMcpServerDefinitions: mcpChanged.event,
    provideMcpServerDefinitions: () => {
      const result = mcpDefinition();
      if (!result.ok) {
        output.appendLine(`[toolhost] no MCP server definition: ${result.message}`);
        return [];
      }
      return [toVscodeDefinition(ctor, result.definition, (p) => vscode.Uri.file(p))];
    },
  }));
  output.appendLine(`[toolhost] ${mcp.message}`);
  context.subscriptions.push(
    mcpChanged,
    vscode.workspace.onDidChangeWorkspaceFolders(() => mcpChanged.fire()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (['serverPath', 'serverEnv', 'serverArgs'].some((key) => event.affectsConfiguration(`toolhost.${key}`))) {
        mcpChanged.fire();
      }
    }),
  );
  if (mcp.registered) {
    context.subscriptions.push({ dispose: () => void mcp.disposable.dispose() });
  }

  void controller.start();

  return {
    store,
    controller,
    state: () => controller.state,
    sessionId: () => controller.sessionId,
    request,
    listTools,
    callTool,
    cancelCall,
    notices: () => controller.notices,
    listSessions,
    replaySession,
    restart: (overrides) => controller.restart(overrides),
    answerLspQuery,
    openDiff: (callId, path) => diffs.openDiff(findCard(callId), path),
    revealPanel: () => panel.reveal(),
    mcp: { registered: mcp.registered, message: mcp.message, definition: mcpDefinition },
    setReview: async (params) => {
      const settings = await controller.setReview(params);
      showReviews();
      return settings;
    },
    reviews: {
      open: () => reviews.snapshots(),
      setResponder: (responder) => reviews.setResponder(responder),
      ask: (params, token) => reviews.handle(params, token ?? new vscode.CancellationTokenSource().token),
    },
    setPlanMode: (params) => controller.setPlanMode(params),
    structuredOutput: (params) => request<StructuredOutputState>(methods.structuredOutput, params),
    questions: {
      open: () => asks.snapshots(),
      setResponder: (responder) => asks.setResponder(responder),
      ask: (params, token) => asks.handle(params, token ?? new vscode.CancellationTokenSource().token),
      focus: (key) => panel.focusQuestion(key),
    },
    pending: () => pending.all().map((p) => ({ kind: p.kind, key: p.key, requestId: p.requestId })),
    chat: {
      snapshot: () => chat.snapshot(),
      pickAgent: (name) => chat.pickAgent(name),
      prompt: (text, mode) => chat.prompt(text, mode),
      stop: () => chat.stop(),
    },
    mcpServers: {
      snapshot: () => mcpServers.snapshot(),
      refresh: async () => {
        await mcpServers.refresh();
        return mcpServers.snapshot();
      },
    },
  };
}

/** Stops the server (shutdown + exit) before the extension host goes away. */
export function deactivate(): Promise<void> | undefined {
  const controller = running;
  running = undefined;
  return controller?.stop();
}
