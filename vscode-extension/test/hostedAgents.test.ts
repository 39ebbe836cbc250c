// The chat with an agent toolhost hosts (agentPicker.ts, chat.ts, agentProtocol.ts): the agents of
// `toolhost/listAgents` read leniently and offered in the chat box (the uninstalled disabled,
// saying what to install), the pick, the `agent` a prompt's params carry, a chat that stays with the
// agent it started with (and New chat that may pick another), the plan and context updates (valid
// and invalid shapes, drawn as a checklist and a small line), the steps' cards linked like the
// own agent's, and a hosted agent's own settings beside the picker (`toolhost/agentOptions` read
// when it is picked, drawn as selects, changed with `toolhost/agentSetOption`, replaced by an
// `{type: "options"}` update, hidden for the own agent, read again for a new chat).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import Ajv2020 from 'ajv/dist/2020';
import { AgentPicker, agentOptionsHtml, notInstalledText, OWN_CHAT_AGENT, promptParams } from '../src/agentPicker';
import { AGENT_OPTION_METHODS, asAgentOptions, asAgentOptionsResult, asAgentUpdate, asHostedAgents, type AgentOptionsResult, type HostedAgentInfo } from '../src/agentProtocol';
import { AgentSettings, agentSettingsHtml } from '../src/agentSettings';
import { chatSectionHtml, ChatState, contextText, exchangeHtml } from '../src/chat';
import { methods } from '../src/protocol';
import { attrValues, textOf } from './helpers';

const CLAUDE: HostedAgentInfo = {
  name: 'claude',
  title: 'Claude Code',
  command: 'claude-agent-acp',
  installed: true,
  package: '@agentclientprotocol/claude-agent-acp',
  configured: true,
};
const CODEX: HostedAgentInfo = { name: 'codex', title: 'Codex', command: 'codex-acp', installed: false, package: '@zed-industries/codex-acp', configured: false };

function picker(agents: HostedAgentInfo[] = [CLAUDE, CODEX]): AgentPicker {
  const p = new AgentPicker();
  p.setAgents(agents);
  return p;
}

describe('toolhost/listAgents', () => {
  it('is a method of the protocol', () => {
    assert.equal(methods.listAgents, 'toolhost/listAgents');
  });

  // [raw result, the agents read]
  const cases: [string, unknown, HostedAgentInfo[]][] = [
    ['the server\'s shape', { agents: [CLAUDE, CODEX] }, [CLAUDE, CODEX]],
    ['no title: the name; no package: none', { agents: [{ name: 'mine', command: 'my-acp', installed: true, configured: true }] }, [{ name: 'mine', title: 'mine', command: 'my-acp', installed: true, configured: true }]],
    ['installed only when true', { agents: [{ name: 'x', title: 'X', installed: 'yes' }] }, [{ name: 'x', title: 'X', command: '', installed: false, configured: false }]],
    ['entries without a name, and the own agent, dropped', { agents: [{ title: 'nameless' }, 7, { name: '' }, { name: 'toolhost', installed: true }, CLAUDE] }, [CLAUDE]],
    ['junk: none', { agents: 'claude' }, []],
    ['nothing: none', undefined, []],
  ];
  for (const [name, raw, expected] of cases) {
    it(name, () => {
      assert.deepEqual(asHostedAgents(raw), expected);
    });
  }
});

describe('the agent picker', () => {
  it('starts with toolhost\'s own agent, before and after the list came', () => {
    assert.deepEqual(new AgentPicker().picked, OWN_CHAT_AGENT);
    assert.deepEqual(picker().picked, { name: 'toolhost', title: 'toolhost agent' });
  });

  it('picks an installed agent; refuses one that is not installed or unknown', () => {
    const p = picker();
    assert.equal(p.pick('codex'), false);
    assert.equal(p.pick('gemini'), false);
    assert.equal(p.pick(42), false);
    assert.equal(p.picked.name, 'toolhost');
    assert.equal(p.pick('claude'), true);
    assert.deepEqual(p.picked, { name: 'claude', title: 'Claude Code' });
    assert.equal(p.pick('toolhost'), true);
    assert.equal(p.picked.name, 'toolhost');
  });

  it('falls back to the own agent when a new list lacks the pick', () => {
    const p = picker();
    p.pick('claude');
    p.setAgents([{ ...CLAUDE, installed: false }]);
    assert.equal(p.picked.name, 'toolhost');
  });

  it('offers the own agent first, then each agent by title; the uninstalled disabled, saying what to install', () => {
    const p = picker();
    p.pick('claude');
    const html = agentOptionsHtml(p, undefined);
    assert.deepEqual(attrValues(html, 'value'), ['toolhost', 'claude', 'codex']);
    assert.match(html, /<option value="claude" selected>Claude Code<\/option>/);
    assert.match(html, /<option value="codex" disabled title="not installed — npm install -g @zed-industries\/codex-acp">Codex \(not installed — npm install -g @zed-industries\/codex-acp\)<\/option>/);
    assert.match(html, /<option value="toolhost">toolhost agent<\/option>/);
  });

  it('says what is missing when the server names no package', () => {
    assert.equal(notInstalledText({ ...CODEX, package: undefined } as HostedAgentInfo), 'not installed — codex-acp not found');
  });

  it('the chat box: the select locked to the chat\'s agent once the chat started, free again after New chat', () => {
    const p = picker();
    p.pick('claude');
    const state = new ChatState();
    assert.match(chatSectionHtml(state, undefined, p), /<select id="chat-agent" aria-label="The agent that answers" title="[^"]*">/);
    state.begin('edit a.txt', undefined, p.picked);
    p.pick('toolhost');
    const locked = chatSectionHtml(state, undefined, p);
    assert.match(locked, /<select id="chat-agent" aria-label="The agent that answers" disabled title="This chat is with Claude Code: New chat to pick another agent">/);
    assert.match(locked, /<option value="claude" selected>Claude Code<\/option>/, 'the chat\'s agent, not the new pick');
    state.clear();
    assert.match(chatSectionHtml(state, undefined, p), /<option value="toolhost" selected>/);
  });

  it('a chat\'s agent the list no longer names is still shown', () => {
    const html = agentOptionsHtml(picker([]), { name: 'claude', title: 'Claude Code' });
    assert.deepEqual(attrValues(html, 'value'), ['toolhost', 'claude']);
    assert.match(html, /<option value="claude" selected>Claude Code<\/option>/);
  });
});

describe('toolhost/agentPrompt params', () => {
  const claude = { name: 'claude', title: 'Claude Code' };
  // [name, params of promptParams, expected]
  const cases: [string, Parameters<typeof promptParams>, object][] = [
    ['the own agent: no agent, its mode', ['hi', OWN_CHAT_AGENT, undefined, 'plan'], { prompt: 'hi', mode: 'plan' }],
    ['the own agent continuing', ['more', OWN_CHAT_AGENT, 'chat_1', undefined], { prompt: 'more', chatId: 'chat_1' }],
    ['a hosted agent: its name, no mode (it asks through its own permission requests)', ['edit', claude, undefined, 'auto'], { prompt: 'edit', agent: 'claude' }],
    ['a hosted agent continuing', ['again', claude, 'chat_2', undefined], { prompt: 'again', chatId: 'chat_2', agent: 'claude' }],
  ];
  for (const [name, args, expected] of cases) {
    it(name, () => {
      assert.deepEqual(promptParams(...args), expected);
    });
  }
});

describe('a chat stays with its agent', () => {
  it('continuing reuses the chat id and the agent, whatever is picked meanwhile; New chat picks again', () => {
    const p = picker();
    p.pick('claude');
    const state = new ChatState();
    const first = state.begin('edit a.txt', undefined, p.picked);
    assert.deepEqual(promptParams(first.prompt, first.agent, state.chatId, undefined), { prompt: 'edit a.txt', agent: 'claude' });
    state.apply({ chatId: 'chat_c', runId: 'run_1', update: { type: 'text', text: 'Done.' } });
    state.finish(first.key, { chatId: 'chat_c', runId: 'run_1', stop: 'answered', turns: 1, usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0, cachedTokens: 0 } });

    p.pick('toolhost');
    const second = state.begin('and b.txt', 'plan', p.picked);
    assert.deepEqual(second.agent, { name: 'claude', title: 'Claude Code' });
    assert.deepEqual(promptParams(second.prompt, second.agent, state.chatId, second.mode), { prompt: 'and b.txt', chatId: 'chat_c', agent: 'claude' });
    assert.equal(second.startsChat, false);

    state.clear();
    const third = state.begin('hello', undefined, p.picked);
    assert.deepEqual(third.agent, OWN_CHAT_AGENT);
    assert.deepEqual(promptParams(third.prompt, third.agent, state.chatId, undefined), { prompt: 'hello' });
  });

  it('the first exchange says which agent answers; every exchange names it', () => {
    const state = new ChatState();
    const first = state.begin('edit a.txt', undefined, { name: 'claude', title: 'Claude Code' });
    const html = exchangeHtml(first);
    assert.match(html, /<div class="chat-head" data-agent="claude">Chat with Claude Code<\/div>/);
    assert.match(html, /<div class="chat-agent"><div class="chat-who">Claude Code<\/div>/);
    state.finish(first.key, { chatId: 'c', runId: 'r', stop: 'answered', turns: 1, usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0, cachedTokens: 0 } });
    const next = exchangeHtml(state.begin('more'));
    assert.doesNotMatch(next, /chat-head/);
    assert.match(next, /<div class="chat-who">Claude Code<\/div>/);
  });

  it('the own agent\'s chat says so too', () => {
    assert.match(exchangeHtml(new ChatState().begin('hi')), /Chat with toolhost agent<\/div>.*<div class="chat-who">toolhost agent<\/div>/);
  });
});

describe('a hosted agent\'s late updates', () => {
  const ZERO = { promptTokens: 0, completionTokens: 0, totalTokens: 0, cachedTokens: 0 };
  const claude = { name: 'claude', title: 'Claude Code' };

  it('a step that ends after the turn was answered completes its line in the finished exchange', () => {
    const state = new ChatState();
    const x = state.begin('edit a.txt', undefined, claude);
    state.apply({ chatId: 'c', runId: 'r1', update: { type: 'toolCall', callId: 's1', name: 'Edit a.txt' } });
    state.finish(x.key, { chatId: 'c', runId: 'r1', stop: 'answered', turns: 1, answer: 'Done.', usage: ZERO });
    assert.equal(state.apply({ chatId: 'c', runId: 'r1', update: { type: 'toolResult', callId: 's1', name: 'Edit a.txt', isError: false, text: 'ok' } }), x);
    assert.deepEqual(x.items[0], { kind: 'tool', callId: 's1', name: 'Edit a.txt', title: 'Edit a.txt', status: 'completed' });
    assert.equal(state.apply({ chatId: 'c', runId: 'r1', update: { type: 'text', text: 'late text' } }), undefined, 'no text after the answer');
  });

  it('a step whose result never streamed completes its line from its final card', () => {
    const state = new ChatState();
    const x = state.begin('edit a.txt', undefined, claude);
    state.apply({ chatId: 'c', runId: 'r1', update: { type: 'toolCall', callId: 's1', name: 'Edit a.txt' } });
    state.apply({ chatId: 'c', runId: 'r1', update: { type: 'toolCall', callId: 's2', name: 'Bash' } });
    state.apply({ chatId: 'c', runId: 'r1', update: { type: 'toolResult', callId: 's2', name: 'Bash', isError: true, text: 'exit 1' } });
    state.finish(x.key, { chatId: 'c', runId: 'r1', stop: 'answered', turns: 1, usage: ZERO });
    assert.equal(state.settle({ callId: 's1', status: 'pending', title: 'Edit a.txt' }), undefined, 'a pending card settles nothing');
    assert.equal(state.settle({ callId: 's1', status: 'completed', title: 'Edit a.txt' }), x);
    assert.equal(state.settle({ callId: 's2', status: 'completed', title: 'Bash' }), undefined, 'a line with its result keeps it');
    assert.equal(state.settle({ callId: 'other', status: 'completed', title: 'x' }), undefined);
    assert.deepEqual(
      x.items.map((i) => (i.kind === 'tool' ? i.status : i.kind)),
      ['completed', 'failed'],
    );
  });

  it('a late update of the last run does not become the next run\'s', () => {
    const state = new ChatState();
    const first = state.begin('edit a.txt', undefined, claude);
    state.apply({ chatId: 'c', runId: 'r1', update: { type: 'toolCall', callId: 's1', name: 'Edit a.txt' } });
    state.finish(first.key, { chatId: 'c', runId: 'r1', stop: 'answered', turns: 1, usage: ZERO });
    const second = state.begin('more');
    state.apply({ chatId: 'c', runId: 'r1', update: { type: 'toolResult', callId: 's1', name: 'Edit a.txt', isError: false, text: 'ok' } });
    assert.equal(second.runId, undefined, 'the next run is still unnamed');
    assert.deepEqual(second.items, []);
    state.apply({ chatId: 'c', runId: 'r2', update: { type: 'text', text: 'Done.' } });
    assert.equal(second.runId, 'r2');
  });

  it('a hosted agent\'s exchange shows no permission mode (none is sent)', () => {
    const state = new ChatState();
    assert.equal(state.begin('edit', 'accept-edits', claude).mode, undefined);
    assert.doesNotMatch(exchangeHtml(state.exchanges[0]!), /chat-mode-badge/);
    assert.equal(new ChatState().begin('hi', 'plan').mode, 'plan');
  });
});

describe('plan and context updates', () => {
  // [name, raw update, what is read (undefined: skipped)]
  const cases: [string, unknown, unknown][] = [
    [
      'a plan',
      { type: 'plan', entries: [{ content: 'Read a.txt', status: 'completed', priority: 'high' }, { content: 'Edit it', status: 'in_progress', priority: 'medium' }] },
      { type: 'plan', entries: [{ content: 'Read a.txt', status: 'completed', priority: 'high' }, { content: 'Edit it', status: 'in_progress', priority: 'medium' }] },
    ],
    ['an empty plan', { type: 'plan', entries: [] }, { type: 'plan', entries: [] }],
    [
      'a plan\'s entries without text dropped, missing status and priority defaulted',
      { type: 'plan', entries: [{ content: '  ' }, 'x', null, { content: 'Test', status: 3 }] },
      { type: 'plan', entries: [{ content: 'Test', status: 'pending', priority: 'medium' }] },
    ],
    ['a plan without entries', { type: 'plan' }, undefined],
    ['a plan whose entries are not a list', { type: 'plan', entries: { content: 'x' } }, undefined],
    ['a context', { type: 'context', used: 12345, size: 200000 }, { type: 'context', used: 12345, size: 200000 }],
    [
      'a context with its cost',
      { type: 'context', used: 1, size: 2, cost: { amount: 0.0123, currency: 'USD' } },
      { type: 'context', used: 1, size: 2, cost: { amount: 0.0123, currency: 'USD' } },
    ],
    ['a context whose cost is junk: without it', { type: 'context', used: 1, size: 2, cost: { amount: 'lots' } }, { type: 'context', used: 1, size: 2 }],
    ['a context without size', { type: 'context', used: 5 }, undefined],
    ['a context with a negative count', { type: 'context', used: -1, size: 10 }, undefined],
    ['a context with strings', { type: 'context', used: '5', size: '10' }, undefined],
    ['an unknown kind, still skipped', { type: 'available_commands', commands: [] }, undefined],
  ];
  for (const [name, raw, expected] of cases) {
    it(name, () => {
      assert.deepEqual(asAgentUpdate(raw), expected);
    });
  }

  it('the latest plan replaces the earlier one, in place, as a checklist', () => {
    const state = new ChatState();
    const x = state.begin('edit a.txt', undefined, { name: 'claude', title: 'Claude Code' });
    const apply = (raw: unknown) => {
      const update = asAgentUpdate(raw);
      assert.ok(update);
      state.apply({ chatId: 'c', runId: 'r', update });
    };
    apply({ type: 'plan', entries: [{ content: 'Read a.txt', status: 'in_progress', priority: 'high' }, { content: 'Edit <a.txt>', status: 'pending', priority: 'low' }] });
    apply({ type: 'text', text: 'Reading.' });
    apply({ type: 'plan', entries: [{ content: 'Read a.txt', status: 'completed', priority: 'high' }, { content: 'Edit <a.txt>', status: 'in_progress', priority: 'low' }] });
    assert.deepEqual(
      x.items.map((i) => i.kind),
      ['plan', 'text'],
    );
    const html = exchangeHtml(x);
    assert.equal((html.match(/class="chat-plan"/g) ?? []).length, 1);
    assert.match(html, /<li class="chat-plan-entry" data-status="completed" data-priority="high"><span class="chat-plan-mark" aria-label="completed">✓<\/span> Read a.txt<\/li>/);
    assert.match(html, /<li class="chat-plan-entry" data-status="in_progress" data-priority="low"><span class="chat-plan-mark" aria-label="in progress">◐<\/span> Edit &lt;a.txt&gt;<\/li>/);
  });

  it('the context: one small line, the latest, with the cost when given', () => {
    const state = new ChatState();
    const x = state.begin('q', undefined, { name: 'claude', title: 'Claude Code' });
    state.apply({ chatId: 'c', runId: 'r', update: { type: 'context', used: 100, size: 200000 } });
    state.apply({ chatId: 'c', runId: 'r', update: { type: 'context', used: 12345, size: 200000, cost: { amount: 0.0123, currency: 'USD' } } });
    assert.match(exchangeHtml(x), /<div class="chat-context">12,345 \/ 200,000 tokens · \$0\.0123<\/div>/);
    assert.equal(textOf(exchangeHtml(x)).match(/tokens · \$/g)?.length, 1);
    // the run counted no tokens of its own: the footer says only the turns
    state.finish(x.key, { chatId: 'c', runId: 'r', stop: 'answered', turns: 1, answer: 'Done.', usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0, cachedTokens: 0 } });
    assert.match(exchangeHtml(x), /<div class="chat-footer">1 turn<\/div>/);
  });

  // [context, line]
  const lines: [Parameters<typeof contextText>[0], string][] = [
    [{ used: 12345, size: 200000 }, '12,345 / 200,000 tokens'],
    [{ used: 12345, size: 200000, cost: { amount: 0.0123, currency: 'USD' } }, '12,345 / 200,000 tokens · $0.0123'],
    [{ used: 0, size: 1000, cost: { amount: 1.5, currency: 'EUR' } }, '0 / 1,000 tokens · 1.5000 EUR'],
  ];
  for (const [context, line] of lines) {
    it(`context line: ${line}`, () => {
      assert.equal(contextText(context), line);
    });
  }
});

describe('a hosted agent\'s steps', () => {
  it('link to their diff cards like the own agent\'s calls', () => {
    const state = new ChatState();
    const x = state.begin('edit a.txt', undefined, { name: 'claude', title: 'Claude Code' });
    const card = {
      callId: 'call_s1',
      tool: 'agent_step',
      status: 'completed' as const,
      kind: 'diff',
      title: 'Edit a.txt',
      text: '',
      rendered: 'agent_step Edit a.txt · completed · Claude Code',
      caller: 'Claude Code',
      locations: [],
    };
    for (const raw of [
      { type: 'toolCall', callId: 'call_s1', name: 'agent_step', card: { ...card, status: 'pending' } },
      { type: 'toolResult', callId: 'call_s1', name: 'agent_step', isError: false, text: 'edited', card },
    ]) {
      const update = asAgentUpdate(raw);
      assert.ok(update, JSON.stringify(raw));
      state.apply({ chatId: 'c', runId: 'r', update });
    }
    assert.deepEqual(x.items, [{ kind: 'tool', callId: 'call_s1', name: 'agent_step', title: 'Edit a.txt', status: 'completed' }]);
    assert.match(exchangeHtml(x), /<div class="chat-tool" data-status="completed" data-call-id="call_s1"><button type="button" class="link chat-card-link" data-card="call_s1"/);
  });
});

/** A docs/schemas validator (the tests run from vscode-extension/out/test). */
function schemaValidator(name: string): (value: unknown) => string | undefined {
  let dir = __dirname;
  while (!fs.existsSync(path.join(dir, 'docs', 'schemas', `${name}.json`))) {
    assert.notEqual(path.dirname(dir), dir, `no docs/schemas/${name}.json above ${__dirname}`);
    dir = path.dirname(dir);
  }
  const { $schema: _s, ...schema } = JSON.parse(fs.readFileSync(path.join(dir, 'docs', 'schemas', `${name}.json`), 'utf8')) as Record<string, unknown>;
  void _s;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  const validate = ajv.compile(schema);
  return (value) => (validate(value) ? undefined : ajv.errorsText(validate.errors));
}

/** Settings as Claude Code's adapter offers them (claude-agent-acp 0.101.0: mode, model, effort;
 * fewer values), and an on/off one. */
const CLAUDE_SETTINGS: AgentOptionsResult = {
  chatId: 'chat_c',
  options: [
    {
      id: 'mode',
      name: 'Mode',
      category: 'mode',
      current: 'default',
      values: [
        { value: 'default', name: 'Manual', description: 'Asks before edits' },
        { value: 'acceptEdits', name: 'Accept Edits' },
        { value: 'plan', name: 'Plan Mode' },
      ],
    },
    {
      id: 'model',
      name: 'Model',
      category: 'model',
      current: 'default',
      values: [
        { value: 'default', name: 'Default (recommended)' },
        { value: 'opus', name: 'Opus 5.5' },
        { value: 'haiku', name: 'Haiku 5.5' },
      ],
    },
    { id: 'effort', name: 'Effort', category: 'thought_level', current: 'high', values: [{ value: 'low', name: 'Low' }, { value: 'high', name: 'High' }] },
    { id: 'fast', name: 'Fast mode', description: 'Answers sooner', current: false, values: [] },
  ],
};

/** Answers toolhost/agentOptions and toolhost/agentSetOption like the server, and records what was
 * sent. `refuse`: the error a change gets. */
class FakeServer {
  readonly sent: [string, unknown][] = [];
  refuse: Error | undefined;
  options: AgentOptionsResult = structuredClone(CLAUDE_SETTINGS);
  private chats = 0;

  readonly request = (method: string, params: unknown): Promise<unknown> => {
    this.sent.push([method, params]);
    const p = params as { chatId?: string; option?: string; value?: unknown };
    if (method === AGENT_OPTION_METHODS.options) {
      return Promise.resolve({ ...this.options, chatId: p.chatId ?? `chat_${++this.chats}` });
    }
    if (this.refuse) {
      return Promise.reject(this.refuse);
    }
    const option = this.options.options.find((o) => o.id === p.option);
    assert.ok(option, `known option ${p.option}`);
    option.current = p.value as string | boolean;
    return Promise.resolve({ ...this.options, chatId: p.chatId });
  };
}

function settingsOf(server: FakeServer): { settings: AgentSettings; changes: () => number; log: string[] } {
  let changes = 0;
  const log: string[] = [];
  const settings = new AgentSettings(server.request, () => changes++, (line) => log.push(line));
  return { settings, changes: () => changes, log };
}

/** The selects drawn: [option id, label, selected value, the values]; a checkbox: [id, label, checked]. */
function drawn(html: string): unknown[] {
  const controls: unknown[] = [];
  for (const m of html.matchAll(/<label class="chat-option[^"]*"[^>]*>(.*?)<\/label>/g)) {
    const inner = m[1]!;
    const select = /<span class="chat-option-name">([^<]*)<\/span><select data-option="([^"]*)" aria-label="[^"]*">(.*)<\/select>/.exec(inner);
    if (select) {
      const selected = /<option value="([^"]*)" selected/.exec(select[3]!)?.[1];
      controls.push([select[2], select[1], selected, attrValues(select[3]!, 'value')]);
    } else {
      const box = /<input type="checkbox" data-option="([^"]*)"( checked)?> (.*)$/.exec(inner);
      assert.ok(box, inner);
      controls.push([box[1], box[3], box[2] !== undefined]);
    }
  }
  return controls;
}

describe('a hosted agent\'s settings: reading them', () => {
  // [name, raw options, read]
  const cases: [string, unknown, unknown][] = [
    ['the server\'s shape', CLAUDE_SETTINGS.options, CLAUDE_SETTINGS.options],
    [
      'no name: the id; a value without a name: its id; nulls left out',
      [{ id: 'effort', current: 'low', description: null, category: null, values: [{ value: 'low', description: null, group: null }] }],
      [{ id: 'effort', name: 'effort', current: 'low', values: [{ value: 'low', name: 'low' }] }],
    ],
    ['a select whose current value is not offered: dropped', [{ id: 'model', name: 'Model', current: 'gpt', values: [{ value: 'opus', name: 'Opus' }] }], []],
    ['an on/off setting with values: dropped', [{ id: 'x', name: 'X', current: true, values: [{ value: 'a', name: 'A' }] }], []],
    ['no id, junk entries: dropped', [{ name: 'Mode', current: 'a', values: [] }, 7, null], []],
    ['not a list: none', { mode: 'plan' }, []],
  ];
  for (const [name, raw, expected] of cases) {
    it(name, () => {
      assert.deepEqual(asAgentOptions(raw), expected);
    });
  }

  it('the result needs a chat id and a list', () => {
    assert.deepEqual(asAgentOptionsResult(CLAUDE_SETTINGS), CLAUDE_SETTINGS);
    assert.equal(asAgentOptionsResult({ options: [] }), undefined);
    assert.equal(asAgentOptionsResult({ chatId: 'c', options: 'mode' }), undefined);
    assert.equal(schemaValidator('AgentOptionsResult')(CLAUDE_SETTINGS), undefined, 'the fixture is the schema\'s shape');
  });

  it('an {type: "options"} update is read', () => {
    assert.deepEqual(asAgentUpdate({ type: 'options', options: CLAUDE_SETTINGS.options }), { type: 'options', options: CLAUDE_SETTINGS.options });
    assert.equal(asAgentUpdate({ type: 'options' }), undefined);
  });
});

describe('a hosted agent\'s settings beside the picker', () => {
  it('picking Claude Code reads them for a new chat (the agent starts meanwhile) and draws one select each, an on/off one as a checkbox', async () => {
    const server = new FakeServer();
    const { settings } = settingsOf(server);
    settings.show('claude');
    assert.deepEqual(server.sent, [[AGENT_OPTION_METHODS.options, { agent: 'claude' }]]);
    assert.equal(schemaValidator('AgentOptionsParams')(server.sent[0]![1]), undefined);
    assert.match(agentSettingsHtml(settings), /starting the agent…/);
    await settings.ready();
    assert.equal(settings.chatId, 'chat_1');
    const html = agentSettingsHtml(settings);
    assert.deepEqual(drawn(html), [
      ['mode', 'Mode', 'default', ['default', 'acceptEdits', 'plan']],
      ['model', 'Model', 'default', ['default', 'opus', 'haiku']],
      ['effort', 'Effort', 'high', ['low', 'high']],
      ['fast', 'Fast mode', false],
    ]);
    assert.match(html, /<option value="opus">Opus 5\.5<\/option>/, 'entries are the values\' names');
    assert.match(html, /<label class="chat-option" data-category="model" title="Model">/);
    assert.match(html, /<option value="default" selected title="Asks before edits">Manual<\/option>/);
    assert.match(html, /<label class="chat-option chat-option-flag" title="Answers sooner">/);
  });

  it('in the chat box: beside the agent select, hidden while there are none', async () => {
    const server = new FakeServer();
    const { settings } = settingsOf(server);
    const p = picker();
    assert.match(chatSectionHtml(new ChatState(), undefined, p, settings), /<\/select><span id="chat-options" class="chat-options" aria-label="The agent's settings" hidden><\/span>/);
    settings.show('claude');
    await settings.ready();
    assert.match(chatSectionHtml(new ChatState(), undefined, p, settings), /<span id="chat-options" class="chat-options" aria-label="The agent's settings"><label class="chat-option" data-category="mode"/);
  });

  it('values the agent groups go into an optgroup each', async () => {
    const server = new FakeServer();
    server.options = {
      chatId: 'x',
      options: [
        {
          id: 'model',
          name: 'Model',
          current: 'b',
          values: [
            { value: 'a', name: 'A' },
            { value: 'b', name: 'B <new>', group: 'Anthropic' },
            { value: 'c', name: 'C', group: 'Anthropic' },
            { value: 'd', name: 'D', group: 'Other' },
          ],
        },
      ],
    };
    const { settings } = settingsOf(server);
    settings.show('mine');
    await settings.ready();
    assert.match(
      agentSettingsHtml(settings),
      /<select data-option="model" aria-label="Model"><option value="a">A<\/option><optgroup label="Anthropic"><option value="b" selected>B &lt;new&gt;<\/option><option value="c">C<\/option><\/optgroup><optgroup label="Other"><option value="d">D<\/option><\/optgroup><\/select>/,
    );
  });

  // [what the person did, the option and value the page sends, the params sent, what is drawn of it]
  const changes: [string, string, string | boolean, object, unknown][] = [
    ['Model: Opus', 'model', 'opus', { chatId: 'chat_1', option: 'model', value: 'opus' }, ['model', 'Model', 'opus', ['default', 'opus', 'haiku']]],
    ['Mode: Plan Mode', 'mode', 'plan', { chatId: 'chat_1', option: 'mode', value: 'plan' }, ['mode', 'Mode', 'plan', ['default', 'acceptEdits', 'plan']]],
    ['Fast mode checked', 'fast', true, { chatId: 'chat_1', option: 'fast', value: true }, ['fast', 'Fast mode', true]],
  ];
  for (const [name, option, value, params, shown] of changes) {
    it(`a change sends toolhost/agentSetOption for the chat and draws its answer: ${name}`, async () => {
      const server = new FakeServer();
      const { settings } = settingsOf(server);
      settings.show('claude');
      await settings.ready();
      await settings.set(option, value);
      assert.deepEqual(server.sent[1], [AGENT_OPTION_METHODS.setOption, params]);
      assert.equal(schemaValidator('AgentSetOptionParams')(server.sent[1]?.[1]), undefined);
      assert.ok(drawn(agentSettingsHtml(settings)).some((c) => JSON.stringify(c) === JSON.stringify(shown)), JSON.stringify(drawn(agentSettingsHtml(settings))));
    });
  }

  it('a change the page cannot mean is not sent (an unknown option, a value that is neither text nor on/off)', async () => {
    const server = new FakeServer();
    const { settings } = settingsOf(server);
    settings.show('claude');
    await settings.ready();
    await settings.set('colour', 'red');
    await settings.set('model', 3);
    assert.equal(server.sent.length, 1);
  });

  it('a refused change is shown in the chat box (and logged); the select shows what is in effect', async () => {
    const server = new FakeServer();
    const { settings, log } = settingsOf(server);
    settings.show('claude');
    await settings.ready();
    server.refuse = new Error('OPTION_VALUE_UNKNOWN: model has no value gpt-9');
    await settings.set('model', 'opus');
    const html = agentSettingsHtml(settings);
    assert.match(html, /<span class="chat-options-error" role="alert">Model could not be set to Opus 5.5: OPTION_VALUE_UNKNOWN: model has no value gpt-9<\/span>/);
    assert.deepEqual(drawn(html)[1], ['model', 'Model', 'default', ['default', 'opus', 'haiku']]);
    assert.deepEqual(log, ['[toolhost] Model could not be set to Opus 5.5: OPTION_VALUE_UNKNOWN: model has no value gpt-9']);
    server.refuse = undefined;
    await settings.set('model', 'haiku');
    assert.doesNotMatch(agentSettingsHtml(settings), /chat-options-error/, 'the next answer clears it');
  });

  it('settings that cannot be read say why', async () => {
    const { settings } = settingsOf({ request: () => Promise.reject(new Error('AGENT_EXITED: claude-agent-acp exited with 1')) } as unknown as FakeServer);
    settings.show('claude');
    await settings.ready();
    assert.match(agentSettingsHtml(settings), /role="alert">the settings of claude could not be read: AGENT_EXITED: claude-agent-acp exited with 1<\/span>/);
  });

  it('the agent\'s own change ({type: "options"}) redraws them; another chat\'s is not this chat\'s', async () => {
    const server = new FakeServer();
    const { settings, changes } = settingsOf(server);
    settings.show('claude');
    await settings.ready();
    const before = changes();
    const planned = structuredClone(CLAUDE_SETTINGS.options);
    planned[0]!.current = 'plan';
    const update = asAgentUpdate({ type: 'options', options: planned });
    assert.ok(update?.type === 'options');
    assert.equal(settings.update('chat_other', update.options), false);
    assert.equal(settings.update('chat_1', update.options), true);
    assert.equal(changes(), before + 1);
    assert.deepEqual(drawn(agentSettingsHtml(settings))[0], ['mode', 'Mode', 'plan', ['default', 'acceptEdits', 'plan']]);
  });

  it('the own agent hides them; Claude Code picked again shows its chat from before (not started twice)', async () => {
    const server = new FakeServer();
    const { settings } = settingsOf(server);
    settings.show('claude');
    await settings.ready();
    settings.show('toolhost');
    assert.equal(agentSettingsHtml(settings), '');
    assert.equal(settings.agent, undefined);
    settings.show('claude');
    await settings.ready();
    assert.deepEqual(server.sent.slice(1), [[AGENT_OPTION_METHODS.options, { agent: 'claude', chatId: 'chat_1' }]]);
    assert.equal(drawn(agentSettingsHtml(settings)).length, 4);
  });

  it('an answer that comes after the own agent was picked is dropped', async () => {
    const server = new FakeServer();
    const { settings } = settingsOf(server);
    settings.show('claude');
    settings.show('toolhost');
    await new Promise((resolve) => setTimeout(resolve, 0));
    assert.equal(agentSettingsHtml(settings), '');
  });

  it('New chat reads them again, for a chat of its own; a server gone forgets them', async () => {
    const server = new FakeServer();
    const { settings } = settingsOf(server);
    settings.show('claude');
    await settings.ready();
    await settings.set('model', 'opus');
    settings.renew('claude');
    await settings.ready();
    assert.deepEqual(server.sent[2], [AGENT_OPTION_METHODS.options, { agent: 'claude' }]);
    assert.equal(settings.chatId, 'chat_2');
    settings.renew('toolhost');
    assert.equal(agentSettingsHtml(settings), '');
    settings.show('claude');
    settings.forget();
    assert.equal(agentSettingsHtml(settings), '');
  });

  it('a chat with its agent goes on under another id (its settings could not be read before): its settings are read', async () => {
    const server = new FakeServer();
    const { settings } = settingsOf(server);
    settings.follow('claude', 'chat_9');
    await settings.ready();
    assert.deepEqual(server.sent, [[AGENT_OPTION_METHODS.options, { agent: 'claude', chatId: 'chat_9' }]]);
    settings.follow('claude', 'chat_9');
    settings.follow('toolhost', 'chat_own');
    assert.equal(server.sent.length, 1, 'the same chat, or the own agent\'s: nothing asked');
  });
});
