// The extension's wire types against the checked-in JSON schemas (docs/schemas/*.json, generated
// from the server's types): the fixtures are valid cards, the known kinds and the fields the
// extension handles are the schemas' own, and (with TOOLHOST_BIN) the real server's tool list
// matches ListToolsResult.json.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import Ajv2020 from 'ajv/dist/2020';
import type { ValidateFunction } from 'ajv';
import { asCard, KNOWN_CARD_KINDS } from '../src/cards';
import { isObject } from '../src/guards';
import { asCallOutput, asMcpServersResult, asNotice, DEFAULT_TOOL_ANNOTATIONS } from '../src/protocol';
import { askFormHtml, AskSession, parseAskUserParams, resultOf } from '../src/ask';
import { AGENT_MODES, AGENT_STOPS, asAgentPromptResult, asAgentUpdateParams, type AgentPromptParams } from '../src/agentProtocol';
import { asPlanModeState, methods } from '../src/protocol';
import { asReviewSettings, parseReviewParams, ReviewSession } from '../src/review';
import * as fixtures from './fixtures';

/** docs/schemas of the repository (the tests run from vscode-extension/out/test). */
function schemasDir(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'docs', 'schemas');
    if (fs.existsSync(path.join(candidate, 'Card.json'))) {
      return candidate;
    }
    if (path.dirname(dir) === dir) {
      throw new Error(`no docs/schemas above ${__dirname}`);
    }
  }
}

function loadSchema(name: string): Record<string, unknown> {
  const schema = JSON.parse(fs.readFileSync(path.join(schemasDir(), `${name}.json`), 'utf8')) as unknown;
  assert.ok(isObject(schema));
  return schema;
}

const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });

function validator(name: string): ValidateFunction {
  const { $schema: _s, $id: _i, ...rest } = loadSchema(name);
  void _s;
  void _i;
  return ajv.compile(rest);
}

function assertValid(validate: ValidateFunction, value: unknown, what: string): void {
  assert.ok(validate(value), `${what}: ${ajv.errorsText(validate.errors)}`);
}

function def(schema: Record<string, unknown>, name: string): Record<string, unknown> {
  const defs = schema.$defs;
  assert.ok(isObject(defs) && isObject(defs[name]), `$defs.${name}`);
  return defs[name];
}

function propertyNames(schema: Record<string, unknown>): string[] {
  assert.ok(isObject(schema.properties));
  return Object.keys(schema.properties).sort();
}

const fixtureCards = Object.entries(fixtures).filter(([, v]) => isObject(v) && 'callId' in v);

describe('wire types against docs/schemas', () => {
  it('every fixture card (and its normalized form) is a valid Card', () => {
    const validate = validator('Card');
    assert.ok(fixtureCards.length >= 10);
    for (const [name, card] of fixtureCards) {
      assertValid(validate, card, name);
      assertValid(validate, asCard(card), `asCard(${name})`);
    }
  });

  it('the card kind is an open string; the known kinds are the schema\'s', () => {
    for (const name of ['Card', 'CallPresentation']) {
      const kind = def(loadSchema(name), 'CardKind');
      assert.equal(kind.type, 'string', name);
      assert.equal(kind.enum, undefined, `${name}: CardKind must not be closed`);
      assert.deepEqual(kind.examples, [...KNOWN_CARD_KINDS], name);
    }
    const validate = validator('Card');
    assertValid(validate, { ...fixtures.customKindCard, kind: 'anything-a-tool-invents' }, 'a custom kind');
  });

  it('the card and hunk fields are the ones the extension knows (a new field fails here first)', () => {
    const card = loadSchema('Card');
    assert.deepEqual(propertyNames(card), ['callId', 'caller', 'data', 'group', 'hunks', 'kind', 'locations', 'parentCallId', 'read', 'rendered', 'search', 'stats', 'status', 'terminal', 'text', 'title', 'tool', 'usage']);
    // `caller`: an optional name (or null), the MCP client's, for calls made through toolhost mcp
    assert.ok(!(card.required as string[]).includes('caller'));
    assert.deepEqual((card.properties as Record<string, Record<string, unknown>>).caller?.type, ['string', 'null']);
    const validate = validator('Card');
    assertValid(validate, fixtures.mcpEditCard, 'a card with a caller');
    assertValid(validate, { ...fixtures.editCard, caller: null }, 'caller: null');
    assert.equal(validate({ ...fixtures.editCard, caller: 3 }), false, 'caller must be a string');
    // `parentCallId`: the call a nested call ran under (a run_code program's), optional
    assert.ok(!(card.required as string[]).includes('parentCallId'));
    assertValid(validate, { ...fixtures.editCard, callId: 'call_prog:code:3', parentCallId: 'call_prog' }, 'a nested call');
    assert.equal(validate({ ...fixtures.editCard, parentCallId: 3 }), false, 'parentCallId must be a string');
    // `group` and `usage`: a workflow child's phase and label, what a call used (cardGroups.ts)
    assert.deepEqual(propertyNames(def(card, 'CardGroup')), ['label', 'phase']);
    assert.deepEqual(propertyNames(def(card, 'CardUsage')), ['cost', 'tokens']);
    const workflowChild = { ...fixtures.readCard, callId: 'call_wf:agent:1', parentCallId: 'call_wf', group: { phase: 'draft', label: 'a' }, usage: { tokens: 305, cost: 0.00031 } };
    assertValid(validate, workflowChild, 'a workflow child');
    assertValid(validate, asCard(workflowChild), 'asCard(a workflow child)');
    assert.equal(validate({ ...workflowChild, usage: { cost: 1 } }), false, 'usage needs its tokens');
    const hunk = def(card, 'Hunk');
    assert.deepEqual(propertyNames(hunk), ['header', 'lines', 'newLines', 'newStart', 'oldLines', 'oldStart', 'path', 'preview']);
    assert.deepEqual(hunk.required, ['path', 'oldStart', 'oldLines', 'newStart', 'newLines', 'lines']);
    assert.deepEqual(def(card, 'CardStatus').enum, ['pending', 'completed', 'failed']);
  });

  it('terminal cards: the view\'s fields are the ones the extension knows; the fixtures are valid', () => {
    const card = loadSchema('Card');
    const view = def(card, 'TerminalView');
    assert.deepEqual(propertyNames(view), ['command', 'cwd', 'description', 'exitCode', 'output', 'signal', 'spillPaths', 'timedOut']);
    assert.deepEqual(view.required, ['command', 'output']);
    const validate = validator('Card');
    for (const fixture of [fixtures.bashPendingCard, fixtures.bashCard, fixtures.bashTimedOutCard, fixtures.bashSpillCard, fixtures.bashAbortedCard]) {
      assertValid(validate, fixture, fixture.callId);
    }
  });

  it('live output, notices and Stop: the params and results the extension reads and sends', () => {
    const output = loadSchema('CallOutputParams');
    assert.deepEqual(propertyNames(output), ['callId', 'text']);
    assert.deepEqual(output.required, ['callId', 'text']);
    assert.deepEqual(asCallOutput({ callId: 'c', text: 'line 1\n' }), { callId: 'c', text: 'line 1\n' });
    assert.equal(asCallOutput({ callId: 'c' }), undefined);
    const notice = loadSchema('NoticeParams');
    assert.deepEqual(propertyNames(notice), ['data', 'source', 'text']);
    assert.deepEqual(notice.required, ['source', 'text']);
    const job = { source: 'job', text: 'background job bash-1 (bash: echo hi) finished [status: exited, exit code 0]. Read its output with job_output.', data: { id: 'bash-1' } };
    assertValid(validator('NoticeParams'), job, 'a job notice');
    assert.deepEqual(asNotice(job), job);
    assert.deepEqual(asNotice({ text: 'no source' }), { source: 'server', text: 'no source', data: null });
    assert.equal(asNotice({ source: 'job', text: '' }), undefined);
    const cancel = loadSchema('CancelCallParams');
    assert.deepEqual(propertyNames(cancel), ['callId']);
    assert.deepEqual(cancel.required, ['callId']);
    assertValid(validator('CancelCallResult'), { cancelled: false }, 'a cancelCall result');
    assert.deepEqual(propertyNames(loadSchema('CancelCallResult')), ['cancelled']);
  });

  it('review mode: the params the extension reads and the answers and settings requests it sends', () => {
    const params = loadSchema('ReviewParams');
    assert.deepEqual(propertyNames(params), ['after', 'before', 'callId', 'caller', 'hunks', 'path', 'title', 'tool']);
    const raw = {
      requestId: 7,
      callId: 'call_1a2b3c4d5e6f',
      tool: 'edit',
      title: 'Edit src/a.ts',
      caller: 'claude-code',
      path: '/abs/path/src/a.ts',
      before: 'a\nold\n',
      after: 'a\nnew\n',
      hunks: [{ path: 'src/a.ts', oldStart: 1, oldLines: 2, newStart: 1, newLines: 2, header: '@@ -1,2 +1,2 @@', lines: [{ op: ' ', text: 'a' }, { op: '-', text: 'old' }, { op: '+', text: 'new' }] }],
    };
    assertValid(validator('ReviewParams'), raw, 'the wire params (requestId besides)');
    const parsed = parseReviewParams(raw);
    assertValid(validator('ReviewParams'), parsed, 'parsed params');
    // every answer the UI can send is a ReviewResult
    const validate = validator('ReviewResult');
    const session = new ReviewSession(parsed, () => undefined);
    assertValid(validate, session.result(), 'undecided');
    session.decideAll('accepted');
    assertValid(validate, session.result('with a comment'), 'accepted, with a comment');
    assert.deepEqual(propertyNames(loadSchema('ReviewResult')), ['accepted', 'comment']);
    // toolhost/setReview: what is sent, and the settings read back
    assert.deepEqual(propertyNames(loadSchema('SetReviewParams')), ['fallback', 'mode', 'timeoutMs']);
    for (const sent of [{}, { mode: 'ask' }, { mode: 'off' }, { mode: 'ask', timeoutMs: 300, fallback: 'accept' }]) {
      assertValid(validator('SetReviewParams'), sent, JSON.stringify(sent));
    }
    const settings = loadSchema('ReviewSettings');
    assert.deepEqual(propertyNames(settings), ['fallback', 'mode', 'timeoutMs']);
    const read = asReviewSettings({ mode: 'ask', timeoutMs: 120000, fallback: 'deny' });
    assertValid(validator('ReviewSettings'), read, 'settings');
  });

  it('questions (toolhost/askUser): the params the extension reads and every answer its forms send', () => {
    const params = loadSchema('AskUserParams');
    assert.deepEqual(propertyNames(params), ['callId', 'caller', 'intent', 'plan', 'questions', 'title', 'tool']);
    assert.deepEqual(propertyNames(def(params, 'Question')), ['header', 'id', 'multiSelect', 'options', 'question']);
    assert.deepEqual(propertyNames(def(params, 'QuestionOption')), ['description', 'label']);
    assert.deepEqual(
      (def(params, 'QuestionIntent').oneOf as { const: string }[]).map((v) => v.const),
      ['question', 'plan-review', 'permission'],
    );
    const question = {
      requestId: 3,
      callId: 'call_ask',
      tool: 'ask_user_question',
      title: 'Ask: DB (+1)',
      intent: 'question',
      questions: [
        { id: 'db', question: 'Which database?', header: 'DB', options: [{ label: 'Postgres' }, { label: 'SQLite', description: 'one file' }], multiSelect: false },
        { id: 'langs', question: 'Which languages?', options: [{ label: 'Rust' }, { label: 'Go' }], multiSelect: true },
        { id: 'name', question: 'What name?', multiSelect: false },
      ],
    };
    const plan = {
      requestId: 4,
      callId: 'call_plan',
      tool: 'exit_plan_mode',
      title: 'Plan: X',
      caller: 'claude-code',
      intent: 'plan-review',
      questions: [{ id: 'plan', question: 'Approve this plan?', header: 'Plan', options: [{ label: 'Approve' }, { label: 'Keep planning' }], multiSelect: false }],
      plan: '# X',
    };
    // toolhost's own agent asks whether a call may run (its permission mode): Allow / Deny
    const permission = {
      requestId: 5,
      callId: 'call_bash',
      tool: 'bash',
      title: 'Run: rm -rf build',
      caller: 'toolhost agent',
      intent: 'permission',
      questions: [{ id: 'permission', question: 'Allow toolhost agent to run bash: rm -rf build?', header: 'Permission', options: [{ label: 'Allow' }, { label: 'Deny' }], multiSelect: false }],
    };
    const validateParams = validator('AskUserParams');
    const validateResult = validator('AskUserResult');
    for (const raw of [question, plan, permission]) {
      assertValid(validateParams, raw, `the wire params of ${raw.tool} (requestId besides)`);
      const parsed = parseAskUserParams(raw);
      assertValid(validateParams, parsed, `parsed ${raw.tool} params`);
      assert.ok(askFormHtml(new AskSession(parsed, () => undefined)).length > 0);
    }
    const q = parseAskUserParams(question);
    const p = parseAskUserParams(plan);
    const allow = parseAskUserParams(permission);
    assert.equal(allow.intent, 'permission');
    assert.match(askFormHtml(new AskSession(allow, () => undefined)), /data-intent="permission"/);
    const sent = [
      resultOf(allow, { op: 'submit', state: { permission: { selected: ['Allow'] } } }),
      resultOf(allow, { op: 'submit', state: { permission: { selected: ['Deny'] } } }),
      resultOf(allow, { op: 'dismiss' }),
      resultOf(q, { op: 'submit', state: { db: { selected: ['SQLite'] }, langs: { selected: ['Rust', 'Go'], custom: 'Zig' }, name: { custom: 'x' } } }),
      resultOf(q, { op: 'submit', state: { db: { selected: ['SQLite'], custom: 'DuckDB' } } }),
      resultOf(q, { op: 'submit', state: {} }),
      resultOf(q, { op: 'dismiss' }),
      resultOf(p, { op: 'approve' }),
      resultOf(p, { op: 'keep' }),
      resultOf(p, { op: 'keep', feedback: 'more tests' }),
      resultOf(p, { op: 'dismiss' }),
    ];
    for (const result of sent) {
      assert.ok(result);
      assertValid(validateResult, result, JSON.stringify(result));
    }
    assert.deepEqual(propertyNames(loadSchema('AskUserResult')), ['answers', 'dismissed']);
    assert.deepEqual(propertyNames(def(loadSchema('AskUserResult'), 'Answer')), ['custom', 'id', 'selected']);
    assert.equal(methods.askUser, 'toolhost/askUser');
  });

  it('plan mode and structured output: the requests the extension sends and the states it reads', () => {
    assert.deepEqual(propertyNames(loadSchema('SetPlanModeParams')), ['active']);
    for (const sent of [{}, { active: true }, { active: false }]) {
      assertValid(validator('SetPlanModeParams'), sent, JSON.stringify(sent));
    }
    assert.deepEqual(propertyNames(loadSchema('PlanModeState')), ['active']);
    const state = asPlanModeState({ active: true });
    assertValid(validator('PlanModeState'), state, 'plan mode state');
    assert.equal(asPlanModeState({ active: 'yes' }), undefined);
    assert.deepEqual(propertyNames(loadSchema('StructuredOutputParams')), ['reset', 'schema']);
    for (const sent of [{}, { reset: true }, { schema: { type: 'object' } }, { schema: null }]) {
      assertValid(validator('StructuredOutputParams'), sent, JSON.stringify(sent));
    }
    assert.deepEqual(propertyNames(loadSchema('StructuredOutputState')), ['recorded', 'schema', 'value']);
    assertValid(validator('StructuredOutputState'), { schema: null, recorded: true, value: { a: 1 } }, 'a recorded run');
  });

  it('the agents (toolhost/agentPrompt, toolhost/agentUpdate): what the chat sends and reads', () => {
    assert.equal(methods.agentPrompt, 'toolhost/agentPrompt');
    assert.equal(methods.agentUpdate, 'toolhost/agentUpdate');
    const params = loadSchema('AgentPromptParams');
    assert.deepEqual(propertyNames(params), ['agent', 'chatId', 'mode', 'model', 'prompt']);
    assert.deepEqual(params.required, ['prompt']);
    const validateParams = validator('AgentPromptParams');
    const sent: AgentPromptParams[] = [{ prompt: 'read a.txt' }, { prompt: 'go on', chatId: 'chat_1', mode: 'accept-edits' }, { prompt: 'edit a.txt', chatId: 'chat_2', agent: 'claude' }, ...AGENT_MODES.map((mode) => ({ prompt: 'x', mode }))];
    for (const p of sent) {
      assertValid(validateParams, p, JSON.stringify(p));
    }
    const result = loadSchema('AgentPromptResult');
    assert.deepEqual(propertyNames(result), ['answer', 'chatId', 'cost', 'error', 'runId', 'stop', 'structured', 'turns', 'usage']);
    assert.deepEqual(propertyNames(def(result, 'AgentTokens')), ['cachedTokens', 'completionTokens', 'promptTokens', 'totalTokens']);
    for (const stop of AGENT_STOPS) {
      assert.match(String((result.properties as Record<string, { description?: string }>).stop?.description), new RegExp(`\`${stop}\``), `the schema names the stop ${stop}`);
    }
    const validateResult = validator('AgentPromptResult');
    const wire = {
      chatId: 'chat_1',
      runId: 'run_1',
      stop: 'answered',
      turns: 2,
      answer: 'hello',
      usage: { promptTokens: 250, completionTokens: 30, totalTokens: 280, cachedTokens: 0 },
      cost: 0.0003,
      structured: null,
      error: null,
    };
    assertValid(validateResult, wire, 'an answered run');
    const read = asAgentPromptResult(wire);
    assertValid(validateResult, read, 'read back');
    assertValid(validateResult, asAgentPromptResult({ ...wire, stop: 'failed', turns: 0, answer: null, cost: null, error: 'MODEL_HTTP_ERROR: 401' }), 'a failed run');
    const update = loadSchema('AgentUpdateParams');
    assert.deepEqual(propertyNames(update), ['chatId', 'runId', 'update']);
    const description = String((update.properties as Record<string, { description?: string }>).update?.description);
    for (const type of ['text', 'reasoning', 'toolCall', 'toolResult', 'usage', 'compaction', 'retry']) {
      assert.ok(description.includes(`type: "${type}"`), `the schema names the update ${type}`);
    }
    const validateUpdate = validator('AgentUpdateParams');
    const updates = [
      { type: 'text', text: 'hi' },
      { type: 'reasoning', text: 'hmm' },
      { type: 'toolCall', callId: 'c', name: 'read', card: fixtures.editCard },
      { type: 'toolResult', callId: 'c', name: 'read', isError: false, text: 'ok', card: fixtures.editCard },
      { type: 'usage', promptTokens: 1, completionTokens: 2, totalTokens: 3, cachedTokens: 0 },
      { type: 'compaction', tokensBefore: 10, tokensAfter: 5, pruned: 1, summarized: false },
      { type: 'retry', attempt: 1, delayMs: 1000, reason: 'HTTP 503' },
      // a hosted agent's
      { type: 'plan', entries: [{ content: 'Edit a.txt', status: 'in_progress', priority: 'high' }] },
      { type: 'context', used: 12345, size: 200000, cost: { amount: 0.0123, currency: 'USD' } },
    ];
    for (const u of updates) {
      const raw = { chatId: 'chat_1', runId: 'run_1', update: u };
      assertValid(validateUpdate, raw, u.type);
      assert.equal(asAgentUpdateParams(raw)?.update.type, u.type, `${u.type} is read`);
    }
  });

  // Generated by the server's schema drift test once the MCP bridge's status request is in.
  const mcpSchema = (() => {
    try {
      return fs.existsSync(path.join(schemasDir(), 'McpServersResult.json'));
    } catch {
      return false;
    }
  })();

  it('MCP servers (toolhost/mcpServers, toolhost/mcpServersChanged): the fields the extension reads', { skip: !mcpSchema && 'no docs/schemas/McpServersResult.json yet' }, () => {
    const schema = loadSchema('McpServersResult');
    assert.deepEqual(propertyNames(schema), ['servers']);
    const status = def(schema, 'McpServerStatus');
    assert.deepEqual(propertyNames(status), ['attempts', 'error', 'name', 'protocolVersion', 'state', 'tools', 'transport']);
    for (const key of ['name', 'transport', 'state', 'tools']) {
      assert.ok((status.required as string[]).includes(key), `${key} is required`);
    }
    const validate = validator('McpServersResult');
    const sent = {
      servers: [
        { name: 'echo', transport: 'stdio', state: 'ready', tools: ['mcp__echo__weather'], protocolVersion: '2025-06-18', attempts: 0 },
        { name: 'web', transport: 'streamable-http', state: 'reconnecting', tools: [], error: 'connection refused', attempts: 2 },
      ],
    };
    assertValid(validate, sent, 'a status list');
    assert.deepEqual(asMcpServersResult(sent), sent);
    assertValid(validate, { servers: [] }, 'no servers');
  });

  it('tool descriptors: annotations with MCP\'s defaults', () => {
    const list = loadSchema('ListToolsResult');
    assert.deepEqual(propertyNames(def(list, 'ToolDescriptor')), ['annotations', 'description', 'inputSchema', 'name', 'outputSchema']);
    const annotations = def(list, 'ToolAnnotations');
    assert.deepEqual([...(annotations.required as string[])].sort(), Object.keys(DEFAULT_TOOL_ANNOTATIONS).sort());
    const prop = (def(list, 'ToolDescriptor').properties as Record<string, Record<string, unknown>>).annotations;
    assert.deepEqual(prop?.default, DEFAULT_TOOL_ANNOTATIONS);
  });

  it('the real server\'s tool list is a valid ListToolsResult, every tool annotated', { skip: !process.env.TOOLHOST_BIN && 'TOOLHOST_BIN not set' }, () => {
    const out = execFileSync(process.env.TOOLHOST_BIN ?? 'toolhost', ['tools', '--json'], { encoding: 'utf8' });
    const list = JSON.parse(out) as { tools: { name: string; annotations?: unknown }[] };
    assertValid(validator('ListToolsResult'), list, 'toolhost tools --json');
    for (const tool of list.tools) {
      assert.ok(isObject(tool.annotations), `${tool.name} has annotations`);
    }
    const read = list.tools.find((t) => t.name === 'read');
    assert.deepEqual(read?.annotations, { readOnly: true, destructive: false, idempotent: true, openWorld: false });
  });
});
