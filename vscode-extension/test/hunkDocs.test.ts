import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gapMarker, reconstruct, reconstructFile } from '../src/hunkDocs';
import type { Hunk, HunkLine } from '../src/protocol';
import { editCard, pendingWriteCard } from './fixtures';
import { expandSide } from './sides';

const ctx = (text: string): HunkLine => ({ op: ' ', text });
const del = (text: string): HunkLine => ({ op: '-', text });
const add = (text: string): HunkLine => ({ op: '+', text });

const sixty = Array.from({ length: 60 }, (_, i) => `line ${i + 1}`);

describe('hunks → virtual diff documents', () => {
  it('one hunk at the top: both sides exactly the hunk lines', () => {
    const [sides] = reconstruct(editCard.hunks ?? []);
    assert.ok(sides);
    assert.equal(sides.path, 'a.txt');
    assert.equal(sides.old, 'hello\nworld');
    assert.equal(sides.new, 'hello\nthere');
    assert.equal(sides.firstChangeLine, 2);
  });

  it('two hunks far apart: a marker for every gap, sides placed at their start lines', () => {
    const after = [...sixty];
    after[4] = 'LINE 5';
    after[49] = 'LINE 50';
    const hunks: Hunk[] = [
      { path: 'f.txt', oldStart: 2, oldLines: 7, newStart: 2, newLines: 7, lines: [ctx('line 2'), ctx('line 3'), ctx('line 4'), del('line 5'), add('LINE 5'), ctx('line 6'), ctx('line 7'), ctx('line 8')] },
      { path: 'f.txt', oldStart: 47, oldLines: 7, newStart: 47, newLines: 7, lines: [ctx('line 47'), ctx('line 48'), ctx('line 49'), del('line 50'), add('LINE 50'), ctx('line 51'), ctx('line 52'), ctx('line 53')] },
    ];
    const sides = reconstructFile('f.txt', hunks);
    const oldLines = sides.old.split('\n');
    assert.deepEqual(oldLines, [
      '⋯ 1 unchanged line',
      'line 2', 'line 3', 'line 4', 'line 5', 'line 6', 'line 7', 'line 8',
      '⋯ 38 unchanged lines',
      'line 47', 'line 48', 'line 49', 'line 50', 'line 51', 'line 52', 'line 53',
    ]);
    assert.deepEqual(sides.new.split('\n'), [
      '⋯ 1 unchanged line',
      'line 2', 'line 3', 'line 4', 'LINE 5', 'line 6', 'line 7', 'line 8',
      '⋯ 38 unchanged lines',
      'line 47', 'line 48', 'line 49', 'LINE 50', 'line 51', 'line 52', 'line 53',
    ]);
    // Expanding every marker with the real lines gives back the files (up to the last hunk).
    assert.deepEqual(expandSide(sides.old, sixty), sixty.slice(0, 53));
    assert.deepEqual(expandSide(sides.new, after), after.slice(0, 53));
    assert.equal(sides.firstChangeLine, 5);
  });

  it('hunks out of order are placed by their start lines', () => {
    const a: Hunk = { path: 'f', oldStart: 10, oldLines: 1, newStart: 10, newLines: 1, lines: [del('x'), add('y')] };
    const b: Hunk = { path: 'f', oldStart: 2, oldLines: 1, newStart: 2, newLines: 1, lines: [del('p'), add('q')] };
    assert.equal(reconstructFile('f', [a, b]).new, '⋯ 1 unchanged line\nq\n⋯ 7 unchanged lines\ny');
  });

  it('a new file (old side empty, start 0): empty old document, whole new document', () => {
    const [sides] = reconstruct(pendingWriteCard.hunks ?? []);
    assert.equal(sides?.old, '');
    assert.equal(sides?.new, 'one\ntwo');
    assert.equal(sides?.firstChangeLine, 1);
  });

  it('an insertion without context: the empty side starts after the line before it', () => {
    const hunk: Hunk = { path: 'f', oldStart: 3, oldLines: 0, newStart: 4, newLines: 1, lines: [add('x')] };
    const sides = reconstructFile('f', [hunk]);
    assert.equal(sides.old, '⋯ 3 unchanged lines');
    assert.equal(sides.new, '⋯ 3 unchanged lines\nx');
    assert.equal(sides.firstChangeLine, 2);
  });

  it('a deletion at the end of the file', () => {
    const hunk: Hunk = { path: 'f', oldStart: 8, oldLines: 3, newStart: 8, newLines: 1, lines: [ctx('h'), del('i'), del('j')] };
    const sides = reconstructFile('f', [hunk]);
    assert.equal(sides.old, '⋯ 7 unchanged lines\nh\ni\nj');
    assert.equal(sides.new, '⋯ 7 unchanged lines\nh');
    assert.equal(sides.firstChangeLine, 3);
  });

  it('a pending edit preview (starts 0, no context): removed vs added lines', () => {
    const hunk: Hunk = { path: 'a.txt', oldStart: 0, oldLines: 2, newStart: 0, newLines: 1, lines: [del('a'), del('b'), add('c')] };
    const sides = reconstructFile('a.txt', [hunk]);
    assert.equal(sides.old, 'a\nb');
    assert.equal(sides.new, 'c');
  });

  it('hunks of several files: one pair per file, first-seen order', () => {
    const h = (path: string, start: number): Hunk => ({ path, oldStart: start, oldLines: 1, newStart: start, newLines: 1, lines: [del('o'), add('n')] });
    const all = reconstruct([h('b.txt', 1), h('a.txt', 5), h('b.txt', 3)]);
    assert.deepEqual(all.map((s) => s.path), ['b.txt', 'a.txt']);
    assert.equal(all[0]?.new, 'n\n⋯ 1 unchanged line\nn');
    assert.equal(all[1]?.old, '⋯ 4 unchanged lines\no');
  });

  it('marker wording', () => {
    assert.equal(gapMarker(1), '⋯ 1 unchanged line');
    assert.equal(gapMarker(12), '⋯ 12 unchanged lines');
  });
});
