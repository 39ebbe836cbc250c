// The chat with an agent in the panel (docs/agent.md, "In VS Code") — toolhost's own, or an ACP
// agent toolhost hosts (agentPicker.ts), the same agent for the whole chat: the transcript of
// one chat — each prompt the person sent, and what the run answered as `toolhost/agentUpdate`
// streamed it: the model's text (appended, shown as markdown), its reasoning (folded), one line
// per tool call that leads to the call's card, retries and compactions, a hosted agent's plan (a
// checklist, the latest replacing the earlier) and context window — and, when the run ended,
// why (unless it answered), a failed run's error, and a footer with the tokens and the cost. Also
// the chat box's HTML. Everything from the model or a tool is escaped. Pure: no `vscode` import,
// so `node --test` covers it; chatView.ts sends the requests and feeds the updates in.

import type { Card } from './cards';
import { escapeHtml } from './html';
import { markdownHtml } from './markdown';
import { AGENT_MODES, type AgentMode, type AgentPromptResult, type AgentTokens, type AgentUpdate, type AgentUpdateParams, type ContextCost, type PlanEntry } from './agentProtocol';
import { agentOptionsHtml, agentSelectTitle, OWN_CHAT_AGENT, type AgentPicker, type ChatAgent } from './agentPicker';
import { agentSettingsBoxHtml, type AgentSettings } from './agentSettings';

/** A call of the agent, as a line of the transcript (its card is in the panel's feed). */
export interface ChatToolLine {
  kind: 'tool';
  callId: string;
  /** The tool's name. */
  name: string;
  /** The card's title (`Read a.txt`), else the tool's name. */
  title: string;
  status: 'pending' | 'completed' | 'failed';
  /** A failed call's first line of Native text. */
  error?: string;
}

export type ChatItem =
  | { kind: 'text'; text: string }
  | { kind: 'reasoning'; text: string }
  | ChatToolLine
  /** A retry of a model request, a compaction, the server's restart. */
  | { kind: 'note'; text: string }
  /** A hosted agent's plan: one per exchange, the latest. */
  | { kind: 'plan'; entries: PlanEntry[] };

/** A hosted agent's context window, as its latest `context` update said. */
export interface ChatContext {
  used: number;
  size: number;
  cost?: ContextCost;
}

/** One prompt and its run. `running` until the request is answered; `stopping` after Stop, until
 * the request is answered as cancelled. */
export interface ChatExchange {
  key: string;
  prompt: string;
  /** The agent that answers (the chat's). */
  agent: ChatAgent;
  /** The first exchange of the chat: it says which agent answers. */
  startsChat: boolean;
  /** The mode chosen for this prompt (none: the server's `[agent] mode`). */
  mode?: AgentMode;
  state: 'running' | 'stopping' | 'done';
  items: ChatItem[];
  /** The tokens of the model requests so far (the `usage` updates, summed). */
  usage: AgentTokens;
  /** A hosted agent's context window, the latest. */
  context?: ChatContext;
  runId?: string;
  /** The request's answer (a run that ended by itself). */
  result?: AgentPromptResult;
  /** Stopped with the Stop button: the request was cancelled (no result comes). */
  cancelled?: boolean;
  /** The request itself failed (the server is not running, refused the prompt, …). */
  error?: string;
  /** Where the current model request's text starts in `items`: a retried request's text is
   * dropped from here. */
  attemptStart: number;
}

/** The updates a finished run may still send: its calls' ends, its context window. */
const LATE_UPDATES: ReadonlySet<AgentUpdate['type']> = new Set(['toolCall', 'toolResult', 'context']);

export const ZERO_TOKENS: Readonly<AgentTokens> = { promptTokens: 0, completionTokens: 0, totalTokens: 0, cachedTokens: 0 };

/** What a run's reasoning summary says when folded. */
export const REASONING_LABEL = 'Reasoning';

function firstLine(text: string): string {
  return (text.split('\n').find((l) => l.trim() !== '') ?? '').trim();
}

/** The transcript of one chat, the agent it is with (from its first prompt on) and the chat's id on
 * the server (known once the server named it, in the first update or the first answer). One prompt
 * runs at a time. */
export class ChatState {
  chatId: string | undefined;
  /** The agent of the chat; undefined until its first prompt (then New chat may pick another). */
  agent: ChatAgent | undefined;
  readonly exchanges: ChatExchange[] = [];
  private next = 1;

  /** The exchange whose prompt is still running, if any. */
  get running(): ChatExchange | undefined {
    const last = this.exchanges[this.exchanges.length - 1];
    return last && last.state !== 'done' ? last : undefined;
  }

  get(key: string): ChatExchange | undefined {
    return this.exchanges.find((x) => x.key === key);
  }

  /** A new prompt; throws while another one runs (the server answers one prompt per chat). The
   * chat's first prompt sets its agent (`agent`, else the own one); a later prompt goes to the chat's
   * agent whatever `agent` says. */
  begin(prompt: string, mode?: AgentMode, agent?: ChatAgent): ChatExchange {
    if (this.running) {
      throw new Error('the agent is still answering the last prompt: stop it first');
    }
    this.agent ??= { ...(agent ?? OWN_CHAT_AGENT) };
    const exchange: ChatExchange = {
      key: `x${this.next++}`,
      prompt,
      agent: this.agent,
      startsChat: this.exchanges.length === 0,
      state: 'running',
      items: [],
      usage: { ...ZERO_TOKENS },
      attemptStart: 0,
    };
    // (A hosted agent is sent no mode: its exchanges show none.)
    if (mode !== undefined && this.agent.name === OWN_CHAT_AGENT.name) {
      exchange.mode = mode;
    }
    this.exchanges.push(exchange);
    return exchange;
  }

  /** Applies one `toolhost/agentUpdate` to the running exchange — or, for a call's update or the
   * context, to the finished exchange of its run: a hosted agent's last step may end after its
   * turn was answered. The exchange it changed, or undefined when the update is not this chat's
   * (another chat's, or nothing of it runs). */
  apply(params: AgentUpdateParams): ChatExchange | undefined {
    const finished = this.exchanges.find((e) => e.state === 'done' && e.runId === params.runId);
    if (finished) {
      return LATE_UPDATES.has(params.update.type) ? this.applyTo(finished, params.update) : undefined;
    }
    const x = this.running;
    if (!x) {
      return undefined;
    }
    if (x.runId !== undefined ? params.runId !== x.runId : this.chatId !== undefined && params.chatId !== this.chatId) {
      return undefined;
    }
    x.runId = params.runId;
    this.chatId = params.chatId;
    return this.applyTo(x, params.update);
  }

  private applyTo(x: ChatExchange, update: AgentUpdate): ChatExchange {
    const last = x.items[x.items.length - 1];
    switch (update.type) {
      case 'text':
      case 'reasoning':
        if (update.text === '') {
          return x;
        }
        if (last?.kind === update.type && x.items.length > x.attemptStart) {
          last.text += update.text;
        } else {
          x.items.push({ kind: update.type, text: update.text });
        }
        break;
      case 'toolCall':
      case 'toolResult': {
        let line = x.items.find((i): i is ChatToolLine => i.kind === 'tool' && i.callId === update.callId);
        if (!line) {
          line = { kind: 'tool', callId: update.callId, name: update.name, title: update.name, status: 'pending' };
          x.items.push(line);
        }
        const title = update.card?.title;
        if (title) {
          line.title = title;
        }
        if (update.type === 'toolResult') {
          const failed = update.isError || update.card?.status === 'failed';
          line.status = failed ? 'failed' : 'completed';
          const error = failed ? firstLine(update.text) : '';
          if (error !== '') {
            line.error = error;
          } else {
            delete line.error;
          }
        }
        x.attemptStart = x.items.length;
        break;
      }
      case 'usage':
        x.usage = {
          promptTokens: x.usage.promptTokens + update.promptTokens,
          completionTokens: x.usage.completionTokens + update.completionTokens,
          totalTokens: x.usage.totalTokens + update.totalTokens,
          cachedTokens: x.usage.cachedTokens + update.cachedTokens,
        };
        x.attemptStart = x.items.length;
        break;
      case 'compaction': {
        const how = [update.pruned > 0 ? `${update.pruned} ${update.pruned === 1 ? 'output' : 'outputs'} pruned` : '', update.summarized ? 'summarized' : '']
          .filter((s) => s !== '')
          .join(', ');
        x.items.push({ kind: 'note', text: `conversation compacted (${tokens(update.tokensBefore)} → ${tokens(update.tokensAfter)} tokens${how ? `, ${how}` : ''})` });
        x.attemptStart = x.items.length;
        break;
      }
      case 'retry':
        // The failed attempt's text and reasoning go: the retried request streams them again.
        x.items.splice(x.attemptStart, x.items.length - x.attemptStart, {
          kind: 'note',
          text: `the model request failed (${update.reason || 'no reason given'}); retry ${update.attempt} in ${seconds(update.delayMs)}`,
        });
        x.attemptStart = x.items.length;
        break;
      case 'plan': {
        // The whole plan each time: the checklist stays where it first appeared, updated.
        const plan = x.items.find((i) => i.kind === 'plan');
        if (plan) {
          plan.entries = update.entries;
        } else {
          x.items.push({ kind: 'plan', entries: update.entries });
        }
        break;
      }
      case 'context':
        x.context = update.cost ? { used: update.used, size: update.size, cost: update.cost } : { used: update.used, size: update.size };
        break;
    }
    return x;
  }

  /** A call's card came (`toolhost/card`): a tool line still pending takes the final card's
   * status — a hosted agent's last step may end after its run stopped streaming updates. The
   * exchange it changed, if any. */
  settle(card: Pick<Card, 'callId' | 'status' | 'title'>): ChatExchange | undefined {
    if (card.status !== 'completed' && card.status !== 'failed') {
      return undefined;
    }
    for (const x of this.exchanges) {
      const line = x.items.find((i): i is ChatToolLine => i.kind === 'tool' && i.callId === card.callId);
      if (line) {
        if (line.status !== 'pending') {
          return undefined;
        }
        line.status = card.status;
        if (card.title) {
          line.title = card.title;
        }
        return x;
      }
    }
    return undefined;
  }

  /** The request was answered: how the run ended. */
  finish(key: string, result: AgentPromptResult): ChatExchange | undefined {
    const x = this.get(key);
    if (!x) {
      return undefined;
    }
    x.state = 'done';
    x.result = result;
    x.runId = result.runId || x.runId;
    this.chatId = result.chatId;
    const answer = result.answer ?? '';
    // The last model turn's items: those after the last call or note.
    let turn = x.items.length;
    while (turn > 0 && (x.items[turn - 1]?.kind === 'text' || x.items[turn - 1]?.kind === 'reasoning')) {
      turn--;
    }
    if (answer.trim() !== '' && !x.items.slice(turn).some((i) => i.kind === 'text')) {
      // Nothing of the answer was streamed (or it was dropped): the answer itself.
      x.items.push({ kind: 'text', text: answer });
    }
    return x;
  }

  /** Stop was pressed: the request is being cancelled. */
  stopping(key: string): ChatExchange | undefined {
    const x = this.get(key);
    if (x?.state === 'running') {
      x.state = 'stopping';
    }
    return x;
  }

  /** The request was cancelled (Stop): the run stopped, the chat keeps what was said. */
  cancelled(key: string): ChatExchange | undefined {
    const x = this.get(key);
    if (x && x.state !== 'done') {
      x.state = 'done';
      x.cancelled = true;
    }
    return x;
  }

  /** The request failed (no run, or no answer from the server). */
  fail(key: string, message: string): ChatExchange | undefined {
    const x = this.get(key);
    if (x && x.state !== 'done') {
      x.state = 'done';
      x.error = message;
    }
    return x;
  }

  /** The server went away: the chat's conversation is gone with it, so the next prompt starts a
   * new one. A note in the last exchange says so. */
  forgetChat(): ChatExchange | undefined {
    if (this.chatId === undefined) {
      return undefined;
    }
    this.chatId = undefined;
    const last = this.exchanges[this.exchanges.length - 1];
    last?.items.push({ kind: 'note', text: 'the toolhost server restarted: the next prompt starts a new chat' });
    return last;
  }

  /** New chat: an empty transcript, no chat id and no agent yet. */
  clear(): void {
    this.exchanges.length = 0;
    this.chatId = undefined;
    this.agent = undefined;
  }
}

/** `1,234` */
export function tokens(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

function seconds(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(ms % 1000 === 0 ? 0 : 1)} s`;
}

/** `$0.0012`: four decimals, as `toolhost agent` prints it. */
export function formatCost(cost: number): string {
  return `$${cost.toFixed(4)}`;
}

/** The tokens the footer shows: the server's count of the whole run once it answered, else the
 * requests' counts so far. */
export function exchangeUsage(x: ChatExchange): AgentTokens {
  return x.result?.usage ?? x.usage;
}

/** A hosted agent's context window: `12,345 / 200,000 tokens · $0.0123` (the cost when given; in
 * another currency `0.0123 EUR`). */
export function contextText(context: ChatContext): string {
  const used = `${tokens(context.used)} / ${tokens(context.size)} tokens`;
  if (!context.cost) {
    return used;
  }
  const cost = context.cost.currency === 'USD' ? formatCost(context.cost.amount) : `${context.cost.amount.toFixed(4)} ${context.cost.currency}`;
  return `${used} · ${cost}`;
}

/** The footer: `2 turns · 250 tokens in · 20 out · 0 cached · $0.0003` (turns and cost once the
 * run answered; the cost only with `[agent.price]`). Empty while no request counted anything; no
 * tokens for a hosted agent's run that counted none (its context line stands for them). */
export function footerText(x: ChatExchange): string {
  const usage = exchangeUsage(x);
  const parts: string[] = [];
  if (x.result) {
    parts.push(`${x.result.turns} ${x.result.turns === 1 ? 'turn' : 'turns'}`);
  }
  // A hosted agent counts no tokens of its own: its context line says how full the window is.
  const counted = usage.totalTokens > 0 || usage.promptTokens > 0;
  if ((x.result && x.context === undefined) || counted) {
    parts.push(`${tokens(usage.promptTokens)} tokens in`, `${tokens(usage.completionTokens)} out`, `${tokens(usage.cachedTokens)} cached`);
  }
  if (x.result?.cost !== undefined) {
    parts.push(formatCost(x.result.cost));
  }
  return parts.join(' · ');
}

/** Why the run ended, when it did not simply answer (a failed run's error is shown instead). */
export function stopText(x: ChatExchange): string | undefined {
  if (x.cancelled) {
    return 'Stopped: the run was cancelled (the chat keeps what was said).';
  }
  const result = x.result;
  if (!result) {
    return undefined;
  }
  switch (result.stop) {
    case 'answered':
    case 'failed':
      return undefined;
    case 'structured':
      return 'Ended with a structured value.';
    case 'turn-limit':
      return `Stopped at the turn limit (${result.turns} ${result.turns === 1 ? 'turn' : 'turns'}) before an answer.`;
    case 'token-budget':
      return 'Stopped at the token budget before an answer.';
    case 'cost-budget':
      return 'Stopped at the cost budget before an answer.';
    case 'cancelled':
      return 'Stopped: the run was cancelled (the chat keeps what was said).';
    default:
      return `Stopped: ${result.stop}.`;
  }
}

/** A failed run's (or request's) error line. */
export function errorText(x: ChatExchange): string | undefined {
  if (x.error !== undefined) {
    return `Failed: ${x.error}`;
  }
  if (x.result?.stop === 'failed') {
    return `Failed: ${x.result.error ?? 'the model failed'}`;
  }
  return undefined;
}

const TOOL_MARK: Record<ChatToolLine['status'], string> = { pending: '→', completed: '✓', failed: '✗' };
/** A plan entry's mark by status; a status of a newer agent gets none. */
const PLAN_MARK: Record<string, string> = { pending: '○', in_progress: '◐', completed: '✓' };

function planHtml(entries: PlanEntry[]): string {
  const lines = entries.map(
    (e) =>
      `<li class="chat-plan-entry" data-status="${escapeHtml(e.status)}" data-priority="${escapeHtml(e.priority)}">` +
      `<span class="chat-plan-mark" aria-label="${escapeHtml(e.status.replace('_', ' '))}">${PLAN_MARK[e.status] ?? '·'}</span> ${escapeHtml(e.content)}</li>`,
  );
  return `<div class="chat-plan"><div class="chat-plan-title">Plan</div><ul>${lines.join('')}</ul></div>`;
}

function itemHtml(item: ChatItem, index: number): string {
  switch (item.kind) {
    case 'text':
      return `<div class="chat-text markdown">${markdownHtml(item.text)}</div>`;
    case 'reasoning':
      return (
        `<details class="chat-reasoning" data-fold="r${index}"><summary>${REASONING_LABEL}</summary>` +
        `<div class="chat-reasoning-text">${escapeHtml(item.text)}</div></details>`
      );
    case 'tool': {
      const error = item.error ? `<span class="chat-tool-error">${escapeHtml(item.error)}</span>` : '';
      return (
        `<div class="chat-tool" data-status="${item.status}" data-call-id="${escapeHtml(item.callId)}">` +
        `<button type="button" class="link chat-card-link" data-card="${escapeHtml(item.callId)}" title="${escapeHtml(`Show the card of ${item.name} (${item.callId})`)}">` +
        `<span class="chat-tool-mark" aria-hidden="true">${TOOL_MARK[item.status]}</span> ${escapeHtml(item.title)}</button>${error}</div>`
      );
    }
    case 'note':
      return `<div class="chat-note">${escapeHtml(item.text)}</div>`;
    case 'plan':
      return planHtml(item.entries);
  }
}

/** One prompt and its run. */
export function exchangeHtml(x: ChatExchange): string {
  const mode = x.mode ? ` <span class="chat-mode-badge">${escapeHtml(x.mode)}</span>` : '';
  const items = x.items.map(itemHtml).join('');
  const working =
    x.state !== 'done'
      ? `<div class="chat-working" role="status">${x.state === 'stopping' ? 'Stopping…' : x.items.length === 0 ? 'Working…' : 'Working… (Stop: Esc)'}</div>`
      : '';
  const stop = stopText(x);
  const error = errorText(x);
  const structured =
    x.result?.structured !== undefined ? `<pre class="chat-structured json">${escapeHtml(JSON.stringify(x.result.structured, null, 2))}</pre>` : '';
  const footer = footerText(x);
  const context = x.context ? `<div class="chat-context">${escapeHtml(contextText(x.context))}</div>` : '';
  const head = x.startsChat ? `<div class="chat-head" data-agent="${escapeHtml(x.agent.name)}">Chat with ${escapeHtml(x.agent.title)}</div>` : '';
  const stopAttr = x.result ? ` data-stop="${escapeHtml(x.result.stop)}"` : x.cancelled ? ' data-stop="cancelled"' : x.error !== undefined ? ' data-stop="failed"' : '';
  return (
    `<article class="chat-x" data-chat-key="${escapeHtml(x.key)}" data-state="${x.state}" data-agent="${escapeHtml(x.agent.name)}"${stopAttr}>` +
    head +
    `<div class="chat-user"><div class="chat-who">You${mode}</div><div class="chat-prompt">${escapeHtml(x.prompt)}</div></div>` +
    `<div class="chat-agent"><div class="chat-who">${escapeHtml(x.agent.title)}</div>${items}${working}` +
    (stop ? `<div class="chat-stop">${escapeHtml(stop)}</div>` : '') +
    (error ? `<div class="chat-error" role="alert">${escapeHtml(error)}</div>` : '') +
    structured +
    context +
    (footer ? `<div class="chat-footer">${escapeHtml(footer)}</div>` : '') +
    `</div></article>`
  );
}

/** The whole transcript. */
export function chatLogHtml(state: ChatState): string {
  return state.exchanges.map(exchangeHtml).join('');
}

/** The chat section: the transcript, then the box (prompt, agent, mode, Send / Stop / New chat).
 * `mode`: the mode picked last (none: the server's `[agent] mode`); `picker`: the agents on offer
 * (the select is locked to the chat's agent once it started); `settings`: a hosted agent's own,
 * beside the agent select. */
export function chatSectionHtml(state: ChatState, mode: AgentMode | undefined, picker: AgentPicker, settings?: AgentSettings): string {
  const running = state.running !== undefined;
  const options = [`<option value=""${mode === undefined ? ' selected' : ''}>default mode</option>`]
    .concat(AGENT_MODES.map((m) => `<option value="${m}"${m === mode ? ' selected' : ''}>${m}</option>`))
    .join('');
  return (
    `<section id="chat" aria-label="chat with an agent"${running ? ' data-running="true"' : ''}>` +
    `<div id="chat-log" role="log" aria-label="the chat" aria-live="polite">${chatLogHtml(state)}</div>` +
    `<form id="chat-form" class="chat-form" aria-label="ask the agent">` +
    `<textarea id="chat-input" rows="2" aria-label="Prompt for the agent (Enter sends, Shift+Enter: new line)" placeholder="Ask the agent… (Enter sends, Shift+Enter: new line)"></textarea>` +
    `<div class="chat-bar">` +
    `<select id="chat-agent" aria-label="The agent that answers"${state.agent ? ' disabled' : ''} title="${escapeHtml(agentSelectTitle(state.agent))}">${agentOptionsHtml(picker, state.agent)}</select>` +
    (settings ? agentSettingsBoxHtml(settings) : '') +
    `<select id="chat-mode" aria-label="Permission mode for the next prompt" title="Permission mode of toolhost's agent: ask, accept-edits, plan or auto (default: [agent] mode of the configuration); a hosted agent asks through its own permission requests">${options}</select>` +
    `<span class="chat-spacer"></span>` +
    `<button type="button" id="chat-new" class="action" title="Start a new chat (the transcript is cleared)">New chat</button>` +
    `<button type="button" id="chat-stop" class="action stop"${running ? '' : ' hidden'} title="Stop the agent (Esc)">Stop</button>` +
    `<button type="button" id="chat-send" class="action primary"${running ? ' disabled' : ''} title="Send (Enter)">Send</button>` +
    `</div></form></section>`
  );
}

/** A mode from the page (a `<select>` value), or undefined for the default (or junk). */
export function asAgentMode(value: unknown): AgentMode | undefined {
  return AGENT_MODES.find((m) => m === value);
}
