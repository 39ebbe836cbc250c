// toolhost's custom LSP methods (docs/protocol.md, docs/schemas/*.json) and the shapes of their
// params and results: tools and calls, sessions, notices and live output, plan mode, structured
// output and the MCP bridge's servers. The shapes with more to them have modules of their own:
// cards (cards.ts), the own agent's chat (agentProtocol.ts) and the editor-backed lsp provider's
// `toolhost/lspQuery` (lspQuery.ts). Pure: no `vscode` import, so `node --test` covers it.

import type { Card } from './cards';
import { isIndex, isObject } from './guards';

export const methods = {
  listTools: 'toolhost/listTools',
  callTool: 'toolhost/callTool',
  listSessions: 'toolhost/listSessions',
  replaySession: 'toolhost/replaySession',
  cancelCall: 'toolhost/cancelCall',
  card: 'toolhost/card',
  callOutput: 'toolhost/callOutput',
  notice: 'toolhost/notice',
  lspQuery: 'toolhost/lspQuery',
  review: 'toolhost/review',
  setReview: 'toolhost/setReview',
  askUser: 'toolhost/askUser',
  setPlanMode: 'toolhost/setPlanMode',
  structuredOutput: 'toolhost/structuredOutput',
  mcpServers: 'toolhost/mcpServers',
  mcpServersChanged: 'toolhost/mcpServersChanged',
  agentPrompt: 'toolhost/agentPrompt',
  agentUpdate: 'toolhost/agentUpdate',
  listAgents: 'toolhost/listAgents',
} as const;

/** `toolhost/setPlanMode` params (`{}` only reads) and result. */
export interface SetPlanModeParams {
  active?: boolean;
}
export interface PlanModeState {
  active: boolean;
}

/** `toolhost/setPlanMode` result, or undefined when it is not one. */
export function asPlanModeState(raw: unknown): PlanModeState | undefined {
  return isObject(raw) && typeof raw.active === 'boolean' ? { active: raw.active } : undefined;
}

/** `toolhost/structuredOutput` params (`{}` only reads) and result. */
export interface StructuredOutputParams {
  schema?: unknown;
  reset?: boolean;
}
export interface StructuredOutputState {
  schema: unknown;
  recorded: boolean;
  value?: unknown;
}

/** The states of a bridged MCP server (`toolhost/mcpServers`). A newer server may name others:
 * they are shown by name. */
export const MCP_SERVER_STATES = ['idle', 'starting', 'ready', 'reconnecting', 'failed', 'stopped'] as const;
export type McpServerState = (typeof MCP_SERVER_STATES)[number];

/** One external MCP server of the bridge, as `toolhost/mcpServers` and
 * `toolhost/mcpServersChanged` report it. */
export interface McpServerStatus {
  name: string;
  /** `stdio` or `streamable-http`. */
  transport: string;
  /** One of {@link MCP_SERVER_STATES}, or a newer server's own. */
  state: string;
  /** The public names (`mcp__<server>__<tool>`) of the tools it registered. */
  tools: string[];
  protocolVersion?: string;
  error?: string;
  /** Reconnect attempts in the current outage. */
  attempts: number;
}

/** `toolhost/mcpServers` result and `toolhost/mcpServersChanged` params: every configured server,
 * the whole list each time. */
export interface McpServersResult {
  servers: McpServerStatus[];
}

/** One server's status from the wire, or undefined without a name. Fields of the wrong type fall
 * back to what says least (no tools, no attempts) rather than being trusted: they end up in the
 * tree view. */
export function asMcpServerStatus(raw: unknown): McpServerStatus | undefined {
  if (!isObject(raw) || typeof raw.name !== 'string' || raw.name === '') {
    return undefined;
  }
  const status: McpServerStatus = {
    name: raw.name,
    transport: typeof raw.transport === 'string' && raw.transport !== '' ? raw.transport : 'stdio',
    state: typeof raw.state === 'string' && raw.state !== '' ? raw.state : 'idle',
    tools: Array.isArray(raw.tools) ? raw.tools.filter((t): t is string => typeof t === 'string' && t !== '') : [],
    attempts: isIndex(raw.attempts) ? raw.attempts : 0,
  };
  if (typeof raw.protocolVersion === 'string' && raw.protocolVersion !== '') {
    status.protocolVersion = raw.protocolVersion;
  }
  if (typeof raw.error === 'string' && raw.error !== '') {
    status.error = raw.error;
  }
  return status;
}

/** `toolhost/mcpServers` result or `toolhost/mcpServersChanged` params, or undefined when there is
 * no `servers` list (junk servers in it are skipped). */
export function asMcpServersResult(raw: unknown): McpServersResult | undefined {
  if (!isObject(raw) || !Array.isArray(raw.servers)) {
    return undefined;
  }
  return { servers: raw.servers.map(asMcpServerStatus).filter((s): s is McpServerStatus => s !== undefined) };
}

/** What a tool says about its effects (MCP's tool annotations). */
export interface ToolAnnotations {
  readOnly: boolean;
  destructive: boolean;
  idempotent: boolean;
  openWorld: boolean;
}

/** MCP's defaults, for a tool that says nothing: it may do anything. */
export const DEFAULT_TOOL_ANNOTATIONS: Readonly<ToolAnnotations> = {
  readOnly: false,
  destructive: true,
  idempotent: false,
  openWorld: true,
};

export interface ToolDescriptor {
  name: string;
  description: string;
  inputSchema: unknown;
  outputSchema: unknown;
  /** Absent from older servers: then {@link DEFAULT_TOOL_ANNOTATIONS}. */
  annotations?: ToolAnnotations;
}

export interface ListToolsResult {
  tools: ToolDescriptor[];
}

export interface ToolError {
  message: string;
  info?: { name: string; code: string } | null;
}

export interface ToolExecutionResult {
  isError: boolean;
  value?: unknown;
  error?: ToolError;
  content: { type: string; text?: string }[];
  meta?: unknown;
}

export interface CallToolParams {
  name: string;
  arguments: unknown;
  callId?: string;
}

export interface CallToolResult {
  sessionId: string | null;
  callId: string;
  result: ToolExecutionResult;
  card: Card;
}

/** `toolhost/cancelCall` result: whether a call with that id was running (a finished call's id is
 * not an error: the Stop button may race the end). */
export interface CancelCallResult {
  cancelled: boolean;
}

/** `toolhost/callOutput`: text the running call `callId` appended to its output. */
export interface CallOutputParams {
  callId: string;
  text: string;
}

/** `toolhost/notice`: something the session should know that is not a call's result (`source:
 * "job"`: a background job ended; `data` is its snapshot). */
export interface NoticeParams {
  source: string;
  text: string;
  data?: unknown;
}

export interface SessionInfo {
  id: string;
  cwd: string;
  createdAt: number;
  calls: number;
}

export interface ListSessionsResult {
  sessions: SessionInfo[];
}

export interface ReplaySessionResult {
  cards: Card[];
  /** Present when the log is damaged: what was skipped and the command that repairs it. */
  damage?: { notice: string };
}

/** `toolhost/callOutput` params, or undefined for junk. */
export function asCallOutput(raw: unknown): CallOutputParams | undefined {
  if (!isObject(raw) || typeof raw.callId !== 'string' || typeof raw.text !== 'string') {
    return undefined;
  }
  return { callId: raw.callId, text: raw.text };
}

/** `toolhost/notice` params, or undefined for junk (no text to show). */
export function asNotice(raw: unknown): NoticeParams | undefined {
  if (!isObject(raw) || typeof raw.text !== 'string' || raw.text === '') {
    return undefined;
  }
  return { source: typeof raw.source === 'string' && raw.source !== '' ? raw.source : 'server', text: raw.text, data: raw.data ?? null };
}


/** A tool's annotations, MCP's defaults for what it does not say. */
export function toolAnnotations(tool: Pick<ToolDescriptor, 'annotations'>): ToolAnnotations {
  const raw: unknown = tool.annotations;
  const given = isObject(raw) ? raw : {};
  const flag = (key: keyof ToolAnnotations): boolean => {
    const value = given[key];
    return typeof value === 'boolean' ? value : DEFAULT_TOOL_ANNOTATIONS[key];
  };
  return { readOnly: flag('readOnly'), destructive: flag('destructive'), idempotent: flag('idempotent'), openWorld: flag('openWorld') };
}

/** A short note of what a tool may do (the Call Tool… picker's description). */
export function annotationsLabel(annotations: ToolAnnotations): string {
  const parts = [annotations.readOnly ? 'read-only' : annotations.destructive ? 'destructive' : 'writes'];
  if (annotations.idempotent) {
    parts.push('idempotent');
  }
  if (annotations.openWorld) {
    parts.push('open world');
  }
  return parts.join(' · ');
}
