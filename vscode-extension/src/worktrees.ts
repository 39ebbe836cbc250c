// Worktree sessions on the wire (docs/protocol.md, "toolhost/listSessions" and after; docs/agent.md,
// "Sessions in worktrees"): the requests that make, apply and discard one, the watch of the one the
// panel shows, the shapes they answer read defensively, and how a worktree session is named to the
// person (the panel's session picker, the quick picks). Pure: no `vscode` import, so `node --test`
// covers it.

import { isIndex, isObject } from './guards';
import type { CallToolResult } from './protocol';

export const WORKTREE_METHODS = {
  worktreeNew: 'toolhost/worktreeNew',
  worktreeApply: 'toolhost/worktreeApply',
  worktreeDiscard: 'toolhost/worktreeDiscard',
  watchSession: 'toolhost/watchSession',
  sessionChanged: 'toolhost/sessionChanged',
} as const;

/** One worktree session (`WorktreeInfo.json`). */
export interface WorktreeInfo {
  name: string;
  sessionId: string;
  /** The folder its session works in. */
  root: string;
  /** `toolhost/<name>`; absent for a copy of a folder outside git. */
  branch?: string;
  state: 'inUse' | 'idle';
  /** Files changed since it started (absent when git could not say). */
  changedFiles?: number;
  /** Who made its latest call. */
  agent?: string;
  createdAt: number;
}

/** A `WorktreeInfo` from the wire, or undefined without the fields that name it. */
export function asWorktreeInfo(raw: unknown): WorktreeInfo | undefined {
  if (!isObject(raw) || typeof raw.name !== 'string' || raw.name === '' || typeof raw.sessionId !== 'string' || raw.sessionId === '') {
    return undefined;
  }
  const info: WorktreeInfo = {
    name: raw.name,
    sessionId: raw.sessionId,
    root: typeof raw.root === 'string' ? raw.root : '',
    // A state this client does not know is shown as the one that promises least.
    state: raw.state === 'inUse' ? 'inUse' : 'idle',
    createdAt: isIndex(raw.createdAt) ? raw.createdAt : 0,
  };
  if (typeof raw.branch === 'string' && raw.branch !== '') {
    info.branch = raw.branch;
  }
  if (isIndex(raw.changedFiles)) {
    info.changedFiles = raw.changedFiles;
  }
  if (typeof raw.agent === 'string' && raw.agent !== '') {
    info.agent = raw.agent;
  }
  return info;
}

/** The worktree sessions of a `toolhost/listSessions` result, in the server's order (newest
 * first); none when the result has no `worktrees` (a workspace without any, or an older server). */
export function worktreesOf(listResult: unknown): WorktreeInfo[] {
  if (!isObject(listResult) || !Array.isArray(listResult.worktrees)) {
    return [];
  }
  return listResult.worktrees.map(asWorktreeInfo).filter((w): w is WorktreeInfo => w !== undefined);
}

/** What a worktree session is at now, after its name: `<branch> · <state> · <n> files · <agent>`
 * (the parts the server did not send left out). */
export function worktreeDescription(info: WorktreeInfo): string {
  const parts = [info.branch ?? 'copy', info.state === 'inUse' ? 'in use' : 'idle'];
  if (info.changedFiles !== undefined) {
    parts.push(`${info.changedFiles} ${info.changedFiles === 1 ? 'file' : 'files'}`);
  }
  if (info.agent !== undefined) {
    parts.push(info.agent);
  }
  return parts.join(' · ');
}

/** The picker's label: `<name> · <branch> · <state> · <n> files · <agent>`. */
export function worktreeLabel(info: WorktreeInfo): string {
  return `${info.name} · ${worktreeDescription(info)}`;
}

/** What makes a valid name, as the server checks it (letters, digits, `-`, `_`, `.`; at most 64;
 * not starting with a dot). */
const NAME = /^(?!\.)[A-Za-z0-9._-]{1,64}$/;

/** The input box's check of a typed name: undefined when it may be sent (empty: the server
 * chooses one). */
export function worktreeNameProblem(typed: string): string | undefined {
  const name = typed.trim();
  if (name === '' || NAME.test(name)) {
    return undefined;
  }
  return 'Letters, digits, "-", "_" and "." only (at most 64, not starting with ".")';
}

/** `toolhost/worktreeNew` params: the typed name, or none for a fresh one. */
export function worktreeNewParams(typed: string | undefined): { name?: string } {
  const name = typed?.trim() ?? '';
  return name === '' ? {} : { name };
}

/** `toolhost/worktreeApply` params: every hunk goes through the editor's review (no `all`). */
export function worktreeApplyParams(name: string): { name: string } {
  return { name };
}

/** `toolhost/worktreeDiscard` params. */
export function worktreeDiscardParams(name: string): { name: string } {
  return { name };
}

/** `toolhost/watchSession` params: the session shown besides the workspace's own, or `{}` for none. */
export function watchSessionParams(sessionId: string | undefined): { sessionId?: string } {
  return sessionId === undefined ? {} : { sessionId };
}

/** The session a `toolhost/sessionChanged` names, or undefined for junk. */
export function changedSessionOf(raw: unknown): string | undefined {
  return isObject(raw) && typeof raw.sessionId === 'string' && raw.sessionId !== '' ? raw.sessionId : undefined;
}

/** The `apply_changes` call of a `toolhost/worktreeApply` answer; undefined when the worktree
 * session changed nothing (`call` absent). */
export function applyCallOf(raw: unknown): CallToolResult | undefined {
  if (!isObject(raw) || !isObject(raw.call) || !isObject(raw.call.result) || typeof raw.call.callId !== 'string') {
    return undefined;
  }
  return raw.call as unknown as CallToolResult;
}

/** The text of a call's result (its text blocks joined): what the apply says it did, conflicts
 * included. */
export function resultText(call: CallToolResult): string {
  const content = Array.isArray(call.result.content) ? call.result.content : [];
  return content
    .map((block) => (isObject(block) && typeof block.text === 'string' ? block.text : ''))
    .filter((text) => text !== '')
    .join('\n');
}

/** Whether an apply's text lists conflicts (regions both sides changed, left alone). */
export function hasConflicts(text: string): boolean {
  return /conflict at line \d+/.test(text);
}

/** The CLI lines that work in a worktree session: the own agent, and any MCP agent. */
export function worktreeCliLines(sessionId: string): { agent: string; mcp: string } {
  return { agent: `toolhost agent --session ${sessionId} "…"`, mcp: `toolhost mcp --session ${sessionId}` };
}

/** The code (`WORKTREE_IN_USE`, …) of a refused request: a JSON-RPC error's `data.code`. */
export function errorCode(err: unknown): string | undefined {
  return isObject(err) && isObject(err.data) && typeof err.data.code === 'string' ? err.data.code : undefined;
}
