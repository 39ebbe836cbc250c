// The queue of what waits for the person (pending.ts), shared by questions (`toolhost/askUser`)
// and reviews (`toolhost/review`): arrival order across both kinds, the request shown next, one
// count, withdrawal ($/cancelRequest through the request's cancellation token, or by request id)
// of a waiting and of the shown request, and the change notices each kind's UI listens to.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AskSession, parseAskUserParams, type AskUserResult } from '../src/ask';
import { PendingQueue, pendingSummary, type Cancellation } from '../src/pending';
import { parseReviewParams, ReviewSession, type ReviewResult } from '../src/review';

function question(requestId: number | string, callId: string, answers: unknown[] = []): AskSession {
  const params = parseAskUserParams({
    requestId,
    callId,
    tool: 'ask_user_question',
    title: `Question of ${callId}`,
    questions: [{ id: 'q', question: 'Which?', options: [{ label: 'A' }, { label: 'B' }] }],
  });
  return new AskSession(params, (r: AskUserResult) => answers.push([callId, r]));
}

function review(requestId: number | string, callId: string, answers: unknown[] = []): ReviewSession {
  const params = parseReviewParams({
    requestId,
    callId,
    tool: 'edit',
    title: `Edit of ${callId}`,
    path: '/ws/a.txt',
    before: 'old\n',
    after: 'new\n',
    hunks: [{ oldStart: 1, oldLines: 1, newStart: 1, newLines: 1, lines: [{ op: '-', text: 'old' }, { op: '+', text: 'new' }] }],
  });
  return new ReviewSession(params, (r: ReviewResult) => answers.push([callId, r]));
}

/** A cancellation token the test cancels (what vscode-languageclient hands a request handler). */
function token(): Cancellation & { cancel(): void; listeners: number } {
  const listeners = new Set<() => void>();
  const t = {
    isCancellationRequested: false,
    get listeners() {
      return listeners.size;
    },
    onCancellationRequested(listener: () => void) {
      listeners.add(listener);
      return { dispose: () => listeners.delete(listener) };
    },
    cancel() {
      t.isCancellationRequested = true;
      for (const l of [...listeners]) {
        l();
      }
    },
  };
  return t;
}

describe('the queue of pending requests', () => {
  it('questions and reviews wait in one queue, in arrival order across kinds, with one count', () => {
    const queue = new PendingQueue();
    const q1 = question(1, 'call_a');
    const r2 = review(2, 'call_b');
    const q3 = question(3, 'call_c');
    const r4 = review(4, 'call_d');
    for (const entry of [q1, r2, q3, r4]) {
      queue.add(entry);
    }
    assert.deepEqual(queue.all().map((e) => `${e.kind}:${e.key}`), ['question:call_a', 'review:2', 'question:call_c', 'review:4']);
    assert.deepEqual(queue.all(AskSession), [q1, q3]);
    assert.deepEqual(queue.all(ReviewSession), [r2, r4]);
    assert.equal(queue.size, 4);
    assert.equal(queue.count(), 4);
    assert.equal(queue.count(AskSession), 2);
    assert.equal(queue.count(ReviewSession), 2);
    assert.equal(pendingSummary(queue), '2 questions, 2 reviews');
    assert.equal(queue.next(), q1, 'the oldest is shown first');
    assert.equal(queue.next(ReviewSession), r2);
    // a key names a request within its kind only: a question keyed "2" is not review 2
    const q2 = question(5, '2');
    queue.add(q2);
    assert.equal(r2.status, 'open');
    assert.equal(queue.size, 5);
    assert.equal(queue.get(AskSession, '2'), q2);
    assert.equal(queue.get(ReviewSession, '2'), r2);
  });

  it('withdrawing a waiting request leaves the shown one; withdrawing the shown one shows the next, whatever its kind', () => {
    const answers: unknown[] = [];
    const queue = new PendingQueue();
    const q1 = question(1, 'call_a', answers);
    const r2 = review(2, 'call_b', answers);
    const q3 = question(3, 'call_c', answers);
    queue.add(q1);
    queue.add(r2);
    queue.add(q3);
    // a waiting one ($/cancelRequest names its request id)
    assert.equal(queue.withdrawRequest(3), q3);
    assert.equal(q3.status, 'withdrawn');
    assert.equal(queue.next(), q1);
    assert.equal(queue.size, 2);
    // the shown one: the review behind it is next
    assert.equal(queue.withdrawRequest('1'), q1);
    assert.equal(queue.next(), r2);
    assert.equal(queue.size, 1);
    assert.equal(pendingSummary(queue), '1 review');
    // neither got an answer; a late answer sends nothing
    assert.equal(queue.respond(q1, { dismissed: true }), false);
    assert.equal(q3.respond({ dismissed: true }), false);
    assert.deepEqual(answers, []);
    assert.equal(queue.withdrawRequest(1), undefined, 'only once');
  });

  it('answering the shown request shows the next one; each request is answered once', () => {
    const answers: unknown[] = [];
    const queue = new PendingQueue();
    const r1 = review(1, 'call_a', answers);
    const q2 = question(2, 'call_b', answers);
    queue.add(r1);
    queue.add(q2);
    r1.decideAll('accepted');
    assert.deepEqual(r1.submit(), { accepted: [0] });
    queue.settled(r1);
    assert.equal(queue.next(), q2);
    assert.equal(queue.respond(q2, { dismissed: true }), true);
    assert.equal(queue.respond(q2, { dismissed: true }), false);
    assert.equal(queue.next(), undefined);
    assert.equal(queue.size, 0);
    assert.equal(pendingSummary(queue), '');
    assert.deepEqual(answers, [['call_a', { accepted: [0] }], ['call_b', { dismissed: true }]]);
  });

  it('the request\'s cancellation token withdraws it, once; a token cancelled before it waits withdraws it at once', () => {
    const queue = new PendingQueue();
    const q1 = question(1, 'call_a');
    const r2 = review(2, 'call_b');
    queue.add(q1);
    queue.add(r2);
    const t1 = token();
    const t2 = token();
    const withdrawn: string[] = [];
    assert.equal(queue.withdrawOnCancel(q1, t1, () => withdrawn.push('q1')), true);
    assert.equal(queue.withdrawOnCancel(r2, t2, () => withdrawn.push('r2')), true);
    t2.cancel();
    assert.deepEqual(withdrawn, ['r2']);
    assert.equal(r2.status, 'withdrawn');
    assert.equal(t2.listeners, 0, 'the token is let go with the request');
    assert.deepEqual(queue.all(), [q1]);
    // answered first: a later cancel changes nothing
    queue.respond(q1, { dismissed: true });
    assert.equal(t1.listeners, 0);
    t1.cancel();
    assert.deepEqual(withdrawn, ['r2']);
    // already cancelled when it arrives
    const q3 = question(3, 'call_c');
    queue.add(q3);
    const t3 = token();
    t3.cancel();
    assert.equal(queue.withdrawOnCancel(q3, t3, () => withdrawn.push('q3')), false);
    assert.deepEqual(withdrawn, ['r2', 'q3']);
    assert.equal(queue.size, 0);
  });

  it('tells each kind\'s listeners what changed: opened, replaced, answered, withdrawn, all withdrawn', () => {
    const queue = new PendingQueue();
    const kinds: string[] = [];
    queue.onChange((kind) => kinds.push(kind));
    const q1 = question(1, 'call_a');
    queue.add(q1);
    queue.add(review(2, 'call_b'));
    // the same call asking again replaces its question (withdrawn), at the end of the queue
    const q1again = question(3, 'call_a');
    assert.equal(queue.add(q1again), q1);
    assert.equal(q1.status, 'withdrawn');
    assert.deepEqual(queue.all().map((e) => e.requestId), [2, 3]);
    queue.changed('review');
    assert.deepEqual(kinds, ['question', 'review', 'question', 'review']);
    kinds.length = 0;
    assert.deepEqual(queue.withdrawAll().map((e) => e.requestId), [2, 3]);
    assert.deepEqual(kinds, ['review', 'question']);
    assert.equal(queue.size, 0);
    kinds.length = 0;
    assert.deepEqual(queue.withdrawAll(), []);
    assert.deepEqual(kinds, []);
  });
});
