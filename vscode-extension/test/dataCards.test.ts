// Todo, question, plan and structured cards (drawn from `card.data`), the pinned todo list, and
// the markdown renderer plans go through: what they show, their fallbacks, and escaping.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cardView, renderCard } from '../src/cardHtml';
import { pinnedTodosHtml, todoCounts, todosOf } from '../src/dataCards';
import { inlineHtml, markdownHtml } from '../src/markdown';
import type { Card } from '../src/cards';
import { asCard } from '../src/cards';
import {
  editCard,
  failedQuestionCard,
  laterTodoCard,
  pendingQuestionCard,
  planCard,
  questionCard,
  refusedPlanCard,
  structuredCard,
  todoCard,
} from './fixtures';
import { attrValues, textOf } from './helpers';

/** No markup of the agent's own: every `<` it wrote arrives as text. */
function assertEscaped(html: string): void {
  assert.doesNotMatch(html, /<(x|small|SQLite|script|old|use)[\s>]/);
}

describe('todo cards', () => {
  it('a checklist: completed ✓ struck through, in progress highlighted, pending plain, with counts; collapsed in the feed', () => {
    const html = renderCard(todoCard);
    assert.equal(cardView(todoCard), 'todo');
    assert.match(html, /data-view="todo"/);
    assert.deepEqual(attrValues(html, 'data-status').slice(1), ['completed', 'in_progress', 'pending']);
    assert.match(html, /<li class="todo todo-completed" data-status="completed"><span class="todo-mark" role="img" aria-label="completed">✓<\/span><span class="todo-text">a<\/span><\/li>/);
    assert.match(html, /<li class="todo todo-in-progress" data-status="in_progress">.*?<span class="todo-text">b &lt;x&gt;<\/span>/);
    assert.match(html, /<details class="todo-snapshot"><summary class="todo-counts">1\/3 completed · 1 in progress · 1 pending<\/summary>/);
    assertEscaped(html);
    // the Native text stays reachable
    assert.match(html, /<details class="native"><summary>Native text<\/summary><pre class="native-text">Updated todo list/);
  });

  it('counts come from the list (a pending card has none); junk items are skipped, unknown statuses pending', () => {
    assert.deepEqual(todoCounts(todosOf(todoCard.data) ?? []), { pending: 1, inProgress: 1, completed: 1 });
    assert.deepEqual(todosOf({ todos: [{ content: 'x', status: 'weird' }, 3, { status: 'completed' }] }), [{ content: 'x', status: 'pending' }]);
    assert.equal(todosOf({ todo: [] }), undefined);
    const pending: Card = { ...todoCard, status: 'pending', text: '', data: { todos: [{ content: 'x', status: 'in_progress' }] } };
    assert.match(renderCard(pending), /0\/1 completed · 1 in progress · 0 pending/);
  });

  it('the pinned list is the latest completed todo card\'s, drawn in full; failed and pending ones do not replace it', () => {
    assert.equal(pinnedTodosHtml([editCard]), '');
    const pinned = pinnedTodosHtml([todoCard, editCard]);
    assert.match(pinned, /^<section class="todos-pinned" data-call-id="call_02a4165d50d8" aria-label="todo list">/);
    assert.ok(textOf(pinned).includes('todos 1/3 completed · 1 in progress · 1 pending'));
    assert.match(pinned, /<ul class="todo-list">/);
    assertEscaped(pinned);
    const later = pinnedTodosHtml([todoCard, laterTodoCard]);
    assert.match(later, /data-call-id="call_todo_later"/);
    assert.ok(textOf(later).includes('3/3 completed'));
    const failed: Card = { ...laterTodoCard, callId: 'call_failed', status: 'failed' };
    const pendingOne: Card = { ...laterTodoCard, callId: 'call_pending', status: 'pending' };
    assert.match(pinnedTodosHtml([todoCard, failed, pendingOne]), /data-call-id="call_02a4165d50d8"/);
    assert.match(pinnedTodosHtml([{ ...todoCard, data: { todos: [] } }]), /the todo list is empty/);
  });
});

describe('question cards', () => {
  it('each question and its answer: the chosen labels, the free text quoted', () => {
    const html = renderCard(questionCard);
    assert.equal(cardView(questionCard), 'question');
    const text = textOf(html);
    assert.ok(text.includes('DB ? Which database?→ SQLite <3'), text);
    assert.ok(text.includes('? Why?→ “it is <small>”'), text);
    assert.match(html, /<span class="qa-choice">SQLite &lt;3<\/span>/);
    assertEscaped(html);
    assert.doesNotMatch(html, /qa-options/, 'answered: no option list');
  });

  it('pending: the options and "waiting for the answer…"; failed: the error under the question', () => {
    const pending = renderCard(pendingQuestionCard);
    assert.ok(textOf(pending).includes('? Which database?PostgresSQLite <3waiting for the answer…'), textOf(pending));
    assertEscaped(pending);
    const failed = renderCard(failedQuestionCard);
    assert.equal(cardView(failedQuestionCard), 'question');
    assert.match(failed, /<pre class="native-text error">Error: the user cancelled ask_user_question<\/pre>/);
    assert.doesNotMatch(failed, /waiting for/);
    assert.doesNotMatch(failed, /<details class="native">/, 'the error is shown, not folded away');
  });
});

describe('plan cards', () => {
  it('the plan as markdown (headings, lists, code, emphasis), escaped, and the Approved badge', () => {
    const html = renderCard(planCard);
    assert.equal(cardView(planCard), 'plan');
    assert.match(html, /<h1>Move to &lt;SQLite&gt;<\/h1>/);
    assert.match(html, /<ol class="md-list"><li>Add the <strong>driver<\/strong><\/li><li>Port <code>schema.sql<\/code><ul class="md-list"><li>keep the <em>old<\/em> one<\/li><\/ul><\/li><\/ol>/);
    assert.match(html, /<pre class="md-code" data-lang="sh"><code>rm -rf &lt;old&gt; &amp;&amp; echo &quot;done&quot;<\/code><\/pre>/);
    assert.match(html, /<p>&lt;script&gt;alert\(1\)&lt;\/script&gt;<\/p>/);
    assert.match(html, /<span class="pill approved-pill">Approved<\/span>/);
    assertEscaped(html);
  });

  it('refused: the plan still shows, the error under it, no badge', () => {
    const html = renderCard(refusedPlanCard);
    assert.equal(cardView(refusedPlanCard), 'plan');
    assert.match(html, /<h1>Move to &lt;SQLite&gt;<\/h1>/);
    assert.match(html, /<pre class="native-text error">Error: the user wants more planning: &lt;use a migration tool&gt;<\/pre>/);
    assert.doesNotMatch(html, /Approved/);
    assertEscaped(html);
  });
});

describe('structured cards', () => {
  it('the value as pretty JSON, escaped', () => {
    const html = renderCard(structuredCard);
    assert.equal(cardView(structuredCard), 'structured');
    assert.match(html, /<pre class="json">\{\n {2}&quot;name&quot;: &quot;&lt;x&gt;&quot;,\n {2}&quot;n&quot;: \[\n {4}1,\n {4}2\n {2}\]\n\}<\/pre>/);
    assertEscaped(html);
    assert.match(renderCard({ ...structuredCard, data: { value: null } }), /<pre class="json">null<\/pre>/);
  });
});

describe('fallbacks', () => {
  it('data of the wrong shape, or none, is drawn as generic (the Native text); other kinds keep theirs', () => {
    for (const card of [
      { ...todoCard, data: undefined },
      { ...todoCard, data: { todos: 'nope' } },
      { ...questionCard, data: { answers: [] } },
      { ...planCard, data: { plan: 3 } },
      { ...structuredCard, data: {} },
      { ...structuredCard, data: [1, 2] },
      { ...editCard, kind: 'fetch', hunks: null, data: { url: 'x' } },
    ] as Card[]) {
      assert.equal(cardView(card), 'generic', JSON.stringify(card.data));
      assert.match(renderCard(card), /<pre class="native-text[^"]*">/);
    }
  });

  it('the fixtures survive the wire (asCard keeps data as it is)', () => {
    for (const card of [todoCard, questionCard, planCard, structuredCard]) {
      assert.deepEqual(asCard(JSON.parse(JSON.stringify(card))), card);
    }
  });
});

describe('markdown', () => {
  it('inline: code spans are literal, emphasis and links, everything escaped', () => {
    assert.equal(inlineHtml('a `**b** <c>` d'), 'a <code>**b** &lt;c&gt;</code> d');
    assert.equal(inlineHtml('**bold** and *it* and __b2__ and _i2_ but snake_case_name'), '<strong>bold</strong> and <em>it</em> and <strong>b2</strong> and <em>i2</em> but snake_case_name');
    assert.equal(inlineHtml('see [the docs](https://x.test/a?b=1&c="2") now'), 'see <span class="md-link" title="https://x.test/a?b=1&amp;c=&quot;2&quot;">the docs</span> now');
    assert.equal(inlineHtml('`` a`b ``'), '<code>a`b</code>');
    assert.equal(inlineHtml('2 * 3 * 4'), '2 * 3 * 4');
    assert.equal(inlineHtml('<img src=x onerror="alert(1)">'), '&lt;img src=x onerror=&quot;alert(1)&quot;&gt;');
  });

  it('blocks: headings, paragraphs, lists (nested, ordered, tasks), quotes, rules, fenced code', () => {
    const md = ['## Steps', '', 'Some *text*', 'on two lines.', '', '- [x] done', '- [ ] todo', '  more of it', '', '> quoted', '', '---', '', '~~~', '<raw>', '~~~', '#nospace'].join('\n');
    assert.equal(
      markdownHtml(md),
      '<h2>Steps</h2><p>Some <em>text</em> on two lines.</p>' +
        '<ul class="md-list"><li class="md-task done"><span class="md-check" aria-label="done">☑</span> done</li>' +
        '<li class="md-task"><span class="md-check" aria-label="not done">☐</span> todo more of it</li></ul>' +
        '<blockquote><p>quoted</p></blockquote><hr><pre class="md-code"><code>&lt;raw&gt;</code></pre><p>#nospace</p>',
    );
    // an unclosed fence runs to the end
    assert.equal(markdownHtml('```\na\n<b>'), '<pre class="md-code"><code>a\n&lt;b&gt;</code></pre>');
    assert.equal(markdownHtml(''), '');
  });
});
