// The cards of the web tools (`kind: "fetch"`): `web_search` lists its queries, the provider's
// answer when there is one and the sources, each a link-like button that opens the page in the
// browser (the panel's `openUrl` action) with its URL in muted text after it, then "(more sources
// were left out)" when the search cut them, or "No results found."; `web_fetch` shows the URL as
// such a button (and the page it was redirected to, `→ final`), the HTTP status as a pill, the
// page's title, its size and the `truncated` / `cached` badges — the page itself is the Native
// text, folded under the card like every view's. A running call shows what it asked for. Only an
// `http:` or `https:` URL becomes a button; any other (a `javascript:` one, say) is plain text,
// and the panel checks the URL again before it opens anything (`openableUrl`). Data of another
// shape is not drawn here (the generic view takes it). Everything is escaped. Pure: no `vscode`
// import.

import { escapeHtml } from './html';
import type { Card } from './cards';
import { isObject } from './guards';

/** One source of a search: its URL, and what the provider said about it. */
export interface WebSource {
  url: string;
  title?: string;
  snippet?: string;
}

/** A `web_search` card's data: the queries (from the call), and once it completed the sources,
 * whether some were left out, and the provider's answer. */
export interface WebSearchData {
  type: 'search';
  queries: string[];
  /** Undefined while the call runs. */
  sources?: WebSource[];
  truncated: boolean;
  answer?: string;
}

/** A `web_fetch` card's data: the URL asked for (from the call) and, once it completed, what the
 * fetch found. */
export interface WebPageData {
  type: 'page';
  url: string;
  finalUrl?: string;
  statusCode?: number;
  title?: string;
  contentType?: string;
  size?: number;
  truncated: boolean;
  cached: boolean;
}

export type WebCardData = WebSearchData | WebPageData;

function nonEmpty(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

/** A `fetch` card's data as the web tools send it, or undefined when it has not that shape: a
 * completed search needs its `sources` (objects with a string `url`), a completed fetch its `url`
 * and `statusCode`; a running call needs only what it asked for (`queries`, `url`). */
export function webDataOf(card: Pick<Card, 'kind' | 'status' | 'data'>): WebCardData | undefined {
  const data = card.data;
  if (card.kind !== 'fetch' || !isObject(data)) {
    return undefined;
  }
  const queries = Array.isArray(data.queries) ? data.queries : undefined;
  if (data.sources !== undefined && data.sources !== null) {
    if (!Array.isArray(data.sources)) {
      return undefined;
    }
    const sources: WebSource[] = [];
    for (const s of data.sources as unknown[]) {
      if (!isObject(s) || typeof s.url !== 'string') {
        return undefined;
      }
      const source: WebSource = { url: s.url };
      const title = nonEmpty(s.title);
      const snippet = nonEmpty(s.snippet);
      if (title !== undefined) {
        source.title = title;
      }
      if (snippet !== undefined) {
        source.snippet = snippet;
      }
      sources.push(source);
    }
    const out: WebSearchData = {
      type: 'search',
      queries: (queries ?? []).filter((q): q is string => typeof q === 'string'),
      sources,
      truncated: data.truncated === true,
    };
    const answer = nonEmpty(data.answer);
    if (answer !== undefined) {
      out.answer = answer;
    }
    return out;
  }
  if (card.status === 'pending' && queries !== undefined) {
    return { type: 'search', queries: queries.filter((q): q is string => typeof q === 'string'), truncated: false };
  }
  const url = nonEmpty(data.url);
  if (url === undefined) {
    return undefined;
  }
  if (card.status === 'pending') {
    return { type: 'page', url, truncated: false, cached: false };
  }
  const statusCode = count(data.statusCode) ?? count(data.status);
  if (statusCode === undefined) {
    return undefined;
  }
  const out: WebPageData = { type: 'page', url, statusCode, truncated: data.truncated === true, cached: data.cached === true };
  const finalUrl = nonEmpty(data.finalUrl);
  const title = nonEmpty(data.title);
  const contentType = nonEmpty(data.contentType);
  const size = count(data.size);
  if (finalUrl !== undefined) {
    out.finalUrl = finalUrl;
  }
  if (title !== undefined) {
    out.title = title;
  }
  if (contentType !== undefined) {
    out.contentType = contentType;
  }
  if (size !== undefined) {
    out.size = size;
  }
  return out;
}

/** `raw` as a URL the panel may open — its normalized form — when it is an absolute `http:` or
 * `https:` URL, else undefined. */
export function webUrl(raw: unknown): string | undefined {
  if (typeof raw !== 'string' || raw === '' || raw !== raw.trim()) {
    return undefined;
  }
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    return undefined;
  }
  return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.href : undefined;
}

/** The URLs a web card shows as buttons (normalized, see {@link webUrl}). */
export function webCardUrls(data: WebCardData): string[] {
  const raw = data.type === 'search' ? (data.sources ?? []).map((s) => s.url) : [data.url, data.finalUrl];
  return raw.map(webUrl).filter((u): u is string => u !== undefined);
}

/** What the panel opens for an `openUrl` message from `card`'s buttons: the URL when it is an
 * `http:`/`https:` URL the card shows, else undefined (the page is not trusted to name any URL). */
export function openableUrl(card: Pick<Card, 'kind' | 'status' | 'data'>, raw: unknown): string | undefined {
  const url = webUrl(raw);
  const data = webDataOf(card);
  return url !== undefined && data !== undefined && webCardUrls(data).includes(url) ? url : undefined;
}

/** A URL as a link-like button (`openUrl`) showing `label`; when the URL is not http(s), just the
 * label as text. */
function linkHtml(url: string, label: string, cls: string): string {
  const href = webUrl(url);
  if (href === undefined) {
    return `<span class="${cls} web-nolink">${escapeHtml(label)}</span>`;
  }
  return (
    `<button type="button" class="link ${cls}" data-action="openUrl" data-url="${escapeHtml(href)}"` +
    ` title="${escapeHtml(`Open ${href} in the browser`)}">${escapeHtml(label)}</button>`
  );
}

function searchHtml(card: Card, data: WebSearchData): string {
  const parts: string[] = [];
  if (data.queries.length > 0) {
    const queries = data.queries.map((q) => `<li class="web-query">${escapeHtml(q)}</li>`).join('');
    parts.push(`<ul class="web-queries" aria-label="queries">${queries}</ul>`);
  }
  if (data.sources === undefined) {
    if (card.status === 'pending') {
      parts.push('<div class="web-waiting">searching…</div>');
    }
    return `<div class="web web-search">${parts.join('')}</div>`;
  }
  if (data.answer !== undefined) {
    parts.push(`<div class="web-answer">${escapeHtml(data.answer)}</div>`);
  }
  if (data.sources.length === 0) {
    parts.push('<div class="web-empty">No results found.</div>');
  } else {
    const items = data.sources.map((s) => {
      const link = linkHtml(s.url, s.title ?? s.url, 'web-source-title');
      const snippet = s.snippet === undefined ? '' : `<div class="web-snippet">${escapeHtml(s.snippet)}</div>`;
      return `<li class="web-source">${link} <span class="web-url">${escapeHtml(s.url)}</span>${snippet}</li>`;
    });
    parts.push(`<ol class="web-sources" aria-label="sources">${items.join('')}</ol>`);
  }
  if (data.truncated) {
    parts.push('<div class="web-more">(more sources were left out)</div>');
  }
  return `<div class="web web-search">${parts.join('')}</div>`;
}

function statusTone(code: number): string {
  if (code >= 200 && code < 300) {
    return 'ok';
  }
  return code >= 400 ? 'fail' : 'other';
}

function pageHtml(card: Card, data: WebPageData): string {
  let target = linkHtml(data.url, data.url, 'web-page-url');
  if (data.finalUrl !== undefined && data.finalUrl !== data.url) {
    target +=
      `<span class="web-redirect"><span class="web-arrow" aria-label="redirected to"> → </span>` +
      `${linkHtml(data.finalUrl, data.finalUrl, 'web-final-url')}</span>`;
  }
  const parts = [`<div class="web-target">${target}</div>`];
  if (card.status === 'pending') {
    parts.push('<div class="web-waiting">fetching…</div>');
    return `<div class="web web-page">${parts.join('')}</div>`;
  }
  const meta: string[] = [];
  if (data.statusCode !== undefined) {
    meta.push(`<span class="pill web-status ${statusTone(data.statusCode)}">HTTP ${data.statusCode}</span>`);
  }
  if (data.title !== undefined) {
    meta.push(`<span class="web-title">${escapeHtml(`"${data.title}"`)}</span>`);
  }
  if (data.size !== undefined) {
    meta.push(`<span class="web-size">${data.size} ${data.size === 1 ? 'byte' : 'bytes'}</span>`);
  }
  if (data.contentType !== undefined) {
    meta.push(`<span class="web-type">${escapeHtml(data.contentType)}</span>`);
  }
  for (const flag of ['truncated', 'cached'] as const) {
    if (data[flag]) {
      meta.push(`<span class="pill web-flag web-${flag}">${flag}</span>`);
    }
  }
  if (meta.length > 0) {
    parts.push(`<div class="web-meta">${meta.join('')}</div>`);
  }
  return `<div class="web web-page">${parts.join('')}</div>`;
}

/** The body of a web card (the Native text is added under it, folded, by the card). */
export function webCardHtml(card: Card, data: WebCardData): string {
  return data.type === 'search' ? searchHtml(card, data) : pageHtml(card, data);
}
