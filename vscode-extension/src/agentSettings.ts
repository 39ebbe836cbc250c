// A hosted agent's own settings beside the chat box's agent picker: its modes, models, thought
// levels (whatever `toolhost/agentOptions` says it offers), one small select each (an on/off
// setting a checkbox). Picking a hosted agent for a new chat starts it without a prompt and reads
// its settings; a change is `toolhost/agentSetOption`, drawn again from its answer (a refusal is
// shown beside them, and the select falls back to what is in effect); the agent's own changes
// during a turn (`{type: "options"}`) replace them. The chat's first prompt goes to the chat the
// settings belong to, so what was chosen is what answers. toolhost's own agent has none: they are
// hidden. Pure: no `vscode` import (the requests are handed in), so `node --test` covers it.

import { escapeHtml } from './html';
import {
  AGENT_OPTION_METHODS,
  asAgentOptionsResult,
  OWN_AGENT,
  type AgentOption,
  type AgentOptionsParams,
  type AgentOptionValue,
  type AgentSetOptionParams,
} from './agentProtocol';

/** Sends `toolhost/agentOptions` or `toolhost/agentSetOption`; rejects with the server's error. */
export type SettingsRequest = (method: string, params: AgentOptionsParams | AgentSetOptionParams) => Promise<unknown>;

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export class AgentSettings {
  /** The hosted agent whose settings are shown (undefined: none shown). */
  private agentName: string | undefined;
  /** The chat they belong to (undefined until `toolhost/agentOptions` answered). */
  private chat: string | undefined;
  private current: AgentOption[] = [];
  private failure: string | undefined;
  private loading: Promise<void> | undefined;
  /** A chat opened for the settings of an agent then unpicked before any prompt: picked again, the
   * agent is not started a second time. */
  private parked: { agent: string; chatId: string } | undefined;
  /** Counts what was asked: an answer to an older question (the pick changed since) is dropped. */
  private generation = 0;

  constructor(
    private readonly request: SettingsRequest,
    private readonly changed: () => void,
    private readonly log: (line: string) => void,
  ) {}

  /** The hosted agent the settings are of, if any are shown. */
  get agent(): string | undefined {
    return this.agentName;
  }

  get chatId(): string | undefined {
    return this.chat;
  }

  get options(): readonly AgentOption[] {
    return this.current;
  }

  /** Why the last read or change failed (shown until the next answer). */
  get error(): string | undefined {
    return this.failure;
  }

  get isLoading(): boolean {
    return this.loading !== undefined;
  }

  /** Resolves once the settings asked for last are in (or failed). */
  ready(): Promise<void> {
    return this.loading ?? Promise.resolve();
  }

  /** The agent picked for a new chat: a hosted one's settings shown (its chat from before, when it
   * was picked and left unprompted), the own agent's none. */
  show(agent: string): void {
    if (agent === OWN_AGENT || agent === '') {
      this.hide();
    } else if (this.agentName !== agent) {
      this.park();
      const parked = this.parked?.agent === agent ? this.parked.chatId : undefined;
      this.parked = undefined;
      void this.load(agent, parked);
    }
  }

  /** New chat: a hosted agent's settings read afresh, for a chat of its own. */
  renew(agent: string): void {
    this.forget();
    this.show(agent);
  }

  /** The chat `chatId` with `agent` goes on: shows its settings, if others are shown. */
  follow(agent: string, chatId: string): void {
    if (agent !== OWN_AGENT && (this.agentName !== agent || this.chat !== chatId)) {
      void this.load(agent, chatId);
    }
  }

  /** The server is gone, and its chats with it: nothing is shown until the next pick. */
  forget(): void {
    this.generation++;
    this.parked = undefined;
    this.clear();
  }

  /** `{type: "options"}` of chat `chatId`: the agent changed its settings. */
  update(chatId: string, options: AgentOption[]): boolean {
    if (this.agentName === undefined || (this.chat !== undefined && this.chat !== chatId)) {
      return false;
    }
    this.chat = chatId;
    this.current = options;
    this.failure = undefined;
    this.changed();
    return true;
  }

  /** The person changed setting `option` to `value` (a select's value, a checkbox's state). */
  async set(option: unknown, value: unknown): Promise<void> {
    const chatId = this.chat;
    const known = this.current.find((o) => o.id === option);
    if (chatId === undefined || known === undefined || (typeof value !== 'string' && typeof value !== 'boolean')) {
      return;
    }
    const generation = this.generation;
    try {
      const raw = await this.request(AGENT_OPTION_METHODS.setOption, { chatId, option: known.id, value });
      if (generation === this.generation && this.chat === chatId) {
        this.take(raw, AGENT_OPTION_METHODS.setOption);
      }
    } catch (err) {
      if (generation === this.generation) {
        const shown = typeof value === 'string' ? (known.values.find((v) => v.value === value)?.name ?? value) : value ? 'on' : 'off';
        this.fail(`${known.name} could not be set to ${shown}: ${messageOf(err)}`);
      }
    }
    this.changed();
  }

  private load(agent: string, chatId: string | undefined): Promise<void> {
    const generation = ++this.generation;
    this.clear();
    this.agentName = agent;
    this.chat = chatId;
    const params: AgentOptionsParams = chatId === undefined ? { agent } : { agent, chatId };
    const loading = this.request(AGENT_OPTION_METHODS.options, params).then(
      (raw) => {
        if (generation === this.generation) {
          this.take(raw, AGENT_OPTION_METHODS.options);
        }
      },
      (err: unknown) => {
        if (generation === this.generation) {
          this.fail(`the settings of ${agent} could not be read: ${messageOf(err)}`);
        }
      },
    );
    this.loading = loading.then(() => {
      if (generation === this.generation) {
        this.loading = undefined;
        this.changed();
      }
    });
    this.changed();
    return this.loading;
  }

  private take(raw: unknown, method: string): void {
    const result = asAgentOptionsResult(raw);
    if (result === undefined) {
      this.fail(`unexpected ${method} result: ${JSON.stringify(raw)}`);
      return;
    }
    this.chat = result.chatId;
    this.current = result.options;
    this.failure = undefined;
  }

  private fail(message: string): void {
    this.failure = message;
    this.log(`[toolhost] ${message}`);
  }

  private hide(): void {
    this.generation++;
    this.park();
    this.clear();
    this.changed();
  }

  /** Keeps the shown chat (never prompted: a chat box with settings shown has no chat yet). */
  private park(): void {
    if (this.agentName !== undefined && this.chat !== undefined) {
      this.parked = { agent: this.agentName, chatId: this.chat };
    }
  }

  private clear(): void {
    this.agentName = undefined;
    this.chat = undefined;
    this.current = [];
    this.failure = undefined;
    this.loading = undefined;
  }
}

function valueOptionHtml(value: AgentOptionValue, current: string | boolean): string {
  const title = value.description !== undefined ? ` title="${escapeHtml(value.description)}"` : '';
  return `<option value="${escapeHtml(value.value)}"${value.value === current ? ' selected' : ''}${title}>${escapeHtml(value.name)}</option>`;
}

/** A select's entries; the values the agent files under a group, consecutive, in an `<optgroup>`. */
function valuesHtml(option: AgentOption): string {
  let html = '';
  for (let i = 0; i < option.values.length; ) {
    const group = option.values[i]!.group;
    let end = i + 1;
    while (group !== undefined && end < option.values.length && option.values[end]!.group === group) {
      end++;
    }
    const entries = option.values.slice(i, end).map((v) => valueOptionHtml(v, option.current)).join('');
    html += group === undefined ? entries : `<optgroup label="${escapeHtml(group)}">${entries}</optgroup>`;
    i = end;
  }
  return html;
}

function optionHtml(option: AgentOption): string {
  const title = escapeHtml(option.description ?? option.name);
  const category = option.category !== undefined ? ` data-category="${escapeHtml(option.category)}"` : '';
  const id = escapeHtml(option.id);
  const name = escapeHtml(option.name);
  if (typeof option.current === 'boolean') {
    return `<label class="chat-option chat-option-flag"${category} title="${title}"><input type="checkbox" data-option="${id}"${option.current ? ' checked' : ''}> ${name}</label>`;
  }
  return `<label class="chat-option"${category} title="${title}"><span class="chat-option-name">${name}</span><select data-option="${id}" aria-label="${name}">${valuesHtml(option)}</select></label>`;
}

/** What goes beside the agent select: the hosted agent's settings (a note while it starts), and
 * why the last read or change failed; nothing for the own agent. */
export function agentSettingsHtml(settings: AgentSettings): string {
  if (settings.agent === undefined) {
    return '';
  }
  const parts = settings.isLoading ? ['<span class="chat-options-note">starting the agent…</span>'] : settings.options.map(optionHtml);
  if (settings.error !== undefined) {
    parts.push(`<span class="chat-options-error" role="alert">${escapeHtml(settings.error)}</span>`);
  }
  return parts.join('');
}

/** The settings' place in the chat box (hidden while empty; the page fills it from then on). */
export function agentSettingsBoxHtml(settings: AgentSettings): string {
  const html = agentSettingsHtml(settings);
  return `<span id="chat-options" class="chat-options" aria-label="The agent's settings"${html === '' ? ' hidden' : ''}>${html}</span>`;
}
