import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { cardActions, cardView, escapeHtml, makeNonce, PANEL_STYLESHEETS, renderCard, renderPage, replayBanner } from '../src/cardHtml';
import type { Card } from '../src/cards';
import { asCard, titleLine } from '../src/cards';
import {
  customKindCard,
  editCard,
  emptySearchCard,
  failedCard,
  globCard,
  grepCard,
  hostileCard,
  lspCard,
  mcpEditCard,
  mcpPendingEditCard,
  newFileWriteCard,
  pendingEditCard,
  pendingWriteCard,
  readCard,
  terminalCard,
} from './fixtures';
import { attrValues, diffLinesOf, searchLinesOf, textOf, unescapeHtml } from './helpers';

/** The body lines of `card.rendered` (everything after the title line). */
function renderedBody(card: Card): string[] {
  return card.rendered.split('\n').slice(1);
}

describe('card HTML', () => {
  it('diff card: hunk lines read exactly like card.rendered, with +/- counts and inline colours', () => {
    const html = renderCard(editCard);
    assert.deepEqual(diffLinesOf(html), renderedBody(editCard));
    assert.match(html, /<span class="stat-add">\+1<\/span> <span class="stat-del">−1<\/span>/);
    assert.match(html, /<div class="line del" data-op="-">/);
    assert.match(html, /<div class="line add" data-op="\+">/);
    assert.match(html, /<div class="line ctx" data-op=" ">/);
    assert.match(html, /data-call-id="call_11d418f8bd96"/);
    assert.match(html, /data-status="completed"/);
    assert.match(html, /class="status-icon" aria-label="completed" role="img">✓/);
  });

  it('card header text is the rendered title line', () => {
    for (const card of [editCard, readCard, grepCard, failedCard, pendingWriteCard]) {
      const header = /<header[^>]*>(.*?)<\/header>/.exec(renderCard(card))?.[1] ?? '';
      const tool = textOf(/<span class="card-tool">(.*?)<\/span>/.exec(header)?.[1] ?? '');
      const title = textOf(/<span class="card-title">(.*?)<\/span>/.exec(header)?.[1] ?? '');
      const status = textOf(/<span class="card-status">(.*?)<\/span>/.exec(header)?.[1] ?? '');
      assert.equal(`${tool} ${title} · ${status}`, card.rendered.split('\n')[0]);
      assert.equal(titleLine(card), card.rendered.split('\n')[0]);
    }
  });

  it('a call an agent made through toolhost mcp: the caller badge ends the header, which reads like the title line', () => {
    for (const card of [mcpEditCard, mcpPendingEditCard]) {
      const html = renderCard(card);
      const header = /<header[^>]*>(.*?)<\/header>/.exec(html)?.[1] ?? '';
      // the header's text (separators included, stats aside) is the rendered title line
      const headerText = textOf(header.replace(/^<span class="status-icon[^>]*>[^<]*<\/span>/, '').replace(/<span class="stats".*$/, ''));
      assert.equal(headerText, card.rendered.split('\n')[0]);
      assert.equal(titleLine(card), card.rendered.split('\n')[0]);
      assert.match(header, /<span class="card-status">[a-z]+<\/span><span class="card-sep"> · <\/span><span class="card-caller" title="called by claude-code">claude-code<\/span>/);
      assert.equal(attrValues(html, 'data-caller')[0], 'claude-code');
      assert.equal(attrValues(html, 'title')[0], card.rendered.split('\n')[0], 'the header tooltip is the title line');
      // the body is drawn exactly as for the editor's own calls
      const own: Card = { ...card };
      delete own.caller;
      assert.deepEqual(diffLinesOf(html), renderedBody(card));
      assert.equal(
        html.replace(/<header.*<\/header>/, '').replace(/ data-caller="[^"]*"/, ''),
        renderCard(own).replace(/<header.*<\/header>/, ''),
      );
      assert.deepEqual(cardActions(card), cardActions(own));
    }
  });

  it('no caller (the editor\'s own call, or an empty/null/non-string one): no badge, no data-caller', () => {
    for (const caller of [undefined, null, '']) {
      const card: Card = { ...editCard, caller };
      const html = renderCard(card);
      assert.doesNotMatch(html, /card-caller|data-caller/);
      assert.equal(titleLine(card), 'edit Edit a.txt · completed');
    }
    const wired = asCard({ ...editCard, caller: 42 });
    assert.ok(wired);
    assert.equal('caller' in wired, false);
    assert.doesNotMatch(renderCard(wired), /card-caller/);
    assert.equal(asCard(JSON.parse(JSON.stringify(mcpEditCard)))?.caller, 'claude-code');
  });

  it('the caller is escaped (it is whatever name the MCP client sent)', () => {
    const card: Card = { ...mcpEditCard, caller: '<img src=x onerror=alert(1)>"&\'' };
    const html = renderCard(card);
    assert.doesNotMatch(html, /<img|onerror=alert\(1\)>/);
    assert.match(html, /<span class="card-caller"[^>]*>&lt;img src=x onerror=alert\(1\)&gt;&quot;&amp;&#39;<\/span>/);
    assert.equal(attrValues(html, 'data-caller')[0], card.caller);
    assert.equal(textOf(/<span class="card-caller"[^>]*>(.*?)<\/span>/.exec(html)?.[1] ?? ''), card.caller);
  });

  it('diff card: the Native text is collapsible and the actions are buttons', () => {
    const html = renderCard(editCard);
    assert.match(html, /<details class="native"><summary>Native text<\/summary><pre class="native-text">The file \/w\/a.txt has been updated successfully.<\/pre><\/details>/);
    assert.deepEqual(attrValues(html, 'data-action'), ['openDiff', 'goto', 'copy', 'revert', 'revertSince']);
    assert.match(html, /<button type="button" class="action" data-action="openDiff">Open diff<\/button>/);
    assert.match(html, /<button type="button" class="action" data-action="copy">Copy Native text<\/button>/);
    assert.match(html, /tabindex="0"/);
  });

  it('pending card: spinner, aria-busy, preview hunks, Stop, no copy action (no Native text yet)', () => {
    const html = renderCard(pendingWriteCard);
    assert.match(html, /class="status-icon spinner" role="img" aria-label="running"/);
    assert.match(html, /aria-busy="true"/);
    assert.deepEqual(diffLinesOf(html), renderedBody(pendingWriteCard));
    assert.deepEqual(
      cardActions(pendingWriteCard).map((a) => a.action),
      ['stop', 'openDiff', 'goto'],
    );
    // Stop is for running calls only
    for (const card of [editCard, failedCard, newFileWriteCard]) {
      assert.equal(cardActions(card).some((a) => a.action === 'stop'), false, card.callId);
    }
    assert.doesNotMatch(html, /<details/);
  });

  it('the hunk header is the card\'s own (`hunk.header`), never one formatted from the numbers', () => {
    // A header the numbers alone could not give: the client must show it as sent.
    const hunk = { ...editCard.hunks![0]!, header: '@@ -1,2 +1,2 @@ fn main() {' };
    const card: Card = { ...editCard, hunks: [hunk], rendered: editCard.rendered.replace('@@ -1,2 +1,2 @@', hunk.header) };
    const html = renderCard(card);
    assert.deepEqual(diffLinesOf(html), renderedBody(card));
    assert.equal(diffLinesOf(html)[0], '@@ -1,2 +1,2 @@ fn main() {');
    assert.match(html, /aria-label="hunk @@ -1,2 \+1,2 @@ fn main\(\) \{ in a.txt"/);
    // The starts and counts of the hunk do not leak into what is shown.
    const odd = { ...hunk, oldStart: 99, newStart: 77 };
    assert.equal(diffLinesOf(renderCard({ ...card, hunks: [odd] }))[0], '@@ -1,2 +1,2 @@ fn main() {');
  });

  it('preview hunks (pending write/edit): the server\'s `@@ preview` header, no position claimed', () => {
    for (const card of [pendingWriteCard, pendingEditCard]) {
      const html = renderCard(card);
      assert.deepEqual(diffLinesOf(html), renderedBody(card));
      assert.match(diffLinesOf(html)[0] ?? '', /^@@ preview -\d+ \+\d+ @@$/);
      assert.match(html, /<div class="hunk preview" data-path="a.txt" data-preview="true" role="group" aria-label="proposed change to a.txt \(its place in the file is not known yet\)">/);
      // no `-0,…`/`+0,…` line numbers anywhere, in text or attributes
      assert.doesNotMatch(html, /[-+]0,\d/);
      assert.deepEqual(cardActions(card).find((a) => a.action === 'openDiff')?.label, 'Open proposed change');
    }
    // the completed write is placed: an ordinary hunk, "Open diff"
    const done = renderCard(newFileWriteCard);
    assert.deepEqual(diffLinesOf(done), renderedBody(newFileWriteCard));
    assert.match(done, /<div class="hunk" data-path="a.txt" role="group" aria-label="hunk @@ -0,0 \+1,2 @@ in a.txt">/);
    assert.doesNotMatch(done, /preview/);
    assert.equal(cardActions(newFileWriteCard)[0]?.label, 'Open diff');
    // placed and preview hunks together: "Open diff" (the picker offers both)
    const mixed: Card = { ...editCard, hunks: [...editCard.hunks!, ...pendingEditCard.hunks!] };
    assert.equal(cardActions(mixed)[0]?.label, 'Open diff');
  });

  it('a kind this client has no view for (a tool\'s own, or a terminal card without its view) is drawn as generic: the Native text', () => {
    for (const card of [terminalCard, customKindCard]) {
      assert.equal(cardView(card), 'generic');
      const html = renderCard(card);
      assert.match(html, /class="card status-completed view-generic"/);
      assert.equal(attrValues(html, 'data-kind')[0], card.kind, 'the kind as sent');
      assert.equal(attrValues(html, 'data-view')[0], 'generic');
      assert.equal(textOf(/<div class="card-body">(.*?)<\/div>/s.exec(html)?.[1] ?? ''), renderedBody(card).join('\n'));
      assert.doesNotMatch(html, /class="(diff|read|search)"/);
      assert.deepEqual(cardActions(card).map((a) => a.action), ['copy']);
    }
    // the kind goes into an attribute: escaped
    assert.doesNotMatch(renderCard(customKindCard), /<y>|"x"/);
    // A card of an unknown kind that carries a diff/read/search payload still draws generic.
    const odd: Card = { ...customKindCard, hunks: editCard.hunks ?? null, read: readCard.read ?? null, search: grepCard.search ?? null };
    assert.equal(cardView(odd), 'generic');
    assert.match(renderCard(odd), /<pre class="native-text">deployed 3 services<\/pre>/);
    // Through the wire normalization too: kind and data are kept as sent.
    const wired = asCard(JSON.parse(JSON.stringify(customKindCard)));
    assert.deepEqual(wired, customKindCard);
    assert.equal(renderCard(wired), renderCard(customKindCard));
  });

  it('`data` is tolerated whatever its shape, and never shown', () => {
    for (const data of [undefined, null, 0, 'text <b>', [1, { a: [] }], { deep: { er: ['x'] } }]) {
      const card: Card = { ...terminalCard, data };
      const html = renderCard(card);
      assert.equal(textOf(/<div class="card-body">(.*?)<\/div>/s.exec(html)?.[1] ?? ''), 'running 3 tests\n<ok>');
      assert.doesNotMatch(html, /<b>|deep/);
      assert.deepEqual(asCard(card)?.data, data);
    }
  });

  it('read card: numbered lines, range note, Native text collapsible', () => {
    const html = renderCard(readCard);
    const rows = [...html.matchAll(/<div class="read-line"><span class="ln" aria-hidden="true">(\d+)<\/span><span class="text">(.*?)<\/span><\/div>/g)].map(
      (m) => `${m[1]}: ${textOf(m[2] ?? '')}`,
    );
    assert.deepEqual(rows, ['3: const x = 1;', '4: <b>']);
    assert.match(html, /lines 3–4 of 9/);
    assert.match(html, /data-lang="typescript"/);
    assert.match(html, /<details class="native">/);
    assert.doesNotMatch(html, /<b>/, 'file text is escaped');
  });

  it('search card (grep): every line reads like card.rendered and is a clickable location', () => {
    const html = renderCard(grepCard);
    assert.deepEqual(searchLinesOf(html), renderedBody(grepCard));
    const locs = [...html.matchAll(/<button type="button" class="loc link" data-action="goto" data-loc="(\d+)">(.*?)<\/button>/g)];
    assert.deepEqual(
      locs.map((m) => [Number(m[1]), textOf(m[2] ?? '')]),
      [
        [0, 'src/a.rs:2'],
        [1, 'src/a.rs:9'],
        [2, 'src/b.rs:1'],
      ],
    );
    // index i of the buttons is card.locations[i]
    assert.equal(grepCard.locations[1]?.line, 9);
  });

  it('search card (glob paths, lsp locations, no results)', () => {
    assert.deepEqual(searchLinesOf(renderCard(globCard)), renderedBody(globCard));
    assert.deepEqual(searchLinesOf(renderCard(lspCard)), renderedBody(lspCard));
    assert.deepEqual(searchLinesOf(renderCard(emptySearchCard)), renderedBody(emptySearchCard));
  });

  it('failed card: the Native text (error) is the body, shown as an error', () => {
    const html = renderCard(failedCard);
    assert.match(html, /class="card status-failed view-generic"/);
    assert.match(html, /<pre class="native-text error">&quot;\/w\/a.txt&quot; has unsaved changes/);
    assert.equal(textOf(/<div class="card-body">(.*?)<\/div>/s.exec(html)?.[1] ?? ''), renderedBody(failedCard).join('\n'));
    assert.match(html, /aria-label="failed" role="img">✗/);
  });

  it('escapes everything that comes from the card', () => {
    const html = renderCard(hostileCard);
    assert.doesNotMatch(html, /<script>|<img|<\/div>&amp;<|onerror=alert\(1\)>/);
    assert.deepEqual(diffLinesOf(html), renderedBody(hostileCard));
    assert.equal(attrValues(html, 'data-call-id')[0], hostileCard.callId);
    assert.equal(escapeHtml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });

  it('a card whose hunks touch several files names each file', () => {
    const card: Card = {
      ...editCard,
      hunks: [
        { ...editCard.hunks![0]!, path: 'a.txt' },
        { ...editCard.hunks![0]!, path: 'b.txt' },
      ],
    };
    const html = renderCard(card);
    assert.deepEqual([...html.matchAll(/<div class="hunk-path">(.*?)<\/div>/g)].map((m) => m[1]), ['a.txt', 'b.txt']);
  });

  it('page: strict CSP with a nonce, no remote resources, no inline handlers', () => {
    const nonce = makeNonce((n) => new Uint8Array(n).fill(7));
    assert.match(nonce, /^[A-Za-z0-9_-]{32}$/);
    const page = renderPage({
      cspSource: 'https://file+.vscode-resource.vscode-cdn.net',
      nonce,
      scriptUri: 'https://file+.vscode-resource.vscode-cdn.net/ext/media/panel.js',
      styleUris: PANEL_STYLESHEETS.map((name) => `https://file+.vscode-resource.vscode-cdn.net/ext/media/styles/${name}.css`),
      cardsHtml: renderCard(editCard) + renderCard(hostileCard),
      bannerHtml: replayBanner('20261202-142345-ea67b6', 2),
    });
    const csp = unescapeHtml(/<meta http-equiv="Content-Security-Policy" content="([^"]*)">/.exec(page)?.[1] ?? '');
    assert.match(csp, /^default-src 'none'; /);
    assert.match(csp, new RegExp(`script-src 'nonce-${nonce}'`));
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
    const scripts = [...page.matchAll(/<script([^>]*)>/g)].map((m) => m[1] ?? '');
    assert.equal(scripts.length, 1);
    assert.match(scripts[0] ?? '', new RegExp(`nonce="${nonce}"`));
    // only the webview's own resources; no http(s) URL outside cspSource, no inline event handlers
    for (const url of attrValues(page, 'src').concat(attrValues(page, 'href'))) {
      assert.ok(url.startsWith('https://file+.vscode-resource.vscode-cdn.net/'), url);
    }
    for (const tag of page.matchAll(/<([a-zA-Z]+)((?:\s+[a-zA-Z-]+(?:="[^"]*")?)*)\s*\/?>/g)) {
      for (const a of (tag[2] ?? '').matchAll(/\s+([a-zA-Z-]+)(?:="[^"]*")?/g)) {
        assert.doesNotMatch(a[1] ?? '', /^on/i, `inline handler on <${tag[1]}>`);
      }
    }
    assert.doesNotMatch(page, /style="/);
    assert.match(page, /role="feed"/);
    assert.match(page, /Replay of session <code>20261202-142345-ea67b6<\/code> · 2 cards/);
    // every stylesheet, in order, each with the nonce
    const sheets = [...page.matchAll(/<link rel="stylesheet" href="([^"]*)" nonce="([^"]*)">/g)];
    assert.deepEqual(
      sheets.map((m) => m[1]?.replace(/^.*\/media\//, '')),
      PANEL_STYLESHEETS.map((name) => `styles/${name}.css`),
    );
    assert.ok(sheets.every((m) => m[2] === nonce));
  });

  it('the page loads every stylesheet of media/styles, and only those', () => {
    const dir = path.join(__dirname, '..', '..', 'media', 'styles');
    const files = fs.readdirSync(dir).filter((f) => f.endsWith('.css'));
    assert.deepEqual([...files].sort(), PANEL_STYLESHEETS.map((name) => `${name}.css`).sort());
    for (const file of files) {
      assert.ok(fs.readFileSync(path.join(dir, file), 'utf8').startsWith('/* '), `${file} starts with a comment saying what it styles`);
    }
  });
});
