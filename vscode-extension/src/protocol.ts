// toolhost's custom LSP methods and their shapes (docs/protocol.md, docs/schemas/*.json), plus the
// normalization of VS Code's navigation/hover results into the `toolhost/lspQuery` answer.
// Pure: no `vscode` import, so `node --test` covers it.

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
} as const;

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

export type CardStatus = 'pending' | 'completed' | 'failed';

/** The kinds the protocol names (docs/schemas/Card.json, `CardKind.examples`). */
export const KNOWN_CARD_KINDS = ['diff', 'read', 'search', 'terminal', 'todo', 'question', 'plan', 'fetch', 'structured', 'generic'] as const;
export type KnownCardKind = (typeof KNOWN_CARD_KINDS)[number];

/** A card's kind is an open string: one of {@link KNOWN_CARD_KINDS} or any name a tool invents.
 * A client draws the kinds it has no view for as `generic` (the Native text). */
export type CardKind = string;

export interface CardLocation {
  path: string;
  line: number;
}

export interface HunkLine {
  op: string;
  text: string;
}

export interface Hunk {
  path: string;
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  lines: HunkLine[];
  /** The header line exactly as `card.rendered` shows it (`@@ -a,b +c,d @@`, or
   * `@@ preview -b +d @@`): clients show it, never format their own. */
  header: string;
  /** A proposed change whose place in the file is not known yet (a pending call's preview, or a
   * diff without line numbers): the starts are 0 and mean nothing. */
  preview?: boolean;
}

export interface Stats {
  additions: number;
  deletions: number;
}

export interface NumberedLine {
  number: number;
  text: string;
}

export interface ReadView {
  path: string;
  offset: number;
  lines: NumberedLine[];
  totalLines: number;
  lang?: string | null;
}

export interface SearchMatch {
  lineNumber: number;
  line: string;
}

export interface SearchFile {
  path: string;
  matches: SearchMatch[];
}

export interface SearchLocation {
  path: string;
  line: number;
  character: number;
  snippet?: string;
}

export interface SearchView {
  shape: string;
  paths?: string[] | null;
  files?: SearchFile[] | null;
  locations?: SearchLocation[] | null;
  truncated: boolean;
  total: number;
}

/** A terminal card's view (`bash`): parsed by the server from the Native text, so a replay shows
 * the same. While the call runs `output` is empty and the client appends the
 * `toolhost/callOutput` text it receives; the final card's `output` replaces that. */
export interface TerminalView {
  command: string;
  description?: string | null;
  /** Where the command ran, as the call named it (relative to the workspace); absent: the root. */
  cwd?: string | null;
  /** The output without the final exit marker; may hold ANSI escape sequences. */
  output: string;
  /** The exit pill: the exit code (the server sends 0 when the text names none) … */
  exitCode?: number | null;
  /** … or the signal that killed the command (`SIGTERM`, …). */
  signal?: string | null;
  timedOut?: boolean;
  /** Files holding a stream's full output, when the text kept only its tail. */
  spillPaths?: string[];
}

export interface Card {
  callId: string;
  tool: string;
  status: CardStatus;
  kind: CardKind;
  title: string;
  text: string;
  rendered: string;
  /** Who made the call when it was not this connection's client: the agent's MCP
   * `clientInfo.name` (e.g. `claude-code`) for calls that came through `toolhost mcp`, attached to
   * this server. The title line of `rendered` then ends with ` · <caller>`. */
  caller?: string | null;
  locations: CardLocation[];
  hunks?: Hunk[] | null;
  stats?: Stats | null;
  read?: ReadView | null;
  search?: SearchView | null;
  terminal?: TerminalView | null;
  /** For kinds without a view in the protocol: the result's meta or, while pending and when the
   * call failed, the call-time data its tool declared. `todo`: `{todos, counts}`; `question`:
   * `{questions, answers?}`; `plan`: `{plan, approved?}`; `structured`: `{value}` (dataCards.ts
   * draws the four); `mcp`: {@link McpCardData} (mcpCard.ts); a tool's own kind: its meta. */
  data?: unknown;
  /** Client-side only, never on the wire: the `toolhost/callOutput` text a running call without a
   * terminal view has sent so far (an MCP tool's progress), kept by the card store until the
   * final card replaces the pending one. */
  progress?: string;
}

/** An `mcp` card's data: the MCP server and the tool's raw name (the card's `tool` is the public
 * name `mcp__<server>__<tool>`), and, on a completed card, the server's `structuredContent` when
 * it sent one. */
export interface McpCardData {
  server: string;
  tool: string;
  structuredContent?: unknown;
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
}

export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

export interface LspQueryParams {
  operation: string;
  uri: string;
  position: Position;
}

export interface WireLocation {
  uri: string;
  range: Range;
}

export type LspQueryResult =
  | { kind: 'locations'; locations: WireLocation[] }
  | { kind: 'hover'; hover: { contents: string; range?: Range } | null };

/** The provider commands of VS Code that answer each lspQuery operation. */
export type QueryCommand =
  | 'vscode.executeDefinitionProvider'
  | 'vscode.executeReferenceProvider'
  | 'vscode.executeImplementationProvider'
  | 'vscode.executeHoverProvider';

const OPERATIONS: Record<string, QueryCommand> = {
  gotodefinition: 'vscode.executeDefinitionProvider',
  definition: 'vscode.executeDefinitionProvider',
  'textdocument/definition': 'vscode.executeDefinitionProvider',
  findreferences: 'vscode.executeReferenceProvider',
  references: 'vscode.executeReferenceProvider',
  'textdocument/references': 'vscode.executeReferenceProvider',
  gotoimplementation: 'vscode.executeImplementationProvider',
  implementation: 'vscode.executeImplementationProvider',
  'textdocument/implementation': 'vscode.executeImplementationProvider',
  hover: 'vscode.executeHoverProvider',
  'textdocument/hover': 'vscode.executeHoverProvider',
};

/** The VS Code command answering `operation` (the lsp tool's names, case-insensitive, or the LSP
 * method names), or undefined when the operation is unknown. */
export function queryCommand(operation: string): QueryCommand | undefined {
  return OPERATIONS[operation.toLowerCase()];
}

/** Codes the server keeps from an lspQuery error's `data.code` (the lsp tool's error codes). */
export const LSP_UNAVAILABLE = 'LSP_UNAVAILABLE';
export const LSP_UNSUPPORTED_OPERATION = 'LSP_UNSUPPORTED_OPERATION';

/** What an installed extension declares (from its package.json). */
export interface ExtensionInfo {
  id: string;
  activationEvents?: readonly string[];
}

/** Whether some extension (other than `selfId`) activates for `languageId` files, so VS Code may
 * have definition/hover providers for them. A language no extension serves (plain text, or only a
 * grammar) cannot be answered by the editor: the server should ask a language server itself. */
export function languageHasExtension(languageId: string, extensions: readonly ExtensionInfo[], selfId: string): boolean {
  if (languageId === 'plaintext' || languageId === '') {
    return false;
  }
  const event = `onLanguage:${languageId}`;
  return extensions.some(
    (ext) => ext.id.toLowerCase() !== selfId.toLowerCase() && (ext.activationEvents ?? []).some((e) => e === event),
  );
}

/** Whether a normalized answer carries nothing. */
export function isEmptyAnswer(result: LspQueryResult): boolean {
  return result.kind === 'hover' ? result.hover === null : result.locations.length === 0;
}

/** Whether a hover is a placeholder of a language server still loading its project. */
export function isLoadingAnswer(result: LspQueryResult): boolean {
  return result.kind === 'hover' && result.hover !== null && result.hover.contents.includes('(loading...)');
}

/** Checks and returns lspQuery params; throws a message for malformed ones. */
export function parseLspQueryParams(raw: unknown): LspQueryParams {
  if (!isObject(raw)) {
    throw new Error('params must be an object');
  }
  const { operation, uri, position } = raw;
  if (typeof operation !== 'string' || operation === '') {
    throw new Error('operation must be a non-empty string');
  }
  if (typeof uri !== 'string' || uri === '') {
    throw new Error('uri must be a non-empty string');
  }
  if (!isObject(position) || !isIndex(position.line) || !isIndex(position.character)) {
    throw new Error('position must be {line, character} with non-negative integers');
  }
  return { operation, uri, position: { line: position.line, character: position.character } };
}

// ---- normalization of VS Code API results (structurally typed, so tests need no `vscode`) ----

/** A `vscode.Position`-like value. */
export interface PositionLike {
  line: number;
  character: number;
}

/** A `vscode.Range`-like value. */
export interface RangeLike {
  start: PositionLike;
  end: PositionLike;
}

/** Anything with a `toString()` giving the URI string (a `vscode.Uri`). */
export interface UriLike {
  toString(): string;
}

/** `vscode.Location`. */
export interface LocationLike {
  uri: UriLike;
  range: RangeLike;
}

/** `vscode.LocationLink`. */
export interface LocationLinkLike {
  targetUri: UriLike;
  targetRange: RangeLike;
  targetSelectionRange?: RangeLike;
}

/** `vscode.MarkdownString` or a `MarkedString`. */
export type HoverContentLike = string | { value: string; language?: string };

/** `vscode.Hover`. */
export interface HoverLike {
  contents: HoverContentLike[] | HoverContentLike;
  range?: RangeLike;
}

export function toWireRange(range: RangeLike): Range {
  return {
    start: { line: range.start.line, character: range.start.character },
    end: { line: range.end.line, character: range.end.character },
  };
}

/** Definition/reference/implementation results (Location or LocationLink, single or array, or
 * nothing) → `{kind: "locations"}`, duplicates dropped, order kept. */
export function normalizeLocations(raw: unknown): LspQueryResult {
  const items: unknown[] = raw === undefined || raw === null ? [] : Array.isArray(raw) ? raw : [raw];
  const locations: WireLocation[] = [];
  const seen = new Set<string>();
  for (const item of items) {
    let loc: WireLocation | undefined;
    if (isObject(item) && 'targetUri' in item) {
      const link = item as unknown as LocationLinkLike;
      loc = { uri: link.targetUri.toString(), range: toWireRange(link.targetSelectionRange ?? link.targetRange) };
    } else if (isObject(item) && 'uri' in item && 'range' in item) {
      const plain = item as unknown as LocationLike;
      loc = { uri: plain.uri.toString(), range: toWireRange(plain.range) };
    }
    if (loc === undefined) {
      continue;
    }
    const key = JSON.stringify(loc);
    if (!seen.has(key)) {
      seen.add(key);
      locations.push(loc);
    }
  }
  return { kind: 'locations', locations };
}

/** One hover content part as text: markdown/plain verbatim, `{language, value}` as a fence. */
export function hoverContentText(part: HoverContentLike): string {
  if (typeof part === 'string') {
    return part;
  }
  if (typeof part.language === 'string' && part.language !== '') {
    return '```' + part.language + '\n' + part.value + '\n```';
  }
  return part.value;
}

/** Hover results of every provider → `{kind: "hover"}`: parts joined by a blank line, empty ⇒
 * null, the first provider's range. */
export function normalizeHover(raw: unknown): LspQueryResult {
  const hovers: HoverLike[] = (Array.isArray(raw) ? raw : raw ? [raw] : []) as HoverLike[];
  const parts: string[] = [];
  let range: Range | undefined;
  for (const hover of hovers) {
    if (!isObject(hover)) {
      continue;
    }
    const contents = Array.isArray(hover.contents) ? hover.contents : [hover.contents];
    for (const part of contents) {
      const text = hoverContentText(part).trim();
      if (text !== '') {
        parts.push(text);
      }
    }
    if (range === undefined && hover.range !== undefined) {
      range = toWireRange(hover.range);
    }
  }
  if (parts.length === 0) {
    return { kind: 'hover', hover: null };
  }
  const hover: { contents: string; range?: Range } = { contents: parts.join('\n\n') };
  if (range !== undefined) {
    hover.range = range;
  }
  return { kind: 'hover', hover };
}

/** Who made the call, when it was not this editor (a non-empty `card.caller`), else undefined. */
export function cardCaller(card: Pick<Card, 'caller'>): string | undefined {
  return typeof card.caller === 'string' && card.caller !== '' ? card.caller : undefined;
}

/** The title line of `card.rendered`: `<tool> <title> · <status>`, then ` · <caller>` for a call
 * another agent made (through `toolhost mcp`). */
export function titleLine(card: Pick<Card, 'tool' | 'title' | 'status' | 'caller'>): string {
  const caller = cardCaller(card);
  return `${card.tool} ${card.title} · ${card.status}${caller === undefined ? '' : ` · ${caller}`}`;
}

/** A hunk's header line: the one the server sent (`hunk.header`); only for a hunk without one
 * (a server from before headers) the line `card::to_text` wrote then, preview-aware. */
export function hunkHeader(hunk: Omit<Hunk, 'header'> & { header?: unknown }): string {
  if (typeof hunk.header === 'string' && hunk.header !== '') {
    return hunk.header;
  }
  return hunk.preview === true
    ? `@@ preview -${hunk.oldLines} +${hunk.newLines} @@`
    : `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`;
}

/** Whether a hunk is a proposed change with no place in the file. */
export function isPreviewHunk(hunk: Pick<Hunk, 'preview'>): boolean {
  return hunk.preview === true;
}

function asHunk(raw: unknown): Hunk | undefined {
  if (!isObject(raw) || typeof raw.path !== 'string' || !Array.isArray(raw.lines)) {
    return undefined;
  }
  const count = (value: unknown) => (isIndex(value) ? value : 0);
  const hunk = {
    ...raw,
    path: raw.path,
    oldStart: count(raw.oldStart),
    oldLines: count(raw.oldLines),
    newStart: count(raw.newStart),
    newLines: count(raw.newLines),
    lines: raw.lines.filter((l): l is HunkLine => isObject(l) && typeof l.op === 'string' && typeof l.text === 'string'),
  } as Hunk;
  if (raw.preview !== undefined && typeof raw.preview !== 'boolean') {
    delete hunk.preview;
  }
  hunk.header = hunkHeader({ ...hunk, header: raw.header });
  return hunk;
}

/** A card as it should look to clients: any kind kept as sent (an open string; views fall back to
 * generic), every hunk with its header, missing fields defaulted; unusable input is undefined. */
export function asCard(raw: unknown): Card | undefined {
  if (!isObject(raw) || typeof raw.callId !== 'string' || typeof raw.tool !== 'string') {
    return undefined;
  }
  const card = raw as unknown as Card;
  const out: Card = {
    ...card,
    title: typeof card.title === 'string' ? card.title : card.tool,
    text: typeof card.text === 'string' ? card.text : '',
    rendered: typeof card.rendered === 'string' ? card.rendered : '',
    status: card.status === 'completed' || card.status === 'failed' ? card.status : 'pending',
    kind: typeof card.kind === 'string' && card.kind !== '' ? card.kind : 'generic',
    locations: Array.isArray(card.locations) ? card.locations : [],
  };
  // `caller` is kept only as a name (a string); anything else (null, a number, "") means the
  // editor's own call.
  if (cardCaller(card) === undefined) {
    delete out.caller;
  }
  // Live progress is the store's own, never the server's.
  delete out.progress;
  if (Array.isArray(raw.hunks)) {
    out.hunks = raw.hunks.map(asHunk).filter((h): h is Hunk => h !== undefined);
  } else if (raw.hunks !== undefined && raw.hunks !== null) {
    out.hunks = null;
  }
  if (raw.terminal !== undefined && raw.terminal !== null) {
    const terminal = asTerminal(raw.terminal);
    if (terminal) {
      out.terminal = terminal;
    } else {
      // Unusable: the card is drawn as generic (its Native text), as by a server without views.
      out.terminal = null;
    }
  }
  return out;
}

/** A terminal view from the wire, or undefined when it lacks the command or the output. Fields of
 * the wrong type are dropped rather than trusted: they end up in the page (escaped) and drive the
 * exit pill. */
function asTerminal(raw: unknown): TerminalView | undefined {
  if (!isObject(raw) || typeof raw.command !== 'string' || typeof raw.output !== 'string') {
    return undefined;
  }
  const view = { ...raw } as unknown as TerminalView;
  for (const key of ['description', 'cwd', 'signal'] as const) {
    if (view[key] !== undefined && view[key] !== null && typeof view[key] !== 'string') {
      delete view[key];
    }
  }
  if (view.exitCode !== undefined && view.exitCode !== null && !Number.isInteger(view.exitCode)) {
    delete view.exitCode;
  }
  if (view.timedOut !== undefined && typeof view.timedOut !== 'boolean') {
    delete view.timedOut;
  }
  if (view.spillPaths !== undefined) {
    if (Array.isArray(view.spillPaths)) {
      view.spillPaths = view.spillPaths.filter((p): p is string => typeof p === 'string' && p !== '');
    } else {
      delete view.spillPaths;
    }
  }
  return view;
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

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isIndex(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}
