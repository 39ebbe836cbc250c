// Hunks → the two sides of a diff, as read-only virtual documents (design.md §5): each hunk's old
// and new lines placed in order, every gap between what the hunks show (unchanged lines the card
// does not carry) as one marker line `⋯ N unchanged lines`. Built from the card alone: no disk
// reads, so it works on replayed sessions. Pure: no `vscode` import.

import type { Hunk } from './protocol';

export interface DiffSides {
  path: string;
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

/** Reconstructs both sides of one file's hunks (sorted by their old start). */
export function reconstructFile(path: string, hunks: readonly Hunk[]): DiffSides {
  const sorted = [...hunks].sort((a, b) => a.oldStart - b.oldStart || a.newStart - b.newStart);
  const oldSide: Side = { out: [], next: 1 };
  const newSide: Side = { out: [], next: 1 };
  let firstChangeLine = 0;
  for (const hunk of sorted) {
    const oldLines = hunk.lines.filter((l) => l.op === '-' || l.op === ' ').map((l) => l.text);
    const newLines = hunk.lines.filter((l) => l.op === '+' || l.op === ' ').map((l) => l.text);
    place(oldSide, hunk.oldStart, hunk.oldLines, oldLines);
    const at = place(newSide, hunk.newStart, hunk.newLines, newLines);
    const leadingContext = hunk.lines.findIndex((l) => l.op !== ' ');
    if (firstChangeLine === 0 && leadingContext >= 0) {
      firstChangeLine = at + leadingContext + 1;
    }
  }
  return {
    path,
    old: oldSide.out.join('\n'),
    new: newSide.out.join('\n'),
    firstChangeLine: Math.max(firstChangeLine, 1),
  };
}

/** Both sides of every file a card's hunks touch, in first-seen path order. */
export function reconstruct(hunks: readonly Hunk[]): DiffSides[] {
  const byPath = new Map<string, Hunk[]>();
  for (const hunk of hunks) {
    const list = byPath.get(hunk.path);
    if (list) {
      list.push(hunk);
    } else {
      byPath.set(hunk.path, [hunk]);
    }
  }
  return [...byPath.entries()].map(([path, list]) => reconstructFile(path, list));
}
