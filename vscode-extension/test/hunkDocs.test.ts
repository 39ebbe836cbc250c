import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gapMarker, PREVIEW_MARKER, reconstruct, reconstructFile } from '../src/hunkDocs';
import type { Hunk, HunkLine } from '../src/cards';
import { hunkHeader } from '../src/cards';
import { editCard, newFileWriteCard, pendingEditCard, pendingWriteCard } from './fixtures';
import { expandSide } from './sides';

const ctx = (text: string): HunkLine => ({ op: ' ', text });
const del = (text: string): HunkLine => ({ op: '-', text });
const add = (text: string): HunkLine => ({ op: '+', text });

/** A placed hunk, its header as the server writes it. */
function placed(path: string, [oldStart, oldLines]: [number, number], [newStart, newLines]: [number, number], lines: HunkLine[]): Hunk {
  const hunk = { path, oldStart, oldLines, newStart, newLines, lines };
  return { ...hunk, header: hunkHeader(hunk) };
}

/** A preview hunk (a pending call's proposed change). */
function preview(path: string, lines: HunkLine[]): Hunk {
  const oldLines = lines.filter((l) => l.op === '-').length;
  const newLines = lines.filter((l) => l.op === '+').length;
  return { path, oldStart: 0, oldLines, newStart: 0, newLines, lines, preview: true, header: `@@ preview -${oldLines} +${newLines} @@` };
}

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
      placed('f.txt', [2, 7], [2, 7], [ctx('line 2'), ctx('line 3'), ctx('line 4'), del('line 5'), add('LINE 5'), ctx('line 6'), ctx('line 7'), ctx('line 8')]),
      placed('f.txt', [47, 7], [47, 7], [ctx('line 47'), ctx('line 48'), ctx('line 49'), del('line 50'), add('LINE 50'), ctx('line 51'), ctx('line 52'), ctx('line 53')]),
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
    const a = placed('f', [10, 1], [10, 1], [del('x'), add('y')]);
    const b = placed('f', [2, 1], [2, 1], [del('p'), add('q')]);
    assert.equal(reconstructFile('f', [a, b]).new, '⋯ 1 unchanged line\nq\n⋯ 7 unchanged lines\ny');
  });

  it('a new file (old side empty, start 0): empty old document, whole new document', () => {
    const [sides] = reconstruct(newFileWriteCard.hunks ?? []);
    assert.equal(sides?.preview, false);
    assert.equal(sides?.old, '');
    assert.equal(sides?.new, 'one\ntwo');
    assert.equal(sides?.firstChangeLine, 1);
  });

  it('an insertion without context: the empty side starts after the line before it', () => {
    const hunk = placed('f', [3, 0], [4, 1], [add('x')]);
    const sides = reconstructFile('f', [hunk]);
    assert.equal(sides.old, '⋯ 3 unchanged lines');
    assert.equal(sides.new, '⋯ 3 unchanged lines\nx');
    assert.equal(sides.firstChangeLine, 2);
  });

  it('a deletion at the end of the file', () => {
    const hunk = placed('f', [8, 3], [8, 1], [ctx('h'), del('i'), del('j')]);
    const sides = reconstructFile('f', [hunk]);
    assert.equal(sides.old, '⋯ 7 unchanged lines\nh\ni\nj');
    assert.equal(sides.new, '⋯ 7 unchanged lines\nh');
    assert.equal(sides.firstChangeLine, 3);
  });

  it('preview hunks are not placed: a standalone proposed change, no line of it at a line of the file', () => {
    const [edit, ...restEdit] = reconstruct(pendingEditCard.hunks ?? []);
    assert.equal(restEdit.length, 0);
    assert.deepEqual(edit, {
      path: 'a.txt',
      preview: true,
      old: `${PREVIEW_MARKER}\nx\ny`,
      new: `${PREVIEW_MARKER}\nz`,
      firstChangeLine: 2,
    });
    const [write] = reconstruct(pendingWriteCard.hunks ?? []);
    assert.equal(write?.preview, true);
    assert.equal(write?.old, PREVIEW_MARKER, 'not an empty old side: nothing says the file is new');
    assert.equal(write?.new, `${PREVIEW_MARKER}\none\ntwo`);
    // Whatever the starts say, a preview hunk is never put at a line (no gap markers before it).
    const claimed = { ...preview('a.txt', [del('x'), add('y')]), oldStart: 40, newStart: 40 };
    const [sides] = reconstruct([claimed]);
    assert.equal(sides?.new, `${PREVIEW_MARKER}\ny`);
    assert.doesNotMatch(`${sides?.old}\n${sides?.new}`, /unchanged line/);
    // reconstructFile (the placed documents) ignores preview hunks altogether
    assert.equal(reconstructFile('a.txt', pendingEditCard.hunks ?? []).new, '');
  });

  it('several preview hunks of one file: each after its own marker, in order', () => {
    const sides = reconstruct([preview('a.txt', [del('a'), add('b')]), preview('a.txt', [add('c')])]);
    assert.equal(sides.length, 1);
    assert.equal(sides[0]?.old, `${PREVIEW_MARKER}\na\n${PREVIEW_MARKER}`);
    assert.equal(sides[0]?.new, `${PREVIEW_MARKER}\nb\n${PREVIEW_MARKER}\nc`);
  });

  it('placed and preview hunks of the same file: a placed pair and a proposed-change pair', () => {
    const all = reconstruct([placed('a.txt', [5, 1], [5, 1], [del('o'), add('n')]), preview('a.txt', [del('x'), add('y')]), placed('b.txt', [1, 1], [1, 1], [del('p'), add('q')])]);
    assert.deepEqual(
      all.map((s) => [s.path, s.preview]),
      [
        ['a.txt', false],
        ['a.txt', true],
        ['b.txt', false],
      ],
    );
    assert.equal(all[0]?.new, '⋯ 4 unchanged lines\nn');
    assert.equal(all[1]?.new, `${PREVIEW_MARKER}\ny`);
  });

  it('hunks of several files: one pair per file, first-seen order', () => {
    const h = (path: string, start: number): Hunk => placed(path, [start, 1], [start, 1], [del('o'), add('n')]);
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
