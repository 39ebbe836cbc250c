// Revert of file-change cards (the server's `revert` tool): which cards offer it,
// the arguments sent, what the palette's picker lists, the wording of the "Revert since here"
// confirmation and of a failure. Whether a card can be reverted is decided by its kind and status
// only, never by the tool's name: a revert's own card is a diff card and can be reverted in turn.
// Pure: no `vscode` import, so `node --test` covers it.

import type { Card } from './cards';
import type { ToolExecutionResult } from './protocol';
import { cardCaller } from './cards';

/** The server-side tool. */
export const REVERT_TOOL = 'revert';

/** The commands behind the panel's buttons (also in the palette, where they ask for a card). */
export const REVERT_COMMANDS = {
  revert: 'toolhost.ui.revertCall',
  since: 'toolhost.ui.revertSince',
} as const;

/** Whether a card offers Revert and Revert since here: a completed diff card. A pending call has
 * changed nothing yet and a failed one wrote nothing (the server guarantees both), so offering it
 * there could only fail. */
export function isRevertible(card: Pick<Card, 'kind' | 'status'>): boolean {
  return card.kind === 'diff' && card.status === 'completed';
}

/** The `revert` tool's arguments. `since` is only sent when true: a plain Revert is exactly
 * `{call_id}`, the tool's default. */
export function revertArguments(callId: string, since: boolean): { call_id: string; since?: true } {
  return since ? { call_id: callId, since: true } : { call_id: callId };
}

/** The call id a command was invoked with: a string (the panel, a keybinding's `args`), or
 * anything carrying a string `callId` (a card). Undefined: ask (the palette passes nothing). */
export function callIdArgument(arg: unknown): string | undefined {
  if (typeof arg === 'string') {
    return arg.trim() === '' ? undefined : arg;
  }
  if (typeof arg === 'object' && arg !== null) {
    const callId = (arg as { callId?: unknown }).callId;
    if (typeof callId === 'string' && callId.trim() !== '') {
      return callId;
    }
  }
  return undefined;
}

/** The cards the palette's picker offers: the revertible live cards, newest first. */
export function revertCandidates(cards: readonly Card[]): Card[] {
  return cards.filter(isRevertible).reverse();
}

/** The distinct files a card's hunks touch, in order. */
export function cardFiles(card: Pick<Card, 'hunks'>): string[] {
  return [...new Set((card.hunks ?? []).map((h) => h.path))];
}

/** `a.txt, b.txt` — at most `max` names, then how many more. */
function fileList(files: readonly string[], max = 5): string {
  const shown = files.slice(0, max).join(', ');
  return files.length > max ? `${shown} and ${files.length - max} more` : shown;
}

export interface RevertPickItem {
  label: string;
  description: string;
  detail?: string;
  callId: string;
}

/** One entry of the picker: the card's title, then what identifies the call (its id, the change's
 * size, the agent that made it) and the files it changed. */
export function revertPickItem(card: Card): RevertPickItem {
  const parts = [card.callId];
  if (card.stats) {
    parts.push(`+${card.stats.additions} −${card.stats.deletions}`);
  }
  const caller = cardCaller(card);
  if (caller !== undefined) {
    parts.push(caller);
  }
  const files = cardFiles(card);
  const item: RevertPickItem = { label: card.title, description: parts.join(' · '), callId: card.callId };
  if (files.length > 0) {
    item.detail = fileList(files);
  }
  return item;
}

/** The revertible cards from the call `callId` on, in the order they arrived (live cards, oldest
 * first): what "Revert since here" will undo, as far as the panel knows. Empty when the panel does
 * not hold that call's card. */
export function revertibleSince(cards: readonly Card[], callId: string): Card[] {
  const index = cards.findIndex((c) => c.callId === callId);
  return index < 0 ? [] : cards.slice(index).filter(isRevertible);
}

export interface SinceConfirmation {
  message: string;
  detail: string;
  /** The one button that goes ahead (the modal adds Cancel). */
  confirm: string;
}

/** The modal question before "Revert since here": it undoes more than the one card it was pressed
 * on — possibly other files, and other agents' changes — and that is not visible from the card, so
 * the detail says what the panel knows of it. The server decides the real set (the whole session
 * from that call on, all or nothing); the panel may have dropped or never seen some cards. */
export function sinceConfirmation(callId: string, target: Card | undefined, since: readonly Card[]): SinceConfirmation {
  const name = target ? `"${target.title}" (${callId})` : callId;
  const lines = [`Every file change of this session from ${callId} on is undone, newest first: all of them or none.`];
  if (since.length > 0) {
    const files = [...new Set(since.flatMap(cardFiles))];
    const calls = `${since.length} ${since.length === 1 ? 'call' : 'calls'}`;
    lines.push(files.length > 0 ? `The panel shows ${calls} from there on, changing ${fileList(files)}.` : `The panel shows ${calls} from there on.`);
  }
  return { message: `Revert every file change since ${name}?`, detail: lines.join('\n'), confirm: 'Revert' };
}

/** The error message of a failed revert: which revert, the error code, the server's message
 * (e.g. REVERT_CONFLICT names the file and lines; nothing was written). */
export function revertFailureMessage(callId: string, since: boolean, result: Pick<ToolExecutionResult, 'error'>): string {
  const code = result.error?.info?.code;
  const message = result.error?.message ?? 'the server gave no reason';
  return `toolhost: ${since ? `revert since ${callId}` : `revert of ${callId}`} failed${code ? ` (${code})` : ''}: ${message}`;
}
