// A workflow's cards (`group`, `usage`): a three-phase run's `subagent` children grouped under one
// heading per phase inside the run's card, each child's label and usage in its header, the run's
// summed usage in its own — live (children before the run's final card, a child before its run is
// known), in a replay (either order), and a ralph run's rounds, which have labels and no phase.
// The page is media/panel.js in jsdom, fed by a real CardStore through the messages panel.ts posts.
// With TOOLHOST_BIN: a real three-phase workflow (`toolhost call`, children answered by
// e2e/modelServer.mjs), its replayed cards drawn by the page.

import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { JSDOM } from 'jsdom';
import { asGroup, asUsage, childSections, costLabel, usageLabel } from '../src/cardGroups';
import { makeNonce, PANEL_STYLESHEETS, renderCard, renderPage } from '../src/cardHtml';
import { resetMessage, storeMessage, upsertMessage } from '../src/cardMessages';
import { CardStore } from '../src/cardStore';
import { cardTree, stepOf } from '../src/cardTree';
import { asCard, type Card } from '../src/cards';
import { textOf } from './helpers';

const RUN = 'call_wf';

const run: Card = {
  callId: RUN,
  tool: 'workflow',
  status: 'pending',
  kind: 'generic',
  title: 'Workflow: three phases',
  text: '',
  rendered: 'workflow Workflow: three phases · pending',
  locations: [],
};
/** Seven children of 305 tokens and $0.00031 each. */
const runDone: Card = {
  ...run,
  status: 'completed',
  text: 'workflow "three phases" completed (7 agents).',
  rendered: 'workflow Workflow: three phases · completed\nworkflow "three phases" completed (7 agents).',
  usage: { tokens: 2135, cost: 0.00217 },
};

/** Child `n` of the run (`<run>:agent:<n>`), in `phase` with `label`; completed with its usage. */
function child(n: number, phase: string | undefined, label: string, status: Card['status'] = 'completed'): Card {
  const title = `Subagent: ${phase === undefined ? label : `${phase} · ${label}`}`;
  const card: Card = {
    callId: `${RUN}:agent:${n}`,
    tool: 'subagent',
    parentCallId: RUN,
    status,
    kind: 'generic',
    title,
    text: status === 'completed' ? label.toUpperCase() : '',
    rendered: `subagent ${title} · ${status}`,
    locations: [],
    group: phase === undefined ? { label } : { phase, label },
  };
  if (status === 'completed') {
    card.usage = { tokens: 305, cost: 0.00031 };
  }
  return card;
}

/** The run's children as the workflow starts them: two in parallel, a pipeline of four, a judge. */
const CHILDREN: [number, string, string][] = [
  [1, 'survey', 'a'],
  [2, 'survey', 'b'],
  [3, 'draft', 'draft 0'],
  [4, 'draft', 'draft 1'],
  [5, 'draft', 'polish 0'],
  [6, 'draft', 'polish 1'],
  [7, 'verdict', 'judge'],
];
const done = CHILDREN.map(([n, phase, label]) => child(n, phase, label));
const pending = CHILDREN.map(([n, phase, label]) => child(n, phase, label, 'pending'));

/** The panel's page in jsdom, running media/panel.js, fed by `store`. */
function page(store: CardStore) {
  const html = renderPage({
    cspSource: 'vscode-resource:',
    nonce: makeNonce((n) => new Uint8Array(n)),
    scriptUri: 'vscode-resource:/panel.js',
    styleUris: PANEL_STYLESHEETS.map((n) => `vscode-resource:/${n}.css`),
    cardsHtml: resetMessage(store).html,
  });
  const dom = new JSDOM(html, { runScripts: 'outside-only' });
  const window = dom.window as unknown as Window & typeof globalThis & { acquireVsCodeApi?: unknown; eval(src: string): unknown };
  window.acquireVsCodeApi = () => ({ postMessage: () => undefined });
  window.eval(fs.readFileSync(path.join(__dirname, '..', '..', 'media', 'panel.js'), 'utf8'));
  store.onChange((event) => window.dispatchEvent(new window.MessageEvent('message', { data: storeMessage(store, event) })));
  const doc = window.document;
  const article = (callId: string) =>
    Array.from(doc.querySelectorAll('article[data-call-id]')).find((a) => (a as HTMLElement).dataset.callId === callId) as HTMLElement | undefined;
  const list = (callId: string) => article(callId)?.querySelector(':scope > details.card-children > .child-list');
  return {
    doc,
    article,
    top: () => Array.from(doc.querySelectorAll('#cards > article')).map((a) => (a as HTMLElement).dataset.callId),
    /** A parent's child list: `phase: [labels…]` per phase section, a bare label per child without one. */
    sections: (callId: string) =>
      Array.from(list(callId)?.children ?? []).map((el) => {
        const e = el as HTMLElement;
        if (e.classList.contains('child-phase')) {
          const heading = e.querySelector(':scope > .phase-heading')?.textContent ?? '';
          const labels = Array.from(e.querySelectorAll(':scope > article')).map((a) => a.querySelector(':scope > header .card-label')?.textContent);
          return `${heading}: ${labels.join(', ')}`;
        }
        return e.querySelector(':scope > header .card-label')?.textContent ?? e.dataset.callId ?? '';
      }),
    usageOf: (callId: string) => article(callId)?.querySelector(':scope > header .card-usage')?.textContent,
  };
}

const THREE_PHASES = ['survey: a, b', 'draft: draft 0, draft 1, polish 0, polish 1', 'verdict: judge'];

describe('workflow cards: group and usage from the wire', () => {
  it('a group keeps its non-empty strings; a usage a whole token count and a finite cost', () => {
    assert.deepEqual(asGroup({ phase: 'draft', label: 'a' }), { phase: 'draft', label: 'a' });
    assert.deepEqual(asGroup({ phase: '', label: 7 }), undefined);
    assert.deepEqual(asGroup('draft'), undefined);
    assert.deepEqual(asUsage({ tokens: 305, cost: 0.00031 }), { tokens: 305, cost: 0.00031 });
    assert.deepEqual(asUsage({ tokens: 305, cost: 'free' }), { tokens: 305 });
    assert.equal(asUsage({ tokens: -1 }), undefined);
    assert.equal(asUsage({ tokens: 1.5 }), undefined);
    const card = asCard({ ...child(1, 'survey', 'a'), group: { phase: 3 }, usage: { tokens: '305' } });
    assert.equal(card && 'group' in card, false);
    assert.equal(card && 'usage' in card, false);
    assert.deepEqual(asCard(child(1, 'survey', 'a'))?.group, { phase: 'survey', label: 'a' });
  });

  it('a usage reads as tokens with separators, then dollars (cents, or two digits below a cent)', () => {
    assert.equal(usageLabel({ tokens: 1234, cost: 0.0123 }), '1,234 tokens · $0.01');
    assert.equal(usageLabel({ tokens: 305 }), '305 tokens');
    assert.equal(usageLabel({ tokens: 1 }), '1 token');
    assert.equal(costLabel(0.00031), '$0.00031');
    assert.equal(costLabel(0.0021700000000000005), '$0.0022');
    assert.equal(costLabel(2.5), '$2.50');
    assert.equal(costLabel(0), '$0');
  });

  it("a parent's children split into phases in order of first appearance; children without one stay where they are", () => {
    const loose = { ...child(9, undefined, 'loose') };
    const nodes = [done[0]!, loose, done[2]!, done[1]!, done[6]!].map((card) => ({ card, children: [] }));
    // the tree orders siblings by the step their ids carry, whatever order their cards came in
    assert.deepEqual(cardTree([run, done[1]!, done[0]!])[0]?.children.map((c) => c.card.callId), [done[0]!.callId, done[1]!.callId]);
    assert.deepEqual([stepOf(RUN, `${RUN}:agent:12`), stepOf(RUN, `${RUN}:code:3`), stepOf(RUN, 'call_x'), stepOf(RUN, `${RUN}:agent:x`)], [12, 3, undefined, undefined]);
    const shape = childSections(nodes).map((s) => (s.phase === undefined ? s.node.card.callId : `${s.phase}: ${s.nodes.length}`));
    assert.deepEqual(shape, ['survey: 2', loose.callId, 'draft: 1', 'verdict: 1']);
  });

  it("a child's header shows its label and usage; the run's its sum; a child's message names its phase", () => {
    const html = renderCard(done[2]!);
    assert.match(textOf(html), /Subagent: draft · draft 0 · completed.*draft 0.*305 tokens · \$0\.00031/);
    assert.match(textOf(renderCard(runDone)), /2,135 tokens · \$0\.0022/);
    assert.doesNotMatch(renderCard(run), /card-usage/, 'a running run has no usage yet');
    const m = upsertMessage([run, ...done], done[2]!);
    assert.equal(m.type === 'upsert' && m.phase, 'draft');
    assert.equal(m.type === 'upsert' && 'phase' in upsertMessage([run, child(9, undefined, 'round 1')], child(9, undefined, 'round 1')), false);
  });
});

describe('workflow cards: the panel page (media/panel.js in jsdom)', () => {
  it('live: a three-phase run, children arriving before its final card, parallel children interleaved', () => {
    const store = new CardStore();
    const p = page(store);
    store.upsert(run);
    // the two survey children run in parallel: both start, then end in the other order
    store.upsert(pending[0]!);
    store.upsert(pending[1]!);
    store.upsert(done[1]!);
    assert.deepEqual(p.sections(RUN), ['survey: a, b']);
    assert.equal(p.usageOf(done[1]!.callId), '305 tokens · $0.00031');
    assert.equal(p.usageOf(pending[0]!.callId), undefined, 'a running child has no usage yet');
    store.upsert(done[0]!);
    for (let i = 2; i < 7; i++) {
      store.upsert(pending[i]!);
      store.upsert(done[i]!);
    }
    assert.deepEqual(p.sections(RUN), THREE_PHASES);
    assert.equal(p.article(RUN)?.querySelector(':scope > header .children-count')?.textContent, '7 calls');
    assert.equal(p.usageOf(RUN), undefined);
    store.upsert(runDone);
    assert.deepEqual(p.sections(RUN), THREE_PHASES, 'the final card keeps the phases');
    assert.equal(p.usageOf(RUN), '2,135 tokens · $0.0022');
    assert.equal(p.doc.querySelectorAll('article[data-call-id]').length, 8);
    assert.equal(p.doc.querySelectorAll('.phase-heading').length, 3);
  });

  it('parallel children whose cards come in the other order are drawn in the order the run made them, live and replayed', () => {
    const store = new CardStore();
    const p = page(store);
    store.upsert(run);
    store.upsert(pending[1]!);
    store.upsert(pending[0]!);
    const ids = () => Array.from(p.article(RUN)?.querySelectorAll('article') ?? []).map((a) => a.dataset.callId);
    assert.deepEqual(ids(), [pending[0]!.callId, pending[1]!.callId]);
    const m = upsertMessage(store.visible(), pending[0]!);
    assert.equal(m.type === 'upsert' && m.before, pending[1]!.callId);
    store.upsert(done[1]!);
    store.upsert(done[0]!);
    assert.deepEqual(p.sections(RUN), ['survey: a, b']);
    store.upsert(runDone);
    assert.deepEqual(p.sections(RUN), ['survey: a, b']);
    store.showReplay('s1', [runDone, done[1]!, done[0]!]);
    assert.deepEqual(p.sections(RUN), ['survey: a, b'], 'the log may hold them in the other order too');
  });

  it('a child that comes before its run is drawn at the top, then goes under its phase', () => {
    const store = new CardStore();
    const p = page(store);
    store.upsert(done[0]!);
    assert.deepEqual(p.top(), [done[0]!.callId]);
    store.upsert(run);
    assert.deepEqual(p.top(), [RUN]);
    assert.deepEqual(p.sections(RUN), ['survey: a']);
    store.upsert(done[2]!);
    assert.deepEqual(p.sections(RUN), ['survey: a', 'draft: draft 0']);
    assert.equal(p.doc.querySelectorAll('article[data-call-id]').length, 3);
  });

  it("replay: the same phases whether the run's card comes first or last", () => {
    const store = new CardStore();
    const p = page(store);
    for (const cards of [
      [runDone, ...done],
      [...done, runDone],
      [runDone, done[6]!, ...done.slice(0, 6)],
    ]) {
      store.showReplay('s1', cards);
      assert.deepEqual(p.top(), [RUN]);
      // the children in the order the run made them (their ids), whatever order the log has
      assert.deepEqual(p.sections(RUN), THREE_PHASES);
      assert.equal(p.usageOf(RUN), '2,135 tokens · $0.0022');
      assert.equal(p.usageOf(done[6]!.callId), '305 tokens · $0.00031');
    }
  });

  it("a ralph run's rounds and check have labels and no phase: no headings, each row labelled", () => {
    const store = new CardStore();
    const p = page(store);
    const ralph: Card = { ...runDone, tool: 'ralph', title: 'Ralph: make it so', usage: { tokens: 915 } };
    store.upsert({ ...ralph, status: 'pending', usage: null });
    store.upsert(child(1, undefined, 'round 1'));
    store.upsert(child(2, undefined, 'round 2'));
    store.upsert(child(3, undefined, 'check 2'));
    store.upsert(ralph);
    assert.deepEqual(p.sections(RUN), ['round 1', 'round 2', 'check 2']);
    assert.equal(p.doc.querySelectorAll('.phase-heading').length, 0);
    assert.equal(p.usageOf(RUN), '915 tokens');
  });
});

const bin = process.env.TOOLHOST_BIN;

describe('a real workflow (TOOLHOST_BIN, e2e/modelServer.mjs)', { skip: !bin && 'TOOLHOST_BIN not set' }, () => {
  it('three phases: the replayed cards drawn by phase, each child with its usage, the run with the sum', async (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolhost-workflow-'));
    const model = spawn(process.execPath, [path.join(__dirname, '..', '..', 'e2e', 'modelServer.mjs')], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const port = await new Promise<number>((resolve, reject) => {
        let out = '';
        model.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          if (out.includes('\n')) {
            resolve(Number(out.trim()));
          }
        });
        model.on('exit', () => reject(new Error('the model server exited')));
      });
      const ws = path.join(dir, 'ws');
      const sessions = path.join(dir, 'sessions');
      const config = path.join(dir, 'config');
      fs.mkdirSync(ws, { recursive: true });
      fs.mkdirSync(path.join(config, 'toolhost'), { recursive: true });
      fs.writeFileSync(path.join(ws, 'a.txt'), 'hello\n');
      // each child reads a.txt, then answers: 130 + 1,040 tokens, $0.00122 with these prices
      fs.writeFileSync(
        path.join(config, 'toolhost', 'config.toml'),
        `[agent]\nbase_url = "http://127.0.0.1:${port}/v1"\napi_key_env = ""\nmode = "auto"\n\n[agent.price]\ninput = 1.0\noutput = 2.0\n`,
      );
      const env = { ...process.env, XDG_CONFIG_HOME: config, XDG_STATE_HOME: path.join(dir, 'state') };
      const where = ['--workspace', ws, '--session-dir', sessions];
      const tools = JSON.parse(execFileSync(bin ?? '', ['tools', '--json', ...where], { encoding: 'utf8', env })) as { tools: { name: string }[] };
      if (!tools.tools.some((tool) => tool.name === 'workflow')) {
        t.skip('this server has no workflow tool');
        return;
      }
      const script = [
        'phase("survey");',
        'const found = await parallel([() => agent("survey one", { label: "one" }), () => agent("survey two", { label: "two" })]);',
        'phase("draft");',
        'const draft = await agent("draft it", { label: "draft" });',
        'phase("verdict");',
        'return { found, draft, verdict: await agent("judge it", { label: "judge" }) };',
      ].join('\n');
      const args = { meta: { name: 'three phases', description: 'a test' }, script };
      const out = JSON.parse(
        execFileSync(bin ?? '', ['call', 'workflow', JSON.stringify(args), '--json', ...where, '--session', 'wf'], { encoding: 'utf8', env }),
      ) as { callId: string; card: Card };
      assert.equal(out.card.status, 'completed', out.card.rendered);
      const replayed = execFileSync(bin ?? '', ['replay', 'wf', '--json', ...where], { encoding: 'utf8', env })
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => asCard(JSON.parse(l)))
        .filter((c): c is Card => c !== undefined);
      const children = replayed.filter((c) => c.parentCallId === out.callId);
      assert.equal(children.length, 4);
      for (const c of children) {
        assert.equal(c.usage?.tokens, 1170, JSON.stringify(c));
      }
      const store = new CardStore();
      const p = page(store);
      store.showReplay('wf', replayed);
      assert.deepEqual(p.top(), [out.callId]);
      // the two parallel children in the order the run started them, which is either
      const sections = p.sections(out.callId);
      assert.ok(['survey: one, two', 'survey: two, one'].includes(sections[0] ?? ''), sections.join(' | '));
      assert.deepEqual(sections.slice(1), ['draft: draft', 'verdict: judge']);
      assert.equal(p.usageOf(children[0]!.callId), '1,170 tokens · $0.0012');
      assert.equal(p.usageOf(out.callId), '4,680 tokens · $0.0049');
    } finally {
      model.kill();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
