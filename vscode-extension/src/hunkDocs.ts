// Hunks → the two sides of a diff, as read-only virtual documents (docs/protocol.md,
// `toolhost/card`): each hunk's old and new lines placed in order, every gap between what the
// hunks show (unchanged lines the card does not carry) as one marker line `⋯ N unchanged lines`.
// Built from the card alone: no disk reads, so it works on replayed sessions. Pure: no `vscode` import.
//
// Preview hunks (`preview: true`: a pending call's proposed change, whose place in the file is not
// known yet) are never placed: their starts are 0 and mean nothing. A file's preview hunks make a
// pair of documents of their own — a standalone proposed change — where each hunk comes after the
// marker line `⋯ proposed change; its place in the file is not known yet`, so no line of them
// appears to sit at a line of the file.

import type { Hunk } from './cards';
import { isPreviewHunk } from './cards';

export interface DiffSides {
  path: string;
  /** A proposed change (preview hunks): the documents claim no position in the file. */
  preview: boolean;
  /** The old side's text (lines joined by `\n`). */
  old: string;
  /** The new side's text. */
  new: string;
  /** 1-based line in the *virtual new document* of the first changed line (for revealing). */
  firstChangeLine: number;
}

/** The marker standing for `count` unchanged lines the card does not show. */
export function gapMarker(count: number): string {
  return `⋯ ${count} unchanged ${count === 1 ? 'line' : 'lines'}`;
}

/** The line that stands before each preview hunk in the documents of a proposed change. */
export const PREVIEW_MARKER = '⋯ proposed change; its place in the file is not known yet';

/** The line a side of a hunk begins at (unified-diff numbering: an empty side's start is the line
 * before it). */
function sideBegin(start: number, lines: number): number {
  return lines > 0 ? start : start + 1;
}

interface Side {
  out: string[];
  /** The next file line (1-based) not yet accounted for. */
  next: number;
}

/** Appends one hunk side (after a gap marker when lines are skipped); returns the index in the
 * document where the side's lines begin. */
function place(side: Side, start: number, count: number, lines: string[]): number {
  const begin = Math.max(sideBegin(start, count), 1);
  const gap = begin - side.next;
  if (gap > 0) {
    side.out.push(gapMarker(gap));
  }
  const at = side.out.length;
  side.out.push(...lines);
  side.next = Math.max(side.next, begin + lines.length);
  return at;
}

function sideLines(hunk: Hunk): { old: string[]; new: string[] } {
  return {
    old: hunk.lines.filter((l) => l.op === '-' || l.op === ' ').map((l) => l.text),
    new: hunk.lines.filter((l) => l.op === '+' || l.op === ' ').map((l) => l.text),
  };
}

/** The documents of a file's preview hunks, in their order: each one after a {@link
 * PREVIEW_MARKER} line on both sides (so the diff aligns them), none at a line of the file. */
export function reconstructPreview(path: string, hunks: readonly Hunk[]): DiffSides {
  const oldOut: string[] = [];
  const newOut: string[] = [];
  let firstChangeLine = 0;
  for (const hunk of hunks) {
    const sides = sideLines(hunk);
    oldOut.push(PREVIEW_MARKER, ...sides.old);
    newOut.push(PREVIEW_MARKER);
    const at = newOut.length;
    newOut.push(...sides.new);
    const leadingContext = hunk.lines.findIndex((l) => l.op !== ' ');
    if (firstChangeLine === 0 && leadingContext >= 0) {
      firstChangeLine = at + leadingContext + 1;
    }
  }
  return { path, preview: true, old: oldOut.join('\n'), new: newOut.join('\n'), firstChangeLine: Math.max(firstChangeLine, 1) };
}

/** Reconstructs both sides of one file's placed hunks (sorted by their old start). Preview hunks
 * among them are left to {@link reconstructPreview}. */
export function reconstructFile(path: string, hunks: readonly Hunk[]): DiffSides {
  const sorted = hunks.filter((h) => !isPreviewHunk(h)).sort((a, b) => a.oldStart - b.oldStart || a.newStart - b.newStart);
  const oldSide: Side = { out: [], next: 1 };
  const newSide: Side = { out: [], next: 1 };
  let firstChangeLine = 0;
  for (const hunk of sorted) {
    const lines = sideLines(hunk);
    place(oldSide, hunk.oldStart, hunk.oldLines, lines.old);
    const at = place(newSide, hunk.newStart, hunk.newLines, lines.new);
    const leadingContext = hunk.lines.findIndex((l) => l.op !== ' ');
    if (firstChangeLine === 0 && leadingContext >= 0) {
      firstChangeLine = at + leadingContext + 1;
    }
  }
  return {
    path,
    preview: false,
    old: oldSide.out.join('\n'),
    new: newSide.out.join('\n'),
    firstChangeLine: Math.max(firstChangeLine, 1),
  };
}

/** Both sides of every file a card's hunks touch, in first-seen order: one pair of a file's placed
 * hunks, and one pair (a proposed change) of its preview hunks. */
export function reconstruct(hunks: readonly Hunk[]): DiffSides[] {
  const groups = new Map<string, { path: string; preview: boolean; hunks: Hunk[] }>();
  for (const hunk of hunks) {
    const preview = isPreviewHunk(hunk);
    const key = `${preview ? 'preview' : 'placed'}\u0000${hunk.path}`;
    const group = groups.get(key);
    if (group) {
      group.hunks.push(hunk);
    } else {
      groups.set(key, { path: hunk.path, preview, hunks: [hunk] });
    }
  }
  return [...groups.values()].map((g) => (g.preview ? reconstructPreview(g.path, g.hunks) : reconstructFile(g.path, g.hunks)));
}
