import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Hunk, HunkLine } from '../src/cards';
import { hunkHeader } from '../src/cards';
import {
  asReviewSettings,
  hunkAt,
  hunkSpan,
  hunkSpans,
  lensTitles,
  lineCount,
  ownLines,
  parseReviewParams,
  ReviewSession,
  reviewSummaryHtml,
  reviewTitle,
  stepHunk,
  submitPrompt,
  type ReviewParams,
  type ReviewResult,
} from '../src/review';
import { PendingQueue } from '../src/pending';
import { attrValues, textOf } from './helpers';

const ctx = (text: string): HunkLine => ({ op: ' ', text });
const del = (text: string): HunkLine => ({ op: '-', text });
const add = (text: string): HunkLine => ({ op: '+', text });

function hunk([oldStart, oldLines]: [number, number], [newStart, newLines]: [number, number], lines: HunkLine[]): Hunk {
  const h = { path: 'f.txt', oldStart, oldLines, newStart, newLines, lines };
  return { ...h, header: hunkHeader(h) };
}

const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}`);
const text = (ls: string[]) => ls.join('\n') + '\n';

/** 20 lines; line 2 and line 15 changed: two hunks with 3 lines of context, far apart. */
const before20 = lines(20);
const after20 = before20.map((l, i) => (i === 1 ? 'line 2 EDITED' : i === 14 ? 'line 15 EDITED' : l));
const twoHunks: Hunk[] = [
  hunk([1, 5], [1, 5], [ctx('line 1'), del('line 2'), add('line 2 EDITED'), ctx('line 3'), ctx('line 4'), ctx('line 5')]),
  hunk([12, 7], [12, 7], [ctx('line 12'), ctx('line 13'), ctx('line 14'), del('line 15'), add('line 15 EDITED'), ctx('line 16'), ctx('line 17'), ctx('line 18')]),
];

function params(over: Partial<ReviewParams> = {}): ReviewParams {
  return {
    requestId: 7,
    callId: 'call_1a2b3c4d5e6f',
    tool: 'edit',
    title: 'Edit f.txt',
    path: '/ws/f.txt',
    before: text(before20),
    after: text(after20),
    hunks: twoHunks,
    ...over,
  };
}

describe('toolhost/review params', () => {
  it('the spec example parses; caller is kept only as a name', () => {
    const raw = {
      requestId: 7,
      callId: 'call_1a2b3c4d5e6f',
      tool: 'edit',
      title: 'Edit src/a.ts',
      caller: 'claude-code',
      path: '/abs/path/src/a.ts',
      before: 'full text before\n',
      after: 'full text after\n',
      hunks: [
        { path: 'src/a.ts', oldStart: 3, oldLines: 4, newStart: 3, newLines: 5, header: '@@ -3,4 +3,5 @@', lines: [ctx('ctx'), del('old'), add('new')] },
      ],
    };
    const p = parseReviewParams(raw);
    assert.equal(p.requestId, 7);
    assert.equal(p.caller, 'claude-code');
    assert.equal(p.hunks[0]?.header, '@@ -3,4 +3,5 @@');
    assert.equal(parseReviewParams({ ...raw, caller: null }).caller, undefined);
    assert.equal(parseReviewParams({ ...raw, requestId: 'srv-1' }).requestId, 'srv-1');
  });

  it('a hunk without a header gets the unified one; a missing title falls back to the tool', () => {
    const p = parseReviewParams({ ...params(), title: undefined, hunks: [{ ...twoHunks[0], header: undefined }] });
    assert.equal(p.hunks[0]?.header, '@@ -1,5 +1,5 @@');
    assert.equal(p.title, 'edit');
  });

  it('unusable params are refused with a message (answered as an error: the fallback applies)', () => {
    assert.throws(() => parseReviewParams(null), /object/);
    assert.throws(() => parseReviewParams({ ...params(), requestId: undefined }), /requestId/);
    assert.throws(() => parseReviewParams({ ...params(), callId: '' }), /callId/);
    assert.throws(() => parseReviewParams({ ...params(), after: 3 }), /before and after/);
    assert.throws(() => parseReviewParams({ ...params(), hunks: [] }), /hunks/);
    assert.throws(() => parseReviewParams({ ...params(), hunks: [{ lines: [] }] }), /hunks\[0\]/);
    assert.throws(() => parseReviewParams({ ...params(), hunks: [{ ...twoHunks[0], lines: [{ op: '+' }] }] }), /lines\[0\]/);
  });

  it('setReview results', () => {
    assert.deepEqual(asReviewSettings({ mode: 'ask', timeoutMs: 300, fallback: 'accept' }), { mode: 'ask', timeoutMs: 300, fallback: 'accept' });
    assert.deepEqual(asReviewSettings({ mode: 'off', timeoutMs: 120000, fallback: 'deny' }), { mode: 'off', timeoutMs: 120000, fallback: 'deny' });
    assert.equal(asReviewSettings({ mode: 'maybe' }), undefined);
    assert.equal(asReviewSettings(null), undefined);
  });
});

describe('hunk → CodeLens placement (0-based lines of the after/before documents)', () => {
  it('a changed line: the lens sits on the hunk\'s first new line, past its leading context', () => {
    const spans = hunkSpans(twoHunks, 'after', text(after20));
    assert.deepEqual(spans, [
      { first: 1, last: 1 },
      { first: 14, last: 14 },
    ]);
    const docLines = text(after20).split('\n');
    assert.equal(docLines[spans[0]?.first ?? -1], 'line 2 EDITED');
    assert.equal(docLines[spans[1]?.first ?? -1], 'line 15 EDITED');
    // the left side: the old lines
    assert.deepEqual(hunkSpans(twoHunks, 'before', text(before20)), [
      { first: 1, last: 1 },
      { first: 14, last: 14 },
    ]);
  });

  it('several new lines: the span covers them all', () => {
    const h = hunk([3, 4], [3, 5], [ctx('c'), del('old'), add('new 1'), add('new 2'), ctx('d'), ctx('e')]);
    assert.deepEqual(hunkSpan(h, 'after', 20), { first: 3, last: 4 });
    assert.deepEqual(ownLines(h, 'after'), [3, 4]);
    assert.deepEqual(ownLines(h, 'before'), [3]);
  });

  it('a pure deletion: the line where the deleted lines were (the one now in their place)', () => {
    // a b c d e → a b d e: c deleted
    const after = 'a\nb\nd\ne\n';
    const h = hunk([1, 5], [1, 4], [ctx('a'), ctx('b'), del('c'), ctx('d'), ctx('e')]);
    const span = hunkSpan(h, 'after', lineCount(after));
    assert.deepEqual(span, { first: 2, last: 2 });
    assert.equal(after.split('\n')[span.first], 'd');
    assert.deepEqual(ownLines(h, 'after'), []);
    assert.deepEqual(hunkSpan(h, 'before', 6), { first: 2, last: 2 });
  });

  it('a deletion at the end of the file: the empty last line, where they were', () => {
    // a b c → a b
    const after = 'a\nb\n';
    const h = hunk([1, 3], [1, 2], [ctx('a'), ctx('b'), del('c')]);
    assert.deepEqual(hunkSpan(h, 'after', lineCount(after)), { first: 2, last: 2 });
  });

  it('a deletion without context at the top (new side empty: start is the line before)', () => {
    const h = hunk([1, 2], [0, 0], [del('x'), del('y')]);
    assert.deepEqual(hunkSpan(h, 'after', 1), { first: 0, last: 0 });
    assert.deepEqual(hunkSpan(h, 'before', 3), { first: 0, last: 1 });
  });

  it('a new file: line 0 on both sides (the before document is empty)', () => {
    const h = hunk([0, 0], [1, 2], [add('hello'), add('world')]);
    assert.deepEqual(hunkSpan(h, 'after', lineCount('hello\nworld\n')), { first: 0, last: 1 });
    assert.deepEqual(hunkSpan(h, 'before', lineCount('')), { first: 0, last: 0 });
  });

  it('a span never leaves the document', () => {
    const h = hunk([40, 1], [40, 1], [del('x'), add('y')]);
    assert.deepEqual(hunkSpan(h, 'after', 5), { first: 4, last: 4 });
  });
});

describe('the hunk at the cursor, and navigation', () => {
  const spans = [
    { first: 1, last: 2 },
    { first: 14, last: 14 },
  ];
  it('at: the hunk whose change holds the line, else the next one, else the last', () => {
    assert.equal(hunkAt(spans, 0), 0);
    assert.equal(hunkAt(spans, 2), 0);
    assert.equal(hunkAt(spans, 3), 1);
    assert.equal(hunkAt(spans, 14), 1);
    assert.equal(hunkAt(spans, 19), 1);
    assert.equal(hunkAt([], 0), undefined);
  });
  it('next/previous wrap around', () => {
    assert.equal(stepHunk(spans, 0, 1), 0);
    assert.equal(stepHunk(spans, 1, 1), 1);
    assert.equal(stepHunk(spans, 14, 1), 0);
    assert.equal(stepHunk(spans, 14, -1), 0);
    assert.equal(stepHunk(spans, 1, -1), 1);
    assert.equal(stepHunk(spans, 19, -1), 1);
    assert.equal(stepHunk([], 3, 1), undefined);
  });
});

describe('decision bookkeeping', () => {
  function open(p = params()) {
    const answers: ReviewResult[] = [];
    const queue = new PendingQueue();
    const session = new ReviewSession(p, (r) => answers.push(r));
    queue.add(session);
    return { queue, session, answers };
  }

  it('starts undecided; decide, change a decision, counts', () => {
    const { session } = open();
    assert.equal(session.key, '7');
    assert.deepEqual(session.counts(), { accepted: 0, rejected: 0, undecided: 2 });
    assert.equal(session.allDecided, false);
    assert.ok(session.decide(0, 'rejected'));
    assert.ok(session.decide(0, 'accepted'));
    assert.equal(session.decision(0), 'accepted');
    assert.equal(session.decision(1), undefined);
    assert.equal(session.nextUndecided(0), 1);
    assert.ok(session.decide(1, 'rejected'));
    assert.equal(session.allDecided, true);
    assert.equal(session.nextUndecided(0), undefined);
    assert.equal(session.decide(2, 'accepted'), false, 'no such hunk');
    assert.equal(session.decide(-1, 'accepted'), false);
  });

  it('the result is exactly the spec\'s: accepted indexes ascending, comment only when written', () => {
    const three = params({ hunks: [...twoHunks, twoHunks[1] as Hunk] });
    const { session } = open(three);
    session.decide(2, 'accepted');
    session.decide(0, 'accepted');
    session.decide(1, 'rejected');
    assert.deepEqual(session.result(), { accepted: [0, 2] });
    assert.deepEqual(session.result('   '), { accepted: [0, 2] });
    assert.deepEqual(session.result(' keep the old name \n'), { accepted: [0, 2], comment: 'keep the old name' });
  });

  it('an undecided hunk is not accepted (every other hunk is rejected)', () => {
    const { session } = open();
    session.decide(1, 'accepted');
    assert.deepEqual(session.result(), { accepted: [1] });
  });

  it('accept all = every index, reject all = []', () => {
    const { session } = open();
    session.decideAll('accepted');
    assert.deepEqual(session.result(), { accepted: [0, 1] });
    session.decideAll('rejected');
    assert.deepEqual(session.result(), { accepted: [] });
  });

  it('submit answers once and the queue forgets the review; later decisions change nothing', () => {
    const { queue, session, answers } = open();
    session.decide(0, 'accepted');
    session.decide(1, 'rejected');
    let changes = 0;
    queue.onChange(() => changes++);
    assert.deepEqual(session.submit('line 15 stays'), { accepted: [0], comment: 'line 15 stays' });
    queue.settled(session);
    assert.deepEqual(answers, [{ accepted: [0], comment: 'line 15 stays' }]);
    assert.equal(session.status, 'answered');
    assert.equal(queue.size, 0);
    assert.equal(changes, 1);
    queue.settled(session);
    assert.equal(changes, 1, 'settled once');
    assert.equal(session.submit(), undefined);
    assert.equal(session.decide(1, 'accepted'), false);
    assert.equal(answers.length, 1);
  });
});

describe('withdrawal ($/cancelRequest)', () => {
  it('closes the review without answering; a submit afterwards sends nothing', () => {
    const answers: ReviewResult[] = [];
    const queue = new PendingQueue();
    const session = new ReviewSession(params(), (r) => answers.push(r));
    queue.add(session);
    session.decide(0, 'accepted');
    assert.equal(queue.withdrawRequest(7), session);
    assert.equal(session.status, 'withdrawn');
    assert.equal(queue.get(ReviewSession, '7'), undefined);
    assert.equal(session.submit('late'), undefined);
    assert.equal(session.decide(1, 'rejected'), false);
    assert.deepEqual(answers, []);
    assert.equal(queue.withdrawRequest(7), undefined, 'only once');
  });

  it('several reviews at once, keyed by request id: withdrawing one leaves the others', () => {
    const answers: [string, ReviewResult][] = [];
    const queue = new PendingQueue();
    queue.add(new ReviewSession(params({ requestId: 7 }), (r) => answers.push(['7', r])));
    queue.add(new ReviewSession(params({ requestId: 8, callId: 'call_2' }), (r) => answers.push(['8', r])));
    queue.add(new ReviewSession(params({ requestId: 'x9', callId: 'call_3' }), (r) => answers.push(['x9', r])));
    queue.withdrawRequest('8');
    assert.deepEqual(queue.all(ReviewSession).map((s) => s.key), ['7', 'x9']);
    const x9 = queue.get(ReviewSession, 'x9');
    assert.ok(x9);
    x9.decideAll('accepted');
    x9.submit();
    queue.settled(x9);
    assert.deepEqual(answers, [['x9', { accepted: [0, 1] }]]);
    assert.deepEqual(queue.withdrawAll().map((s) => s.status), ['withdrawn']);
    assert.equal(queue.size, 0);
    assert.equal(answers.length, 1);
  });

  it('a new question under the id of an open one (a restarted server) withdraws the old one', () => {
    const answers: string[] = [];
    const queue = new PendingQueue();
    const old = new ReviewSession(params(), () => answers.push('old'));
    const fresh = new ReviewSession(params({ callId: 'call_new' }), () => answers.push('new'));
    queue.add(old);
    assert.equal(queue.add(fresh), old);
    assert.equal(old.status, 'withdrawn');
    assert.equal(queue.get(ReviewSession, '7'), fresh);
    fresh.decideAll('rejected');
    fresh.submit();
    assert.deepEqual(answers, ['new']);
  });
});

describe('review texts and the panel summary', () => {
  it('title: file, call title and caller', () => {
    assert.equal(reviewTitle({ path: '/ws/src/a.ts', title: 'Edit src/a.ts', caller: 'claude-code' }), 'a.ts (review: Edit src/a.ts · claude-code)');
    assert.equal(reviewTitle({ path: '/ws/a.txt', title: 'Write a.txt' }), 'a.txt (review: Write a.txt)');
  });

  it('CodeLens titles follow the decision', () => {
    const s = new ReviewSession(params(), () => undefined);
    assert.deepEqual(lensTitles(s, 0), { state: 'hunk 1/2: undecided', accept: 'Accept (Alt+A)', reject: 'Reject (Alt+R)' });
    s.decide(0, 'accepted');
    s.decide(1, 'rejected');
    assert.deepEqual(lensTitles(s, 0), { state: '$(check) hunk 1/2: accepted', accept: 'Accept ✓', reject: 'Reject (Alt+R)' });
    assert.deepEqual(lensTitles(s, 1), { state: '$(close) hunk 2/2: rejected', accept: 'Accept (Alt+A)', reject: 'Reject ✓' });
    assert.match(submitPrompt(s), /^1 accepted, 1 rejected \(hunk 2\)\. Optional comment/);
    s.decide(1, 'accepted');
    const t = new ReviewSession(params({ requestId: 9 }), () => undefined);
    t.decide(0, 'rejected');
    assert.match(submitPrompt(t), /^0 accepted, 1 rejected \(hunk 1\), 1 undecided \(sent as rejected\)\./);
  });

  it('summary: one article per open review with each hunk\'s state and the buttons; escaped; empty when none', () => {
    assert.equal(reviewSummaryHtml([]), '');
    const s = new ReviewSession(params({ title: 'Edit <f>.txt', caller: 'agent&co' }), () => undefined);
    s.decide(0, 'accepted');
    s.decide(1, 'rejected');
    const html = reviewSummaryHtml([s], { mode: 'ask', timeoutMs: 120_000, fallback: 'deny' });
    assert.ok(!html.includes('<f>') && html.includes('Edit &lt;f&gt;.txt') && html.includes('agent&amp;co'));
    assert.deepEqual(attrValues(html, 'data-op'), ['open', 'acceptAll', 'rejectAll', 'submit']);
    assert.ok(attrValues(html, 'data-review').every((k) => k === '7'));
    const t = textOf(html);
    assert.match(t, /1 accepted · 1 rejected · 0 undecided · the server waits up to 2 min, then writes nothing/);
    assert.match(t, /accepted @@ -1,5 \+1,5 @@/);
    assert.match(t, /rejected @@ -12,7 \+12,7 @@/);
    assert.match(t, /Open diffAccept allReject allSubmit/);
  });
});
