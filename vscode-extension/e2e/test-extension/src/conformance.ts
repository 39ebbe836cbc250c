// The conformance scenario runner (editor-clients/harness/src/{scenario,runner}.rs), ported to run
// through the toolhost extension's own language client: one server start per scenario (workspace
// `<tmp>/.tmpXXXXXX/workspace`, sessions next to it, initializationOptions `{session_id:
// "conformance", ...config.json}`), mtimes set to 1_700_000_000 first, `external` steps applied
// between calls, value/content/meta compared exactly, error and card key by key, `${WORKSPACE}`
// and `${SPILL}` substituted, and the workspace compared with `after/` (or `before/`) at the end.
// Review mode: a `setReview` step sends `toolhost/setReview`; a tool step's `review` script answers
// the server's `toolhost/review` for that call instead of the person (after its `external` write),
// or never answers (`ignore`), and the step fails when a question it scripts never came.
// Questions likewise: a tool step's `askUser` is the `toolhost/askUser` result its call's question
// is answered with (`{answers}` or `{dismissed: true}`; `{ignore: true}` never answers). Plan mode
// and structured output: `setPlanMode` and `structuredOutput` steps send those requests.
import { isDeepStrictEqual } from 'node:util';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { CallToolResult, Card, ToolhostApiLike } from './shared';

export const BASE_MTIME = 1_700_000_000;
export const SESSION_ID = 'conformance';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

interface Expect {
  isError?: boolean;
  value?: Json;
  content?: Json;
  meta?: Json;
  card?: Record<string, Json>;
  error?: Record<string, Json>;
}

interface External {
  write?: string;
  content?: string;
  touch?: string;
}

/** The scripted answer to the `toolhost/review` request a tool step's call makes. */
interface ReviewScript {
  accepted?: number[];
  comment?: string;
  /** Never answer: the server's timeout and fallback apply. */
  ignore?: boolean;
  /** Written before answering (the person edits the file while the question is open). */
  external?: External;
}

/** The scripted `toolhost/askUser` result (sent as it is), or `{ignore: true}`: never answer. */
type AskScript = Record<string, Json> & { ignore?: boolean };

type Step =
  | { external: External }
  | { setReview: Record<string, Json> }
  | { setPlanMode: Record<string, Json> }
  | { structuredOutput: Record<string, Json> }
  | { tool: string; args: Json; expect: Expect; review?: ReviewScript; askUser?: AskScript };

export interface Scenario {
  name: string;
  dir: string;
  steps: Step[];
  requires: string[];
  mtimes: Record<string, number>;
}

function readJson<T>(file: string): T | undefined {
  return fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as T) : undefined;
}

export function loadScenarios(root: string): Scenario[] {
  return fs
    .readdirSync(root)
    .sort()
    .map((name) => path.join(root, name))
    .filter((dir) => fs.existsSync(path.join(dir, 'steps.json')))
    .map((dir) => ({
      name: path.basename(dir),
      dir,
      steps: readJson<Step[]>(path.join(dir, 'steps.json')) ?? [],
      requires: readJson<string[]>(path.join(dir, 'requires.json')) ?? [],
      mtimes: readJson<Record<string, number>>(path.join(dir, 'mtimes.json')) ?? {},
    }));
}

const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** `<tmp>/.tmpXXXXXX`, like the Rust runners' (same path lengths, so spill previews match). */
export function scratchDir(): string {
  for (;;) {
    let name = '';
    for (let i = 0; i < 6; i++) {
      name += ALPHABET[Math.floor(Math.random() * ALPHABET.length)];
    }
    const dir = path.join(os.tmpdir(), `.tmp${name}`);
    try {
      fs.mkdirSync(dir);
      return dir;
    } catch {
      // taken: try another name
    }
  }
}

function listFiles(root: string, rel = ''): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
    const child = rel === '' ? entry.name : `${rel}/${entry.name}`;
    if (entry.isDirectory()) {
      out.push(...listFiles(root, child));
    } else if (entry.isFile()) {
      out.push(child);
    }
  }
  return out.sort();
}

function setMtime(file: string, secs: number): void {
  fs.utimesSync(file, secs, secs);
}

function prepare(scenario: Scenario, dest: string): void {
  const before = path.join(scenario.dir, 'before');
  if (fs.existsSync(before)) {
    fs.cpSync(before, dest, { recursive: true });
  }
  for (const file of listFiles(dest)) {
    setMtime(path.join(dest, file), BASE_MTIME);
  }
  for (const [file, secs] of Object.entries(scenario.mtimes)) {
    setMtime(path.join(dest, file), secs);
  }
}

function applyExternal(root: string, external: External): void {
  if (external.write !== undefined) {
    const target = path.join(root, external.write);
    fs.writeFileSync(target, external.content ?? '');
    setMtime(target, BASE_MTIME + 1000);
  }
  if (external.touch !== undefined) {
    setMtime(path.join(root, external.touch), BASE_MTIME + 2000);
  }
}

function snapshot(root: string): Map<string, Buffer> {
  const map = new Map<string, Buffer>();
  if (fs.existsSync(root)) {
    for (const file of listFiles(root)) {
      map.set(file, fs.readFileSync(path.join(root, file)));
    }
  }
  return map;
}

function checkAfter(scenario: Scenario, root: string): string[] {
  const after = path.join(scenario.dir, 'after');
  const expected = snapshot(fs.existsSync(after) ? after : path.join(scenario.dir, 'before'));
  const actual = snapshot(root);
  const problems: string[] = [];
  for (const [file, bytes] of expected) {
    const got = actual.get(file);
    if (!got) {
      problems.push(`workspace-after: missing ${file}`);
    } else if (!got.equals(bytes)) {
      problems.push(`workspace-after: ${file} differs: expected ${JSON.stringify(bytes.toString())}, got ${JSON.stringify(got.toString())}`);
    }
  }
  for (const file of actual.keys()) {
    if (!expected.has(file)) {
      problems.push(`workspace-after: unexpected file ${file}`);
    }
  }
  return problems;
}

export function substitute(value: Json, workspace: string, spill?: string): Json {
  if (typeof value === 'string') {
    let s = value.split('${WORKSPACE}').join(workspace);
    if (spill !== undefined) {
      s = s.split('${SPILL}').join(spill);
    }
    return s;
  }
  if (Array.isArray(value)) {
    return value.map((v) => substitute(v, workspace, spill));
  }
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, workspace, spill)]));
  }
  return value;
}

export function spillLocator(result: CallToolResult['result']): string | undefined {
  for (const block of result.content ?? []) {
    const text = block.text ?? '';
    const idx = text.indexOf('stored at: ');
    if (idx >= 0) {
      const rest = text.slice(idx + 'stored at: '.length);
      const end = rest.indexOf('. ');
      return end >= 0 ? rest.slice(0, end) : rest;
    }
  }
  return undefined;
}

export function checkStep(expect: Expect, result: CallToolResult['result'], card: Card, workspace: string): string[] {
  const spill = spillLocator(result);
  const problems: string[] = [];
  if (expect.isError !== undefined && result.isError !== expect.isError) {
    problems.push(`isError: expected ${expect.isError}, got ${result.isError} (content: ${JSON.stringify(result.content)})`);
  }
  for (const key of ['value', 'content', 'meta'] as const) {
    const wanted = expect[key];
    if (wanted !== undefined) {
      const want = substitute(wanted, workspace, spill);
      const got = result[key] ?? null;
      if (!isDeepStrictEqual(got, want)) {
        problems.push(`${key}: expected ${JSON.stringify(want)}, got ${JSON.stringify(got)}`);
      }
    }
  }
  for (const [key, wanted] of Object.entries(expect.error ?? {})) {
    const want = substitute(wanted, workspace, spill);
    const got = (result.error as Record<string, unknown> | undefined)?.[key] ?? null;
    if (!isDeepStrictEqual(got, want)) {
      problems.push(`error.${key}: expected ${JSON.stringify(want)}, got ${JSON.stringify(got)}`);
    }
  }
  for (const [key, wanted] of Object.entries(expect.card ?? {})) {
    const want = substitute(wanted, workspace, spill);
    const got = (card as unknown as Record<string, unknown>)[key] ?? null;
    if (!isDeepStrictEqual(got, want)) {
      problems.push(`card.${key}: expected ${JSON.stringify(want)}, got ${JSON.stringify(got)}`);
    }
  }
  return problems;
}

export interface ScenarioRun {
  problems: string[];
  /** The final cards of write/edit steps (for the panel DOM check). */
  diffCards: Card[];
  steps: number;
  /** The scenario's scratch folder: removed by the caller once its server has stopped. */
  scratch: string;
}

/** Runs one scenario through the extension's language client (restarted for it). */
export async function runScenario(api: ToolhostApiLike, scenario: Scenario): Promise<ScenarioRun> {
  const scratch = scratchDir();
  const workspaceDir = path.join(scratch, 'workspace');
  const sessions = path.join(scratch, 'sessions');
  fs.mkdirSync(workspaceDir, { recursive: true });
  fs.mkdirSync(sessions, { recursive: true });
  const root = fs.realpathSync(workspaceDir);
  prepare(scenario, root);
  const config = readJson<Record<string, unknown>>(path.join(scenario.dir, 'config.json'));
  const init: Record<string, unknown> = { ...(config && typeof config === 'object' ? config : {}), session_id: SESSION_ID };
  // The same client capabilities as the headless harness: no editor-backed lsp provider, so lsp
  // scenarios ask the language servers the scenario requires, as in every other runner.
  await api.restart({ workspaceFolder: root, initializationOptions: init, serverArgs: ['--session-dir', sessions], lspProvider: false });
  if (api.state() !== 'running') {
    return { problems: [`the server did not start (${api.state()})`], diffCards: [], steps: 0, scratch };
  }
  const problems: string[] = [];
  const diffCards: Card[] = [];
  let steps = 0;
  for (const [idx, step] of scenario.steps.entries()) {
    if ('external' in step) {
      applyExternal(root, step.external);
      continue;
    }
    const sent: [string, string, Json] | undefined =
      'setReview' in step
        ? ['setReview', 'toolhost/setReview', step.setReview]
        : 'setPlanMode' in step
          ? ['setPlanMode', 'toolhost/setPlanMode', step.setPlanMode]
          : 'structuredOutput' in step
            ? ['structuredOutput', 'toolhost/structuredOutput', step.structuredOutput]
            : undefined;
    if (sent) {
      try {
        await api.request(sent[1], substitute(sent[2], root));
      } catch (err) {
        problems.push(`step ${idx} (${sent[0]}): ${err instanceof Error ? err.message : String(err)}`);
      }
      continue;
    }
    if (!('tool' in step)) {
      continue;
    }
    steps += 1;
    // Every review the call asks for is answered here, never by the UI: by the step's script, or
    // (no script) with an error, so the server's fallback applies (as in the Rust harness).
    const asked: { callId: string; tool: string }[] = [];
    const script = step.review;
    api.reviews.setResponder((params) => {
      asked.push({ callId: params.callId, tool: params.tool });
      if (!script) {
        return Promise.reject(new Error('this conformance step scripts no review'));
      }
      if (script.external) {
        applyExternal(root, script.external);
      }
      if (script.ignore === true) {
        // Never settles: no answer is sent; the server's timeout withdraws the question.
        return new Promise<never>(() => undefined);
      }
      const result: { accepted: number[]; comment?: string } = { accepted: script.accepted ?? [] };
      if (script.comment !== undefined) {
        result.comment = script.comment;
      }
      return Promise.resolve(result);
    });
    // Likewise every question: the step's scripted result, sent exactly as written, or an error.
    const questioned: { callId: string }[] = [];
    const answer = step.askUser;
    api.questions.setResponder((params) => {
      questioned.push({ callId: params.callId });
      if (!answer) {
        return Promise.reject(new Error('no answer was scripted for this step'));
      }
      if (answer.ignore === true) {
        return new Promise<never>(() => undefined);
      }
      return Promise.resolve(answer as never);
    });
    let response: CallToolResult;
    try {
      response = await api.callTool(step.tool, substitute(step.args, root));
    } finally {
      api.reviews.setResponder(undefined);
      api.questions.setResponder(undefined);
    }
    if (script && script.ignore !== true && asked.length === 0) {
      problems.push(`step ${idx} (${step.tool}): review: the server never sent toolhost/review`);
    }
    for (const q of asked) {
      if (q.callId !== response.callId) {
        problems.push(`step ${idx} (${step.tool}): review: asked for call ${q.callId}, the step's call is ${response.callId}`);
      }
    }
    if (answer && answer.ignore !== true && questioned.length === 0) {
      problems.push(`step ${idx} (${step.tool}): askUser: the server never sent toolhost/askUser`);
    }
    for (const q of questioned) {
      if (q.callId !== response.callId) {
        problems.push(`step ${idx} (${step.tool}): askUser: asked for call ${q.callId}, the step's call is ${response.callId}`);
      }
    }
    for (const p of checkStep(step.expect, response.result, response.card, root)) {
      problems.push(`step ${idx} (${step.tool}): ${p}`);
    }
    if ((step.tool === 'write' || step.tool === 'edit') && response.card.kind === 'diff') {
      diffCards.push(response.card);
    }
  }
  problems.push(...checkAfter(scenario, root));
  return { problems, diffCards, steps, scratch };
}
