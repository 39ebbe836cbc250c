// Checkpoints from the editor: the `toolhost.ui.createCheckpoint` and
// `toolhost.ui.restoreCheckpoint` commands over the server's internal `checkpoint` tool
// (docs/tools.md). Create asks for a name; Restore lists the session's checkpoints (named ones and
// the start of each agent turn), asks for one, confirms in a modal, and restores it — one recorded
// call whose diff card can be reverted like any, which brings the undone changes back. Every call
// comes back as a card like every call's; a refusal (CHECKPOINT_UNKNOWN, …) as an error message
// with the server's text.
// The window is handed in (structurally: the few `vscode.window` calls used), so that `node --test`
// drives the commands against a fake server and a fake window.

import type { CardStore } from './cardStore';
import { asCard, type Card } from './cards';
import { isObject } from './guards';
import type { CallToolResult, ToolExecutionResult } from './protocol';

/** The server-side tool. */
export const CHECKPOINT_TOOL = 'checkpoint';

/** The commands (the palette; Create also in the panel's title bar). */
export const CHECKPOINT_COMMANDS = {
  create: 'toolhost.ui.createCheckpoint',
  restore: 'toolhost.ui.restoreCheckpoint',
} as const;

/** One checkpoint of `{action: "list"}`'s value. */
export interface CheckpointInfo {
  name: string;
  /** `named` (made with Create) or `turn` (before an agent's turn; the name is its run id). */
  kind: string;
  prompt?: string;
  /** How many calls after it changed files: what a restore undoes. */
  changedAfter: number;
}

/** The checkpoints of a list result's value, oldest first as sent; entries without a name dropped. */
export function asCheckpoints(value: unknown): CheckpointInfo[] {
  const list = isObject(value) && Array.isArray(value.checkpoints) ? (value.checkpoints as unknown[]) : [];
  return list.flatMap((raw) => {
    if (!isObject(raw) || typeof raw.name !== 'string' || raw.name === '') {
      return [];
    }
    const info: CheckpointInfo = {
      name: raw.name,
      kind: typeof raw.kind === 'string' ? raw.kind : 'named',
      changedAfter: typeof raw.changedAfter === 'number' && raw.changedAfter >= 0 ? raw.changedAfter : 0,
    };
    if (typeof raw.prompt === 'string') {
      info.prompt = raw.prompt;
    }
    return [info];
  });
}

/** A turn's prompt on one line, cut where it would crowd the picker. */
function shortPrompt(prompt: string, max = 60): string {
  const line = prompt.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

export interface CheckpointPickItem {
  label: string;
  description?: string;
  detail: string;
  name: string;
}

/** One row of the restore picker: the name, for a turn what was asked, and what a restore undoes. */
export function checkpointPickItem(checkpoint: CheckpointInfo): CheckpointPickItem {
  const n = checkpoint.changedAfter;
  const item: CheckpointPickItem = { label: checkpoint.name, detail: `${n} ${n === 1 ? 'call' : 'calls'} changed files since`, name: checkpoint.name };
  if (checkpoint.kind === 'turn') {
    item.description = checkpoint.prompt !== undefined ? `before the turn “${shortPrompt(checkpoint.prompt)}”` : 'before an agent turn';
  }
  return item;
}

/** The picker's rows: the newest checkpoint first, the one most likely wanted. */
export function restoreCandidates(checkpoints: readonly CheckpointInfo[]): CheckpointPickItem[] {
  return checkpoints.map(checkpointPickItem).reverse();
}

/** The modal question before a restore. */
export function restoreConfirmation(name: string): { message: string; detail: string; confirm: string } {
  return { message: `Restore checkpoint ${name}?`, detail: 'Every change after it is undone (you can revert the restore).', confirm: 'Restore' };
}

/** The names of the checkpoints this panel saw created (their cards are titled `Checkpoint <name>`). */
function createdNames(cards: readonly Card[]): Set<string> {
  const names = cards
    .filter((c) => c.tool === CHECKPOINT_TOOL && c.status === 'completed')
    .map((c) => /^Checkpoint (.+)$/.exec(c.title)?.[1])
    .filter((name): name is string => name !== undefined);
  return new Set(names);
}

/** The name the input box offers: `checkpoint-<n>`, the first not yet used in the panel's cards. */
export function defaultCheckpointName(cards: readonly Card[]): string {
  const used = createdNames(cards);
  let n = used.size + 1;
  while (used.has(`checkpoint-${n}`)) {
    n += 1;
  }
  return `checkpoint-${n}`;
}

/** The error message of a refused checkpoint call: what was asked, the code, the server's text. */
export function checkpointFailureMessage(what: string, result: Pick<ToolExecutionResult, 'error' | 'content'>): string {
  const code = result.error?.info?.code;
  const message = result.error?.message ?? result.content.find((c) => typeof c.text === 'string')?.text ?? 'the server gave no reason';
  return `toolhost: ${what} failed${code ? ` (${code})` : ''}: ${message}`;
}

/** A name handed to a command (a keybinding's `args`): a non-blank string; else ask. */
function nameArgument(arg: unknown): string | undefined {
  return typeof arg === 'string' && arg.trim() !== '' ? arg.trim() : undefined;
}

/** The part of `vscode.window` the commands use. */
export interface CheckpointWindow {
  showInputBox(options: {
    title: string;
    prompt: string;
    value: string;
    validateInput(value: string): string | undefined;
  }): PromiseLike<string | undefined>;
  showQuickPick<T extends CheckpointPickItem>(
    items: T[],
    options: { title: string; placeHolder: string; matchOnDescription: boolean; matchOnDetail: boolean },
  ): PromiseLike<T | undefined>;
  showWarningMessage(message: string, options: { modal: true; detail: string }, ...items: string[]): PromiseLike<string | undefined>;
  showErrorMessage(message: string): PromiseLike<unknown>;
  showInformationMessage(message: string): PromiseLike<unknown>;
  setStatusBarMessage(text: string, hideAfterTimeout: number): unknown;
}

export interface CheckpointDeps {
  store: CardStore;
  callTool(name: string, args: unknown): Promise<CallToolResult>;
  /** Shows the panel, where the call's card arrives. */
  reveal(): Promise<void>;
  window: CheckpointWindow;
}

/** What the two commands do, apart from registering them. */
export class CheckpointCommands {
  constructor(private readonly deps: CheckpointDeps) {}

  /** Calls the tool with the panel on the live cards, puts the call's card in the store (it also
   * arrives as a notification) and says so when the server refused. Undefined: refused. */
  private async call(args: Record<string, string>, what: string): Promise<ToolExecutionResult | undefined> {
    const { store } = this.deps;
    store.showLive();
    await this.deps.reveal();
    const response = await this.deps.callTool(CHECKPOINT_TOOL, args);
    const card = asCard(response.card);
    if (card) {
      store.upsert(card);
    }
    if (response.result.isError) {
      void this.deps.window.showErrorMessage(checkpointFailureMessage(what, response.result));
      return undefined;
    }
    return response.result;
  }

  /** Create Checkpoint: the name (asked, `checkpoint-<n>` offered), then `{action: "create", name}`. */
  async create(arg?: unknown): Promise<void> {
    const { window } = this.deps;
    const name =
      nameArgument(arg) ??
      (await window.showInputBox({
        title: 'toolhost: Create Checkpoint',
        prompt: 'A name for this point of the session (Restore Checkpoint… goes back to it)',
        value: defaultCheckpointName(this.deps.store.liveCards()),
        validateInput: (value) => (value.trim() === '' ? 'A checkpoint needs a name' : undefined),
      }))?.trim();
    if (!name) {
      return;
    }
    if (await this.call({ action: 'create', name }, `checkpoint ${name}`)) {
      window.setStatusBarMessage(`toolhost: checkpoint ${name} created`, 4000);
    }
  }

  /** Restore Checkpoint…: the list, a pick, the modal, then `{action: "restore", name}`. */
  async restore(arg?: unknown): Promise<void> {
    const { window } = this.deps;
    const name = nameArgument(arg) ?? (await this.pick());
    if (name === undefined) {
      return;
    }
    const ask = restoreConfirmation(name);
    if ((await window.showWarningMessage(ask.message, { modal: true, detail: ask.detail }, ask.confirm)) !== ask.confirm) {
      return;
    }
    await this.call({ action: 'restore', name }, `restore of checkpoint ${name}`);
  }

  /** Asks for the checkpoint to restore among the session's. */
  private async pick(): Promise<string | undefined> {
    const { window } = this.deps;
    const listed = await this.call({ action: 'list' }, 'the list of checkpoints');
    if (!listed) {
      return undefined;
    }
    const items = restoreCandidates(asCheckpoints(listed.value));
    if (items.length === 0) {
      void window.showInformationMessage('toolhost: no checkpoint in this session yet (Create Checkpoint makes one; every agent turn starts one)');
      return undefined;
    }
    const picked = await window.showQuickPick(items, {
      title: 'toolhost: Restore Checkpoint…',
      placeHolder: 'Undo every file change made after this checkpoint',
      matchOnDescription: true,
      matchOnDetail: true,
    });
    return picked?.name;
  }
}

/** The commands, each wrapped so that a thrown error (e.g. no server) becomes an error message. */
export function registerCheckpointCommands<D>(
  commands: { registerCommand(command: string, callback: (...args: unknown[]) => unknown): D },
  deps: CheckpointDeps,
  withErrors: (fn: (arg?: unknown) => Promise<unknown>) => (arg?: unknown) => Promise<void>,
): D[] {
  const checkpoints = new CheckpointCommands(deps);
  return [
    commands.registerCommand(CHECKPOINT_COMMANDS.create, withErrors((arg) => checkpoints.create(arg))),
    commands.registerCommand(CHECKPOINT_COMMANDS.restore, withErrors((arg) => checkpoints.restore(arg))),
  ];
}
