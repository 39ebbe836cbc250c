// MCP cards (tools of external MCP servers through toolhost's bridge, `kind: "mcp"`): the header
// with the server badge, the text (folded when long), the Structured JSON view, the failed style,
// live progress while the call runs, escaping everywhere, and the generic fallback.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cardActions, cardView, renderCard } from '../src/cardHtml';
import { CardStore } from '../src/cardStore';
import { FOLD_CHARS, FOLD_LINES, foldedTextHtml, foldPoint, jsonHtml, mcpDataOf, progressHtml } from '../src/mcpCard';
import type { Card } from '../src/cards';
import { asCard, titleLine } from '../src/cards';
import { takesLiveOutput } from '../src/terminal';
import { mcpToolFailedCard, mcpToolPendingCard, mcpToolStructuredCard, mcpToolTextCard } from './fixtures';
import { attrValues, textOf, unescapeHtml } from './helpers';

/** No markup of the server's own: every `<` it sent arrives as text. */
function assertEscaped(html: string): void {
  assert.doesNotMatch(html, /<\/?(script|spawn)[\s>]/i);
}

function header(html: string): string {
  return /<header[^>]*>(.*?)<\/header>/.exec(html)?.[1] ?? '';
}

/** The header's text without the status icon: what `card.rendered`'s title line says. */
function headerText(html: string): string {
  return textOf(header(html).replace(/^<span class="status-icon[^>]*>[^<]*<\/span>/, ''));
}

/** The text of the first `<pre>` with `cls` among its classes. */
function preText(html: string, cls: string): string | undefined {
  const m = new RegExp(`<pre class="[^"]*\\b${cls}\\b[^"]*">(.*?)</pre>`, 's').exec(html);
  return m ? textOf(m[1] ?? '') : undefined;
}

describe('MCP cards', () => {
  it('the header: the server as a badge and the raw tool name, reading like the rendered title line', () => {
    for (const card of [mcpToolPendingCard, mcpToolStructuredCard, mcpToolTextCard, mcpToolFailedCard]) {
      const html = renderCard(card);
      assert.equal(cardView(card), 'mcp', card.callId);
      assert.match(html, /data-kind="mcp"/);
      assert.match(html, /data-view="mcp"/);
      assert.equal(headerText(html), card.rendered.split('\n')[0]);
      assert.equal(titleLine(card), card.rendered.split('\n')[0]);
      const data = mcpDataOf(card);
      assert.ok(data);
      assert.match(
        header(html),
        new RegExp(
          `<span class="card-tool">${card.tool}</span> <span class="card-title"><span class="mcp-server" title="MCP server echo \\(through toolhost&#39;s MCP bridge\\)">echo</span>` +
            `<span class="card-sep"> · </span><span class="mcp-tool">${data.tool}</span></span>`,
        ),
      );
    }
  });

  it('pending: "waiting for <server>…", Stop, no text and no Structured view yet', () => {
    const html = renderCard(mcpToolPendingCard);
    assert.match(html, /<div class="mcp-waiting">waiting for echo…<\/div>/);
    assert.deepEqual(cardActions(mcpToolPendingCard).map((a) => a.action), ['stop']);
    assert.doesNotMatch(html, /mcp-structured|native-text|mcp-progress/);
    assert.match(html, /aria-busy="true"/);
  });

  it('completed without structuredContent: the text escaped and whitespace kept, shown once (no "Native text" copy)', () => {
    const html = renderCard(mcpToolTextCard);
    assert.match(html, /<pre class="native-text mcp-text">HELLO &lt;SCRIPT&gt;ALERT\(1\)&lt;\/SCRIPT&gt;\n {2}indented &amp; spaced<\/pre>/);
    assert.equal(preText(html, 'mcp-text'), mcpToolTextCard.text);
    assert.doesNotMatch(html, /<details class="native">/);
    assert.doesNotMatch(html, /mcp-structured|mcp-waiting|fold-text/);
    assert.deepEqual(cardActions(mcpToolTextCard).map((a) => a.action), ['copy']);
    assertEscaped(html);
  });

  it('completed with structuredContent: the text, then a folded "Structured" view of the pretty JSON (2 spaces), escaped', () => {
    const html = renderCard(mcpToolStructuredCard);
    assert.equal(preText(html, 'mcp-text'), mcpToolStructuredCard.text);
    assert.match(html, /<details class="mcp-structured" data-fold="structured"><summary>Structured<\/summary><pre class="json">/);
    const data = mcpDataOf(mcpToolStructuredCard);
    assert.equal(preText(html, 'json'), JSON.stringify(data?.structuredContent, null, 2));
    assert.ok((preText(html, 'json') ?? '').includes('\n  "location": {\n    "city": "Paris</script><script>alert(1)</script>",'));
    // the tokens carry their type, for the theme's colours
    assert.match(html, /<span class="json-key">&quot;celsius&quot;<\/span>: <span class="json-number">21.5<\/span>/);
    assert.match(html, /<span class="json-key">&quot;windy&quot;<\/span>: <span class="json-bool">false<\/span>/);
    assert.match(html, /<span class="json-key">&quot;note&quot;<\/span>: <span class="json-null">null<\/span>/);
    assert.match(html, /<span class="json-string">&quot;sunny&quot;<\/span>/);
    assertEscaped(html);
  });

  it('structured content without text: the Structured view open, no "(no text content)"', () => {
    const card: Card = { ...mcpToolStructuredCard, text: '' };
    const html = renderCard(card);
    assert.match(html, /<details class="mcp-structured" data-fold="structured" open><summary>Structured<\/summary>/);
    assert.doesNotMatch(html, /mcp-empty|native-text/);
    const empty = renderCard({ ...mcpToolTextCard, text: '' });
    assert.match(empty, /<div class="mcp-empty">\(no text content\)<\/div>/);
  });

  it('failed: the error in the failed style, escaped; no Structured view', () => {
    const html = renderCard(mcpToolFailedCard);
    assert.equal(cardView(mcpToolFailedCard), 'mcp');
    assert.match(html, /<pre class="native-text mcp-text error">Error: MCP server &quot;echo&quot; is not connected \(failed: &lt;spawn&gt; python3: not found\)<\/pre>/);
    assert.match(html, /class="card status-failed view-mcp"/);
    assert.doesNotMatch(html, /mcp-structured|mcp-waiting/);
    assertEscaped(html);
  });

  it('falls back to the generic view when the data lacks the server or the tool; null structured content is none', () => {
    const cases: unknown[] = [undefined, null, 'echo', [], {}, { server: 'echo' }, { tool: 'weather' }, { server: '', tool: 'weather' }, { server: 3, tool: 'weather' }];
    for (const data of cases) {
      const card: Card = { ...mcpToolTextCard, data };
      assert.equal(cardView(card), 'generic', JSON.stringify(data));
      const html = renderCard(card);
      assert.match(html, /data-view="generic"/);
      assert.match(html, /<span class="card-title">echo · shout<\/span>/);
      assert.match(html, /<pre class="native-text">HELLO &lt;SCRIPT&gt;/);
    }
    // another kind with the same data is not an MCP card
    assert.equal(cardView({ ...mcpToolTextCard, kind: 'mcp-like' }), 'generic');
    assert.equal(cardView({ ...mcpToolTextCard, kind: 'fetch' }), 'generic');
    const noStructured: Card = { ...mcpToolTextCard, data: { server: 'echo', tool: 'shout', structuredContent: null } };
    assert.deepEqual(mcpDataOf(noStructured), { server: 'echo', tool: 'shout' });
    assert.doesNotMatch(renderCard(noStructured), /mcp-structured/);
    // falsy structured content is still content
    assert.match(renderCard({ ...mcpToolTextCard, data: { server: 'echo', tool: 'shout', structuredContent: 0 } }), /<pre class="json"><span class="json-number">0<\/span><\/pre>/);
  });

  it('a server name that needs escaping is escaped in the badge, its tooltip and the waiting line', () => {
    const card: Card = { ...mcpToolPendingCard, data: { server: '<b>"x"</b>', tool: '<i>t</i>' } };
    const html = renderCard(card);
    assert.match(html, /<span class="mcp-server" title="MCP server &lt;b&gt;&quot;x&quot;&lt;\/b&gt; \(through toolhost&#39;s MCP bridge\)">&lt;b&gt;&quot;x&quot;&lt;\/b&gt;<\/span>/);
    assert.match(html, /<span class="mcp-tool">&lt;i&gt;t&lt;\/i&gt;<\/span>/);
    assert.match(html, /waiting for &lt;b&gt;&quot;x&quot;&lt;\/b&gt;…/);
    assert.doesNotMatch(html, /<[bi]>/);
  });
});

describe('MCP cards: long text', () => {
  const numbered = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1} <x>`).join('\n');

  it('foldPoint: after 20 lines or 4000 characters, at a line break when one is near; short text is whole', () => {
    assert.equal(FOLD_LINES, 20);
    assert.equal(FOLD_CHARS, 4000);
    assert.equal(foldPoint(''), undefined);
    assert.equal(foldPoint(numbered(20)), undefined);
    assert.equal(foldPoint(`${numbered(20)}\n`), undefined, 'a final line break is no 21st line');
    const text = numbered(21);
    assert.equal(foldPoint(text), numbered(20).length + 1);
    assert.equal(foldPoint('x'.repeat(4000)), undefined);
    assert.equal(foldPoint('x'.repeat(10_000)), 4000, 'one long line: cut at the cap');
    const lines = `${'a'.repeat(3000)}\n${'b'.repeat(3000)}`;
    assert.equal(foldPoint(lines), 3001, 'a line break in the second half of the cap');
    const longLines = Array.from({ length: 30 }, () => 'y'.repeat(300)).join('\n');
    assert.equal(foldPoint(longLines), 13 * 301, '20 lines would pass the cap: the last whole line before it');
  });

  it('a long text shows its beginning; "Show all N lines" (in the page) shows the rest in the same <pre>', () => {
    const text = numbered(30);
    const card: Card = { ...mcpToolTextCard, text };
    const html = renderCard(card);
    assert.match(html, /<div class="fold-text"><pre class="native-text mcp-text"><span class="fold-head">/);
    const head = unescapeHtml(/<span class="fold-head">(.*?)<\/span>/s.exec(html)?.[1] ?? '');
    const rest = unescapeHtml(/<span class="fold-rest">(.*?)<\/span>/s.exec(html)?.[1] ?? '');
    assert.equal(head, `${numbered(20)}\n`);
    assert.equal(head + rest, text, 'nothing lost or added');
    assert.deepEqual(attrValues(html, 'data-local'), ['toggleFold']);
    assert.deepEqual(attrValues(html, 'data-show-label'), [`Show all 30 lines (${text.length} characters)`]);
    assert.deepEqual(attrValues(html, 'data-hide-label'), ['Show less']);
    assert.match(html, /aria-expanded="false"/);
    assertEscaped(html);
    // a failed card's long error folds the same way, in the failed style
    assert.match(renderCard({ ...mcpToolFailedCard, text }), /<div class="fold-text"><pre class="native-text mcp-text error">/);
  });

  it('foldedTextHtml of a short text is a plain <pre>', () => {
    assert.equal(foldedTextHtml('a <b>', 'x'), '<pre class="x">a &lt;b&gt;</pre>');
  });
});

describe('MCP cards: JSON', () => {
  it('the text of the highlighted JSON is exactly the pretty printed JSON; strings are never split or unescaped', () => {
    const values: unknown[] = [
      null,
      undefined,
      0,
      -1.5e-7,
      true,
      'plain',
      '</pre><script>alert(1)</script>',
      { 'a"b': 'c\\"d', 'true': 'null 12 false', nested: [1, { x: [] }, {}], '<k>': '&amp;' },
      [['deep', ['er']], -0, 1e21],
    ];
    for (const value of values) {
      const html = jsonHtml(value);
      assert.equal(textOf(html), JSON.stringify(value, null, 2) ?? 'null', JSON.stringify(value));
      assert.doesNotMatch(html, /<(?!\/?span[ >])/, 'only the token spans are markup');
    }
    const html = jsonHtml({ 'true': 'null 12' });
    assert.equal(html, '{\n  <span class="json-key">&quot;true&quot;</span>: <span class="json-string">&quot;null 12&quot;</span>\n}');
  });
});

describe('MCP cards: live progress', () => {
  it('a running MCP card takes the call\'s toolhost/callOutput as its progress; the final card replaces it; late output is ignored', () => {
    assert.equal(takesLiveOutput(mcpToolPendingCard), true);
    assert.equal(takesLiveOutput(mcpToolStructuredCard), false);
    const store = new CardStore();
    const shown: Card[] = [];
    store.onChange((e) => {
      if (e.type === 'upsert') {
        shown.push(e.card);
      }
    });
    store.upsert(mcpToolPendingCard);
    assert.equal(store.appendOutput(mcpToolPendingCard.callId, 'progress 1/3: fetching <data>\n'), true);
    assert.equal(store.appendOutput(mcpToolPendingCard.callId, 'progress 2/3\n'), true);
    const running = shown[shown.length - 1];
    assert.ok(running);
    assert.equal(running.progress, 'progress 1/3: fetching <data>\nprogress 2/3\n');
    const html = renderCard(running);
    assert.match(html, /<pre class="mcp-progress">progress 1\/3: fetching &lt;data&gt;\nprogress 2\/3<\/pre>/);
    assert.ok(html.indexOf('mcp-waiting') < html.indexOf('mcp-progress'));
    // the same pending card sent again keeps the progress so far
    store.upsert(mcpToolPendingCard);
    assert.equal(shown[shown.length - 1]?.progress, 'progress 1/3: fetching <data>\nprogress 2/3\n');
    const final: Card = { ...mcpToolStructuredCard, callId: mcpToolPendingCard.callId };
    store.upsert(final);
    assert.equal(store.find(final.callId)?.progress, undefined);
    assert.doesNotMatch(renderCard(store.find(final.callId)!), /mcp-progress/);
    assert.equal(store.appendOutput(final.callId, 'late\n'), false);
  });

  it('long progress shows its last 20 lines (the latest), with the number of earlier ones', () => {
    const progress = `${Array.from({ length: 25 }, (_, i) => `step ${i + 1}`).join('\n')}\n`;
    const html = progressHtml(progress);
    assert.match(html, /^<div class="mcp-progress-more">… 5 earlier lines<\/div><pre class="mcp-progress">step 6\n/);
    assert.match(html, /step 25<\/pre>$/);
    assert.equal(progressHtml('one'), '<pre class="mcp-progress">one</pre>');
    assert.match(progressHtml(Array.from({ length: 21 }, () => 'x').join('\n')), /… 1 earlier line</);
  });

  it('progress is the store\'s own: a server cannot send it', () => {
    const card = asCard({ ...mcpToolPendingCard, progress: '<b>forged</b>' });
    assert.ok(card);
    assert.equal(card.progress, undefined);
    assert.doesNotMatch(renderCard(card), /forged/);
  });
});
