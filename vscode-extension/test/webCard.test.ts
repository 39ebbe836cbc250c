// Web cards (`web_search`, `web_fetch`; `kind: "fetch"`): sources as buttons that open the URL
// (`openUrl`), escaping everywhere, only http(s) URLs clickable, the truncated note, no results,
// the fetch header (URL, redirect, HTTP pill, title, size, badges, Native text folded), the
// running cards, the URL check the panel makes before opening, and the generic fallback.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cardActions, cardView, renderCard } from '../src/cardHtml';
import type { Card } from '../src/cards';
import { asCard } from '../src/cards';
import { openableUrl, webCardUrls, webDataOf, webUrl } from '../src/webCard';
import { attrValues, textOf } from './helpers';

/** A completed `web_search` card as the server sends it (card.rs renders `rendered`). */
const searchCard: Card = {
  callId: 'call_search1',
  tool: 'web_search',
  status: 'completed',
  kind: 'fetch',
  title: 'Search greet function in C',
  text: 'Sources:\n- [Writing a greet function in C](https://example.com/c/greet)\n- [stdio.h reference](https://example.org/stdio)\n\nCite the relevant URLs above as markdown links in your answer.',
  rendered:
    'web_search Search greet function in C · completed\n- Writing a greet function in C <https://example.com/c/greet>\n- stdio.h reference <https://example.org/stdio>',
  locations: [],
  data: {
    queries: ['greet function in C'],
    sources: [
      { url: 'https://example.com/c/greet', title: 'Writing a greet function in C', snippet: 'A greeting function takes a name.' },
      { url: 'https://example.org/stdio', title: 'stdio.h reference' },
    ],
    truncated: false,
    answer: null,
  },
};

/** A completed `web_fetch` card (docs/tools.md's example, redirected and cut). */
const fetchCard: Card = {
  callId: 'call_fetch1',
  tool: 'web_fetch',
  status: 'completed',
  kind: 'fetch',
  title: 'Fetch http://127.0.0.1:8080/guide',
  text: 'Fetched http://127.0.0.1:8080/guide (HTTP 200)\n\nA greeting function takes a name <and> prints a short message.',
  rendered:
    'web_fetch Fetch http://127.0.0.1:8080/guide · completed\nhttp://127.0.0.1:8080/guide · HTTP 200 · "Greeting <guide>" · 633 bytes · truncated · cached\nA greeting function takes a name <and> prints a short message.',
  locations: [],
  data: {
    url: 'http://127.0.0.1:8080/guide',
    finalUrl: 'https://127.0.0.1:8443/guide/',
    status: 200,
    statusCode: 200,
    title: 'Greeting <guide>',
    contentType: 'text/html; charset=utf-8',
    size: 633,
    truncated: true,
    cached: true,
  },
};

function withData(card: Card, data: unknown, extra: Partial<Card> = {}): Card {
  return { ...card, ...extra, data };
}

/** The buttons that open a URL: their `data-url`s, in order. */
function openUrls(html: string): string[] {
  return [...html.matchAll(/<button [^>]*data-action="openUrl"[^>]*>/g)].map((m) => attrValues(m[0], 'data-url')[0] ?? '');
}

/** No markup of the page's or the provider's own: every `<` they sent arrives as text. */
function assertEscaped(html: string): void {
  assert.doesNotMatch(html, /<\/?(script|img|guide|and)[\s>]/i);
}

describe('web cards: search', () => {
  it('each source is a button that opens its URL, with the URL in muted text after it', () => {
    assert.equal(cardView(searchCard), 'web');
    const html = renderCard(searchCard);
    assert.match(html, /data-kind="fetch"/);
    assert.match(html, /data-view="web"/);
    assert.match(html, /class="card status-completed view-web"/);
    assert.deepEqual(openUrls(html), ['https://example.com/c/greet', 'https://example.org/stdio']);
    assert.match(
      html,
      /<li class="web-source"><button type="button" class="link web-source-title" data-action="openUrl" data-url="https:\/\/example.com\/c\/greet" title="Open https:\/\/example.com\/c\/greet in the browser">Writing a greet function in C<\/button> <span class="web-url">https:\/\/example.com\/c\/greet<\/span><div class="web-snippet">A greeting function takes a name.<\/div><\/li>/,
    );
    assert.match(html, /<ul class="web-queries" aria-label="queries"><li class="web-query">greet function in C<\/li><\/ul>/);
    // the Native text is still there, folded
    assert.match(html, /<details class="native"><summary>Native text<\/summary><pre class="native-text">Sources:/);
    assert.doesNotMatch(html, /web-more|web-empty|web-answer/);
    assert.deepEqual(cardActions(searchCard).map((a) => a.action), ['copy']);
  });

  it('a source without a title shows its URL as the label; the answer comes before the sources', () => {
    const card = withData(searchCard, { queries: ['q'], sources: [{ url: 'https://a.example/x' }, { url: 'https://b.example/', title: '' }], truncated: false, answer: 'Use printf.' });
    const html = renderCard(card);
    assert.match(html, /data-url="https:\/\/a.example\/x"[^>]*>https:\/\/a.example\/x<\/button>/);
    assert.match(html, /data-url="https:\/\/b.example\/"[^>]*>https:\/\/b.example\/<\/button>/);
    assert.match(html, /<div class="web-answer">Use printf.<\/div><ol class="web-sources"/);
  });

  it('titles, snippets, queries, answers and URLs are escaped', () => {
    const card = withData(searchCard, {
      queries: ['<img src=x onerror=alert(1)>'],
      sources: [{ url: 'https://evil.example/?a=1&b="2"', title: '<script>alert(1)</script>', snippet: '<b>bold</b> & co' }],
      truncated: false,
      answer: '</div><script>x()</script>',
    });
    const html = renderCard(card);
    assertEscaped(html);
    assert.match(html, />&lt;script&gt;alert\(1\)&lt;\/script&gt;<\/button>/);
    assert.match(html, /<li class="web-query">&lt;img src=x onerror=alert\(1\)&gt;<\/li>/);
    assert.match(html, /<div class="web-snippet">&lt;b&gt;bold&lt;\/b&gt; &amp; co<\/div>/);
    assert.match(html, /<div class="web-answer">&lt;\/div&gt;&lt;script&gt;x\(\)&lt;\/script&gt;<\/div>/);
    // the attribute holds the URL exactly (normalized by URL: the quotes percent-encoded)
    assert.deepEqual(openUrls(html), ['https://evil.example/?a=1&b=%222%22']);
    assert.match(html, /<span class="web-url">https:\/\/evil.example\/\?a=1&amp;b=&quot;2&quot;<\/span>/);
  });

  it('a javascript: (or any non-http) URL is never clickable: its title is plain text', () => {
    const bad = ['javascript:alert(1)', 'JavaScript:alert(document.cookie)', 'data:text/html,<script>alert(1)</script>', 'file:///etc/passwd', 'vscode://x', 'not a url', ' https://padded.example/'];
    const card = withData(searchCard, {
      queries: ['q'],
      sources: [...bad.map((url, i) => ({ url, title: `bad ${i}` })), { url: 'http://good.example/', title: 'good' }],
      truncated: false,
    });
    const html = renderCard(card);
    assert.deepEqual(openUrls(html), ['http://good.example/']);
    assert.equal((html.match(/data-action="openUrl"/g) ?? []).length, 1);
    assert.doesNotMatch(html, /data-url="(?!http:\/\/good)/);
    assert.match(html, /<span class="web-source-title web-nolink">bad 0<\/span> <span class="web-url">javascript:alert\(1\)<\/span>/);
    assertEscaped(html);
    for (const url of bad) {
      assert.equal(webUrl(url), undefined, url);
    }
  });

  it('truncated: "(more sources were left out)" after the sources', () => {
    const card = withData(searchCard, { ...(searchCard.data as object), truncated: true });
    const html = renderCard(card);
    assert.match(html, /<\/ol><div class="web-more">\(more sources were left out\)<\/div><\/div>/);
  });

  it('no sources: "No results found."', () => {
    const card = withData(searchCard, { queries: ['nothing here'], sources: [], truncated: false, answer: null });
    assert.equal(cardView(card), 'web');
    const html = renderCard(card);
    assert.match(html, /<div class="web-empty">No results found.<\/div>/);
    assert.deepEqual(openUrls(html), []);
    assert.doesNotMatch(html, /web-sources/);
  });

  it('running: the queries and "searching…", Stop', () => {
    const card = withData(searchCard, { queries: ['a', 'b'] }, { status: 'pending', text: '', rendered: 'web_search Search a · b · pending' });
    assert.equal(cardView(card), 'web');
    const html = renderCard(card);
    assert.match(html, /<li class="web-query">a<\/li><li class="web-query">b<\/li>/);
    assert.match(html, /<div class="web-waiting">searching…<\/div>/);
    assert.deepEqual(cardActions(card).map((a) => a.action), ['stop']);
    assert.doesNotMatch(html, /native/);
  });
});

describe('web cards: fetch', () => {
  it('the header: the URL and where it led as buttons, the HTTP pill, title, size, the badges; the page folded', () => {
    assert.equal(cardView(fetchCard), 'web');
    const html = renderCard(fetchCard);
    assert.deepEqual(openUrls(html), ['http://127.0.0.1:8080/guide', 'https://127.0.0.1:8443/guide/']);
    assert.match(html, /<div class="web-target"><button type="button" class="link web-page-url" data-action="openUrl" data-url="http:\/\/127.0.0.1:8080\/guide"[^>]*>http:\/\/127.0.0.1:8080\/guide<\/button>/);
    assert.match(html, /<span class="web-redirect"><span class="web-arrow" aria-label="redirected to"> → <\/span><button [^>]*class="link web-final-url"[^>]*>https:\/\/127.0.0.1:8443\/guide\/<\/button><\/span>/);
    assert.match(html, /<span class="pill web-status ok">HTTP 200<\/span>/);
    assert.match(html, /<span class="web-title">&quot;Greeting &lt;guide&gt;&quot;<\/span>/);
    assert.match(html, /<span class="web-size">633 bytes<\/span>/);
    assert.match(html, /<span class="web-type">text\/html; charset=utf-8<\/span>/);
    assert.match(html, /<span class="pill web-flag web-truncated">truncated<\/span><span class="pill web-flag web-cached">cached<\/span>/);
    // the page is the Native text, in a collapsed <details>
    assert.match(html, /<details class="native"><summary>Native text<\/summary><pre class="native-text">Fetched http:\/\/127.0.0.1:8080\/guide \(HTTP 200\)\n\nA greeting function takes a name &lt;and&gt; prints a short message.<\/pre><\/details>/);
    assert.doesNotMatch(html, /<details class="native" open/);
    assertEscaped(html);
    const meta = /<div class="web-meta">(.*?)<\/div>/.exec(html)?.[1] ?? '';
    assert.equal(textOf(meta), 'HTTP 200"Greeting <guide>"633 bytestext/html; charset=utf-8truncatedcached');
  });

  it('no redirect, no badges: one button; an error status is a failure-toned pill', () => {
    const card = withData(fetchCard, { url: 'https://example.com/missing', finalUrl: 'https://example.com/missing', statusCode: 404, title: null, contentType: null, size: 0, truncated: false, cached: false });
    const html = renderCard(card);
    assert.deepEqual(openUrls(html), ['https://example.com/missing']);
    assert.doesNotMatch(html, /web-redirect|web-flag|web-title|web-type/);
    assert.match(html, /<span class="pill web-status fail">HTTP 404<\/span>/);
    assert.match(html, /<span class="web-size">0 bytes<\/span>/);
    assert.match(renderCard(withData(card, { ...(card.data as object), statusCode: 304 })), /web-status other">HTTP 304</);
  });

  it('a URL that is not http(s) is shown as text, never as a button', () => {
    const card = withData(fetchCard, { url: 'javascript:alert(1)', finalUrl: 'javascript:alert(2)', statusCode: 200, truncated: false, cached: false });
    const html = renderCard(card);
    assert.deepEqual(openUrls(html), []);
    assert.match(html, /<span class="web-page-url web-nolink">javascript:alert\(1\)<\/span>/);
    assert.match(html, /<span class="web-final-url web-nolink">javascript:alert\(2\)<\/span>/);
  });

  it('running: the URL as a button and "fetching…"', () => {
    const card = withData(fetchCard, { url: 'https://example.com/' }, { status: 'pending', text: '', rendered: 'web_fetch Fetch https://example.com/ · pending' });
    assert.equal(cardView(card), 'web');
    const html = renderCard(card);
    assert.deepEqual(openUrls(html), ['https://example.com/']);
    assert.match(html, /<div class="web-waiting">fetching…<\/div>/);
    assert.doesNotMatch(html, /web-meta/);
  });
});

describe('web cards: the view and the fallback', () => {
  it('a failed web card is generic: its error is the body', () => {
    for (const card of [
      withData(fetchCard, { url: 'http://10.0.0.1/' }, { status: 'failed', text: 'Error: WEB_SSRF_DENIED <private>' }),
      withData(searchCard, { queries: ['q'] }, { status: 'failed', text: 'Error: web_search has no provider' }),
      // even with complete data
      { ...fetchCard, status: 'failed' as const },
      { ...searchCard, status: 'failed' as const },
    ]) {
      assert.equal(cardView(card), 'generic', card.callId);
      const html = renderCard(card);
      assert.match(html, /data-view="generic"/);
      assert.match(html, /<pre class="native-text error">/);
      assert.doesNotMatch(html, /openUrl/);
    }
  });

  it('data of another shape, or another kind, is generic', () => {
    const cases: unknown[] = [
      undefined,
      null,
      'https://example.com',
      [],
      {},
      { url: 'x' }, // a completed fetch needs its statusCode (dataCards.test.ts's fallback case)
      { url: 3, statusCode: 200 },
      { sources: 'nope' },
      { sources: [{ title: 'no url' }] },
      { sources: [null] },
    ];
    for (const data of cases) {
      const card = withData(fetchCard, data);
      assert.equal(webDataOf(card), undefined, JSON.stringify(data));
      assert.equal(cardView(card), 'generic', JSON.stringify(data));
    }
    assert.equal(cardView({ ...searchCard, kind: 'generic' }), 'generic');
    assert.equal(cardView({ ...fetchCard, kind: 'mcp' }), 'generic');
    // the wire keeps the data as it is
    assert.deepEqual(asCard(JSON.parse(JSON.stringify(searchCard))), searchCard);
  });

  it('webDataOf: the shapes it reads', () => {
    assert.deepEqual(webDataOf(searchCard), {
      type: 'search',
      queries: ['greet function in C'],
      sources: [
        { url: 'https://example.com/c/greet', title: 'Writing a greet function in C', snippet: 'A greeting function takes a name.' },
        { url: 'https://example.org/stdio', title: 'stdio.h reference' },
      ],
      truncated: false,
    });
    assert.deepEqual(webDataOf(fetchCard), {
      type: 'page',
      url: 'http://127.0.0.1:8080/guide',
      finalUrl: 'https://127.0.0.1:8443/guide/',
      statusCode: 200,
      title: 'Greeting <guide>',
      contentType: 'text/html; charset=utf-8',
      size: 633,
      truncated: true,
      cached: true,
    });
  });
});

describe('web cards: what the panel opens', () => {
  it('only an http(s) URL the card shows', () => {
    assert.equal(openableUrl(searchCard, 'https://example.org/stdio'), 'https://example.org/stdio');
    assert.equal(openableUrl(searchCard, 'https://example.com/c/greet'), 'https://example.com/c/greet');
    assert.equal(openableUrl(searchCard, 'https://elsewhere.example/'), undefined, 'not one of its sources');
    assert.equal(openableUrl(searchCard, 'javascript:alert(1)'), undefined);
    assert.equal(openableUrl(searchCard, undefined), undefined);
    assert.equal(openableUrl(searchCard, 42), undefined);
    assert.equal(openableUrl(fetchCard, 'https://127.0.0.1:8443/guide/'), 'https://127.0.0.1:8443/guide/');
    assert.equal(openableUrl(fetchCard, 'http://127.0.0.1:8080/guide'), 'http://127.0.0.1:8080/guide');
    assert.equal(openableUrl({ ...fetchCard, kind: 'generic' }, 'http://127.0.0.1:8080/guide'), undefined);
    const js = withData(searchCard, { queries: [], sources: [{ url: 'javascript:alert(1)' }], truncated: false });
    assert.deepEqual(webCardUrls(webDataOf(js)!), []);
    assert.equal(openableUrl(js, 'javascript:alert(1)'), undefined, 'a source that is not http(s) is never opened');
  });

  it('every button of a card is one the panel opens', () => {
    for (const card of [searchCard, fetchCard]) {
      const urls = openUrls(renderCard(card));
      assert.ok(urls.length > 0);
      for (const url of urls) {
        assert.equal(openableUrl(card, url), url, url);
      }
    }
  });
});
