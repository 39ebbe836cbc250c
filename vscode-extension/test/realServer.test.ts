// Cards of the real server (TOOLHOST_BIN, via `toolhost call --json` and `toolhost replay
// --json`): the panel's HTML carries the same lines as `card.rendered`, the virtual diff
// documents expand back into the real before/after files, and (when the server has the tool) a
// revert sent as the panel sends it puts a file's bytes back.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Ajv2020 from 'ajv/dist/2020';
import { cardActions, renderCard } from '../src/cardHtml';
import { reconstruct } from '../src/hunkDocs';
import type { Card } from '../src/cards';
import type { CallToolResult } from '../src/protocol';
import { asCard } from '../src/cards';
import { isRevertible, revertArguments } from '../src/revert';
import { diffLinesOf, searchLinesOf } from './helpers';
import { expandSide } from './sides';

const bin = process.env.TOOLHOST_BIN;
const skip = !bin && 'TOOLHOST_BIN not set';

describe('cards of the real server', { skip }, () => {
  let dir = '';
  let ws = '';
  let sessions = '';
  const calls: CallToolResult[] = [];

  const call = (tool: string, args: unknown): CallToolResult => {
    let out: string;
    try {
      out = execFileSync(bin ?? '', ['call', tool, JSON.stringify(args), '--json', '--workspace', ws, '--session-dir', sessions, '--session', 'unit'], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (err) {
      // exit code 1: the tool failed; the JSON is still on stdout
      out = String((err as { stdout?: string }).stdout ?? '');
    }
    const result = JSON.parse(out) as CallToolResult;
    calls.push(result);
    return result;
  };

  /** The `revert` tool's descriptor, when this server has it. */
  let revertTool: { name: string; inputSchema: unknown } | undefined;
  /** A file whose exact bytes a revert must put back: CRLF line ends, no final line end. */
  const revBytes = 'alpha\r\nbeta\r\ngamma';

  const lines = Array.from({ length: 60 }, (_, i) => (i === 4 || i === 49 ? `value = OLD ${i + 1}` : `line ${i + 1}`));

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolhost-unit-'));
    ws = path.join(dir, 'ws');
    sessions = path.join(dir, 'sessions');
    fs.mkdirSync(path.join(ws, 'src'), { recursive: true });
    fs.writeFileSync(path.join(ws, 'big.txt'), lines.join('\n') + '\n');
    fs.writeFileSync(path.join(ws, 'src', 'a.rs'), 'fn main() {\n    // TODO one\n}\n');
    fs.writeFileSync(path.join(ws, 'rev.txt'), revBytes);
    const tools = JSON.parse(execFileSync(bin ?? '', ['tools', '--json', '--workspace', ws], { encoding: 'utf8' })) as {
      tools: { name: string; inputSchema: unknown }[];
    };
    revertTool = tools.tools.find((t) => t.name === 'revert');
  });

  after(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  function checkDiff(card: Card, beforeText: string | null, afterText: string): void {
    assert.equal(card.kind, 'diff');
    assert.deepEqual(diffLinesOf(renderCard(card)), card.rendered.split('\n').slice(1));
    // every hunk header is the server's, shown as sent; completed cards are placed
    const headers = diffLinesOf(renderCard(card)).filter((l) => l.startsWith('@@'));
    assert.deepEqual(headers, (card.hunks ?? []).map((h) => h.header));
    for (const hunk of card.hunks ?? []) {
      assert.match(hunk.header, /^@@ -\d+,\d+ \+\d+,\d+ @@/);
      assert.notEqual(hunk.preview, true);
    }
    assert.deepEqual(asCard(card), card, 'the wire card needs no normalization');
    const [sides] = reconstruct(card.hunks ?? []);
    assert.ok(sides);
    const split = (t: string) => t.replace(/\n$/, '').split('\n');
    const oldFile = beforeText === null ? [] : split(beforeText);
    const newFile = split(afterText);
    const oldExpanded = expandSide(sides.old, oldFile);
    const newExpanded = expandSide(sides.new, newFile);
    assert.deepEqual(oldExpanded, oldFile.slice(0, oldExpanded.length));
    assert.deepEqual(newExpanded, newFile.slice(0, newExpanded.length));
  }

  it('write of a new file: a diff card of added lines', () => {
    const r = call('write', { file_path: 'new.txt', content: 'one\ntwo\n' });
    assert.equal(r.result.isError, false);
    checkDiff(r.card, null, 'one\ntwo\n');
    assert.deepEqual(r.card.stats, { additions: 2, deletions: 0 });
  });

  it('edit with two far-apart hunks: DOM lines = rendered, virtual documents = the files', () => {
    call('read', { file_path: 'big.txt' });
    const r = call('edit', { file_path: 'big.txt', old_string: '= OLD', new_string: '= NEW', replace_all: true });
    assert.equal(r.result.isError, false, JSON.stringify(r.result));
    assert.equal(r.card.hunks?.length, 2);
    const value = r.result.value as { before: string; after: string };
    checkDiff(r.card, value.before, value.after);
    const [sides] = reconstruct(r.card.hunks ?? []);
    assert.match(sides?.new ?? '', /^⋯ 1 unchanged line\n/);
    assert.match(sides?.new ?? '', /\n⋯ 38 unchanged lines\n/);
  });

  it('grep and glob: search lines = rendered, one location per line', () => {
    const g = call('grep', { pattern: 'TODO' });
    assert.equal(g.card.kind, 'search');
    assert.deepEqual(searchLinesOf(renderCard(g.card)), g.card.rendered.split('\n').slice(1));
    const gl = call('glob', { pattern: '**/*.txt' });
    assert.deepEqual(searchLinesOf(renderCard(gl.card)), gl.card.rendered.split('\n').slice(1));
    assert.equal(gl.card.locations.length, gl.card.search?.paths?.length);
  });

  it('a failed call: failed card with the error as its body', () => {
    const r = call('edit', { file_path: 'big.txt', old_string: 'not there at all', new_string: 'x' });
    assert.equal(r.result.isError, true);
    assert.equal(r.card.status, 'failed');
    assert.match(renderCard(r.card), /<pre class="native-text error">/);
  });

  it('revert: the edit card offers it, the arguments fit the tool, the bytes come back, its card is a revertible diff card', (t) => {
    if (!revertTool) {
      t.skip('this server has no revert tool');
      return;
    }
    const validate = new Ajv2020({ strict: false, allErrors: true, validateFormats: false }).compile(revertTool.inputSchema as object);
    for (const since of [false, true]) {
      const args = revertArguments('call_x', since);
      assert.ok(validate(args), `${JSON.stringify(args)}: ${JSON.stringify(validate.errors)}`);
    }
    const file = path.join(ws, 'rev.txt');
    call('read', { file_path: 'rev.txt' });
    const edit = call('edit', { file_path: 'rev.txt', old_string: 'beta', new_string: 'BETA' });
    assert.equal(edit.result.isError, false, JSON.stringify(edit.result));
    assert.equal(fs.readFileSync(file, 'utf8'), 'alpha\r\nBETA\r\ngamma');
    assert.ok(isRevertible(edit.card));
    assert.deepEqual(cardActions(edit.card).map((a) => a.action).slice(-2), ['revert', 'revertSince']);
    const r = call('revert', revertArguments(edit.callId, false));
    assert.equal(r.result.isError, false, JSON.stringify(r.result));
    assert.deepEqual(fs.readFileSync(file), Buffer.from(revBytes), 'the bytes from before the edit');
    assert.equal(r.card.status, 'completed');
    assert.equal(r.card.kind, 'diff');
    assert.equal(r.card.title, `Revert ${edit.callId}`);
    assert.ok(isRevertible(r.card), 'a revert can be reverted');
    // what the revert wrote: BETA back to beta (a line's text may keep its \r)
    const changed = (r.card.hunks ?? []).flatMap((h) => h.lines).filter((l) => l.op !== ' ');
    assert.deepEqual(
      changed.map((l) => `${l.op}${l.text.replace(/\r$/, '')}`),
      ['-BETA', '+beta'],
    );
    assert.ok(r.card.text.includes(`Reverted ${edit.callId}`) && r.card.text.includes('restored rev.txt'), r.card.text);
    // unknown call: a failed card, no Revert on it
    const unknown = call('revert', revertArguments('call_000000000000', false));
    assert.equal(unknown.result.isError, true);
    assert.equal(unknown.result.error?.info?.code, 'REVERT_UNKNOWN_CALL');
    assert.equal(unknown.card.status, 'failed');
    assert.equal(isRevertible(unknown.card), false);
  });

  it('every card is valid against docs/schemas/Card.json', () => {
    let dir = __dirname;
    while (!fs.existsSync(path.join(dir, 'docs', 'schemas', 'Card.json')) && path.dirname(dir) !== dir) {
      dir = path.dirname(dir);
    }
    const { $schema: _s, ...schema } = JSON.parse(fs.readFileSync(path.join(dir, 'docs', 'schemas', 'Card.json'), 'utf8')) as Record<string, unknown>;
    void _s;
    const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
    const validate = ajv.compile(schema);
    assert.ok(calls.length >= 5);
    for (const { card } of calls) {
      assert.ok(validate(card), `${card.tool}: ${ajv.errorsText(validate.errors)}`);
    }
  });

  it('replayed from the log: the same cards, rendered the same', () => {
    const out = execFileSync(bin ?? '', ['replay', 'unit', '--json', '--workspace', ws, '--session-dir', sessions], { encoding: 'utf8' });
    const replayed = out
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as Card);
    assert.equal(replayed.length, calls.length);
    for (const [i, card] of replayed.entries()) {
      assert.deepEqual(card, calls[i]?.card);
      assert.equal(renderCard(card), renderCard(calls[i]!.card));
    }
  });
});
