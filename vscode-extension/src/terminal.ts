// The terminal card's rules, apart from its HTML: how long output is collapsed, how the live output
// of a running call (`toolhost/callOutput`) is kept, and what the exit pill says. Pure: no
// `vscode` import.

import type { Card, TerminalView } from './cards';

/** How many lines of output a terminal card shows until "Show all N lines" is pressed: the last
 * ones, where a command's result and errors are. */
export const COLLAPSED_LINES = 20;

/** How many of `total` lines are hidden (the first ones) and how many shown (the last ones) while
 * the output is collapsed. Output of up to `keep` lines is shown whole, with nothing to expand. */
export function collapseLines(total: number, keep = COLLAPSED_LINES): { hidden: number; shown: number } {
  const count = Math.max(0, Math.floor(total));
  const hidden = count > keep ? count - keep : 0;
  return { hidden, shown: count - hidden };
}

/** The most live output the panel keeps per call, in characters: the card is drawn again on every
 * notification, so an endless command must not grow it without bound. The final card carries the
 * authoritative output anyway. */
export const LIVE_OUTPUT_MAX = 100_000;

/** The live output of one running call: the text kept (its tail) and how much was dropped before
 * it. */
export interface LiveOutput {
  text: string;
  dropped: number;
}

/** `live` with `chunk` appended (a new record; `live` is not changed). Past `max` characters the
 * oldest text is dropped, up to the next line break when one is near (within a twentieth of
 * `max`, or 200 characters), so the kept text starts with a whole line. */
export function appendLive(live: LiveOutput | undefined, chunk: string, max = LIVE_OUTPUT_MAX): LiveOutput {
  let text = (live?.text ?? '') + chunk;
  let dropped = live?.dropped ?? 0;
  if (text.length > max) {
    let cut = text.length - max;
    const newline = text.indexOf('\n', cut - 1);
    if (newline >= 0 && newline - cut <= Math.max(max / 20, 200) && newline < text.length - 1) {
      cut = newline + 1;
    }
    dropped += cut;
    text = text.slice(cut);
  }
  return { text, dropped };
}

/** The text a pending card shows: the kept live output, after a note of what was dropped. */
export function liveText(live: LiveOutput): string {
  return live.dropped > 0 ? `[… ${live.dropped} characters of live output not kept …]\n${live.text}` : live.text;
}

/** `card` (pending) showing `live`: a terminal card as its output (one without a view, from a
 * server that sent none, gets one with its title as the command), an MCP card as its progress. */
export function withLiveOutput(card: Card, live: LiveOutput): Card {
  if (card.kind !== 'terminal') {
    return { ...card, progress: liveText(live) };
  }
  const terminal: TerminalView = card.terminal ?? { command: card.title, output: '' };
  return { ...card, terminal: { ...terminal, output: liveText(live) } };
}

/** Whether live output of a call belongs to `card`: a running terminal card shows it as output, a
 * running MCP card (the bridge routes the server's progress there) under its header; a finished
 * card's text is the server's. Other kinds have nowhere to show it. */
export function takesLiveOutput(card: Card): boolean {
  return card.status === 'pending' && (card.kind === 'terminal' || card.kind === 'mcp');
}

export interface ExitPill {
  /** `ok` (exit 0), `fail` (another exit code, or a signal). */
  tone: 'ok' | 'fail';
  label: string;
}

/** How a finished command ended, as pills: the exit code or the signal, then "timed out" when the
 * timeout stopped it. None while it runs. */
export function exitPills(card: Card): { exit?: ExitPill; timedOut: boolean } {
  const view = card.terminal;
  if (!view || card.status === 'pending') {
    return { timedOut: false };
  }
  const timedOut = view.timedOut === true;
  if (typeof view.signal === 'string' && view.signal !== '') {
    return { exit: { tone: 'fail', label: view.signal }, timedOut };
  }
  // The server sends 0 when the text names no exit code; a card without one means the same.
  const code = typeof view.exitCode === 'number' ? view.exitCode : 0;
  return { exit: code === 0 ? { tone: 'ok', label: 'exit 0' } : { tone: 'fail', label: `exit ${code}` }, timedOut };
}
