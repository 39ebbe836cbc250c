// The chat with an agent (chat.ts draws it): a prompt from the panel's chat box (or "toolhost: Ask
// the Agent") becomes a `toolhost/agentPrompt` request — to the agent the chat is with (toolhost's
// own, or one `toolhost/listAgents` offers, picked in the box for a new chat), continuing the chat
// with its id, with the mode picked in the box —, the server's `toolhost/agentUpdate`
// notifications stream into the transcript, and Stop cancels the request (`$/cancelRequest`: the
// run stops, the chat keeps what was said). The calls' cards (a hosted agent's steps too) come as
// ordinary `toolhost/card` notifications. A hosted agent's own settings (its mode, model, effort:
// agentSettings.ts) are read when it is picked for a new chat, shown beside the picker and set
// from there; the chat's first prompt goes to the chat they were read for.

import * as vscode from 'vscode';
import type { Card } from './cards';
import { ChatState, type ChatExchange } from './chat';
import { asAgentPromptResult, asAgentUpdateParams, asHostedAgents, OWN_AGENT, type AgentMode, type AgentPromptParams, type HostedAgentInfo } from './agentProtocol';
import { AgentPicker, promptParams, type ChatAgent } from './agentPicker';
import { AgentSettings, type SettingsRequest } from './agentSettings';

/** Sends `toolhost/agentPrompt`; resolves undefined when `token` cancelled it. */
export type PromptSender = (params: AgentPromptParams, token: vscode.CancellationToken) => Promise<unknown>;

/** What changed: one exchange (its key), or the whole chat (undefined). */
export type ChatChange = { key: string } | undefined;

/** A copy of the chat for the API (tests, diagnostics). */
export interface ChatSnapshot {
  chatId: string | undefined;
  /** The chat's agent (undefined before its first prompt). */
  agent: ChatAgent | undefined;
  /** The agent a new chat starts with, and the hosted agents on offer. */
  picked: ChatAgent;
  agents: HostedAgentInfo[];
  running: boolean;
  exchanges: ChatExchange[];
}

const RUNNING_CONTEXT = 'toolhost.agentRunning';
/** How often, and how far apart, a prompt refused while its chat's stopped run finishes is sent
 * again (10 s in all). */
const BUSY_RETRIES = 40;
const BUSY_DELAY_MS = 250;

export class ChatController implements vscode.Disposable {
  readonly state = new ChatState();
  /** The mode picked last in the chat box (undefined: the server's `[agent] mode`). */
  mode: AgentMode | undefined;
  /** The agents on offer and the one picked for a new chat. */
  readonly picker = new AgentPicker();
  /** The picked hosted agent's own settings, shown beside the picker. */
  readonly settings: AgentSettings;
  private cancel: vscode.CancellationTokenSource | undefined;
  private readonly changeEmitter = new vscode.EventEmitter<ChatChange>();
  readonly onDidChange = this.changeEmitter.event;

  constructor(
    private readonly send: PromptSender,
    private readonly output: vscode.OutputChannel,
    requestSettings: SettingsRequest,
  ) {
    this.settings = new AgentSettings(requestSettings, () => this.changed(undefined), (line) => this.output.appendLine(line));
  }

  get running(): boolean {
    return this.state.running !== undefined;
  }

  private changed(x: ChatExchange | undefined): void {
    this.changeEmitter.fire(x ? { key: x.key } : undefined);
  }

  private setRunning(running: boolean): void {
    void vscode.commands.executeCommand('setContext', RUNNING_CONTEXT, running);
  }

  /** A `toolhost/agentUpdate` notification. */
  handleUpdate(raw: unknown): void {
    const params = asAgentUpdateParams(raw);
    if (!params) {
      return;
    }
    if (params.update.type === 'options') {
      this.settings.update(params.chatId, params.update.options);
      return;
    }
    const x = this.state.apply(params);
    if (x) {
      this.changed(x);
    }
  }

  /** A call's card (the card store's): a tool line of the chat still pending takes its final
   * status. */
  handleCard(card: Card): void {
    const x = this.state.settle(card);
    if (x) {
      this.changed(x);
    }
  }

  /** Asks the server which agents it hosts (`list` sends `toolhost/listAgents`); a server that
   * cannot say offers only its own agent. */
  async loadAgents(list: () => Promise<unknown>): Promise<void> {
    try {
      this.picker.setAgents(asHostedAgents(await list()));
    } catch (err) {
      this.output.appendLine(`[toolhost] toolhost/listAgents failed (only toolhost's own agent is offered): ${err instanceof Error ? err.message : String(err)}`);
      this.picker.setAgents([]);
    }
    // A chat not started yet (or whose server restarted) shows its hosted agent's settings.
    if (this.state.chatId === undefined) {
      this.settings.show((this.state.agent ?? this.picker.picked).name);
    }
    this.changed(undefined);
  }

  /** Picks the agent of the next new chat (the chat box's select); false for one that cannot be
   * picked. A chat already going on keeps its agent. A hosted agent's settings are read (it
   * starts), the own agent's hide them. */
  pickAgent(name: unknown): boolean {
    const picked = this.picker.pick(name);
    if (this.state.agent === undefined) {
      this.settings.show(this.picker.picked.name);
    }
    this.changed(undefined);
    return picked;
  }

  /** Sends `prompt` (continuing the chat, with its agent; a new chat with the picked one) and
   * resolves with its exchange once the run ended. */
  async prompt(prompt: string, mode: AgentMode | undefined = this.mode): Promise<ChatExchange | undefined> {
    const text = prompt.trim();
    if (text === '') {
      return undefined;
    }
    if (this.running) {
      void vscode.window.showWarningMessage('toolhost: the agent is still answering: stop it first (Stop, or Esc in the chat box).');
      return undefined;
    }
    const startsChat = this.state.agent === undefined;
    const x = this.state.begin(text, mode, this.picker.picked);
    const cancel = new vscode.CancellationTokenSource();
    this.cancel = cancel;
    this.setRunning(true);
    // A new chat locks the agent select: the whole chat box is drawn again.
    this.changed(startsChat ? undefined : x);
    if (this.state.chatId === undefined && x.agent.name !== OWN_AGENT) {
      // The chat the shown settings belong to is the one to prompt: its agent was started for them.
      await this.settings.ready();
    }
    const settingsChat = this.settings.agent === x.agent.name ? this.settings.chatId : undefined;
    const params = promptParams(text, x.agent, this.state.chatId ?? settingsChat, mode);
    this.output.appendLine(
      `[toolhost] agent prompt to ${x.agent.title}${params.chatId ? ` (chat ${params.chatId})` : ' (new chat)'}${params.mode ? `, mode ${params.mode}` : ''}`,
    );
    try {
      // (Stopped while the agent was still starting for its settings: nothing to send.)
      const raw = cancel.token.isCancellationRequested ? undefined : await this.sendWhenFree(params, cancel.token);
      const result = asAgentPromptResult(raw);
      if (cancel.token.isCancellationRequested || raw === undefined || raw === null) {
        this.state.cancelled(x.key);
      } else if (result) {
        this.state.finish(x.key, result);
        this.settings.follow(x.agent.name, result.chatId);
        this.output.appendLine(`[toolhost] agent run ${result.runId} ended: ${result.stop}${result.error ? ` (${result.error})` : ''}`);
      } else {
        this.state.fail(x.key, `unexpected toolhost/agentPrompt result: ${JSON.stringify(raw)}`);
      }
    } catch (err) {
      if (err instanceof vscode.CancellationError || cancel.token.isCancellationRequested) {
        this.state.cancelled(x.key);
      } else {
        const message = err instanceof Error ? err.message : String(err);
        this.output.appendLine(`[toolhost] agent prompt failed: ${message}`);
        this.state.fail(x.key, message);
      }
    } finally {
      cancel.dispose();
      if (this.cancel === cancel) {
        this.cancel = undefined;
      }
      // (A new chat may have started meanwhile.)
      this.setRunning(this.running);
      this.changed(this.state.get(x.key));
    }
    return x;
  }

  /** Sends the prompt. After a Stop the server answers at once, but the stopped run may still be
   * finishing its calls, and a prompt of the same chat is refused meanwhile (`-32600`, "still
   * answering"): the prompt is sent again for a few seconds, until the chat is free. */
  private async sendWhenFree(params: AgentPromptParams, token: vscode.CancellationToken): Promise<unknown> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.send(params, token);
      } catch (err) {
        const busy = (err as { code?: unknown }).code === -32600 && /still answering/.test(err instanceof Error ? err.message : '');
        if (!busy || params.chatId === undefined || attempt >= BUSY_RETRIES || token.isCancellationRequested) {
          throw err;
        }
        await new Promise((resolve) => setTimeout(resolve, BUSY_DELAY_MS));
        if (token.isCancellationRequested) {
          return undefined;
        }
      }
    }
  }

  /** A setting of the hosted agent changed in the chat box (`toolhost/agentSetOption`). */
  setOption(option: unknown, value: unknown): Promise<void> {
    return this.settings.set(option, value);
  }

  /** Stop: cancels the running prompt's request; false when nothing runs. */
  stop(): boolean {
    const x = this.state.running;
    if (!x || !this.cancel) {
      return false;
    }
    this.state.stopping(x.key);
    this.changed(x);
    this.cancel.cancel();
    return true;
  }

  /** New chat: stops a running prompt and clears the transcript; a hosted agent's settings are read
   * again, for the new chat. */
  newChat(): void {
    this.stop();
    this.state.clear();
    this.settings.renew(this.picker.picked.name);
    this.changed(undefined);
  }

  /** The server stopped or restarted: its chats are gone. */
  serverGone(): void {
    this.settings.forget();
    const x = this.state.forgetChat();
    if (x) {
      this.changed(x);
    }
  }

  snapshot(): ChatSnapshot {
    return {
      chatId: this.state.chatId,
      agent: this.state.agent ? { ...this.state.agent } : undefined,
      picked: this.picker.picked,
      agents: this.picker.agents.map((a) => ({ ...a })),
      running: this.running,
      exchanges: JSON.parse(JSON.stringify(this.state.exchanges)) as ChatExchange[],
    };
  }

  dispose(): void {
    this.cancel?.cancel();
    this.changeEmitter.dispose();
  }
}

export const CHAT_COMMANDS = {
  ask: 'toolhost.agent.ask',
  stop: 'toolhost.agent.stop',
  newChat: 'toolhost.agent.newChat',
} as const;
