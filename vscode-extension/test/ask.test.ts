// Questions (`toolhost/askUser`): the params the extension accepts, the answer built from the
// form's raw state (single, multi, Other, no options, dismiss, plan review), questions in the queue
// of pending requests (pending.ts) and the form's HTML (escaped, keys named).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  AskSession,
  askFormHtml,
  buildAnswers,
  notificationText,
  parseAskUserParams,
  planReviewResult,
  resultOf,
  type AskUserParams,
  type AskUserResult,
} from '../src/ask';
import { PendingQueue } from '../src/pending';
import { attrValues, textOf } from './helpers';

const raw = {
  requestId: 7,
  callId: 'call_ask',
  tool: 'ask_user_question',
  title: 'Ask: DB (+2)',
  intent: 'question',
  questions: [
    { id: 'db', question: 'Which database?', header: 'DB', options: [{ label: 'Postgres' }, { label: 'SQLite', description: 'one file' }], multiSelect: false },
    { id: 'langs', question: 'Which languages?', options: [{ label: 'Rust' }, { label: 'Go' }, { label: 'C' }], multiSelect: true },
    { id: 'name', question: 'What name?' },
  ],
};

const params = (): AskUserParams => parseAskUserParams(raw);

const planRaw = {
  requestId: 'r-9',
  callId: 'call_plan',
  tool: 'exit_plan_mode',
  title: 'Plan: Move to SQLite',
  caller: 'claude-code',
  intent: 'plan-review',
  questions: [
    {
      id: 'plan',
      question: 'Approve this plan?',
      header: 'Plan',
      options: [
        { label: 'Approve', description: 'Leave plan mode; the agent carries out the plan.' },
        { label: 'Keep planning', description: 'Stay in plan mode; say what to change.' },
      ],
      multiSelect: false,
    },
  ],
  plan: '# Move to SQLite\n\n1. Add the driver',
};

describe('toolhost/askUser params', () => {
  it('reads the wire params (defaults: intent question, no options, single-select)', () => {
    const p = params();
    assert.equal(p.requestId, 7);
    assert.equal(p.intent, 'question');
    assert.deepEqual(p.questions[2], { id: 'name', question: 'What name?', options: [], multiSelect: false });
    assert.deepEqual(p.questions[0]?.options[1], { label: 'SQLite', description: 'one file' });
    assert.equal(p.questions[0]?.header, 'DB');
    assert.equal(p.caller, undefined);
    const plan = parseAskUserParams(planRaw);
    assert.equal(plan.intent, 'plan-review');
    assert.equal(plan.caller, 'claude-code');
    assert.equal(plan.plan, '# Move to SQLite\n\n1. Add the driver');
    assert.equal(parseAskUserParams({ ...raw, intent: undefined, title: '' }).title, 'ask_user_question');
  });

  it('refuses params nobody could answer', () => {
    for (const bad of [
      null,
      { ...raw, requestId: undefined },
      { ...raw, callId: '' },
      { ...raw, questions: [] },
      { ...raw, intent: 'quiz' },
      { ...raw, questions: [{ id: 'a' }] },
      { ...raw, questions: [{ id: 'a', question: 'x' }, { id: 'a', question: 'y' }] },
      { ...raw, questions: [{ id: 'a', question: 'x', options: [{ description: 'no label' }] }] },
      { ...raw, questions: [{ id: 'a', question: 'x', options: 'yes' }] },
    ]) {
      assert.throws(() => parseAskUserParams(bad), JSON.stringify(bad));
    }
  });
});

describe('answers from the form', () => {
  it('single-select: the one chosen label', () => {
    assert.deepEqual(buildAnswers(params().questions, { db: { selected: ['SQLite'], custom: '' } })[0], { id: 'db', selected: ['SQLite'] });
  });

  it('single-select with "Other" text: custom replaces the choice (selected empty), trimmed', () => {
    assert.deepEqual(buildAnswers(params().questions, { db: { selected: ['SQLite'], custom: '  DuckDB \n' } })[0], { id: 'db', selected: [], custom: 'DuckDB' });
  });

  it('single-select: two labels (a forged page) keep the first; unknown labels are dropped', () => {
    assert.deepEqual(buildAnswers(params().questions, { db: { selected: ['MySQL', 'SQLite', 'Postgres'] } })[0], { id: 'db', selected: ['Postgres'] });
  });

  it('multi-select: every checked label in the options\' order, with the Other text besides', () => {
    const [, langs] = buildAnswers(params().questions, { langs: { selected: ['C', 'Rust', 'C', 'Zig'], custom: 'OCaml' } });
    assert.deepEqual(langs, { id: 'langs', selected: ['Rust', 'C'], custom: 'OCaml' });
  });

  it('a question without options: the text is the answer; one answer per question, in order, even when untouched', () => {
    const answers = buildAnswers(params().questions, { name: { custom: 'toolhost' } });
    assert.deepEqual(answers, [
      { id: 'db', selected: [] },
      { id: 'langs', selected: [] },
      { id: 'name', selected: [], custom: 'toolhost' },
    ]);
    assert.deepEqual(buildAnswers(params().questions, 'junk').map((a) => a.selected), [[], [], []]);
    assert.deepEqual(buildAnswers(params().questions, { db: { selected: 'Postgres', custom: 3 } })[0], { id: 'db', selected: [] });
  });

  it('page actions: submit, dismiss; a plan decision only for a plan review', () => {
    const p = params();
    assert.deepEqual(resultOf(p, { op: 'submit', state: { db: { selected: ['Postgres'] } } }), {
      answers: [
        { id: 'db', selected: ['Postgres'] },
        { id: 'langs', selected: [] },
        { id: 'name', selected: [] },
      ],
    });
    assert.deepEqual(resultOf(p, { op: 'dismiss' }), { dismissed: true });
    assert.equal(resultOf(p, { op: 'approve' }), undefined);
    assert.equal(resultOf(p, { op: 'explode' as 'submit' }), undefined);
  });

  it('plan review: Approve, Keep planning, and feedback (free text, counts as keep planning)', () => {
    const p = parseAskUserParams(planRaw);
    assert.deepEqual(resultOf(p, { op: 'approve', feedback: 'ignored' }), { answers: [{ id: 'plan', selected: ['Approve'] }] });
    assert.deepEqual(resultOf(p, { op: 'keep', feedback: '   ' }), { answers: [{ id: 'plan', selected: ['Keep planning'] }] });
    assert.deepEqual(resultOf(p, { op: 'keep', feedback: ' use a migration tool ' }), { answers: [{ id: 'plan', selected: [], custom: 'use a migration tool' }] });
    assert.deepEqual(resultOf(p, { op: 'dismiss' }), { dismissed: true });
    // the labels and id are the question's own
    const odd = { ...p, questions: [{ id: 'p2', question: '?', options: [{ label: 'approve' }, { label: 'keep planning' }], multiSelect: false }] };
    assert.deepEqual(planReviewResult(odd, 'approve'), { answers: [{ id: 'p2', selected: ['approve'] }] });
    assert.deepEqual(planReviewResult(odd, 'keep'), { answers: [{ id: 'p2', selected: ['keep planning'] }] });
  });
});

describe('the open questions', () => {
  it('answers once, by call id; later answers and withdrawals do nothing', () => {
    const queue = new PendingQueue();
    const sent: AskUserResult[] = [];
    let changes = 0;
    queue.onChange(() => changes++);
    const session = new AskSession(params(), (r) => sent.push(r));
    queue.add(session);
    assert.equal(session.key, 'call_ask');
    assert.equal(session.kind, 'question');
    assert.equal(queue.get(AskSession, 'call_ask'), session);
    assert.equal(queue.byRequestId(7), session);
    assert.equal(queue.byRequestId('7'), session);
    assert.equal(queue.respond(session, { dismissed: true }), true);
    assert.equal(queue.respond(session, { dismissed: true }), false);
    assert.equal(queue.withdraw(session), false);
    assert.deepEqual(sent, [{ dismissed: true }]);
    assert.equal(session.status, 'answered');
    assert.equal(queue.size, 0);
    assert.equal(changes, 2);
  });

  it('a withdrawn question goes without an answer; several calls queue up, oldest first', () => {
    const queue = new PendingQueue();
    const sent: unknown[] = [];
    const a = new AskSession(params(), (r) => sent.push(r));
    const b = new AskSession(parseAskUserParams(planRaw), (r) => sent.push(r));
    queue.add(a);
    queue.add(b);
    assert.deepEqual(queue.all(AskSession).map((s) => s.key), ['call_ask', 'call_plan']);
    assert.equal(queue.withdraw(a), true);
    assert.equal(a.status, 'withdrawn');
    assert.equal(queue.respond(a, { dismissed: true }), false);
    assert.deepEqual(queue.all(AskSession), [b]);
    // the same call asking again replaces (withdraws) its open question
    const b2 = new AskSession(parseAskUserParams({ ...planRaw, requestId: 'r-10' }), (r) => sent.push(r));
    assert.equal(queue.add(b2), b);
    assert.equal(b.status, 'withdrawn');
    assert.equal(queue.withdraw(b), false, 'the old one is not the open one any more');
    assert.deepEqual(queue.all(AskSession), [b2]);
    assert.deepEqual(queue.withdrawAll(), [b2]);
    assert.deepEqual(sent, []);
  });

  it('the notification names who asks and the first question', () => {
    assert.equal(notificationText(params()), 'Agent asks: Which database? (+2 more)');
    assert.equal(notificationText({ ...params(), caller: 'claude-code', questions: params().questions.slice(0, 1) }), 'claude-code asks: Which database?');
    assert.equal(notificationText(parseAskUserParams(planRaw)), 'claude-code asks: approve the plan "Move to SQLite"?');
  });
});

describe('the question form', () => {
  it('radios for a single-select question, checkboxes for multi-select, a text field for Other (or the answer), numbered options, the keys', () => {
    const html = askFormHtml(new AskSession(params(), () => undefined));
    assert.match(html, /^<form class="ask" data-ask="call_ask" data-intent="question" tabindex="-1"/);
    assert.deepEqual(attrValues(html, 'data-qid'), ['db', 'langs', 'name']);
    assert.deepEqual(attrValues(html, 'data-multi'), ['false', 'true', 'false']);
    assert.deepEqual(attrValues(html, 'type').filter((t) => t !== 'button'), ['radio', 'radio', 'text', 'checkbox', 'checkbox', 'checkbox', 'text', 'text']);
    assert.deepEqual(attrValues(html, 'value'), ['Postgres', 'SQLite', 'Rust', 'Go', 'C']);
    assert.deepEqual(attrValues(html, 'placeholder'), ['Other (your own answer)…', 'Other (your own answer)…', 'Your answer…']);
    assert.deepEqual(attrValues(html, 'data-ask-op'), ['submit', 'dismiss']);
    const text = textOf(html);
    assert.ok(text.includes('DB Which database?'), text);
    assert.ok(text.includes('1Postgres2SQLiteone file'), text);
    assert.ok(text.includes('Enter submits · Esc dismisses'), text);
    // radios of one question share a name; different questions' do not
    const names = attrValues(html, 'name');
    assert.equal(names[0], names[1]);
    assert.notEqual(names[1], names[2]);
  });

  it('escapes everything the agent wrote', () => {
    const evil = '"><img src=x onerror=alert(1)>';
    const html = askFormHtml(
      new AskSession(
        parseAskUserParams({
          ...raw,
          callId: `c${evil}`,
          title: evil,
          caller: evil,
          questions: [{ id: `q${evil}`, header: evil, question: evil, options: [{ label: evil, description: evil }] }],
        }),
        () => undefined,
      ),
    );
    assert.doesNotMatch(html, /<img/);
    assert.equal(attrValues(html, 'value')[0], evil);
    assert.equal(attrValues(html, 'data-ask')[0], `c${evil}`);
    assert.equal(attrValues(html, 'data-qid')[0], `q${evil}`);
  });

  it('a plan review: the plan as markdown (escaped), a feedback field, Approve / Keep planning / Dismiss', () => {
    const html = askFormHtml(new AskSession(parseAskUserParams({ ...planRaw, plan: '# Move <b>\n\n- **one**\n<script>x</script>' }), () => undefined));
    assert.match(html, /data-intent="plan-review"/);
    assert.match(html, /<div class="plan-body markdown"><h1>Move &lt;b&gt;<\/h1><ul class="md-list"><li><strong>one<\/strong><\/li><\/ul><p>&lt;script&gt;x&lt;\/script&gt;<\/p><\/div>/);
    assert.doesNotMatch(html, /<script/);
    assert.match(html, /class="ask-feedback"/);
    assert.deepEqual(attrValues(html, 'data-ask-op'), ['approve', 'keep', 'dismiss']);
    assert.ok(textOf(html).includes('a approve · k keep planning'));
  });

  it('a permission (toolhost\'s own agent asks whether a call may run): Allow / Deny, no free text; Allow is the answer', () => {
    const permission = parseAskUserParams({
      requestId: 9,
      callId: 'call_bash',
      tool: 'bash',
      title: 'Run: make',
      caller: 'toolhost agent',
      intent: 'permission',
      questions: [{ id: 'permission', question: 'Allow the agent to run Run: make?', header: 'Permission', options: [{ label: 'Allow', description: 'run this call' }, { label: 'Deny' }] }],
    });
    assert.equal(permission.intent, 'permission');
    const html = askFormHtml(new AskSession(permission, () => undefined));
    assert.match(html, /^<form class="ask" data-ask="call_bash" data-intent="permission" tabindex="-1" aria-label="permission: Run: make">/);
    assert.match(html, /<span class="ask-badge">permission<\/span>/);
    assert.deepEqual(attrValues(html, 'value'), ['Allow', 'Deny']);
    assert.doesNotMatch(html, /ask-other/);
    assert.deepEqual(resultOf(permission, { op: 'submit', state: { permission: { selected: ['Allow'] } } }), { answers: [{ id: 'permission', selected: ['Allow'] }] });
    assert.equal(resultOf(permission, { op: 'approve' }), undefined, 'not a plan review');
    assert.equal(notificationText(permission), 'toolhost agent asks: Allow the agent to run Run: make?');
  });
});
