// State shared by the suites of one extension-host run (bundled into each suite separately, so it
// lives on globalThis).
import * as vscode from 'vscode';
// The wire shapes are the extension's own (type-only: nothing of src/ is bundled).
import type { AskUserResult } from '../../../src/ask';
import type { AskResponder, AskSnapshot } from '../../../src/askView';
import type { McpDefinitionResult } from '../../../src/mcpDefinition';
import type { McpServersSnapshot } from '../../../src/mcpServersView';
import type { Card } from '../../../src/cards';
import type { LspQueryResult } from '../../../src/lspQuery';
import type { CallToolResult } from '../../../src/protocol';
import type { ReviewResult, ReviewSettings, SetReviewParams } from '../../../src/review';
import type { ReviewResponder, ReviewSnapshot } from '../../../src/reviewView';
export type { Card, Hunk } from '../../../src/cards';
export type { LspQueryResult } from '../../../src/lspQuery';
export type { CallToolResult } from '../../../src/protocol';

export interface ToolhostApiLike {
  store: {
    visible(): Card[];
    liveCards(): Card[];
    find(callId: string): Card | undefined;
    upsert(card: Card): void;
    replay: { sessionId: string; cards: Card[] } | undefined;
    onChange(listener: (event: { type: string; card?: Card }) => void): { dispose(): void };
    clear(): void;
  };
  controller: { lastClientCapabilities: unknown; planMode: boolean | undefined };
  state(): string;
  sessionId(): string | undefined;
  request<R>(method: string, params?: unknown): Promise<R>;
  listTools(): Promise<{ name: string; inputSchema: unknown }[]>;
  callTool(name: string, args: unknown): Promise<CallToolResult>;
  cancelCall(callId: string): Promise<{ cancelled: boolean }>;
  notices(): { source: string; text: string; data?: unknown }[];
  listSessions(all?: boolean): Promise<{ id: string; calls: number }[]>;
  replaySession(sessionId: string): Promise<Card[]>;
  restart(overrides?: {
    workspaceFolder?: string;
    initializationOptions?: Record<string, unknown>;
    serverArgs?: string[];
    lspProvider?: boolean;
    review?: boolean;
    askUser?: boolean;
  }): Promise<void>;
  answerLspQuery(params: unknown): Promise<LspQueryResult>;
  openDiff(callId: string, path?: string): Promise<{ left: vscode.Uri; right: vscode.Uri } | undefined>;
  mcp: { registered: boolean; message: string; definition(): McpDefinitionResult };
  setReview(params: SetReviewParams): Promise<ReviewSettings>;
  reviews: {
    open(): ReviewSnapshot[];
    setResponder(responder: ReviewResponder | undefined): void;
    ask(params: unknown, token?: vscode.CancellationToken): Promise<ReviewResult>;
  };
  setPlanMode(params: { active?: boolean }): Promise<{ active: boolean }>;
  structuredOutput(params: { schema?: unknown; reset?: boolean }): Promise<{ schema: unknown; recorded: boolean; value?: unknown }>;
  questions: {
    open(): AskSnapshot[];
    setResponder(responder: AskResponder | undefined): void;
    ask(params: unknown, token?: vscode.CancellationToken): Promise<AskUserResult>;
    focus(key?: string): Promise<void>;
  };
  pending(): { kind: string; key: string; requestId: number | string }[];
  mcpServers: {
    snapshot(): McpServersSnapshot;
    refresh(): Promise<McpServersSnapshot>;
  };
}

const KEY = '__toolhostTestResults';
const g = globalThis as unknown as Record<string, Record<string, unknown> | undefined>;
/** Data the suites hand to the driver (written into the result file). */
export const results: Record<string, unknown> = (g[KEY] ??= {});

export async function toolhostApi(): Promise<ToolhostApiLike> {
  const ext = vscode.extensions.getExtension<ToolhostApiLike>('toolhost.toolhost');
  if (!ext) {
    throw new Error('the toolhost extension is not installed');
  }
  return ext.activate();
}

export async function waitFor<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) {
        return value;
      }
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

export function env(name: string): string {
  const value = process.env[name];
  if (!value) {
    throw new Error(`${name} is not set`);
  }
  return value;
}
