// The card of a tool an external MCP server provides through toolhost's MCP bridge (`kind: "mcp"`,
// `tool` = `mcp__<server>__<tool>`): the server as a badge and the tool's raw name in the header,
// then the result's text (the Native text: the MCP text blocks joined) with long text folded, and
// the server's `structuredContent` as pretty JSON under a "Structured" disclosure. A running call
// shows the progress the bridge routed to it (`toolhost/callOutput`); a failed one its error. A
// card whose data lacks the server or the tool is not drawn here (the generic view takes it).
// Everything is escaped. Pure: no `vscode` import.

import { escapeHtml } from './html';
import type { Card, McpCardData } from './cards';
import { isObject } from './guards';

/** Past this many lines, or {@link FOLD_CHARS} characters, a text shows only its beginning until
 * "Show all" is pressed: an MCP result may be a whole document, and the cards below it matter too. */
export const FOLD_LINES = 20;
export const FOLD_CHARS = 4000;

/** An `mcp` card's data, or undefined when it has not the shape (no server or tool name). Null
 * structured content counts as none: a server that serialized an absent field sends that. */
export function mcpDataOf(card: Pick<Card, 'kind' | 'data'>): McpCardData | undefined {
  const data = card.data;
  if (card.kind !== 'mcp' || !isObject(data) || typeof data.server !== 'string' || data.server === '' || typeof data.tool !== 'string' || data.tool === '') {
    return undefined;
  }
  const out: McpCardData = { server: data.server, tool: data.tool };
  if (data.structuredContent !== undefined && data.structuredContent !== null) {
    out.structuredContent = data.structuredContent;
  }
  return out;
}

/** Where a long text is cut: after {@link FOLD_LINES} lines or {@link FOLD_CHARS} characters,
 * whichever comes first (a line break just before the character cap is preferred, so the visible
 * part ends with a whole line). Undefined when the text is short enough to show whole. */
export function foldPoint(text: string, lines = FOLD_LINES, chars = FOLD_CHARS): number | undefined {
  let cut = -1;
  let seen = 0;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) {
    seen += 1;
    if (seen === lines) {
      cut = i + 1;
      break;
    }
  }
  if (cut >= 0 && cut < text.length && cut <= chars) {
    return cut;
  }
  if (text.length <= chars) {
    return undefined;
  }
  const newline = text.lastIndexOf('\n', chars - 1);
  return newline >= chars / 2 ? newline + 1 : chars;
}

function lineCount(text: string): number {
  const breaks = text.split('\n').length - 1;
  return text.endsWith('\n') ? breaks : breaks + 1;
}

/** A text in a `<pre>`, its beginning only when it is long: both parts sit in the one `<pre>`, so
 * "Show all" (handled in the page) shows the text exactly as it is, with nothing in between. */
export function foldedTextHtml(text: string, classes: string): string {
  const cut = foldPoint(text);
  if (cut === undefined) {
    return `<pre class="${classes}">${escapeHtml(text)}</pre>`;
  }
  const total = lineCount(text);
  const show = `Show all ${total} ${total === 1 ? 'line' : 'lines'} (${text.length} characters)`;
  return (
    `<div class="fold-text">` +
    `<pre class="${classes}"><span class="fold-head">${escapeHtml(text.slice(0, cut))}</span>` +
    `<span class="fold-ellipsis" aria-hidden="true">…</span><span class="fold-rest">${escapeHtml(text.slice(cut))}</span></pre>` +
    `<button type="button" class="fold-toggle link" data-local="toggleFold" aria-expanded="false"` +
    ` data-show-label="${escapeHtml(show)}" data-hide-label="Show less">${escapeHtml(show)}</button></div>`
  );
}

const JSON_TOKEN = /("(?:[^"\\]|\\.)*")(\s*:)?|\b(true|false)\b|\bnull\b|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;

/** `value` as JSON, pretty printed (2-space indent), each token in a span by its type (key,
 * string, number, boolean, null) for the theme's colours. Every piece is escaped on its own, so
 * nothing in a string can become markup; the text of the result is exactly the printed JSON. */
export function jsonHtml(value: unknown): string {
  const printed = JSON.stringify(value, null, 2) ?? 'null';
  let html = '';
  let last = 0;
  for (const m of printed.matchAll(JSON_TOKEN)) {
    const index = m.index;
    html += escapeHtml(printed.slice(last, index));
    if (m[1] !== undefined) {
      const cls = m[2] !== undefined ? 'json-key' : 'json-string';
      html += `<span class="${cls}">${escapeHtml(m[1])}</span>${m[2] !== undefined ? escapeHtml(m[2]) : ''}`;
    } else {
      const cls = m[3] !== undefined ? 'json-bool' : m[0] === 'null' ? 'json-null' : 'json-number';
      html += `<span class="${cls}">${escapeHtml(m[0])}</span>`;
    }
    last = index + m[0].length;
  }
  return html + escapeHtml(printed.slice(last));
}

/** The title of an MCP card's header: the server as a badge, then the tool's raw name. Its text
 * reads `<server> · <tool>`, the card's title, so the header still reads like `card.rendered`'s
 * title line. */
export function mcpTitleHtml(data: McpCardData): string {
  return (
    `<span class="mcp-server" title="${escapeHtml(`MCP server ${data.server} (through toolhost's MCP bridge)`)}">${escapeHtml(data.server)}</span>` +
    `<span class="card-sep"> · </span><span class="mcp-tool">${escapeHtml(data.tool)}</span>`
  );
}

/** A running call's progress: its last {@link FOLD_LINES} lines, the latest being what matters
 * (the final card replaces all of it). */
export function progressHtml(progress: string): string {
  const lines = progress.endsWith('\n') ? progress.slice(0, -1).split('\n') : progress.split('\n');
  const hidden = Math.max(0, lines.length - FOLD_LINES);
  const more = hidden > 0 ? `<div class="mcp-progress-more">… ${hidden} earlier ${hidden === 1 ? 'line' : 'lines'}</div>` : '';
  return `${more}<pre class="mcp-progress">${escapeHtml(lines.slice(hidden).join('\n'))}</pre>`;
}

/** The body of an MCP card: progress while it runs, then the text (the error, in the failed
 * style, when the call failed) and the structured content. */
export function mcpCardHtml(card: Card, data: McpCardData): string {
  const parts: string[] = [];
  if (card.status === 'pending') {
    parts.push(`<div class="mcp-waiting">waiting for ${escapeHtml(data.server)}…</div>`);
    if (card.progress) {
      parts.push(progressHtml(card.progress));
    }
  }
  if (card.text !== '') {
    parts.push(foldedTextHtml(card.text, `native-text mcp-text${card.status === 'failed' ? ' error' : ''}`));
  } else if (card.status === 'completed' && data.structuredContent === undefined) {
    parts.push('<div class="mcp-empty">(no text content)</div>');
  }
  if (data.structuredContent !== undefined) {
    // Folded when there is text: servers often send the same value as JSON text too.
    const open = card.text === '' ? ' open' : '';
    parts.push(
      `<details class="mcp-structured" data-fold="structured"${open}><summary>Structured</summary>` +
        `<pre class="json">${jsonHtml(data.structuredContent)}</pre></details>`,
    );
  }
  return `<div class="mcp">${parts.join('')}</div>`;
}
