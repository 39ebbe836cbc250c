// toolhost's own agent over the editor's connection (docs/agent.md, docs/protocol.md): the
// permission modes, `toolhost/agentPrompt` (a prompt, and how its run ended) and the
// `toolhost/agentUpdate` notifications a running prompt streams, with the checks that turn what
// arrives into them. Pure: no `vscode` import, so `node --test` covers it.

import { asCard, type Card } from './cards';
import { isObject } from './guards';

/** The permission modes of toolhost's own agent (docs/agent.md, "Permission modes"). */
export const AGENT_MODES = ['ask', 'accept-edits', 'plan', 'auto'] as const;
export type AgentMode = (typeof AGENT_MODES)[number];

/** `toolhost/agentPrompt` params: a prompt for toolhost's own agent, continuing chat `chatId` when
 * given; `mode` and `model` override `[agent]` for this prompt. */
export interface AgentPromptParams {
  prompt: string;
  chatId?: string;
  mode?: AgentMode;
  model?: string;
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

/** One `toolhost/agentUpdate`: what a running prompt streams, in order. */
export type AgentUpdate =
  | { type: 'text'; text: string }
  | { type: 'reasoning'; text: string }
  | { type: 'toolCall'; callId: string; name: string; card?: Card }
  | { type: 'toolResult'; callId: string; name: string; isError: boolean; text: string; card?: Card }
  | ({ type: 'usage' } & AgentTokens)
  | { type: 'compaction'; tokensBefore: number; tokensAfter: number; pruned: number; summarized: boolean }
  | { type: 'retry'; attempt: number; delayMs: number; reason: string };

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
    default:
      return undefined;
  }
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
