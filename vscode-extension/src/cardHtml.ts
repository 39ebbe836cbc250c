// Cards → the panel's HTML. One function per view (diff, read, search, terminal, generic), all
// output escaped; no inline styles or scripts (the page's CSP forbids them), buttons for every
// action (keyboard reachable), and text laid out so that a card element's lines read exactly like
// `card.rendered` (the title line, then each hunk's `header` and ` `/`+`/`-` lines, or the search
// lines). A call another agent made through `toolhost mcp` ends its title line with ` · <caller>`,
// shown as a badge. A terminal card (`bash`) shows its command, its output with the ANSI styles
// (collapsed to the last lines), the exit pill and links to spilled output; every pending card
// offers Stop, every completed diff card Revert and Revert since here. Todo, question, plan and
// structured cards are drawn from their `data` (dataCards.ts), the cards of tools external MCP
// servers provide through the bridge (`mcp`) by mcpCard.ts, the web tools' cards (`fetch`:
// web_search's sources and web_fetch's page, as buttons that open the URL in the browser) by
// webCard.ts; a kind without a view here (a tool's own kind), data of the wrong shape, or a failed
// web card (its error is its text) is drawn as generic: its Native text. A card with calls made
// under it (a `run_code` program) draws them inside, as child cards under an "N calls" toggle, and
// counts them (and the failed ones) in its header; a `workflow` or `ralph` run's children with a
// phase go under one heading per phase (cardGroups.ts), each child's header shows its label and
// its usage, and the run's header its summed usage. Pure: no `vscode` import.

import { lineHtml, parseAnsi } from './ansi';
import { dataCardHtml, isDataView, type DataView } from './dataCards';
import { escapeHtml } from './html';
import { mcpCardHtml, mcpDataOf, mcpTitleHtml } from './mcpCard';
import type { Card, Hunk, ReadView, SearchView, TerminalView } from './cards';
import { cardCaller, hunkHeader, isPreviewHunk, titleLine } from './cards';
import { childSections, usageLabel } from './cardGroups';
import { childrenLabel, parentIdOf, type CardNode } from './cardTree';
import { isRevertible } from './revert';
import { collapseLines, COLLAPSED_LINES, exitPills } from './terminal';
import { webCardHtml, webDataOf } from './webCard';

export { escapeHtml };

function attr(name: string, value: string | number): string {
  return ` ${name}="${escapeHtml(String(value))}"`;
}

const STATUS_LABEL: Record<Card['status'], string> = {
  pending: 'running',
  completed: 'completed',
  failed: 'failed',
};

function statusIcon(card: Card): string {
  const label = STATUS_LABEL[card.status];
  if (card.status === 'pending') {
    return `<span class="status-icon spinner" role="img"${attr('aria-label', label)}></span>`;
  }
  const glyph = card.status === 'completed' ? '✓' : '✗';
  return `<span class="status-icon"${attr('aria-label', label)} role="img">${glyph}</span>`;
}

/** The agent that made the call — through `toolhost mcp`, or a step of an agent toolhost hosts (the
 * title line's ` · <caller>`): a small badge after the status; nothing for the editor's own
 * calls. */
function callerHtml(card: Card): string {
  const caller = cardCaller(card);
  if (caller === undefined) {
    return '';
  }
  return (
    `<span class="card-sep"> · </span>` +
    `<span class="card-caller"${attr('title', `called by ${caller}`)}>${escapeHtml(caller)}</span>`
  );
}

function statsHtml(card: Card): string {
  if (!card.stats) {
    return '';
  }
  const { additions, deletions } = card.stats;
  return (
    `<span class="stats"${attr('aria-label', `${additions} added, ${deletions} removed lines`)}>` +
    `<span class="stat-add">+${additions}</span> <span class="stat-del">−${deletions}</span></span>`
  );
}

/** A child's label (its caller's `group.label`: `draft 0`, `round 2`) as a pill. */
function groupLabelHtml(card: Card): string {
  const label = card.group?.label;
  return label === undefined ? '' : `<span class="pill card-label"${attr('title', 'label')}>${escapeHtml(label)}</span>`;
}

/** What the call used (a child agent's, or a run's sum over its children) as a pill. */
function usageHtml(card: Card): string {
  if (!card.usage) {
    return '';
  }
  return `<span class="pill card-usage"${attr('title', 'tokens used (and their cost)')}>${escapeHtml(usageLabel(card.usage))}</span>`;
}

const LINE_CLASS: Record<string, string> = { '+': 'add', '-': 'del', ' ': 'ctx' };

function hunksHtml(hunks: readonly Hunk[]): string {
  const parts: string[] = [];
  let lastPath: string | undefined;
  for (const hunk of hunks) {
    if (hunk.path !== lastPath && hunks.some((h) => h.path !== hunks[0]?.path)) {
      parts.push(`<div class="hunk-path">${escapeHtml(hunk.path)}</div>`);
    }
    lastPath = hunk.path;
    const lines = hunk.lines
      .map((line) => {
        const cls = LINE_CLASS[line.op] ?? 'ctx';
        return (
          `<div class="line ${cls}"${attr('data-op', line.op)}>` +
          `<span class="op" aria-hidden="true">${escapeHtml(line.op)}</span>` +
          `<span class="text">${escapeHtml(line.text)}</span></div>`
        );
      })
      .join('');
    // The header is the server's (`hunk.header`). A preview hunk has no place in the file yet:
    // nothing here claims one.
    const header = hunkHeader(hunk);
    const preview = isPreviewHunk(hunk);
    const label = preview
      ? `proposed change to ${hunk.path} (its place in the file is not known yet)`
      : `hunk ${header} in ${hunk.path}`;
    parts.push(
      `<div class="hunk${preview ? ' preview' : ''}"${attr('data-path', hunk.path)}${preview ? ' data-preview="true"' : ''} role="group"${attr('aria-label', label)}>` +
        `<div class="hunk-header"${preview ? attr('title', 'proposed change: its place in the file is not known yet') : ''}>${escapeHtml(header)}</div>${lines}</div>`,
    );
  }
  return `<div class="diff">${parts.join('')}</div>`;
}

function readHtml(view: ReadView): string {
  const rows = view.lines
    .map(
      (line) =>
        `<div class="read-line"><span class="ln" aria-hidden="true">${line.number}</span>` +
        `<span class="text">${escapeHtml(line.text)}</span></div>`,
    )
    .join('');
  const last = view.lines.length > 0 ? (view.lines[view.lines.length - 1]?.number ?? view.offset) : view.offset;
  const range =
    view.lines.length > 0 ? `lines ${view.offset}–${last} of ${view.totalLines}` : `no lines (${view.totalLines} in file)`;
  const lang = view.lang ? attr('data-lang', view.lang) : '';
  return (
    `<div class="read"${lang}><div class="read-meta">${escapeHtml(range)}</div>` +
    `<div class="read-lines" role="list">${rows}</div></div>`
  );
}

function locButton(index: number, label: string): string {
  return `<button type="button" class="loc link" data-action="goto"${attr('data-loc', index)}>${escapeHtml(label)}</button>`;
}

/** The search lines of `card::to_text`, each a list item whose text reads like that line, with a
 * clickable location (index into `card.locations`, which lists them in the same order). */
function searchHtml(search: SearchView): string {
  const items: string[] = [];
  let index = 0;
  for (const path of search.paths ?? []) {
    items.push(`<li class="search-line">${locButton(index++, path)}</li>`);
  }
  for (const file of search.files ?? []) {
    for (const m of file.matches) {
      items.push(
        `<li class="search-line">${locButton(index++, `${file.path}:${m.lineNumber}`)}` +
          `<span class="snippet">: ${escapeHtml(m.line)}</span></li>`,
      );
    }
  }
  for (const loc of search.locations ?? []) {
    const snippet = loc.snippet ? `<span class="snippet">: ${escapeHtml(loc.snippet)}</span>` : '';
    items.push(
      `<li class="search-line">${locButton(index++, `${loc.path}:${loc.line}:${loc.character}`)}${snippet}</li>`,
    );
  }
  if (index === 0) {
    items.push('<li class="search-line empty">(no results)</li>');
  } else if (search.truncated || index < search.total) {
    items.push(`<li class="search-line more">(showing ${index} of ${search.total})</li>`);
  }
  return `<ul class="search">${items.join('')}</ul>`;
}

/** The label of the toggle that shows every line of collapsed output (media/panel.js writes the
 * other one, for hiding them again). */
export function showAllLabel(lines: number): string {
  return `Show all ${lines} lines`;
}

/** The output block of a terminal card: one element per line, ANSI styles as classes; past
 * {@link COLLAPSED_LINES} lines the first ones are hidden behind a "Show all N lines" toggle
 * (handled in the page: nothing goes to the extension). */
function terminalOutputHtml(output: string, pending: boolean): string {
  const lines = parseAnsi(output).map((line) => `<div class="term-line">${lineHtml(line)}</div>`);
  if (lines.length === 0) {
    // A command still running has printed nothing yet; a finished one printed nothing at all
    // (the server says so in the output itself, but an empty view may come from elsewhere).
    return `<div class="term-output empty" data-lines="0"><div class="term-empty">${pending ? 'waiting for output…' : '(no output)'}</div></div>`;
  }
  const { hidden } = collapseLines(lines.length);
  const toggle =
    hidden > 0
      ? `<button type="button" class="term-toggle link" data-local="toggleOutput" aria-expanded="false"${attr('data-show-label', showAllLabel(lines.length))}${attr('data-hide-label', `Show only the last ${COLLAPSED_LINES} lines`)}>${escapeHtml(showAllLabel(lines.length))}</button>`
      : '';
  const early = hidden > 0 ? `<div class="term-early">${lines.slice(0, hidden).join('')}</div>` : '';
  return (
    `<div class="term-output${hidden > 0 ? ' collapsible' : ''}"${attr('data-lines', lines.length)}${attr('data-hidden', hidden)}>` +
    `${toggle}<div class="term-text">${early}${lines.slice(hidden).join('')}</div></div>`
  );
}

/** How the command ended: the exit pill (exit code or signal), "timed out", and the spilled
 * output files as links that open them in an editor. */
function terminalFootHtml(card: Card, view: TerminalView): string {
  const { exit, timedOut } = exitPills(card);
  const parts: string[] = [];
  if (exit) {
    parts.push(`<span class="pill exit-pill ${exit.tone}"${attr('data-tone', exit.tone)}>${escapeHtml(exit.label)}</span>`);
  }
  if (timedOut) {
    parts.push(`<span class="pill timeout-pill">timed out</span>`);
  }
  const spills = (card.status === 'pending' ? [] : (view.spillPaths ?? [])).map(
    (path, index) =>
      `<div class="term-spill">full output: <button type="button" class="link spill" data-action="openSpill"${attr('data-spill', index)}${attr('title', `open ${path}`)}>${escapeHtml(path)}</button></div>`,
  );
  if (parts.length === 0 && spills.length === 0) {
    return '';
  }
  return `<div class="term-foot">${parts.length > 0 ? `<div class="term-pills">${parts.join(' ')}</div>` : ''}${spills.join('')}</div>`;
}

/** A terminal card: the command (monospace), its description and working directory, the output,
 * and how it ended. While the command runs, the output is what arrived live. */
function terminalHtml(card: Card, view: TerminalView): string {
  const description =
    typeof view.description === 'string' && view.description !== ''
      ? `<div class="term-description">${escapeHtml(view.description)}</div>`
      : '';
  const cwd = typeof view.cwd === 'string' && view.cwd !== '' ? `<div class="term-cwd">in <code>${escapeHtml(view.cwd)}</code></div>` : '';
  return (
    `<div class="terminal">` +
    `<div class="term-head"><div class="term-command"><span class="term-prompt" aria-hidden="true">$ </span>` +
    `<code>${escapeHtml(view.command)}</code></div>${description}${cwd}</div>` +
    terminalOutputHtml(view.output, card.status === 'pending') +
    terminalFootHtml(card, view) +
    `</div>`
  );
}

function nativeHtml(text: string, collapsible: boolean, failed: boolean): string {
  if (text === '') {
    return '';
  }
  const pre = `<pre class="native-text${failed ? ' error' : ''}">${escapeHtml(text)}</pre>`;
  if (!collapsible) {
    return pre;
  }
  return `<details class="native"><summary>Native text</summary>${pre}</details>`;
}

/** The views the panel draws. */
export type CardView = 'diff' | 'read' | 'search' | 'terminal' | DataView | 'mcp' | 'web' | 'generic';

/** The view a card is drawn with (the branches of `card::to_text`): diff, read, search and terminal
 * when the card carries what they show; todo, question, plan and structured when their `data` has
 * its shape (also when failed: the error goes under what was asked); mcp when its data names the
 * server and the tool; web when a fetch card's data is the web tools' (webCard.ts) and the call
 * did not fail; every other kind — generic, or a kind only its tool knows — is generic (the
 * Native text), and so is a terminal card without its `terminal` view (an older server), a failed
 * terminal or web card (the error is its text). */
export function cardView(card: Card): CardView {
  if (isDataView(card.kind) && dataCardHtml(card) !== undefined) {
    return card.kind;
  }
  if (mcpDataOf(card) !== undefined) {
    return 'mcp';
  }
  if (card.kind === 'fetch' && card.status !== 'failed' && webDataOf(card) !== undefined) {
    return 'web';
  }
  if (card.kind === 'diff' && card.hunks) {
    return 'diff';
  }
  if (card.kind === 'terminal' && card.terminal && card.status !== 'failed') {
    return 'terminal';
  }
  if (card.kind === 'search' && card.search && card.status !== 'pending') {
    return 'search';
  }
  if (card.kind === 'read' && card.read && card.status === 'completed') {
    return 'read';
  }
  return 'generic';
}

/** What the card body shows. */
function bodyHtml(card: Card, view: CardView): { body: string; nativeShown: boolean } {
  if (view === 'diff' && card.hunks) {
    return { body: hunksHtml(card.hunks), nativeShown: false };
  }
  if (view === 'search' && card.search) {
    return { body: searchHtml(card.search), nativeShown: false };
  }
  if (view === 'read' && card.read) {
    return { body: readHtml(card.read), nativeShown: false };
  }
  if (view === 'terminal' && card.terminal) {
    return { body: terminalHtml(card, card.terminal), nativeShown: false };
  }
  const mcp = view === 'mcp' ? mcpDataOf(card) : undefined;
  if (mcp) {
    // The text is the body here (shown whole or folded), so no second copy under "Native text".
    return { body: mcpCardHtml(card, mcp), nativeShown: true };
  }
  const web = view === 'web' ? webDataOf(card) : undefined;
  if (web) {
    // The page (or the search's text) stays under "Native text", folded.
    return { body: webCardHtml(card, web), nativeShown: false };
  }
  if (isDataView(view)) {
    const body = dataCardHtml(card) ?? '';
    // A failure says why right under what was asked (`card.rendered` does the same).
    return card.status === 'failed' ? { body: body + nativeHtml(card.text, false, true), nativeShown: true } : { body, nativeShown: false };
  }
  return { body: nativeHtml(card.text, false, card.status === 'failed'), nativeShown: true };
}

/** A button of a card's toolbar: `action` goes to the extension (`data-action`), `title` is the
 * tooltip for the actions whose label alone does not say what they do. */
export interface CardAction {
  action: string;
  label: string;
  title?: string;
}

/** The actions a card offers. A pending card can be stopped (`toolhost/cancelCall`, whoever made
 * the call). A card whose hunks are all previews (their place in the file is not known) opens them
 * as a proposed change, not as a diff at made-up lines. A completed diff card — an agent's change,
 * the editor's own, or a revert — can be reverted, alone or with everything after it; they come
 * last, after the actions that only look. */
export function cardActions(card: Card): CardAction[] {
  const actions: CardAction[] = [];
  if (card.status === 'pending') {
    actions.push({ action: 'stop', label: 'Stop', title: 'Stop this call (toolhost/cancelCall)' });
  }
  if (card.hunks && card.hunks.length > 0) {
    const label = card.hunks.every(isPreviewHunk) ? 'Open proposed change' : 'Open diff';
    actions.push({ action: 'openDiff', label });
  }
  if (card.locations.length > 0) {
    actions.push({ action: 'goto', label: 'Go to' });
  }
  if (card.text !== '') {
    actions.push({ action: 'copy', label: 'Copy Native text' });
  }
  if (isRevertible(card)) {
    actions.push(
      { action: 'revert', label: 'Revert', title: `Undo the file changes of this call (revert ${card.callId})` },
      {
        action: 'revertSince',
        label: 'Revert since here',
        title: `Undo every file change of the session from this call on, newest first (revert ${card.callId} with since; asks first)`,
      },
    );
  }
  return actions;
}

/** The calls made under a card (a `run_code` program's nested calls, a subagent's calls): the
 * "N calls" toggle (a disclosure, open at first) over the child cards, oldest first, each drawn
 * like a top-level card with all its actions. media/panel.js builds the same shell when a parent's
 * first child arrives live, and keeps a person's open/closed choice when the parent is redrawn. */
export function childrenHtml(parent: Card, children: readonly CardNode[]): string {
  if (children.length === 0) {
    return '';
  }
  const label = childrenLabel(children.map((c) => c.card));
  return (
    `<details class="card-children"${attr('data-children-of', parent.callId)} open>` +
    `<summary class="children-summary">${escapeHtml(label)}</summary>` +
    `<div class="child-list" role="group"${attr('aria-label', `calls made by ${parent.tool}`)}>` +
    childSections(children)
      .map((section) => (section.phase === undefined ? renderCardNode(section.node) : phaseHtml(section.phase, section.nodes)))
      .join('') +
    `</div></details>`
  );
}

/** One phase of a run's children: its heading over its children, in the order they came.
 * media/panel.js builds the same section when the phase's first child arrives live. */
function phaseHtml(phase: string, nodes: readonly CardNode[]): string {
  return (
    `<div class="child-phase"${attr('data-phase', phase)} role="group"${attr('aria-label', `phase ${phase}`)}>` +
    `<div class="phase-heading">${escapeHtml(phase)}</div>` +
    nodes.map(renderCardNode).join('') +
    `</div>`
  );
}

/** The header's count of the calls made under a card (and of those that failed). */
function childrenCountHtml(children: readonly CardNode[]): string {
  if (children.length === 0) {
    return '';
  }
  const failed = children.some((c) => c.card.status === 'failed');
  return `<span class="pill children-count${failed ? ' has-failed' : ''}">${escapeHtml(childrenLabel(children.map((c) => c.card)))}</span>`;
}

/** A card with the cards made under it, drawn inside it (cardTree.ts). */
export function renderCardNode(node: CardNode): string {
  return renderCard(node.card, node.children);
}

/** One card as an `<article>` of the feed; `children`: the calls made under it, drawn inside it.
 * A card made under another one says so (`data-parent-call-id`), wherever it is drawn. */
export function renderCard(card: Card, children: readonly CardNode[] = []): string {
  const view = cardView(card);
  const { body, nativeShown } = bodyHtml(card, view);
  const native = nativeShown ? '' : nativeHtml(card.text, true, card.status === 'failed');
  const actions = cardActions(card)
    .map(
      (a) =>
        `<button type="button" class="action${a.action === 'stop' ? ' stop' : ''}"${attr('data-action', a.action)}${a.action === 'goto' ? attr('data-loc', 0) : ''}${a.title === undefined ? '' : attr('title', a.title)}>${escapeHtml(a.label)}</button>`,
    )
    .join('');
  const headerId = `h-${card.callId}`;
  const caller = cardCaller(card);
  const mcp = view === 'mcp' ? mcpDataOf(card) : undefined;
  const title = mcp ? mcpTitleHtml(mcp) : escapeHtml(card.title);
  const parentId = parentIdOf(card);
  return (
    `<article class="card status-${escapeHtml(card.status)} view-${view}${parentId === undefined ? '' : ' child-card'}"${attr('data-call-id', card.callId)}` +
    `${attr('data-status', card.status)}${attr('data-kind', card.kind)}${attr('data-view', view)}` +
    `${caller === undefined ? '' : attr('data-caller', caller)}${parentId === undefined ? '' : attr('data-parent-call-id', parentId)}` +
    ` tabindex="0"${attr('aria-labelledby', headerId)}` +
    `${card.status === 'pending' ? ' aria-busy="true"' : ''}>` +
    `<header class="card-header"${attr('id', headerId)}${attr('title', titleLine(card))}>${statusIcon(card)}` +
    `<span class="card-tool">${escapeHtml(card.tool)}</span> ` +
    `<span class="card-title">${title}</span>` +
    `<span class="card-sep"> · </span><span class="card-status">${escapeHtml(card.status)}</span>` +
    `${callerHtml(card)}${groupLabelHtml(card)}${statsHtml(card)}${usageHtml(card)}${childrenCountHtml(children)}</header>` +
    `<div class="card-body">${body}</div>${native}` +
    (actions ? `<div class="actions" role="toolbar"${attr('aria-label', 'card actions')}>${actions}</div>` : '') +
    childrenHtml(card, children) +
    `</article>`
  );
}

/** The panel's stylesheets (media/styles/<name>.css), one per area, in the order the page loads
 * them: later ones build on the theme colours of `base` and may refine the cards' look. */
export const PANEL_STYLESHEETS = ['base', 'cards', 'terminal', 'reviews', 'questions', 'markdown', 'dataCards', 'mcp', 'web', 'chat', 'worktrees'] as const;

export interface PageOptions {
  /** The webview's `cspSource`. */
  cspSource: string;
  /** A fresh random nonce for the script and style tags. */
  nonce: string;
  scriptUri: string;
  /** The webview URIs of {@link PANEL_STYLESHEETS}, in that order. */
  styleUris: readonly string[];
  /** The feed's initial content (rendered cards, newest first). */
  cardsHtml: string;
  /** Initial banner HTML (replay notice), if any. */
  bannerHtml?: string;
  /** The session picker (worktreePicker.ts `sessionPickerHtml`), if any. */
  sessionsHtml?: string;
  /** The summaries of the open reviews (review.ts `reviewSummaryHtml`), if any. */
  reviewsHtml?: string;
  /** The forms of the open questions (ask.ts `askFormHtml`), if any. */
  questionsHtml?: string;
  /** The session's todo list (dataCards.ts `pinnedTodosHtml`), if any. */
  todosHtml?: string;
  /** The chat with toolhost's agent: transcript and chat box (chat.ts `chatSectionHtml`), if any. */
  chatHtml?: string;
}

/** The whole webview document: strict CSP (no remote anything, scripts only with the nonce). */
export function renderPage(options: PageOptions): string {
  const csp = [
    "default-src 'none'",
    `style-src ${options.cspSource}`,
    `script-src 'nonce-${options.nonce}'`,
    `img-src ${options.cspSource} data:`,
    `font-src ${options.cspSource}`,
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(csp)}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
${options.styleUris.map((uri) => `<link rel="stylesheet" href="${escapeHtml(uri)}" nonce="${escapeHtml(options.nonce)}">`).join('\n')}
<title>toolhost</title>
</head>
<body>
${options.chatHtml ?? ''}
<div id="sessions">${options.sessionsHtml ?? ''}</div>
<div id="banner" role="status" aria-live="polite">${options.bannerHtml ?? ''}</div>
<section id="questions" aria-label="questions for you">${options.questionsHtml ?? ''}</section>
<section id="reviews" aria-label="open reviews" aria-live="polite">${options.reviewsHtml ?? ''}</section>
<div id="todos">${options.todosHtml ?? ''}</div>
<p id="empty" class="empty-state">No tool calls yet. Ask the agent above, run <strong>toolhost: Call Tool…</strong> or replay a session.</p>
<section id="cards" role="feed" aria-label="toolhost cards">${options.cardsHtml}</section>
<script nonce="${escapeHtml(options.nonce)}" src="${escapeHtml(options.scriptUri)}"></script>
</body>
</html>`;
}

/** The replay banner. */
export function replayBanner(sessionId: string, count: number): string {
  return (
    `<div class="replay-banner">Replay of session <code>${escapeHtml(sessionId)}</code> · ${count} ${count === 1 ? 'card' : 'cards'} ` +
    `<button type="button" class="action" data-action="live">Back to live cards</button></div>`
  );
}

/** A random nonce (base64url of 24 random bytes from the given source). */
export function makeNonce(random: (size: number) => Uint8Array): string {
  return Buffer.from(random(24)).toString('base64url');
}
