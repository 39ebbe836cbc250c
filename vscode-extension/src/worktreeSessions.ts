// Worktree sessions in the editor: which session's cards the panel shows (this workspace's live
// ones, or a worktree session's, replayed again on every `toolhost/sessionChanged` while the
// server watches it for us), the list the session picker offers (refreshed when the picker is
// about to open, after a server start and after New, Apply and Discard), and the three commands —
// New Worktree Session (an optional name; the new session shown, with the CLI lines that work in
// it), Apply Worktree Session… (its hunks come as the usual `toolhost/review`; the result's text,
// conflicts as a warning) and Discard Worktree Session… (after a modal confirmation).
// The server, the card store and the window are handed in (the window structurally), so that
// `node --test` drives all of it against a fake server and a fake window.

import type { CardStore } from './cardStore';
import { asCard, type Card } from './cards';
import { isObject } from './guards';
import { methods } from './protocol';
import {
  applyCallOf,
  changedSessionOf,
  errorCode,
  hasConflicts,
  resultText,
  WORKTREE_METHODS,
  watchSessionParams,
  worktreeApplyParams,
  worktreeCliLines,
  worktreeDescription,
  worktreeDiscardParams,
  worktreeNameProblem,
  worktreeNewParams,
  worktreesOf,
  asWorktreeInfo,
  type WorktreeInfo,
} from './worktrees';

/** The commands (the palette; Apply and Discard also beside the panel's picker). */
export const WORKTREE_COMMANDS = {
  new: 'toolhost.ui.worktreeNew',
  apply: 'toolhost.ui.worktreeApply',
  discard: 'toolhost.ui.worktreeDiscard',
  open: 'toolhost.ui.worktreeOpen',
} as const;

/** One row of the quick picks of Apply and Discard. */
export interface WorktreePickItem {
  label: string;
  description: string;
  detail: string;
  name: string;
}

/** The quick pick's rows: the name, then what it is at now; its folder under it. */
export function worktreePickItems(list: readonly WorktreeInfo[]): WorktreePickItem[] {
  return list.map((info) => ({ label: info.name, description: worktreeDescription(info), detail: info.root, name: info.name }));
}

/** The modal question before a discard (`info`: what the list says of it, when it has it). */
export function discardConfirmation(name: string, info: WorktreeInfo | undefined): { message: string; detail: string; confirm: string } {
  let what = 'its worktree, its branch';
  if (info !== undefined) {
    what = info.branch !== undefined ? `its worktree (${info.root}), the branch ${info.branch}` : `its folder (${info.root})`;
  }
  return {
    message: `Discard worktree session ${name}?`,
    detail: `This removes ${what} and its session log. Changes not applied are lost.`,
    confirm: 'Discard',
  };
}

/** The message after New: the session, where it works, and how to work in it from a terminal. */
export function createdMessage(info: WorktreeInfo): string {
  const cli = worktreeCliLines(info.sessionId);
  return `toolhost: worktree session ${info.name} (session ${info.sessionId}) works in ${info.root}. Run an agent there: ${cli.agent} — or any MCP agent with ${cli.mcp}`;
}

/** The part of `vscode.window` the commands use. */
export interface WorktreeWindow {
  showInputBox(options: { title: string; prompt: string; placeHolder: string; validateInput(value: string): string | undefined }): PromiseLike<string | undefined>;
  showQuickPick<T extends WorktreePickItem>(items: T[], options: { title: string; placeHolder: string; matchOnDescription: boolean }): PromiseLike<T | undefined>;
  showWarningMessage(message: string, options: { modal: true; detail: string }, ...items: string[]): PromiseLike<string | undefined>;
  showWarningMessage(message: string): PromiseLike<unknown>;
  showErrorMessage(message: string): PromiseLike<unknown>;
  showInformationMessage(message: string, ...items: string[]): PromiseLike<string | undefined>;
  setStatusBarMessage(text: string, hideAfterTimeout: number): unknown;
}

export interface WorktreeDeps {
  /** A request to the running server (throws when it is not running, or on an error answer). */
  request<R>(method: string, params: unknown): Promise<R>;
  store: CardStore;
  window: WorktreeWindow;
  /** Puts a CLI line on the clipboard (the buttons of the message after New). */
  copy(text: string): PromiseLike<unknown>;
  /** Opens a folder in a new window (Open in New Window: the toolhost there continues the
   * worktree session, so the agents that window hosts work in it). */
  openFolder?(folder: string): PromiseLike<unknown>;
}

/** The buttons of the message after New. */
const COPY_AGENT = 'Copy agent command';
const COPY_MCP = 'Copy MCP command';

export class WorktreeSessions {
  private listValue: WorktreeInfo[] = [];
  /** The worktree session whose cards are on show (undefined: this workspace's). */
  private shownValue: WorktreeInfo | undefined;
  /** Whether the store shows the chosen session's cards yet (its first replay came). */
  private showing = false;
  /** A replay is on its way; `again`: the log grew meanwhile, so one more follows it. */
  private replaying: Promise<void> | undefined;
  private again = false;
  private readonly listeners = new Set<() => void>();

  constructor(private readonly deps: WorktreeDeps) {
    // Anything else that changes what the panel shows (Back to this workspace, Replay Session,
    // Clear Cards, a checkpoint's call) ends the worktree session's showing: the server stops
    // watching it.
    deps.store.onChange((event) => {
      const shown = this.shownValue;
      if (event.type === 'reset' && shown !== undefined && this.showing && deps.store.replay?.sessionId !== shown.sessionId) {
        this.shownValue = undefined;
        this.showing = false;
        this.changed();
        void this.watch(undefined);
      }
    });
  }

  /** The worktree sessions the picker offers, newest first. */
  get list(): readonly WorktreeInfo[] {
    return this.listValue;
  }

  /** The session id whose cards are on show (undefined: this workspace). */
  get shown(): string | undefined {
    return this.shownValue?.sessionId;
  }

  /** Called whenever the list or the choice changes (the panel draws the picker again). */
  onDidChange(listener: () => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  private changed(): void {
    for (const listener of this.listeners) {
      listener();
    }
  }

  /** Asks the server for the workspace's worktree sessions. A chosen session that is gone (its
   * worktree discarded elsewhere) gives way to this workspace. */
  async refresh(): Promise<void> {
    const result = await this.deps.request<unknown>(methods.listSessions, {});
    this.listValue = worktreesOf(result);
    const shown = this.shownValue;
    if (shown !== undefined) {
      const now = this.listValue.find((w) => w.sessionId === shown.sessionId);
      if (now === undefined) {
        await this.show(undefined);
        return;
      }
      this.shownValue = now;
    }
    this.changed();
  }

  /** Shows `sessionId`'s cards (a worktree session of the list) and has the server watch it; or,
   * undefined or unknown, this workspace's live cards again. */
  async show(sessionId: string | undefined): Promise<void> {
    const info = sessionId === undefined ? undefined : this.listValue.find((w) => w.sessionId === sessionId);
    this.shownValue = info;
    this.showing = false;
    this.changed();
    if (info === undefined) {
      this.deps.store.showLive();
      await this.watch(undefined);
      return;
    }
    await this.watch(info.sessionId);
    await this.replay();
  }

  private async watch(sessionId: string | undefined): Promise<void> {
    await this.deps.request<unknown>(WORKTREE_METHODS.watchSession, watchSessionParams(sessionId));
  }

  /** `toolhost/sessionChanged`: the watched session's log grew; its cards are replayed again. */
  sessionChanged(params: unknown): Promise<void> {
    const sessionId = changedSessionOf(params);
    return sessionId !== undefined && sessionId === this.shownValue?.sessionId ? this.replay() : Promise.resolve();
  }

  /** A new server knows nothing of the watch: the list again, and the watch of the session on
   * show with its cards as they are now. */
  async serverStarted(): Promise<void> {
    await this.refresh();
    const shown = this.shownValue;
    if (shown !== undefined) {
      await this.watch(shown.sessionId);
      await this.replay();
    }
  }

  /** Replays the session on show into the store; one at a time, and once more when the log grew
   * while one was on its way. */
  private replay(): Promise<void> {
    if (this.replaying) {
      this.again = true;
      return this.replaying;
    }
    const run = async () => {
      try {
        do {
          this.again = false;
          const shown = this.shownValue;
          if (shown === undefined) {
            return;
          }
          const result = await this.deps.request<unknown>(methods.replaySession, { sessionId: shown.sessionId });
          if (this.shownValue?.sessionId !== shown.sessionId) {
            return; // another choice was made meanwhile
          }
          const raw = isObject(result) && Array.isArray(result.cards) ? (result.cards as unknown[]) : [];
          const cards = raw.map(asCard).filter((c): c is Card => c !== undefined);
          this.deps.store.showReplay(shown.sessionId, cards, shown.name);
          this.showing = true;
        } while (this.again);
      } finally {
        this.replaying = undefined;
      }
    };
    this.replaying = run();
    return this.replaying;
  }

  /** New Worktree Session: a name (optional: empty lets the server choose), the session made and
   * shown in the panel, and the message with the CLI lines that work in it. */
  async create(arg?: unknown): Promise<WorktreeInfo | undefined> {
    const { window } = this.deps;
    const typed =
      typeof arg === 'string'
        ? arg
        : await window.showInputBox({
            title: 'toolhost: New Worktree Session',
            prompt: 'A name for it (its branch is toolhost/<name>); empty: a fresh one',
            placeHolder: 'e.g. fix-flaky-test',
            validateInput: worktreeNameProblem,
          });
    if (typed === undefined) {
      return undefined;
    }
    const problem = worktreeNameProblem(typed);
    if (problem !== undefined) {
      throw new Error(`"${typed}" cannot name a worktree session: ${problem}`);
    }
    const answer = await this.refusable('make a worktree session', () => this.deps.request<unknown>(WORKTREE_METHODS.worktreeNew, worktreeNewParams(typed)));
    if (answer === undefined) {
      return undefined;
    }
    const info = asWorktreeInfo(answer);
    if (info === undefined) {
      throw new Error(`unexpected toolhost/worktreeNew answer: ${JSON.stringify(answer)}`);
    }
    await this.refresh();
    if (!this.listValue.some((w) => w.sessionId === info.sessionId)) {
      // (a server that lists it a moment later: shown all the same)
      this.listValue = [info, ...this.listValue];
    }
    await this.show(info.sessionId);
    const cli = worktreeCliLines(info.sessionId);
    void window.showInformationMessage(createdMessage(info), COPY_AGENT, COPY_MCP).then((pick) => {
      if (pick === COPY_AGENT || pick === COPY_MCP) {
        void this.deps.copy(pick === COPY_AGENT ? cli.agent : cli.mcp);
      }
    });
    return info;
  }

  /** Apply Worktree Session…: the session (given, else picked), this workspace's cards on show
   * (where the apply's card comes), `toolhost/worktreeApply` — its hunks reviewed in the diff
   * editor as they come — and what it did: conflicts as a warning, else an information message. */
  async apply(arg?: unknown): Promise<void> {
    const name = await this.target(arg, 'toolhost: Apply Worktree Session…', 'Bring its changes into this workspace, hunk by hunk');
    if (name === undefined) {
      return;
    }
    const { window, store } = this.deps;
    if (this.shownValue !== undefined) {
      await this.show(undefined);
    }
    window.setStatusBarMessage(`toolhost: applying worktree session ${name}: review its hunks in the diff editor`, 8000);
    const answer = await this.refusable(`apply worktree session ${name}`, () => this.deps.request<unknown>(WORKTREE_METHODS.worktreeApply, worktreeApplyParams(name)));
    if (answer === undefined) {
      return;
    }
    const call = applyCallOf(answer);
    await this.refresh().catch(() => undefined);
    if (call === undefined) {
      void window.showInformationMessage(`toolhost: worktree session ${name} changed nothing; there is nothing to apply`);
      return;
    }
    const card = asCard(call.card);
    if (card) {
      store.upsert(card);
    }
    const text = resultText(call);
    if (call.result.isError) {
      const code = call.result.error?.info?.code;
      void window.showErrorMessage(`toolhost: applying worktree session ${name} failed${code ? ` (${code})` : ''}: ${call.result.error?.message ?? text}`);
    } else if (hasConflicts(text)) {
      void window.showWarningMessage(`toolhost: worktree session ${name} applied with conflicts (left as they are in this workspace): ${text}`);
    } else {
      void window.showInformationMessage(`toolhost: ${text || `worktree session ${name} applied`}`);
    }
  }

  /** Discard Worktree Session…: the session (given, else picked), a modal confirmation, then
   * `toolhost/worktreeDiscard`; this workspace's cards come back when it was on show. */
  async discard(arg?: unknown): Promise<void> {
    const name = await this.target(arg, 'toolhost: Discard Worktree Session…', 'Remove its worktree, branch and session log');
    if (name === undefined) {
      return;
    }
    const { window } = this.deps;
    const ask = discardConfirmation(name, this.listValue.find((w) => w.name === name || w.sessionId === name));
    if ((await window.showWarningMessage(ask.message, { modal: true, detail: ask.detail }, ask.confirm)) !== ask.confirm) {
      return;
    }
    if (this.shownValue !== undefined && (this.shownValue.name === name || this.shownValue.sessionId === name)) {
      await this.show(undefined);
    }
    const done = await this.refusable(`discard worktree session ${name}`, async () => {
      await this.deps.request<unknown>(WORKTREE_METHODS.worktreeDiscard, worktreeDiscardParams(name));
      return true;
    });
    await this.refresh().catch(() => undefined);
    if (done) {
      window.setStatusBarMessage(`toolhost: worktree session ${name} discarded`, 5000);
    }
  }

  /** Open Worktree Session in New Window…: the session (given, else picked) opened in a window of
   * its own, whose toolhost continues it — its chat and the agents it hosts work in the worktree,
   * and this window follows the cards in the picker. */
  async open(arg?: unknown): Promise<void> {
    const name = await this.target(arg, 'toolhost: Open Worktree Session in New Window…', 'Work in it in a window of its own');
    if (name === undefined) {
      return;
    }
    const info = this.listValue.find((w) => w.name === name || w.sessionId === name);
    if (info === undefined || this.deps.openFolder === undefined) {
      void this.deps.window.showErrorMessage(`toolhost: no worktree session ${name} to open`);
      return;
    }
    await this.deps.openFolder(info.root);
  }

  /** The session a command is about: its argument (a name or session id), else the one on show
   * when there is only that to ask about, else a quick pick of the list (refreshed first). */
  private async target(arg: unknown, title: string, placeHolder: string): Promise<string | undefined> {
    if (typeof arg === 'string' && arg.trim() !== '') {
      return arg.trim();
    }
    await this.refresh();
    const { window } = this.deps;
    if (this.listValue.length === 0) {
      void window.showInformationMessage('toolhost: no worktree session in this workspace (toolhost: New Worktree Session makes one)');
      return undefined;
    }
    // The one on show first: the likeliest meant.
    const shown = this.shownValue?.sessionId;
    const ordered = [...this.listValue].sort((a, b) => Number(b.sessionId === shown) - Number(a.sessionId === shown));
    const picked = await window.showQuickPick(worktreePickItems(ordered), { title, placeHolder, matchOnDescription: true });
    return picked?.name;
  }

  /** Runs a request the server may refuse (`WORKTREE_IN_USE`, `WORKTREE_UNKNOWN`, …): a refusal
   * becomes an error message with its code and the server's text, and undefined. */
  private async refusable<T>(what: string, run: () => Promise<T>): Promise<T | undefined> {
    try {
      return await run();
    } catch (err) {
      const code = errorCode(err);
      void this.deps.window.showErrorMessage(`toolhost: cannot ${what}${code ? ` (${code})` : ''}: ${err instanceof Error ? err.message : String(err)}`);
      return undefined;
    }
  }
}

/** The commands, each wrapped so that a thrown error (e.g. no server) becomes an error message. */
export function registerWorktreeCommands<D>(
  commands: { registerCommand(command: string, callback: (...args: unknown[]) => unknown): D },
  sessions: WorktreeSessions,
  withErrors: (fn: (arg?: unknown) => Promise<unknown>) => (arg?: unknown) => Promise<void>,
): D[] {
  return [
    commands.registerCommand(WORKTREE_COMMANDS.new, withErrors((arg) => sessions.create(arg))),
    commands.registerCommand(WORKTREE_COMMANDS.apply, withErrors((arg) => sessions.apply(arg))),
    commands.registerCommand(WORKTREE_COMMANDS.discard, withErrors((arg) => sessions.discard(arg))),
    commands.registerCommand(WORKTREE_COMMANDS.open, withErrors((arg) => sessions.open(arg))),
  ];
}
