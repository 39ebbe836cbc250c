// The chat with toolhost's agent (chat.ts): streamed text accumulated, reasoning folded, tool lines
// that lead to the cards, a retried request's text dropped, the footer's tokens and cost, the stop
// reasons and errors, the chat id carried to the next prompt, the wire shapes read leniently, and
// everything from the model or a tool escaped.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  asAgentMode,
  chatLogHtml,
  chatSectionHtml,
  ChatState,
  errorText,
  exchangeHtml,
  footerText,
  formatCost,
  stopText,
  type ChatExchange,
} from '../src/chat';
import {
  asAgentPromptResult,
  asAgentTokens,
  asAgentUpdate,
  asAgentUpdateParams,
  type AgentPromptResult,
  type AgentUpdate,
} from '../src/agentProtocol';
import { AgentPicker } from '../src/agentPicker';
import { attrValues, textOf } from './helpers';

const CHAT = 'chat_0123456789ab';
const RUN = 'run_1';

function update(state: ChatState, u: AgentUpdate, chatId = CHAT, runId = RUN): ChatExchange | undefined {
  return state.apply({ chatId, runId, update: u });
}

const readCard = {
  callId: 'call_r1',
  tool: 'read',
  status: 'pending' as const,
  kind: 'read',
  title: 'Read a.txt',
  text: '',
  rendered: 'read Read a.txt · pending · toolhost agent',
  caller: 'toolhost agent',
  locations: [],
};

function answered(overrides: Partial<AgentPromptResult> = {}): AgentPromptResult {
  return {
    chatId: CHAT,
    runId: RUN,
    stop: 'answered',
    turns: 2,
    answer: 'a.txt says hello.',
    usage: { promptTokens: 250, completionTokens: 30, totalTokens: 280, cachedTokens: 100 },
    cost: 0.00031,
    ...overrides,
  };
}

describe('chat state: streaming', () => {
  it('text pieces are appended into one block; reasoning is its own block', () => {
    const state = new ChatState();
    const x = state.begin('what does a.txt say?');
    update(state, { type: 'reasoning', text: 'The user ' });
    update(state, { type: 'reasoning', text: 'asks.' });
    update(state, { type: 'text', text: 'Let me ' });
    update(state, { type: 'text', text: 'read it.' });
    assert.deepEqual(x.items, [
      { kind: 'reasoning', text: 'The user asks.' },
      { kind: 'text', text: 'Let me read it.' },
    ]);
    assert.equal(state.chatId, CHAT, 'the chat id comes with the first update');
    assert.equal(x.runId, RUN);
    assert.equal(state.running, x);
  });

  it('a tool call is a line updated in place by its result; text after it is a new block', () => {
    const state = new ChatState();
    const x = state.begin('read a.txt');
    update(state, { type: 'text', text: 'Reading.' });
    update(state, { type: 'toolCall', callId: 'call_r1', name: 'read', card: readCard });
    assert.deepEqual(x.items[1], { kind: 'tool', callId: 'call_r1', name: 'read', title: 'Read a.txt', status: 'pending' });
    update(state, { type: 'toolResult', callId: 'call_r1', name: 'read', isError: false, text: '1\thello', card: { ...readCard, status: 'completed' } });
    update(state, { type: 'text', text: 'It says ' });
    update(state, { type: 'text', text: 'hello.' });
    assert.deepEqual(x.items, [
      { kind: 'text', text: 'Reading.' },
      { kind: 'tool', callId: 'call_r1', name: 'read', title: 'Read a.txt', status: 'completed' },
      { kind: 'text', text: 'It says hello.' },
    ]);
    const html = exchangeHtml(x);
    assert.deepEqual(attrValues(html, 'data-card'), ['call_r1'], 'the line leads to the card');
    assert.match(textOf(html), /✓ Read a\.txt/);
  });

  it('a failed call shows ✗ and the first line of its error; a call without a card shows the tool name', () => {
    const state = new ChatState();
    const x = state.begin('run it');
    update(state, { type: 'toolCall', callId: 'c1', name: 'bash' });
    update(state, { type: 'toolResult', callId: 'c1', name: 'bash', isError: true, text: '\nthe user rejected tool "bash"\nmore' });
    assert.deepEqual(x.items, [{ kind: 'tool', callId: 'c1', name: 'bash', title: 'bash', status: 'failed', error: 'the user rejected tool "bash"' }]);
    const html = exchangeHtml(x);
    assert.match(html, /data-status="failed"/);
    assert.match(textOf(html), /✗ bash/);
    assert.match(textOf(html), /the user rejected tool "bash"/);
  });

  it('usage updates are summed while the run goes; the footer shows them', () => {
    const state = new ChatState();
    const x = state.begin('q');
    assert.equal(footerText(x), '', 'nothing counted yet');
    update(state, { type: 'usage', promptTokens: 120, completionTokens: 10, totalTokens: 130, cachedTokens: 0 });
    update(state, { type: 'usage', promptTokens: 1400, completionTokens: 25, totalTokens: 1425, cachedTokens: 1100 });
    assert.deepEqual(x.usage, { promptTokens: 1520, completionTokens: 35, totalTokens: 1555, cachedTokens: 1100 });
    assert.equal(footerText(x), '1,520 tokens in · 35 out · 1,100 cached');
  });

  it('a retry drops what the failed attempt streamed, and says so', () => {
    const state = new ChatState();
    const x = state.begin('q');
    update(state, { type: 'text', text: 'First turn.' });
    update(state, { type: 'usage', promptTokens: 1, completionTokens: 1, totalTokens: 2, cachedTokens: 0 });
    update(state, { type: 'reasoning', text: 'hmm' });
    update(state, { type: 'text', text: 'Half an ans' });
    update(state, { type: 'retry', attempt: 1, delayMs: 2000, reason: 'the stream broke' });
    update(state, { type: 'text', text: 'The answer.' });
    assert.deepEqual(x.items, [
      { kind: 'text', text: 'First turn.' },
      { kind: 'note', text: 'the model request failed (the stream broke); retry 1 in 2 s' },
      { kind: 'text', text: 'The answer.' },
    ]);
  });

  it('a compaction is a note', () => {
    const state = new ChatState();
    const x = state.begin('q');
    update(state, { type: 'compaction', tokensBefore: 104000, tokensAfter: 20000, pruned: 3, summarized: true });
    assert.deepEqual(x.items, [{ kind: 'note', text: 'conversation compacted (104,000 → 20,000 tokens, 3 outputs pruned, summarized)' }]);
  });

  it('updates of another chat or run, or when nothing runs, are ignored', () => {
    const state = new ChatState();
    assert.equal(update(state, { type: 'text', text: 'x' }), undefined, 'nothing runs');
    const x = state.begin('q');
    update(state, { type: 'text', text: 'mine' });
    assert.equal(update(state, { type: 'text', text: 'other run' }, CHAT, 'run_other'), undefined);
    assert.equal(update(state, { type: 'text', text: 'other chat' }, 'chat_other', 'run_other'), undefined);
    assert.deepEqual(x.items, [{ kind: 'text', text: 'mine' }]);
  });

  it('one prompt at a time', () => {
    const state = new ChatState();
    state.begin('q');
    assert.throws(() => state.begin('again'), /still answering/);
  });
});

describe('chat state: the end of a run', () => {
  it('answered: the footer has turns, tokens in/out/cached and the cost; no stop line', () => {
    const state = new ChatState();
    const x = state.begin('q');
    update(state, { type: 'text', text: 'a.txt says hello.' });
    state.finish(x.key, answered());
    assert.equal(x.state, 'done');
    assert.equal(state.running, undefined);
    assert.equal(footerText(x), '2 turns · 250 tokens in · 30 out · 100 cached · $0.0003');
    assert.equal(stopText(x), undefined);
    assert.equal(errorText(x), undefined);
    assert.deepEqual(x.items, [{ kind: 'text', text: 'a.txt says hello.' }], 'the streamed answer is not repeated');
    const html = exchangeHtml(x);
    assert.match(html, /data-stop="answered"/);
    assert.match(html, /<div class="chat-footer">2 turns · 250 tokens in · 30 out · 100 cached · \$0\.0003<\/div>/);
    assert.doesNotMatch(html, /chat-working/);
  });

  it('without a price there is no cost; one turn is "1 turn"', () => {
    const state = new ChatState();
    const x = state.begin('q');
    state.finish(x.key, answered({ turns: 1, cost: undefined, usage: { promptTokens: 120, completionTokens: 10, totalTokens: 130, cachedTokens: 0 } }));
    assert.equal(footerText(x), '1 turn · 120 tokens in · 10 out · 0 cached');
  });

  it('an answer that was not streamed is shown from the result', () => {
    const state = new ChatState();
    const x = state.begin('q');
    update(state, { type: 'text', text: 'Reading.' });
    update(state, { type: 'toolCall', callId: 'c', name: 'read' });
    update(state, { type: 'toolResult', callId: 'c', name: 'read', isError: false, text: 'ok' });
    state.finish(x.key, answered({ answer: 'Done.' }));
    assert.deepEqual(x.items[x.items.length - 1], { kind: 'text', text: 'Done.' });
  });

  it('the stop reasons other than answered are said; failed shows the error', () => {
    const cases: [Partial<AgentPromptResult>, string | undefined, string | undefined][] = [
      [{ stop: 'turn-limit', turns: 50, answer: undefined }, 'Stopped at the turn limit (50 turns) before an answer.', undefined],
      [{ stop: 'token-budget', answer: undefined }, 'Stopped at the token budget before an answer.', undefined],
      [{ stop: 'cost-budget', answer: undefined }, 'Stopped at the cost budget before an answer.', undefined],
      [{ stop: 'cancelled', answer: undefined }, 'Stopped: the run was cancelled (the chat keeps what was said).', undefined],
      [{ stop: 'structured', answer: undefined, structured: { ok: true } }, 'Ended with a structured value.', undefined],
      [{ stop: 'failed', turns: 0, answer: undefined, error: 'MODEL_HTTP_ERROR: 401 Unauthorized' }, undefined, 'Failed: MODEL_HTTP_ERROR: 401 Unauthorized'],
      [{ stop: 'something-new', answer: undefined }, 'Stopped: something-new.', undefined],
    ];
    for (const [result, stop, error] of cases) {
      const state = new ChatState();
      const x = state.begin('q');
      state.finish(x.key, answered(result));
      assert.equal(stopText(x), stop, result.stop);
      assert.equal(errorText(x), error, result.stop);
      const html = exchangeHtml(x);
      assert.match(html, new RegExp(`data-stop="${result.stop ?? ''}"`));
      if (error) {
        assert.match(html, /<div class="chat-error" role="alert">/);
      }
      if (result.structured) {
        assert.match(html, /<pre class="chat-structured json">\{\n {2}&quot;ok&quot;: true\n\}<\/pre>/);
      }
    }
  });

  it('Stop: stopping, then cancelled with the tokens counted so far (no cost: the server did not answer)', () => {
    const state = new ChatState();
    const x = state.begin('q');
    update(state, { type: 'text', text: 'Partial' });
    update(state, { type: 'usage', promptTokens: 120, completionTokens: 10, totalTokens: 130, cachedTokens: 0 });
    state.stopping(x.key);
    assert.equal(x.state, 'stopping');
    assert.match(exchangeHtml(x), /Stopping…/);
    state.cancelled(x.key);
    assert.equal(x.state, 'done');
    assert.equal(stopText(x), 'Stopped: the run was cancelled (the chat keeps what was said).');
    assert.equal(footerText(x), '120 tokens in · 10 out · 0 cached');
    assert.match(exchangeHtml(x), /data-stop="cancelled"/);
    assert.equal(state.chatId, CHAT, 'the chat goes on after a Stop');
  });

  it('a request that failed shows its error', () => {
    const state = new ChatState();
    const x = state.begin('q');
    state.fail(x.key, 'the toolhost server is not running (stopped)');
    assert.equal(errorText(x), 'Failed: the toolhost server is not running (stopped)');
    assert.match(exchangeHtml(x), /data-stop="failed"/);
  });

  it('the next prompt continues the chat; New chat forgets it; a server restart does too, with a note', () => {
    const state = new ChatState();
    const first = state.begin('one');
    state.finish(first.key, answered());
    assert.equal(state.chatId, CHAT);
    const second = state.begin('two');
    assert.notEqual(second.key, first.key);
    update(state, { type: 'text', text: 'again' }, CHAT, 'run_2');
    state.finish(second.key, answered({ runId: 'run_2' }));
    assert.equal(state.exchanges.length, 2);
    state.forgetChat();
    assert.equal(state.chatId, undefined);
    assert.deepEqual(second.items[second.items.length - 1], { kind: 'note', text: 'the toolhost server restarted: the next prompt starts a new chat' });
    state.chatId = CHAT;
    state.clear();
    assert.equal(state.chatId, undefined);
    assert.equal(state.exchanges.length, 0);
    assert.equal(chatLogHtml(state), '');
  });
});

describe('chat HTML', () => {
  it('everything from the person, the model and the tools is escaped', () => {
    const state = new ChatState();
    const x = state.begin('<img src=x onerror=alert(1)> & "quotes"', 'accept-edits');
    update(state, { type: 'reasoning', text: '<script>alert(1)</script>' });
    update(state, { type: 'text', text: '**bold** <b>not bold</b> `<i>`' });
    update(state, { type: 'toolCall', callId: 'c"><script>', name: 'read', card: { ...readCard, callId: 'c"><script>', title: 'Read <evil>.txt' } });
    update(state, { type: 'toolResult', callId: 'c"><script>', name: 'read', isError: true, text: '<b>boom</b>' });
    state.finish(x.key, answered({ stop: 'failed', error: 'X: <u>bad</u>', answer: undefined }));
    const html = exchangeHtml(x);
    assert.doesNotMatch(html, /<script|<img|<b>|<u>|<i>|<evil>/);
    assert.match(html, /&lt;img src=x onerror=alert\(1\)&gt; &amp; &quot;quotes&quot;/);
    assert.match(html, /<strong>bold<\/strong> &lt;b&gt;not bold&lt;\/b&gt; <code>&lt;i&gt;<\/code>/, 'markdown, escaped');
    assert.deepEqual(attrValues(html, 'data-card'), ['c"><script>'], 'the call id is an escaped attribute');
    assert.match(textOf(html), /Read <evil>\.txt/);
    assert.match(html, /<span class="chat-mode-badge">accept-edits<\/span>/);
  });

  it('reasoning is folded (a closed details element) with a name the page keeps open', () => {
    const state = new ChatState();
    const x = state.begin('q');
    update(state, { type: 'reasoning', text: 'thinking' });
    const html = exchangeHtml(x);
    assert.match(html, /<details class="chat-reasoning" data-fold="r0"><summary>Reasoning<\/summary><div class="chat-reasoning-text">thinking<\/div><\/details>/);
    assert.doesNotMatch(html, /<details[^>]* open/);
  });

  it('while running: a working line; the box has Stop shown and Send disabled', () => {
    const state = new ChatState();
    const idle = chatSectionHtml(state, undefined, new AgentPicker());
    assert.match(idle, /<button type="button" id="chat-stop" class="action stop" hidden/);
    assert.doesNotMatch(idle, /id="chat-send"[^>]* disabled/);
    assert.match(idle, /<option value="" selected>default mode<\/option>/);
    const x = state.begin('q');
    assert.match(exchangeHtml(x), /<div class="chat-working" role="status">Working…<\/div>/);
    const running = chatSectionHtml(state, 'plan', new AgentPicker());
    assert.doesNotMatch(running, /id="chat-stop"[^>]* hidden/);
    assert.match(running, /id="chat-send" class="action primary" disabled/);
    assert.match(running, /<option value="plan" selected>plan<\/option>/);
    assert.deepEqual(attrValues(running, 'value'), ['toolhost', '', 'ask', 'accept-edits', 'plan', 'auto']);
    assert.doesNotMatch(running, /style=|on[a-z]+=/, 'no inline styles or handlers (CSP)');
  });

  it('cost: four decimals', () => {
    assert.equal(formatCost(0.0012), '$0.0012');
    assert.equal(formatCost(0), '$0.0000');
    assert.equal(formatCost(1.23456), '$1.2346');
  });

  it('modes from the page: the four, else the default', () => {
    assert.equal(asAgentMode('auto'), 'auto');
    assert.equal(asAgentMode('accept-edits'), 'accept-edits');
    assert.equal(asAgentMode(''), undefined);
    assert.equal(asAgentMode('yolo'), undefined);
    assert.equal(asAgentMode(3), undefined);
  });
});

describe('agent wire shapes', () => {
  it('updates are read leniently; junk and unknown kinds are skipped', () => {
    assert.deepEqual(asAgentUpdateParams({ chatId: CHAT, runId: RUN, update: { type: 'text', text: 'hi' } }), { chatId: CHAT, runId: RUN, update: { type: 'text', text: 'hi' } });
    assert.deepEqual(asAgentUpdateParams({ chatId: CHAT, runId: RUN, update: { type: 'usage', promptTokens: 5, completionTokens: 'x' } })?.update, {
      type: 'usage',
      promptTokens: 5,
      completionTokens: 0,
      totalTokens: 0,
      cachedTokens: 0,
    });
    const call = asAgentUpdateParams({ chatId: CHAT, runId: RUN, update: { type: 'toolCall', callId: 'c', name: 'read', card: readCard } })?.update;
    assert.equal(call?.type === 'toolCall' ? call.card?.title : undefined, 'Read a.txt');
    assert.equal(asAgentUpdateParams({ chatId: CHAT, runId: RUN, update: { type: 'somethingNew' } }), undefined);
    assert.equal(asAgentUpdateParams({ chatId: CHAT, runId: RUN, update: { type: 'toolCall', name: 'read' } }), undefined, 'no call id');
    assert.equal(asAgentUpdateParams({ runId: RUN, update: { type: 'text', text: 'x' } }), undefined, 'no chat id');
    assert.equal(asAgentUpdateParams(null), undefined);
  });

  it('results: the fields kept, junk dropped', () => {
    assert.deepEqual(asAgentPromptResult({ ...answered(), structured: null, error: null }), answered());
    assert.deepEqual(asAgentPromptResult({ chatId: CHAT, runId: RUN, stop: 'failed', turns: 0, usage: {}, error: 'E: x', cost: 'free' }), {
      chatId: CHAT,
      runId: RUN,
      stop: 'failed',
      turns: 0,
      usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0, cachedTokens: 0 },
      error: 'E: x',
    });
    assert.equal(asAgentPromptResult({ chatId: CHAT }), undefined);
    assert.equal(asAgentPromptResult(undefined), undefined);
  });
});

/** e2e/modelServer.mjs of this checkout (the tests run from vscode-extension/out/test). */
function modelServerScript(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'e2e', 'modelServer.mjs');
    if (fs.existsSync(candidate)) {
      return candidate;
    }
    if (path.dirname(dir) === dir) {
      throw new Error(`no e2e/modelServer.mjs above ${__dirname}`);
    }
  }
}

const bin = process.env.TOOLHOST_BIN;

// `toolhost agent --json` prints the same objects `toolhost/agentUpdate` carries: a real run
// against the scripted model server (the e2e's) fed into the chat gives the transcript and footer
// the panel shows.
describe('a real run of the agent (TOOLHOST_BIN, the scripted model server of the e2e)', { skip: !bin && 'TOOLHOST_BIN not set' }, () => {
  let dir = '';
  let model: ChildProcess | undefined;
  let port = 0;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolhost-chat-'));
    fs.mkdirSync(path.join(dir, 'ws'));
    fs.writeFileSync(path.join(dir, 'ws', 'a.txt'), 'hello\nworld\nthis is a.txt\nthe end\n');
    model = spawn(process.execPath, [modelServerScript()], { stdio: ['ignore', 'pipe', 'inherit'] });
    port = await new Promise<number>((resolve, reject) => {
      model?.stdout?.setEncoding('utf8').once('data', (line: string) => resolve(Number(line.trim())));
      model?.once('exit', (code) => reject(new Error(`the model server exited (${code})`)));
    });
    // The user config, as scripts/test.sh writes it for the e2e.
    fs.mkdirSync(path.join(dir, 'config', 'toolhost'), { recursive: true });
    fs.writeFileSync(
      path.join(dir, 'config', 'toolhost', 'config.toml'),
      `[agent]\nbase_url = "http://127.0.0.1:${port}/v1"\napi_key_env = ""\nmode = "auto"\n\n[agent.price]\ninput = 1.0\noutput = 2.0\n`,
    );
  });

  after(() => {
    model?.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('read a.txt, then the streamed answer; the footer has the run\'s tokens and cost', async () => {
    const child = spawn(bin ?? 'toolhost', ['agent', 'what does a.txt say?', '--json', '--session-dir', path.join(dir, 'sessions')], {
      cwd: path.join(dir, 'ws'),
      env: { ...process.env, XDG_CONFIG_HOME: path.join(dir, 'config'), XDG_STATE_HOME: path.join(dir, 'state'), XDG_DATA_HOME: path.join(dir, 'data') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    assert.equal(code, 0, `toolhost agent: exit ${code}\n${stderr}`);
    const lines = stdout.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as Record<string, unknown>);
    const end = lines.find((l) => l.type === 'end');
    assert.ok(end, stdout);
    const state = new ChatState();
    const x = state.begin('what does a.txt say?');
    for (const line of lines) {
      const u = asAgentUpdate(line);
      if (u) {
        state.apply({ chatId: 'chat_cli', runId: String(end.runId), update: u });
      }
    }
    state.finish(x.key, {
      chatId: 'chat_cli',
      runId: String(end.runId),
      stop: String(end.stop),
      turns: Number(end.turns),
      answer: String(end.answer),
      usage: asAgentTokens(end.usage),
      cost: Number(end.cost),
    });
    assert.equal(x.items.length, 3, JSON.stringify(x.items));
    assert.deepEqual(x.items[0], { kind: 'reasoning', text: 'The user asks about a.txt: read it first.' });
    const tool = x.items[1];
    assert.ok(tool?.kind === 'tool', JSON.stringify(tool));
    assert.equal(tool.name, 'read');
    assert.equal(tool.status, 'completed');
    assert.match(tool.title, /a\.txt/);
    assert.deepEqual(x.items[2], { kind: 'text', text: 'The file a.txt starts with **hello** and has 4 lines.' });
    assert.equal(footerText(x), '2 turns · 1,120 tokens in · 50 out · 100 cached · $0.0012');
    assert.equal(stopText(x), undefined);
    const html = exchangeHtml(x);
    assert.match(html, /<strong>hello<\/strong>/);
    assert.deepEqual(attrValues(html, 'data-card'), [tool.callId]);
    // what the model server was sent: the prompt, then the read's answer with the file's lines
    const sent = (await (await fetch(`http://127.0.0.1:${port}/requests`)).json()) as { messages: { role: string; content?: unknown }[] }[];
    assert.equal(sent.length, 2);
    const toolAnswer = sent[1]?.messages.find((m) => m.role === 'tool');
    assert.match(String(toolAnswer?.content), /this is a\.txt/);
  });
});
