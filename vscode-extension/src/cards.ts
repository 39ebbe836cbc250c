// The card: the one view model of a tool call every client draws (docs/protocol.md, `toolhost/card`;
// docs/schemas/Card.json) — its kinds, hunks and per-kind views — and how a card from the wire is
// made what the views expect (any kind kept, hunk headers, defaults), with the title line and hunk
// header `card.rendered` uses. Pure: no `vscode` import, so `node --test` covers it.

import { asGroup, asUsage, type CardGroup, type CardUsage } from './cardGroups';
import { isIndex, isObject } from './guards';

export type CardStatus = 'pending' | 'completed' | 'failed';

/** The kinds the protocol names (docs/schemas/Card.json, `CardKind.examples`). */
export const KNOWN_CARD_KINDS = ['diff', 'read', 'search', 'terminal', 'todo', 'question', 'plan', 'fetch', 'structured', 'generic'] as const;
export type KnownCardKind = (typeof KNOWN_CARD_KINDS)[number];

/** A card's kind is an open string: one of {@link KNOWN_CARD_KINDS} or any name a tool invents.
 * A client draws the kinds it has no view for as `generic` (the Native text). */
export type CardKind = string;

export interface CardLocation {
  path: string;
  line: number;
}

export interface HunkLine {
  op: string;
  text: string;
}

export interface Hunk {
  path: string;
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  lines: HunkLine[];
  /** The header line exactly as `card.rendered` shows it (`@@ -a,b +c,d @@`, or
   * `@@ preview -b +d @@`): clients show it, never format their own. */
  header: string;
  /** A proposed change whose place in the file is not known yet (a pending call's preview, or a
   * diff without line numbers): the starts are 0 and mean nothing. */
  preview?: boolean;
}

export interface Stats {
  additions: number;
  deletions: number;
}

export interface NumberedLine {
  number: number;
  text: string;
}

export interface ReadView {
  path: string;
  offset: number;
  lines: NumberedLine[];
  totalLines: number;
  lang?: string | null;
}

export interface SearchMatch {
  lineNumber: number;
  line: string;
}

export interface SearchFile {
  path: string;
  matches: SearchMatch[];
}

export interface SearchLocation {
  path: string;
  line: number;
  character: number;
  snippet?: string;
}

export interface SearchView {
  shape: string;
  paths?: string[] | null;
  files?: SearchFile[] | null;
  locations?: SearchLocation[] | null;
  truncated: boolean;
  total: number;
}

/** A terminal card's view (`bash`): parsed by the server from the Native text, so a replay shows
 * the same. While the call runs `output` is empty and the client appends the
 * `toolhost/callOutput` text it receives; the final card's `output` replaces that. */
export interface TerminalView {
  command: string;
  description?: string | null;
  /** Where the command ran, as the call named it (relative to the workspace); absent: the root. */
  cwd?: string | null;
  /** The output without the final exit marker; may hold ANSI escape sequences. */
  output: string;
  /** The exit pill: the exit code (the server sends 0 when the text names none) … */
  exitCode?: number | null;
  /** … or the signal that killed the command (`SIGTERM`, …). */
  signal?: string | null;
  timedOut?: boolean;
  /** Files holding a stream's full output, when the text kept only its tail. */
  spillPaths?: string[];
}

export interface Card {
  callId: string;
  tool: string;
  status: CardStatus;
  kind: CardKind;
  title: string;
  text: string;
  rendered: string;
  /** Who made the call when it was not this connection's client: the agent's MCP
   * `clientInfo.name` (e.g. `claude-code`) for calls that came through `toolhost mcp`, attached to
   * this server. The title line of `rendered` then ends with ` · <caller>`. */
  caller?: string | null;
  /** The call this one ran under: a `run_code` program's call for its nested calls (ids
   * `<parent>:code:<n>`), a `subagent` call for its child's calls. The panel draws the card inside
   * its parent's card (cardTree.ts), or at the top when that card is not there. */
  parentCallId?: string | null;
  /** Where the call's caller put it among its parent's children: a `workflow` child's phase and
   * label, a `ralph` round's label (cardGroups.ts). The panel groups a parent's children by phase
   * and shows the label on the child's row. */
  group?: CardGroup | null;
  /** What the call used (a child agent's tokens and cost; a workflow's or ralph's sum), shown in
   * the card's header. */
  usage?: CardUsage | null;
  locations: CardLocation[];
  hunks?: Hunk[] | null;
  stats?: Stats | null;
  read?: ReadView | null;
  search?: SearchView | null;
  terminal?: TerminalView | null;
  /** For kinds without a view in the protocol: the result's meta or, while pending and when the
   * call failed, the call-time data its tool declared. `todo`: `{todos, counts}`; `question`:
   * `{questions, answers?}`; `plan`: `{plan, approved?}`; `structured`: `{value}` (dataCards.ts
   * draws the four); `mcp`: {@link McpCardData} (mcpCard.ts); a tool's own kind: its meta. */
  data?: unknown;
  /** Client-side only, never on the wire: the `toolhost/callOutput` text a running call without a
   * terminal view has sent so far (an MCP tool's progress), kept by the card store until the
   * final card replaces the pending one. */
  progress?: string;
}

/** An `mcp` card's data: the MCP server and the tool's raw name (the card's `tool` is the public
 * name `mcp__<server>__<tool>`), and, on a completed card, the server's `structuredContent` when
 * it sent one. */
export interface McpCardData {
  server: string;
  tool: string;
  structuredContent?: unknown;
}


/** Who made the call, when it was not this editor (a non-empty `card.caller`), else undefined. */
export function cardCaller(card: Pick<Card, 'caller'>): string | undefined {
  return typeof card.caller === 'string' && card.caller !== '' ? card.caller : undefined;
}

/** The title line of `card.rendered`: `<tool> <title> · <status>`, then ` · <caller>` for a call
 * another agent made (through `toolhost mcp`). */
export function titleLine(card: Pick<Card, 'tool' | 'title' | 'status' | 'caller'>): string {
  const caller = cardCaller(card);
  return `${card.tool} ${card.title} · ${card.status}${caller === undefined ? '' : ` · ${caller}`}`;
}

/** A hunk's header line: the one the server sent (`hunk.header`); only for a hunk without one
 * (a server from before headers) the line `card::to_text` wrote then, preview-aware. */
export function hunkHeader(hunk: Omit<Hunk, 'header'> & { header?: unknown }): string {
  if (typeof hunk.header === 'string' && hunk.header !== '') {
    return hunk.header;
  }
  return hunk.preview === true
    ? `@@ preview -${hunk.oldLines} +${hunk.newLines} @@`
    : `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`;
}

/** Whether a hunk is a proposed change with no place in the file. */
export function isPreviewHunk(hunk: Pick<Hunk, 'preview'>): boolean {
  return hunk.preview === true;
}

function asHunk(raw: unknown): Hunk | undefined {
  if (!isObject(raw) || typeof raw.path !== 'string' || !Array.isArray(raw.lines)) {
    return undefined;
  }
  const count = (value: unknown) => (isIndex(value) ? value : 0);
  const hunk = {
    ...raw,
    path: raw.path,
    oldStart: count(raw.oldStart),
    oldLines: count(raw.oldLines),
    newStart: count(raw.newStart),
    newLines: count(raw.newLines),
    lines: raw.lines.filter((l): l is HunkLine => isObject(l) && typeof l.op === 'string' && typeof l.text === 'string'),
  } as Hunk;
  if (raw.preview !== undefined && typeof raw.preview !== 'boolean') {
    delete hunk.preview;
  }
  hunk.header = hunkHeader({ ...hunk, header: raw.header });
  return hunk;
}

/** A card as it should look to clients: any kind kept as sent (an open string; views fall back to
 * generic), every hunk with its header, missing fields defaulted; unusable input is undefined. */
export function asCard(raw: unknown): Card | undefined {
  if (!isObject(raw) || typeof raw.callId !== 'string' || typeof raw.tool !== 'string') {
    return undefined;
  }
  const card = raw as unknown as Card;
  const out: Card = {
    ...card,
    title: typeof card.title === 'string' ? card.title : card.tool,
    text: typeof card.text === 'string' ? card.text : '',
    rendered: typeof card.rendered === 'string' ? card.rendered : '',
    status: card.status === 'completed' || card.status === 'failed' ? card.status : 'pending',
    kind: typeof card.kind === 'string' && card.kind !== '' ? card.kind : 'generic',
    locations: Array.isArray(card.locations) ? card.locations : [],
  };
  // `caller` is kept only as a name (a string); anything else (null, a number, "") means the
  // editor's own call.
  if (cardCaller(card) === undefined) {
    delete out.caller;
  }
  // A parent is a call id or nothing.
  if (typeof card.parentCallId !== 'string' || card.parentCallId === '') {
    delete out.parentCallId;
  }
  // A group and a usage are kept only in their shapes: they end up in the page and in sums.
  const group = asGroup(raw.group);
  if (group) {
    out.group = group;
  } else {
    delete out.group;
  }
  const usage = asUsage(raw.usage);
  if (usage) {
    out.usage = usage;
  } else {
    delete out.usage;
  }
  // Live progress is the store's own, never the server's.
  delete out.progress;
  if (Array.isArray(raw.hunks)) {
    out.hunks = raw.hunks.map(asHunk).filter((h): h is Hunk => h !== undefined);
  } else if (raw.hunks !== undefined && raw.hunks !== null) {
    out.hunks = null;
  }
  if (raw.terminal !== undefined && raw.terminal !== null) {
    const terminal = asTerminal(raw.terminal);
    if (terminal) {
      out.terminal = terminal;
    } else {
      // Unusable: the card is drawn as generic (its Native text), as by a server without views.
      out.terminal = null;
    }
  }
  return out;
}

/** A terminal view from the wire, or undefined when it lacks the command or the output. Fields of
 * the wrong type are dropped rather than trusted: they end up in the page (escaped) and drive the
 * exit pill. */
function asTerminal(raw: unknown): TerminalView | undefined {
  if (!isObject(raw) || typeof raw.command !== 'string' || typeof raw.output !== 'string') {
    return undefined;
  }
  const view = { ...raw } as unknown as TerminalView;
  for (const key of ['description', 'cwd', 'signal'] as const) {
    if (view[key] !== undefined && view[key] !== null && typeof view[key] !== 'string') {
      delete view[key];
    }
  }
  if (view.exitCode !== undefined && view.exitCode !== null && !Number.isInteger(view.exitCode)) {
    delete view.exitCode;
  }
  if (view.timedOut !== undefined && typeof view.timedOut !== 'boolean') {
    delete view.timedOut;
  }
  if (view.spillPaths !== undefined) {
    if (Array.isArray(view.spillPaths)) {
      view.spillPaths = view.spillPaths.filter((p): p is string => typeof p === 'string' && p !== '');
    } else {
      delete view.spillPaths;
    }
  }
  return view;
}

