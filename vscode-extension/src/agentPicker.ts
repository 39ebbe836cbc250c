// The agent choice of the chat box: toolhost's own agent (the default) or one of the ACP agents
// `toolhost serve` hosts (`toolhost/listAgents`: Claude Code, Codex, …). A chat stays with the agent
// it started with — its next prompts go to the same agent under the same chat id, so the choice is
// locked until New chat —, and an agent whose adapter is not installed is offered disabled, with
// what to install. Also the `toolhost/agentPrompt` params a prompt becomes. Pure: no `vscode`
// import, so `node --test` covers it.

import { escapeHtml } from './html';
import { OWN_AGENT, type AgentMode, type AgentPromptParams, type HostedAgentInfo } from './agentProtocol';

/** The agent a chat talks to: its name on the wire and what the chat calls it. */
export interface ChatAgent {
  name: string;
  title: string;
}

/** toolhost's own agent, as the chat calls it (the caller of its calls' cards). */
export const OWN_CHAT_AGENT: Readonly<ChatAgent> = { name: OWN_AGENT, title: 'toolhost agent' };

/** Why an agent cannot be picked: `not installed — npm install -g <package>`. */
export function notInstalledText(agent: HostedAgentInfo): string {
  return agent.package !== undefined ? `not installed — npm install -g ${agent.package}` : `not installed — ${agent.command || agent.name} not found`;
}

/** The agents on offer and the one picked for the next new chat. */
export class AgentPicker {
  private hosted: HostedAgentInfo[] = [];
  /** The name of the agent picked for the next new chat. */
  private pickedName: string = OWN_AGENT;

  /** The hosted agents of the last `toolhost/listAgents` (none before it answered). */
  get agents(): readonly HostedAgentInfo[] {
    return this.hosted;
  }

  /** The agent a new chat starts with. */
  get picked(): ChatAgent {
    return this.agent(this.pickedName) ?? { ...OWN_CHAT_AGENT };
  }

  /** A new list (the server started): a pick that is no longer usable falls back to the own
   * agent. */
  setAgents(agents: HostedAgentInfo[]): void {
    this.hosted = agents;
    if (this.agent(this.pickedName) === undefined) {
      this.pickedName = OWN_AGENT;
    }
  }

  /** Picks `name` for the next new chat; false (and the pick unchanged) for an agent that is
   * unknown or not installed. */
  pick(name: unknown): boolean {
    if (typeof name !== 'string' || this.agent(name) === undefined) {
      return false;
    }
    this.pickedName = name;
    return true;
  }

  /** The usable agent called `name` (the own agent, or an installed hosted one). */
  agent(name: string): ChatAgent | undefined {
    if (name === OWN_AGENT || name === '') {
      return { ...OWN_CHAT_AGENT };
    }
    const hosted = this.hosted.find((a) => a.name === name && a.installed);
    return hosted ? { name: hosted.name, title: hosted.title } : undefined;
  }
}

function option(value: string, label: string, selected: boolean, disabled: string | undefined): string {
  const title = disabled === undefined ? '' : ` title="${escapeHtml(disabled)}"`;
  return `<option value="${escapeHtml(value)}"${selected ? ' selected' : ''}${disabled === undefined ? '' : ' disabled'}${title}>${escapeHtml(label)}</option>`;
}

/** The options of the agent `<select>`: the own agent, then the hosted ones (the uninstalled
 * disabled, saying what to install). Selected: the chat's agent once a chat started, else the pick;
 * a chat's agent the list lacks (the server restarted without it) is still shown. */
export function agentOptionsHtml(picker: AgentPicker, chatAgent: ChatAgent | undefined): string {
  const selected = chatAgent?.name ?? picker.picked.name;
  const options = [option(OWN_AGENT, OWN_CHAT_AGENT.title, selected === OWN_AGENT, undefined)];
  for (const agent of picker.agents) {
    const why = agent.installed ? undefined : notInstalledText(agent);
    options.push(option(agent.name, why === undefined ? agent.title : `${agent.title} (${why})`, agent.name === selected, why));
  }
  if (chatAgent !== undefined && chatAgent.name !== OWN_AGENT && !picker.agents.some((a) => a.name === chatAgent.name)) {
    options.push(option(chatAgent.name, chatAgent.title, true, undefined));
  }
  return options.join('');
}

/** The agent `<select>`'s tooltip: locked while a chat goes on. */
export function agentSelectTitle(chatAgent: ChatAgent | undefined): string {
  return chatAgent === undefined
    ? 'The agent that answers the new chat: toolhost\'s own, or an ACP agent toolhost hosts (its steps are cards you review and revert)'
    : `This chat is with ${chatAgent.title}: New chat to pick another agent`;
}

/** The `toolhost/agentPrompt` params of a prompt to `agent`, continuing `chatId` when given. The
 * permission mode is the own agent's (a hosted agent asks through its own permission requests). */
export function promptParams(prompt: string, agent: ChatAgent, chatId: string | undefined, mode: AgentMode | undefined): AgentPromptParams {
  const params: AgentPromptParams = { prompt };
  if (chatId !== undefined) {
    params.chatId = chatId;
  }
  if (agent.name !== OWN_AGENT) {
    params.agent = agent.name;
  } else if (mode !== undefined) {
    params.mode = mode;
  }
  return params;
}
