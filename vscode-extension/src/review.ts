// Review mode's model (docs/protocol.md, `toolhost/review`): the server asks before a write/edit
// is written, the person accepts or rejects each hunk, and the answer is `{accepted, comment?}`
// with the accepted hunks' indexes. Here: the request's shape, where each hunk sits in the
// `before`/`after` documents (for CodeLens placement, "the hunk at the cursor" and navigation),
// the decision bookkeeping of one review — an entry, keyed by its request id, of the queue of
// pending requests it shares with questions (pending.ts: withdrawal by `$/cancelRequest` closes one
// without answering) — and the panel's summary HTML.
// Pure: no `vscode` import, so `node --test` covers it.

import { escapeHtml } from './html';
import { PendingRequest } from './pending';
import type { Hunk } from './cards';
import { hunkHeader } from './cards';
import { isObject } from './guards';

export type ReviewMode = 'off' | 'ask';
export type ReviewFallback = 'deny' | 'accept';

/** `toolhost/setReview` result: the session's review settings after the change. */
export interface ReviewSettings {
  mode: ReviewMode;
  timeoutMs: number;
  fallback: ReviewFallback;
}

/** `toolhost/setReview` params; `{}` only reads the settings. */
export interface SetReviewParams {
  mode?: ReviewMode;
  timeoutMs?: number;
  fallback?: ReviewFallback;
}

/** `toolhost/review` params: one write/edit's change, asked before anything is written. */
export interface ReviewParams {
  /** The JSON-RPC id of the request (what `$/cancelRequest` names when the server withdraws it). */
  requestId: number | string;
  callId: string;
  tool: string;
  title: string;
  /** The agent (MCP client) that made the call, when it was not this editor. */
  caller?: string;
  /** Absolute path of the file. */
  path: string;
  /** The whole text before (LF line ends; "" for a new file). */
  before: string;
  /** The whole text if every hunk is accepted. */
  after: string;
  /** In file order; decisions refer to indexes here. */
  hunks: Hunk[];
}

/** `toolhost/review` result: the indexes of the hunks to write (ascending); every other hunk is
 * rejected. `comment` goes to the model; it is left out when the person wrote none. */
export interface ReviewResult {
  accepted: number[];
  comment?: string;
}

export type Decision = 'accepted' | 'rejected';
export type Side = 'before' | 'after';

/** The key of a review: its request id as a string (ids are numbers or strings on the wire). */
export function reviewKey(requestId: number | string): string {
  return String(requestId);
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}

/** Checks `toolhost/review` params; throws a message for unusable ones (answered as an error, so
 * the server's fallback applies instead of a review nobody can read). */
export function parseReviewParams(raw: unknown): ReviewParams {
  if (!isObject(raw)) {
    throw new Error('params must be an object');
  }
  const { requestId, callId, tool, title, caller, path, before, after, hunks } = raw;
  if (!(typeof requestId === 'number' || (typeof requestId === 'string' && requestId !== ''))) {
    throw new Error('requestId must be the request id (a number or a string)');
  }
  for (const [name, value] of Object.entries({ callId, tool, path })) {
    if (typeof value !== 'string' || value === '') {
      throw new Error(`${name} must be a non-empty string`);
    }
  }
  if (typeof before !== 'string' || typeof after !== 'string') {
    throw new Error('before and after must be strings');
  }
  if (!Array.isArray(hunks) || hunks.length === 0) {
    throw new Error('hunks must be a non-empty array');
  }
  const parsed: Hunk[] = hunks.map((h, i) => {
    if (!isObject(h) || !Array.isArray(h.lines) || !isCount(h.oldStart) || !isCount(h.oldLines) || !isCount(h.newStart) || !isCount(h.newLines)) {
      throw new Error(`hunks[${i}] must have oldStart, oldLines, newStart, newLines and lines`);
    }
    const lines = h.lines.map((l, j) => {
      if (!isObject(l) || typeof l.op !== 'string' || typeof l.text !== 'string') {
        throw new Error(`hunks[${i}].lines[${j}] must be {op, text}`);
      }
      return { op: l.op, text: l.text };
    });
    const hunk = {
      path: typeof h.path === 'string' ? h.path : String(path),
      oldStart: h.oldStart,
      oldLines: h.oldLines,
      newStart: h.newStart,
      newLines: h.newLines,
      lines,
    };
    return { ...hunk, header: hunkHeader({ ...hunk, header: h.header }) };
  });
  const params: ReviewParams = {
    requestId,
    callId: callId as string,
    tool: tool as string,
    title: typeof title === 'string' && title !== '' ? title : (tool as string),
    path: path as string,
    before,
    after,
    hunks: parsed,
  };
  if (typeof caller === 'string' && caller !== '') {
    params.caller = caller;
  }
  return params;
}

/** `toolhost/setReview` result, or undefined when it is not one. */
export function asReviewSettings(raw: unknown): ReviewSettings | undefined {
  if (!isObject(raw) || (raw.mode !== 'off' && raw.mode !== 'ask')) {
    return undefined;
  }
  return {
    mode: raw.mode,
    timeoutMs: isCount(raw.timeoutMs) ? raw.timeoutMs : 0,
    fallback: raw.fallback === 'accept' ? 'accept' : 'deny',
  };
}

/** The number of lines an editor shows for `text` (a final line end opens one more, empty line). */
export function lineCount(text: string): number {
  return text.split('\n').length;
}

/** Where a hunk's change sits in one side's document: 0-based lines of its first and last changed
 * line. On the `after` side the changed lines are the hunk's new (`+`) lines; a hunk that only
 * deletes has none there, so its place is the line that now stands where the deleted lines were
 * (first = last). Likewise on the `before` side for a hunk that only adds. */
export interface HunkSpan {
  first: number;
  last: number;
}

/** The span of `hunk` in the document of `side` that has `lines` lines. */
export function hunkSpan(hunk: Hunk, side: Side, lines: number): HunkSpan {
  const start = side === 'after' ? hunk.newStart : hunk.oldStart;
  const count = side === 'after' ? hunk.newLines : hunk.oldLines;
  const own = side === 'after' ? '+' : '-';
  // Unified-diff numbering: an empty side's start is the line before it.
  let line = (count > 0 ? start : start + 1) - 1;
  let first: number | undefined;
  let last: number | undefined;
  /** Where the first of the other side's lines would sit here (a hunk with no own lines). */
  let place: number | undefined;
  for (const l of hunk.lines) {
    if (l.op === ' ') {
      line += 1;
    } else if (l.op === own) {
      first ??= line;
      last = line;
      line += 1;
    } else {
      place ??= line;
    }
  }
  const max = Math.max(lines - 1, 0);
  const clamp = (n: number) => Math.min(Math.max(n, 0), max);
  const f = clamp(first ?? place ?? line);
  return { first: f, last: Math.max(f, clamp(last ?? f)) };
}

/** Every hunk's span in the document of `side` (whose text is `text`). */
export function hunkSpans(hunks: readonly Hunk[], side: Side, text: string): HunkSpan[] {
  const lines = lineCount(text);
  return hunks.map((h) => hunkSpan(h, side, lines));
}

/** The hunk "at or after" the cursor's line: the one whose change holds the line, else the first
 * one after it, else (the cursor below the last change) the last one — so a key pressed anywhere in
 * the review acts on the nearest hunk a person reads downwards. */
export function hunkAt(spans: readonly HunkSpan[], line: number): number | undefined {
  if (spans.length === 0) {
    return undefined;
  }
  const at = spans.findIndex((s) => s.first <= line && line <= s.last);
  if (at >= 0) {
    return at;
  }
  const after = spans.findIndex((s) => s.first > line);
  return after >= 0 ? after : spans.length - 1;
}

/** The next (`1`) or previous (`-1`) hunk from the cursor's line, wrapping around. */
export function stepHunk(spans: readonly HunkSpan[], line: number, direction: 1 | -1): number | undefined {
  if (spans.length === 0) {
    return undefined;
  }
  if (direction === 1) {
    const next = spans.findIndex((s) => s.first > line);
    return next >= 0 ? next : 0;
  }
  for (let i = spans.length - 1; i >= 0; i--) {
    if ((spans[i]?.first ?? 0) < line) {
      return i;
    }
  }
  return spans.length - 1;
}

/** The kind of a review in the queue of pending requests (pending.ts). */
export const REVIEW_KIND = 'review';

/** One open review: the decisions made so far, and the answer once submitted. Keyed by its request
 * id (a file may be reviewed twice at once, by two calls). */
export class ReviewSession extends PendingRequest<ReviewResult> {
  private readonly decisions: (Decision | undefined)[];

  constructor(
    readonly params: ReviewParams,
    answer: (result: ReviewResult) => void,
  ) {
    super(REVIEW_KIND, reviewKey(params.requestId), params.requestId, answer);
    this.decisions = params.hunks.map(() => undefined);
  }

  get size(): number {
    return this.decisions.length;
  }

  decision(index: number): Decision | undefined {
    return this.decisions[index];
  }

  /** Decides hunk `index` (deciding again changes the decision); false when the review is no
   * longer open or there is no such hunk. */
  decide(index: number, decision: Decision): boolean {
    if (!this.isOpen || !Number.isInteger(index) || index < 0 || index >= this.decisions.length) {
      return false;
    }
    this.decisions[index] = decision;
    return true;
  }

  decideAll(decision: Decision): boolean {
    if (!this.isOpen) {
      return false;
    }
    this.decisions.fill(decision);
    return true;
  }

  counts(): { accepted: number; rejected: number; undecided: number } {
    const accepted = this.decisions.filter((d) => d === 'accepted').length;
    const rejected = this.decisions.filter((d) => d === 'rejected').length;
    return { accepted, rejected, undecided: this.decisions.length - accepted - rejected };
  }

  get allDecided(): boolean {
    return this.decisions.every((d) => d !== undefined);
  }

  /** The first undecided hunk after `index` (wrapping around), or undefined when all are decided. */
  nextUndecided(index: number): number | undefined {
    const n = this.decisions.length;
    for (let step = 1; step <= n; step++) {
      const i = (((index + step) % n) + n) % n;
      if (this.decisions[i] === undefined) {
        return i;
      }
    }
    return undefined;
  }

  /** The answer as the protocol wants it: the accepted indexes, ascending (an undecided hunk is
   * not accepted: "every other hunk is rejected"), and the comment only when there is one. */
  result(comment?: string): ReviewResult {
    const accepted = this.decisions.flatMap((d, i) => (d === 'accepted' ? [i] : []));
    const text = comment?.trim() ?? '';
    return text === '' ? { accepted } : { accepted, comment: text };
  }

  /** Answers the server once; undefined (nothing sent) when the review was already submitted or
   * withdrawn. */
  submit(comment?: string): ReviewResult | undefined {
    const result = this.result(comment);
    return this.respond(result) ? result : undefined;
  }
}

/** The file name of a path (either separator). */
export function baseName(path: string): string {
  return path.split(/[\\/]/).pop() ?? path;
}

/** The review diff editor's title: the file, then the call's title and the agent that asked. */
export function reviewTitle(params: Pick<ReviewParams, 'path' | 'title' | 'caller'>): string {
  return `${baseName(params.path)} (review: ${params.title}${params.caller ? ` · ${params.caller}` : ''})`;
}

/** A hunk's name for people: its number (1-based) and header. */
export function hunkName(session: ReviewSession, index: number): string {
  return `hunk ${index + 1} of ${session.size} (${session.params.hunks[index]?.header ?? '?'})`;
}

/** The CodeLens line above hunk `index`: its state, then the actions. */
export function lensTitles(session: ReviewSession, index: number): { state: string; accept: string; reject: string } {
  const decision = session.decision(index);
  const state = `hunk ${index + 1}/${session.size}: ${decision ?? 'undecided'}`;
  return {
    state: decision === 'accepted' ? `$(check) ${state}` : decision === 'rejected' ? `$(close) ${state}` : state,
    accept: decision === 'accepted' ? 'Accept ✓' : 'Accept (Alt+A)',
    reject: decision === 'rejected' ? 'Reject ✓' : 'Reject (Alt+R)',
  };
}

/** What the submit prompt says: the decisions, and what happens to undecided hunks. */
export function submitPrompt(session: ReviewSession): string {
  const { accepted, rejected, undecided } = session.counts();
  const rejectedNames = session.params.hunks.flatMap((_, i) => (session.decision(i) === 'rejected' ? [String(i + 1)] : []));
  const parts = [`${accepted} accepted`, `${rejected} rejected${rejected > 0 ? ` (hunk ${rejectedNames.join(', ')})` : ''}`];
  if (undecided > 0) {
    parts.push(`${undecided} undecided (sent as rejected)`);
  }
  return `${parts.join(', ')}. Optional comment for the agent; Enter submits, Escape goes back to the review.`;
}

/** The panel's summary of the open reviews (nothing when none is open): per review its title, the
 * state of each hunk, and buttons (Open diff, Accept all, Reject all, Submit). */
export function reviewSummaryHtml(sessions: readonly ReviewSession[], settings?: ReviewSettings): string {
  if (sessions.length === 0) {
    return '';
  }
  const wait = settings && settings.timeoutMs > 0 ? ` · the server waits up to ${formatMs(settings.timeoutMs)}, then ${settings.fallback === 'accept' ? 'writes everything' : 'writes nothing'}` : '';
  return sessions
    .map((s) => {
      const key = escapeHtml(s.key);
      const { accepted, rejected, undecided } = s.counts();
      const hunks = s.params.hunks
        .map((h, i) => {
          const d = s.decision(i) ?? 'undecided';
          return `<li class="review-hunk review-${d}"><span class="review-state">${d}</span> <code>${escapeHtml(h.header)}</code></li>`;
        })
        .join('');
      const button = (op: string, label: string) =>
        `<button type="button" class="action" data-action="review" data-op="${op}" data-review="${key}">${label}</button>`;
      return (
        `<article class="review" data-review="${key}" tabindex="0" aria-label="${escapeHtml(`review: ${s.params.title}`)}">` +
        `<div class="review-title"><span class="review-badge">review</span> <span class="card-tool">${escapeHtml(s.params.tool)}</span> ` +
        `<span class="card-title">${escapeHtml(s.params.title)}</span>${s.params.caller ? ` <span class="card-caller">${escapeHtml(s.params.caller)}</span>` : ''}</div>` +
        `<div class="review-counts">${accepted} accepted · ${rejected} rejected · ${undecided} undecided${wait}</div>` +
        `<ol class="review-hunks">${hunks}</ol>` +
        `<div class="actions">${button('open', 'Open diff')}${button('acceptAll', 'Accept all')}${button('rejectAll', 'Reject all')}${button('submit', 'Submit')}</div>` +
        `</article>`
      );
    })
    .join('');
}

function formatMs(ms: number): string {
  if (ms < 1000) {
    return `${ms} ms`;
  }
  const s = Math.round(ms / 1000);
  return s >= 60 && s % 60 === 0 ? `${s / 60} min` : `${s} s`;
}

/** The 0-based lines of a hunk's own lines in one side's document: its `+` lines on the `after`
 * side, its `-` lines on the `before` side (what a decision keeps or drops there). */
export function ownLines(hunk: Hunk, side: Side): number[] {
  const start = side === 'after' ? hunk.newStart : hunk.oldStart;
  const count = side === 'after' ? hunk.newLines : hunk.oldLines;
  const own = side === 'after' ? '+' : '-';
  let line = (count > 0 ? start : start + 1) - 1;
  const out: number[] = [];
  for (const l of hunk.lines) {
    if (l.op === ' ') {
      line += 1;
    } else if (l.op === own) {
      out.push(line);
      line += 1;
    }
  }
  return out;
}
