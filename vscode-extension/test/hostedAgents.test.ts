// The chat with an agent toolhost hosts (agentPicker.ts, chat.ts, agentProtocol.ts): the agents of
// `toolhost/listAgents` read leniently and offered in the chat box (the uninstalled disabled,
// saying what to install), the pick, the `agent` a prompt's params carry, a chat that stays with the
// agent it started with (and New chat that may pick another), the plan and context updates (valid
// and invalid shapes, drawn as a checklist and a small line), and the steps' cards linked like the
// own agent's.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AgentPicker, agentOptionsHtml, notInstalledText, OWN_CHAT_AGENT, promptParams } from '../src/agentPicker';
import { asAgentUpdate, asHostedAgents, type HostedAgentInfo } from '../src/agentProtocol';
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
