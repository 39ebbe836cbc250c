// Terminal cards: the collapse rule, the live-output bookkeeping (terminal.ts and the card store),
// the exit pill, and the card's HTML.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cardActions, cardView, renderCard } from '../src/cardHtml';
import { CardStore, type StoreEvent } from '../src/cardStore';
import type { Card } from '../src/cards';
import { asCard } from '../src/cards';
import { appendLive, collapseLines, COLLAPSED_LINES, exitPills, liveText, takesLiveOutput, withLiveOutput } from '../src/terminal';
import { bashAbortedCard, bashCard, bashPendingCard, bashSpillCard, bashTimedOutCard, editCard, pendingWriteCard } from './fixtures';
import { attrValues, textOf } from './helpers';

/** The output lines a terminal card element shows, hidden (collapsed) ones included. */
function outputLines(html: string): string[] {
  return [...html.matchAll(/<div class="term-line">(.*?)<\/div>/g)].map((m) => textOf(m[1] ?? ''));
}

/** The lines inside the collapsed part (`.term-early`). */
function hiddenLines(html: string): string[] {
  const early = /<div class="term-early">((?:<div class="term-line">.*?<\/div>)*)<\/div>/.exec(html)?.[1] ?? '';
  return outputLines(early);
}

function numbered(n: number): string {
  return Array.from({ length: n }, (_, i) => `line ${i + 1}`).join('\n');
}

describe('terminal cards: collapse rule', () => {
  it('up to 20 lines are shown whole; beyond, only the last 20 until "Show all N lines"', () => {
    assert.equal(COLLAPSED_LINES, 20);
    assert.deepEqual(collapseLines(0), { hidden: 0, shown: 0 });
    assert.deepEqual(collapseLines(1), { hidden: 0, shown: 1 });
    assert.deepEqual(collapseLines(20), { hidden: 0, shown: 20 });
    assert.deepEqual(collapseLines(21), { hidden: 1, shown: 20 });
    assert.deepEqual(collapseLines(1000), { hidden: 980, shown: 20 });
    assert.deepEqual(collapseLines(5, 3), { hidden: 2, shown: 3 });
  });

  it('the card: 20 lines have no toggle; 21 hide the first behind "Show all 21 lines"', () => {
    const card = (n: number): Card => ({ ...bashCard, terminal: { ...bashCard.terminal!, output: numbered(n) } });
    const twenty = renderCard(card(20));
    assert.equal(outputLines(twenty).length, 20);
    assert.doesNotMatch(twenty, /term-toggle|term-early/);
    const more = renderCard(card(21));
    assert.deepEqual(outputLines(more), numbered(21).split('\n'), 'every line is in the page, in order');
    assert.deepEqual(hiddenLines(more), ['line 1']);
    assert.match(
      more,
      /<button type="button" class="term-toggle link" data-local="toggleOutput" aria-expanded="false" data-show-label="Show all 21 lines" data-hide-label="Show only the last 20 lines">Show all 21 lines<\/button>/,
    );
    assert.match(more, /<div class="term-output collapsible" data-lines="21" data-hidden="1">/);
    // the toggle is the page's own: it sends nothing to the extension
    assert.doesNotMatch(/<button[^>]*term-toggle[^>]*>/.exec(more)?.[0] ?? '', /data-action/);
    const long = renderCard(card(500));
    assert.equal(hiddenLines(long).length, 480);
    assert.match(long, />Show all 500 lines</);
  });
});

describe('terminal cards: live output bookkeeping', () => {
  it('appendLive keeps every piece in order and caps the text at a line break, counting what it dropped', () => {
    let live = appendLive(undefined, 'line 1\n');
    live = appendLive(live, 'line 2\nli');
    live = appendLive(live, 'ne 3\n');
    assert.deepEqual(live, { text: 'line 1\nline 2\nline 3\n', dropped: 0 });
    assert.equal(liveText(live), 'line 1\nline 2\nline 3\n');
    const before = live;
    const capped = appendLive(live, 'line 4\n', 20);
    assert.deepEqual(before, { text: 'line 1\nline 2\nline 3\n', dropped: 0 }, 'the old record is not changed');
    assert.deepEqual(capped, { text: 'line 3\nline 4\n', dropped: 14 });
    assert.equal(liveText(capped), '[… 14 characters of live output not kept …]\nline 3\nline 4\n');
    // one endless line: cut where the cap says
    assert.deepEqual(appendLive(undefined, 'x'.repeat(50), 20), { text: 'x'.repeat(20), dropped: 30 });
    // the server's own marker for text it could not send is kept as text
    assert.equal(appendLive(undefined, '[… 120 bytes not shown live …]\nmore').text, '[… 120 bytes not shown live …]\nmore');
  });

  it('only a pending terminal card takes live output', () => {
    assert.equal(takesLiveOutput(bashPendingCard), true);
    assert.equal(takesLiveOutput(bashCard), false);
    assert.equal(takesLiveOutput(pendingWriteCard), false);
    // a terminal card without a view gets one, its title as the command
    const bare: Card = { ...bashPendingCard };
    delete bare.terminal;
    assert.deepEqual(withLiveOutput(bare, { text: 'x', dropped: 0 }).terminal, { command: bare.title, output: 'x' });
  });

  it('the store appends callOutput text to the pending card (keyed by callId) and draws it again', () => {
    const store = new CardStore();
    const events: StoreEvent[] = [];
    store.onChange((e) => events.push(e));
    store.upsert(bashPendingCard);
    store.upsert({ ...bashPendingCard, callId: 'other' });
    assert.equal(store.appendOutput('call_bash', 'line 1\n'), true);
    assert.equal(store.appendOutput('other', 'elsewhere\n'), true);
    assert.equal(store.appendOutput('call_bash', '\x1b[31mred\x1b[0m\n'), true);
    assert.equal(store.find('call_bash')?.terminal?.output, 'line 1\n\x1b[31mred\x1b[0m\n');
    assert.equal(store.find('other')?.terminal?.output, 'elsewhere\n');
    assert.deepEqual(store.liveOutput('call_bash'), { text: 'line 1\n\x1b[31mred\x1b[0m\n', dropped: 0 });
    const upserts = events.filter((e): e is Extract<StoreEvent, { type: 'upsert' }> => e.type === 'upsert');
    assert.deepEqual(
      upserts.map((e) => [e.card.callId, e.card.terminal?.output]),
      [
        ['call_bash', ''],
        ['other', ''],
        ['call_bash', 'line 1\n'],
        ['other', 'elsewhere\n'],
        ['call_bash', 'line 1\n\x1b[31mred\x1b[0m\n'],
      ],
    );
    // the card drawn from it shows the live lines, styled, and Stop
    const html = renderCard(store.find('call_bash')!);
    assert.deepEqual(outputLines(html), ['line 1', 'red']);
    assert.match(html, /<span class="ansi-fg-1">red<\/span>/);
    assert.deepEqual(attrValues(html, 'data-action'), ['stop']);
  });

  it('the final card replaces the live output with its own; late output is ignored', () => {
    const store = new CardStore();
    store.upsert(bashPendingCard);
    store.appendOutput('call_bash', 'partial live text\n');
    store.upsert(bashCard);
    assert.deepEqual(store.find('call_bash'), bashCard, 'the final card as sent');
    assert.equal(store.liveOutput('call_bash'), undefined, 'the live text is gone');
    assert.equal(store.appendOutput('call_bash', 'late\n'), false);
    assert.deepEqual(store.find('call_bash'), bashCard);
    // a late pending card does not bring it back either
    store.upsert(bashPendingCard);
    assert.deepEqual(store.find('call_bash'), bashCard);
  });

  it('Stop: the failed (generic) card replaces the pending one and its live output', () => {
    const store = new CardStore();
    store.upsert(bashPendingCard);
    store.appendOutput('call_bash', 'line 1\n');
    store.upsert(bashAbortedCard);
    assert.deepEqual(store.visible(), [bashAbortedCard]);
    assert.equal(store.liveOutput('call_bash'), undefined);
    assert.equal(cardView(bashAbortedCard), 'generic');
    assert.deepEqual(cardActions(bashAbortedCard).map((a) => a.action), ['copy']);
  });

  it('output for an unknown call, or for a card that is not a running terminal, changes nothing', () => {
    const store = new CardStore();
    const events: StoreEvent[] = [];
    store.onChange((e) => events.push(e));
    assert.equal(store.appendOutput('nobody', 'x'), false);
    store.upsert(pendingWriteCard);
    assert.equal(store.appendOutput(pendingWriteCard.callId, 'x'), false);
    store.upsert(editCard);
    assert.equal(store.appendOutput(editCard.callId, 'x'), false);
    assert.deepEqual(events.map((e) => e.type), ['upsert', 'upsert']);
  });

  it('a pending card sent again keeps the output so far; clear and trimming forget it', () => {
    const store = new CardStore(2);
    store.upsert(bashPendingCard);
    store.appendOutput('call_bash', 'kept\n');
    store.upsert({ ...bashPendingCard, title: 'again' });
    assert.equal(store.find('call_bash')?.terminal?.output, 'kept\n');
    assert.equal(store.find('call_bash')?.title, 'again');
    store.upsert({ ...editCard, callId: 'e1' });
    store.upsert({ ...editCard, callId: 'e2' });
    assert.equal(store.find('call_bash'), undefined);
    assert.equal(store.liveOutput('call_bash'), undefined, 'dropped with its card');
    store.upsert(bashPendingCard);
    store.appendOutput('call_bash', 'x');
    store.clear();
    assert.equal(store.liveOutput('call_bash'), undefined);
  });

  it('live output is capped in the store too, with a note of what was dropped', () => {
    const store = new CardStore(500, 30);
    store.upsert(bashPendingCard);
    for (let i = 1; i <= 10; i++) {
      store.appendOutput('call_bash', `line ${i}\n`);
    }
    const output = store.find('call_bash')?.terminal?.output ?? '';
    assert.match(output, /^\[… \d+ characters of live output not kept …\]\n/);
    assert.ok(output.endsWith('line 8\nline 9\nline 10\n'), output);
  });

  it('while a replay is shown, live output is kept but not drawn', () => {
    const store = new CardStore();
    store.upsert(bashPendingCard);
    store.showReplay('s', [editCard]);
    const events: StoreEvent[] = [];
    store.onChange((e) => events.push(e));
    assert.equal(store.appendOutput('call_bash', 'x\n'), true);
    assert.deepEqual(events, []);
    store.showLive();
    assert.equal(store.find('call_bash')?.terminal?.output, 'x\n');
  });
});

describe('terminal cards: view', () => {
  it('exit pill: exit 0 ok, another code or a signal fail, "timed out" on its own; none while running', () => {
    assert.deepEqual(exitPills(bashCard), { exit: { tone: 'fail', label: 'exit 3' }, timedOut: false });
    assert.deepEqual(exitPills(bashSpillCard), { exit: { tone: 'ok', label: 'exit 0' }, timedOut: false });
    assert.deepEqual(exitPills(bashTimedOutCard), { exit: { tone: 'fail', label: 'SIGTERM' }, timedOut: true });
    assert.deepEqual(exitPills(bashPendingCard), { timedOut: false });
    // no exit code: the server means 0
    const noCode: Card = { ...bashCard, terminal: { command: 'true', output: '' } };
    assert.deepEqual(exitPills(noCode).exit, { tone: 'ok', label: 'exit 0' });
  });

  it('a finished card: command, description, styled output, the exit pill, the Native text collapsible', () => {
    assert.equal(cardView(bashCard), 'terminal');
    const html = renderCard(bashCard);
    assert.match(html, /class="card status-completed view-terminal"/);
    assert.match(html, /<div class="term-command"><span class="term-prompt" aria-hidden="true">\$ <\/span><code>for i in 1 2 3; do echo &quot;line \$i&quot;; done<\/code><\/div>/);
    assert.match(html, /<div class="term-description">count to three<\/div>/);
    assert.doesNotMatch(html, /term-cwd/);
    assert.deepEqual(outputLines(html), ['line 1', 'red <b>', '[stderr]', 'err']);
    assert.match(html, /<div class="term-line"><span class="ansi-fg-1">red<\/span> &lt;b&gt;<\/div>/);
    assert.match(html, /<span class="pill exit-pill fail" data-tone="fail">exit 3<\/span>/);
    assert.doesNotMatch(html, /timeout-pill|openSpill|data-action="stop"/);
    assert.match(html, /<details class="native"><summary>Native text<\/summary>/);
    assert.deepEqual(attrValues(html, 'data-action'), ['copy']);
    assert.doesNotMatch(html, /<b>/);
    // through the wire normalization: kept as sent
    assert.deepEqual(asCard(JSON.parse(JSON.stringify(bashCard))), bashCard);
  });

  it('timed out, killed by a signal, in a subdirectory', () => {
    const html = renderCard(bashTimedOutCard);
    assert.match(html, /<div class="term-cwd">in <code>sub<\/code><\/div>/);
    assert.match(html, /<span class="pill exit-pill fail" data-tone="fail">SIGTERM<\/span> <span class="pill timeout-pill">timed out<\/span>/);
    assert.deepEqual(outputLines(html), ['(no output)', '[timed out after 500ms]']);
  });

  it('spilled output: a link per file (index into spillPaths), opened by the extension', () => {
    const html = renderCard(bashSpillCard);
    assert.match(
      html,
      /<div class="term-spill">full output: <button type="button" class="link spill" data-action="openSpill" data-spill="0" title="open \/s\/blobs\/5af7b9">\/s\/blobs\/5af7b9<\/button><\/div>/,
    );
    assert.match(html, /exit-pill ok[^>]*>exit 0</);
    assert.match(html, />Show all 31 lines</);
  });

  it('a running card: "waiting for output…", no pill, Stop first among the actions', () => {
    assert.equal(cardView(bashPendingCard), 'terminal');
    const html = renderCard(bashPendingCard);
    assert.match(html, /<div class="term-empty">waiting for output…<\/div>/);
    assert.doesNotMatch(html, /exit-pill|<details/);
    assert.match(html, /<button type="button" class="action stop" data-action="stop" title="Stop this call \(toolhost\/cancelCall\)">Stop<\/button>/);
    assert.deepEqual(cardActions(bashPendingCard).map((a) => a.action), ['stop']);
    // a finished command that printed nothing at all
    assert.match(renderCard({ ...bashCard, terminal: { command: 'true', output: '', exitCode: 0 } }), /<div class="term-empty">\(no output\)<\/div>/);
  });

  it('everything from the view is escaped', () => {
    const card: Card = {
      ...bashCard,
      terminal: {
        command: '<img src=x onerror=alert(1)>',
        description: '<script>d</script>',
        cwd: '"><b>',
        output: '</div><script>o</script>',
        signal: '<i>SIG</i>',
        spillPaths: ['/a/"><script>'],
      },
    };
    const html = renderCard(card);
    assert.doesNotMatch(html, /<img|<script|<b>|<i>|"><script/);
    assert.deepEqual(outputLines(html), ['</div><script>o</script>']);
  });

  it('a terminal view from the wire: junk fields dropped, an unusable view means the generic view', () => {
    const wired = asCard({ ...bashCard, terminal: { ...bashCard.terminal, exitCode: '3', signal: 9, timedOut: 'yes', spillPaths: ['/ok', 3, ''], cwd: 7 } });
    assert.deepEqual(wired?.terminal, { command: bashCard.terminal!.command, description: 'count to three', output: bashCard.terminal!.output, spillPaths: ['/ok'] });
    const broken = asCard({ ...bashCard, terminal: { command: 'x' } });
    assert.equal(broken?.terminal, null);
    assert.ok(broken);
    assert.equal(cardView(broken), 'generic');
    const none = asCard({ ...bashCard, terminal: null });
    assert.equal(cardView(none!), 'generic');
  });
});
