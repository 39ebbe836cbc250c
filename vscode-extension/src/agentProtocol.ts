// The agents over the editor's connection (docs/agent.md, docs/protocol.md): toolhost's own and
// the ACP agents `toolhost serve` hosts (Claude Code, Codex, …; `toolhost/listAgents`), the own
// agent's permission modes, a hosted agent's own settings (its modes, models, thought levels:
// `toolhost/agentOptions`, `toolhost/agentSetOption`), `toolhost/agentPrompt` (a prompt, and how
// its run ended) and the `toolhost/agentUpdate` notifications a running prompt streams, with the
// checks that turn what arrives into them. Pure: no `vscode` import, so `node --test` covers it.

import { asCard, type Card } from './cards';
import { isObject } from './guards';

/** The permission modes of toolhost's own agent (docs/agent.md, "Permission modes"). */
export const AGENT_MODES = ['ask', 'accept-edits', 'plan', 'auto'] as const;
export type AgentMode = (typeof AGENT_MODES)[number];

/** The name of toolhost's own agent in `toolhost/agentPrompt`'s `agent` (absent means it too). */
export const OWN_AGENT = 'toolhost';

/** `toolhost/agentPrompt` params: a prompt, continuing chat `chatId` when given; `agent` names a
 * hosted agent of `toolhost/listAgents` (absent: toolhost's own); `mode` and `model` override
 * `[agent]` for this prompt of the own agent. */
export interface AgentPromptParams {
  prompt: string;
  chatId?: string;
  agent?: string;
  mode?: AgentMode;
  model?: string;
}

/** One agent of `toolhost/listAgents`: a hosted ACP agent, known to toolhost or configured as
 * `[acp.agents.<name>]`. */
export interface HostedAgentInfo {
  name: string;
  /** What the chat calls it: `Claude Code`. */
  title: string;
  command: string;
  /** Whether its adapter was found; if not, `package` says what to install. */
  installed: boolean;
  /** The npm package of its adapter: `@agentclientprotocol/claude-agent-acp`. */
  package?: string;
  configured: boolean;
}

/** `toolhost/listAgents` result: the agents that are valid, in the server's order (an entry
 * without a name is dropped; a missing title is the name). */
export function asHostedAgents(raw: unknown): HostedAgentInfo[] {
  const list = isObject(raw) && Array.isArray(raw.agents) ? raw.agents : [];
  const agents: HostedAgentInfo[] = [];
  for (const entry of list) {
    if (!isObject(entry) || typeof entry.name !== 'string' || entry.name === '' || entry.name === OWN_AGENT) {
      continue;
    }
    const agent: HostedAgentInfo = {
      name: entry.name,
      title: typeof entry.title === 'string' && entry.title !== '' ? entry.title : entry.name,
      command: typeof entry.command === 'string' ? entry.command : '',
      installed: entry.installed === true,
      configured: entry.configured === true,
    };
    if (typeof entry.package === 'string' && entry.package !== '') {
      agent.package = entry.package;
    }
    agents.push(agent);
  }
  return agents;
}

/** The requests of a hosted agent's settings (docs/protocol.md). */
export const AGENT_OPTION_METHODS = {
  /** `{agent, chatId?}` → {@link AgentOptionsResult}; starts the agent (a new chat without
   * `chatId`) without prompting it. */
  options: 'toolhost/agentOptions',
  /** {@link AgentSetOptionParams} → {@link AgentOptionsResult}, every setting as it is now. */
  setOption: 'toolhost/agentSetOption',
} as const;

/** `toolhost/agentOptions` params: the settings of `agent`'s chat `chatId` (a new chat when
 * absent). */
export interface AgentOptionsParams {
  agent: string;
  chatId?: string;
}

/** One choice of a select setting. */
export interface AgentOptionValue {
  value: string;
  name: string;
  description?: string;
  /** The group the agent files it under (drawn as an `<optgroup>`). */
  group?: string;
}

/** One setting a hosted agent offers for its chat: a select (`current` one of `values`) or an
 * on/off setting (`current` a boolean, `values` empty). `category`: `mode`, `model`,
 * `thought_level` or the agent's own word. */
export interface AgentOption {
  id: string;
  name: string;
  description?: string;
  category?: string;
  current: string | boolean;
  values: AgentOptionValue[];
}

/** `toolhost/agentOptions` and `toolhost/agentSetOption` result. */
export interface AgentOptionsResult {
  chatId: string;
  options: AgentOption[];
}

/** `toolhost/agentSetOption` params: `value` one of the option's values, or a boolean. */
export interface AgentSetOptionParams {
  chatId: string;
  option: string;
  value: string | boolean;
}

function optionalText(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function asOptionValue(raw: unknown): AgentOptionValue | undefined {
  if (!isObject(raw) || typeof raw.value !== 'string') {
    return undefined;
  }
  const value: AgentOptionValue = { value: raw.value, name: optionalText(raw.name) ?? raw.value };
  const description = optionalText(raw.description);
  const group = optionalText(raw.group);
  if (description !== undefined) {
    value.description = description;
  }
  if (group !== undefined) {
    value.group = group;
  }
  return value;
}

/** A hosted agent's settings from the wire: a setting needs an id and a current value that fits
 * (a boolean, or a value id); a missing name is the id. Others are dropped — a select that cannot
 * show what is in effect would mislead. */
export function asAgentOptions(raw: unknown): AgentOption[] {
  const options: AgentOption[] = [];
  for (const entry of Array.isArray(raw) ? raw : []) {
    if (!isObject(entry) || typeof entry.id !== 'string' || entry.id === '') {
      continue;
    }
    const values = (Array.isArray(entry.values) ? entry.values : []).map(asOptionValue).filter((v): v is AgentOptionValue => v !== undefined);
    const current = entry.current;
    const fits = typeof current === 'boolean' ? values.length === 0 : typeof current === 'string' && values.some((v) => v.value === current);
    if (!fits) {
      continue;
    }
    const option: AgentOption = { id: entry.id, name: optionalText(entry.name) ?? entry.id, current: current as string | boolean, values };
    const description = optionalText(entry.description);
    const category = optionalText(entry.category);
    if (description !== undefined) {
      option.description = description;
    }
    if (category !== undefined) {
      option.category = category;
    }
    options.push(option);
  }
  return options;
}

/** `toolhost/agentOptions` / `toolhost/agentSetOption` result, or undefined when it is not one. */
export function asAgentOptionsResult(raw: unknown): AgentOptionsResult | undefined {
  if (!isObject(raw) || typeof raw.chatId !== 'string' || raw.chatId === '' || !Array.isArray(raw.options)) {
    return undefined;
  }
  return { chatId: raw.chatId, options: asAgentOptions(raw.options) };
}

/** Tokens of one model request, or of a run (summed). */
export interface AgentTokens {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  cachedTokens: number;
}

/** Why a run of the agent ended. A newer server may name others: they are shown by name. */
export const AGENT_STOPS = ['answered', 'structured', 'turn-limit', 'token-budget', 'cost-budget', 'cancelled', 'failed'] as const;

/** `toolhost/agentPrompt` result: how the run ended. */
export interface AgentPromptResult {
  chatId: string;
  runId: string;
  /** One of {@link AGENT_STOPS}. */
  stop: string;
  turns: number;
  answer?: string;
  usage: AgentTokens;
  /** With `[agent.price]`: what the run cost. */
  cost?: number;
  structured?: unknown;
  /** A failed run's error: `CODE: message`. */
  error?: string;
}

/** One entry of a hosted agent's plan (ACP's plan entries). `status` is `pending`, `in_progress`
 * or `completed`, `priority` `high`, `medium` or `low`; a newer agent's others are shown by name. */
export interface PlanEntry {
  content: string;
  status: string;
  priority: string;
}

/** What a hosted agent's turn cost so far (ACP's `UsageUpdate.cost`). */
export interface ContextCost {
  amount: number;
  /** ISO 4217: `USD`. */
  currency: string;
}

/** One `toolhost/agentUpdate`: what a running prompt streams, in order. */
export type AgentUpdate =
  | { type: 'text'; text: string }
  | { type: 'reasoning'; text: string }
  | { type: 'toolCall'; callId: string; name: string; card?: Card }
  | { type: 'toolResult'; callId: string; name: string; isError: boolean; text: string; card?: Card }
  | ({ type: 'usage' } & AgentTokens)
  | { type: 'compaction'; tokensBefore: number; tokensAfter: number; pruned: number; summarized: boolean }
  | { type: 'retry'; attempt: number; delayMs: number; reason: string }
  /** A hosted agent's plan, whole each time (the latest replaces the earlier). */
  | { type: 'plan'; entries: PlanEntry[] }
  /** A hosted agent's context window: `used` of `size` tokens. */
  | { type: 'context'; used: number; size: number; cost?: ContextCost }
  /** A hosted agent changed its settings during the turn: all of them, as they are now. */
  | { type: 'options'; options: AgentOption[] };

export interface AgentUpdateParams {
  chatId: string;
  runId: string;
  update: AgentUpdate;
}

function nonNegative(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0;
}

/** Token counts from the wire; anything missing or not a count is 0. */
export function asAgentTokens(raw: unknown): AgentTokens {
  const o = isObject(raw) ? raw : {};
  return {
    promptTokens: nonNegative(o.promptTokens),
    completionTokens: nonNegative(o.completionTokens),
    totalTokens: nonNegative(o.totalTokens),
    cachedTokens: nonNegative(o.cachedTokens),
  };
}

/** One update from the wire, or undefined for junk and for kinds this client does not know (a
 * newer server's): those are skipped. */
export function asAgentUpdate(raw: unknown): AgentUpdate | undefined {
  if (!isObject(raw) || typeof raw.type !== 'string') {
    return undefined;
  }
  const str = (value: unknown): string => (typeof value === 'string' ? value : '');
  switch (raw.type) {
    case 'text':
    case 'reasoning':
      return typeof raw.text === 'string' ? { type: raw.type, text: raw.text } : undefined;
    case 'toolCall':
    case 'toolResult': {
      if (typeof raw.callId !== 'string' || raw.callId === '') {
        return undefined;
      }
      const card = asCard(raw.card);
      const name = str(raw.name) || card?.tool || '';
      if (raw.type === 'toolCall') {
        return card ? { type: 'toolCall', callId: raw.callId, name, card } : { type: 'toolCall', callId: raw.callId, name };
      }
      const result = { type: 'toolResult' as const, callId: raw.callId, name, isError: raw.isError === true, text: str(raw.text) };
      return card ? { ...result, card } : result;
    }
    case 'usage':
      return { type: 'usage', ...asAgentTokens(raw) };
    case 'compaction':
      return {
        type: 'compaction',
        tokensBefore: nonNegative(raw.tokensBefore),
        tokensAfter: nonNegative(raw.tokensAfter),
        pruned: nonNegative(raw.pruned),
        summarized: raw.summarized === true,
      };
    case 'retry':
      return { type: 'retry', attempt: nonNegative(raw.attempt), delayMs: nonNegative(raw.delayMs), reason: str(raw.reason) };
    case 'plan':
      return asPlan(raw.entries);
    case 'context':
      return asContext(raw);
    case 'options':
      return Array.isArray(raw.options) ? { type: 'options', options: asAgentOptions(raw.options) } : undefined;
    default:
      return undefined;
  }
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0;
}

/** A plan update: the entries must be a list; an entry without text is dropped (it would be an
 * empty line), a missing status or priority is `pending` / `medium`. */
function asPlan(raw: unknown): AgentUpdate | undefined {
  if (!Array.isArray(raw)) {
    return undefined;
  }
  const entries: PlanEntry[] = [];
  for (const entry of raw) {
    if (isObject(entry) && typeof entry.content === 'string' && entry.content.trim() !== '') {
      entries.push({
        content: entry.content,
        status: typeof entry.status === 'string' && entry.status !== '' ? entry.status : 'pending',
        priority: typeof entry.priority === 'string' && entry.priority !== '' ? entry.priority : 'medium',
      });
    }
  }
  return { type: 'plan', entries };
}

/** A context update: `used` and `size` must be counts (a line of nonsense numbers helps no one); a
 * cost without an amount or a currency is left out. */
function asContext(raw: Record<string, unknown>): AgentUpdate | undefined {
  if (!isCount(raw.used) || !isCount(raw.size)) {
    return undefined;
  }
  const cost = raw.cost;
  if (isObject(cost) && typeof cost.amount === 'number' && Number.isFinite(cost.amount) && typeof cost.currency === 'string' && cost.currency !== '') {
    return { type: 'context', used: raw.used, size: raw.size, cost: { amount: cost.amount, currency: cost.currency } };
  }
  return { type: 'context', used: raw.used, size: raw.size };
}

/** `toolhost/agentUpdate` params, or undefined for junk (or an update kind this client does not
 * know). */
export function asAgentUpdateParams(raw: unknown): AgentUpdateParams | undefined {
  if (!isObject(raw) || typeof raw.chatId !== 'string' || typeof raw.runId !== 'string') {
    return undefined;
  }
  const update = asAgentUpdate(raw.update);
  return update ? { chatId: raw.chatId, runId: raw.runId, update } : undefined;
}

/** `toolhost/agentPrompt` result, or undefined when it is not one. */
export function asAgentPromptResult(raw: unknown): AgentPromptResult | undefined {
  if (!isObject(raw) || typeof raw.chatId !== 'string' || typeof raw.stop !== 'string' || raw.stop === '') {
    return undefined;
  }
  const result: AgentPromptResult = {
    chatId: raw.chatId,
    runId: typeof raw.runId === 'string' ? raw.runId : '',
    stop: raw.stop,
    turns: nonNegative(raw.turns),
    usage: asAgentTokens(raw.usage),
  };
  if (typeof raw.answer === 'string') {
    result.answer = raw.answer;
  }
  if (typeof raw.cost === 'number' && Number.isFinite(raw.cost)) {
    result.cost = raw.cost;
  }
  if (raw.structured !== undefined && raw.structured !== null) {
    result.structured = raw.structured;
  }
  if (typeof raw.error === 'string' && raw.error !== '') {
    result.error = raw.error;
  }
  return result;
}
