// Checkpoints from the editor (src/checkpoints.ts): Create Checkpoint and Restore Checkpoint…
// against a fake server answering `toolhost/callTool {name: "checkpoint"}` as the real one does,
// and a fake window whose answers the test scripts — the params each command sends, the picker's
// rows, the modal, a refusal shown as an error message with the server's text, and a cancelled
// pick or modal sending nothing more.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CardStore } from '../src/cardStore';
import type { Card } from '../src/cards';
import {
  asCheckpoints,
  CHECKPOINT_COMMANDS,
  CheckpointCommands,
  checkpointPickItem,
  defaultCheckpointName,
  registerCheckpointCommands,
  restoreCandidates,
  type CheckpointInfo,
  type CheckpointPickItem,
  type CheckpointWindow,
} from '../src/checkpoints';
import type { CallToolResult } from '../src/protocol';

const CHECKPOINTS: CheckpointInfo[] = [
  { name: 'before-refactor', kind: 'named', changedAfter: 3 },
  { name: 'run_7f3a', kind: 'turn', prompt: 'Rename greet to hello', changedAfter: 1 },
];

/** A card as the server sends it for a checkpoint call. */
function cardOf(callId: string, args: { action: string; name?: string }, failed: boolean): Card {
  const title = args.action === 'restore' ? `Restore checkpoint ${args.name}` : args.action === 'list' ? 'Checkpoints' : `Checkpoint ${args.name}`;
  const status = failed ? 'failed' : 'completed';
  return {
    callId,
    tool: 'checkpoint',
    status,
    kind: args.action === 'restore' && !failed ? 'diff' : 'generic',
    title,
    text: '',
    rendered: `checkpoint ${title} · ${status}`,
    locations: [],
  };
}

/** Answers `checkpoint` calls like the server: the list above, a restore of a listed checkpoint
 * with changes after it, `refuse` as a failed result; records what was sent. */
class FakeServer {
  readonly sent: [string, unknown][] = [];
  refuse: { code: string; message: string } | undefined;
  /** The session's checkpoints, oldest first. */
  checkpoints: CheckpointInfo[] = CHECKPOINTS;
  private calls = 0;

  readonly callTool = (name: string, args: unknown): Promise<CallToolResult> => {
    this.sent.push([name, args]);
    const a = args as { action: string; name?: string };
    const callId = `call_${++this.calls}`;
    const card = cardOf(callId, a, this.refuse !== undefined);
    if (this.refuse) {
      const { code, message } = this.refuse;
      return Promise.resolve({
        sessionId: 's1',
        callId,
        result: { isError: true, error: { message, info: { name: 'CheckpointError', code } }, content: [{ type: 'text', text: message }] },
        card,
      });
    }
    const value =
      a.action === 'list'
        ? { action: 'list', checkpoints: this.checkpoints }
        : a.action === 'restore'
          ? { action: 'restore', name: a.name, restored: { callId, since: 'call_0', revertedCalls: ['call_0'], files: [{ path: 'a.txt', action: 'restored', before: 'x', after: 'y' }] } }
          : { action: 'create', name: a.name };
    return Promise.resolve({ sessionId: 's1', callId, result: { isError: false, value, content: [{ type: 'text', text: '' }] }, card });
  };
}

/** A window whose answers the test sets, recording what it was asked. */
class FakeWindow implements CheckpointWindow {
  readonly asked: string[] = [];
  readonly errors: string[] = [];
  readonly infos: string[] = [];
  inputBox: { value: string; validate(value: string): string | undefined } | undefined;
  picker: CheckpointPickItem[] | undefined;
  modal: { message: string; detail: string; items: string[] } | undefined;
  /** What the person types (undefined: Escape). */
  typed: string | undefined;
  /** The label picked (undefined: Escape). */
  picks: string | undefined;
  /** The button pressed (undefined: Cancel). */
  presses: string | undefined;

  showInputBox(options: { value: string; validateInput(value: string): string | undefined }): Promise<string | undefined> {
    this.asked.push('input');
    this.inputBox = { value: options.value, validate: (value) => options.validateInput(value) };
    return Promise.resolve(this.typed);
  }
  showQuickPick<T extends CheckpointPickItem>(items: T[]): Promise<T | undefined> {
    this.asked.push('pick');
    this.picker = items;
    return Promise.resolve(items.find((i) => i.label === this.picks));
  }
  showWarningMessage(message: string, options: { detail: string }, ...items: string[]): Promise<string | undefined> {
    this.asked.push('modal');
    this.modal = { message, detail: options.detail, items };
    return Promise.resolve(this.presses);
  }
  showErrorMessage(message: string): Promise<unknown> {
    this.errors.push(message);
    return Promise.resolve(undefined);
  }
  showInformationMessage(message: string): Promise<unknown> {
    this.infos.push(message);
    return Promise.resolve(undefined);
  }
  setStatusBarMessage(): unknown {
    return undefined;
  }
}

function setup(): { server: FakeServer; window: FakeWindow; store: CardStore; commands: CheckpointCommands } {
  const server = new FakeServer();
  const window = new FakeWindow();
  const store = new CardStore(100);
  return { server, window, store, commands: new CheckpointCommands({ store, callTool: server.callTool, reveal: () => Promise.resolve(), window }) };
}

describe('Create Checkpoint', () => {
  it('asks for a name (checkpoint-1 offered, a blank one refused) and sends {action: "create", name}; its card comes to the panel', async () => {
    const { server, window, store, commands } = setup();
    window.typed = '  before-refactor ';
    await commands.create();
    assert.equal(window.inputBox?.value, 'checkpoint-1');
    assert.equal(window.inputBox?.validate('  '), 'A checkpoint needs a name');
    assert.equal(window.inputBox?.validate('x'), undefined);
    assert.deepEqual(server.sent, [['checkpoint', { action: 'create', name: 'before-refactor' }]]);
    assert.deepEqual(store.liveCards().map((c) => [c.title, c.status]), [['Checkpoint before-refactor', 'completed']]);
    assert.deepEqual(window.errors, []);
  });

  it('a name handed to the command (a keybinding\'s args) is used as it is; Escape in the box sends nothing', async () => {
    const { server, window, commands } = setup();
    await commands.create('release');
    assert.deepEqual(window.asked, []);
    await commands.create();
    assert.deepEqual(window.asked, ['input']);
    assert.deepEqual(server.sent, [['checkpoint', { action: 'create', name: 'release' }]]);
  });

  it('the name offered is the first checkpoint-<n> the panel has not seen created', () => {
    const named = (callId: string, name: string, failed = false): Card => cardOf(callId, { action: 'create', name }, failed);
    assert.equal(defaultCheckpointName([]), 'checkpoint-1');
    assert.equal(defaultCheckpointName([named('c1', 'mine'), named('c2', 'checkpoint-2')]), 'checkpoint-3');
    assert.equal(defaultCheckpointName([named('c1', 'checkpoint-1', true)]), 'checkpoint-1', 'a failed create made none');
    assert.equal(defaultCheckpointName([cardOf('c1', { action: 'list' }, false)]), 'checkpoint-1', 'the list card is no checkpoint');
  });
});

describe('Restore Checkpoint…', () => {
  it('lists, offers the checkpoints newest first, confirms in a modal, then sends {action: "restore", name}; the restore\'s diff card comes to the panel', async () => {
    const { server, window, store, commands } = setup();
    window.picks = 'before-refactor';
    window.presses = 'Restore';
    await commands.restore();
    assert.deepEqual(window.asked, ['pick', 'modal']);
    assert.deepEqual(window.picker, [
      { label: 'run_7f3a', description: 'before the turn “Rename greet to hello”', detail: '1 call changed files since', name: 'run_7f3a' },
      { label: 'before-refactor', detail: '3 calls changed files since', name: 'before-refactor' },
    ]);
    assert.deepEqual(window.modal, {
      message: 'Restore checkpoint before-refactor?',
      detail: 'Every change after it is undone (you can revert the restore).',
      items: ['Restore'],
    });
    assert.deepEqual(server.sent, [
      ['checkpoint', { action: 'list' }],
      ['checkpoint', { action: 'restore', name: 'before-refactor' }],
    ]);
    const restore = store.liveCards().at(-1);
    assert.deepEqual([restore?.title, restore?.kind, restore?.status], ['Restore checkpoint before-refactor', 'diff', 'completed']);
    assert.deepEqual(window.errors, []);
  });

  it('cancelling the pick sends nothing more than the list; cancelling the modal sends no restore', async () => {
    const { server, window, commands } = setup();
    await commands.restore();
    assert.deepEqual(window.asked, ['pick']);
    assert.deepEqual(server.sent, [['checkpoint', { action: 'list' }]]);
    window.picks = 'run_7f3a';
    await commands.restore();
    assert.deepEqual(window.asked, ['pick', 'pick', 'modal']);
    assert.deepEqual(server.sent.map(([, args]) => args), [{ action: 'list' }, { action: 'list' }]);
  });

  it('a refused restore: an error message with the code and the server\'s text, and the failed card', async () => {
    const { server, window, store, commands } = setup();
    window.presses = 'Restore';
    server.refuse = { code: 'CHECKPOINT_NOTHING_CHANGED', message: 'no file changed since checkpoint "run_7f3a"' };
    await commands.restore('run_7f3a');
    assert.deepEqual(window.asked, ['modal'], 'a name handed in: no list, no pick');
    assert.deepEqual(server.sent, [['checkpoint', { action: 'restore', name: 'run_7f3a' }]]);
    assert.deepEqual(window.errors, ['toolhost: restore of checkpoint run_7f3a failed (CHECKPOINT_NOTHING_CHANGED): no file changed since checkpoint "run_7f3a"']);
    assert.deepEqual(store.liveCards().map((c) => [c.title, c.status]), [['Restore checkpoint run_7f3a', 'failed']]);
  });

  it('a refused create or list says so too; a list without checkpoints says how to make one', async () => {
    const { server, window, commands } = setup();
    server.refuse = { code: 'CHECKPOINT_NAME_REQUIRED', message: 'a checkpoint needs a name' };
    await commands.create('x');
    await commands.restore();
    assert.deepEqual(window.errors, [
      'toolhost: checkpoint x failed (CHECKPOINT_NAME_REQUIRED): a checkpoint needs a name',
      'toolhost: the list of checkpoints failed (CHECKPOINT_NAME_REQUIRED): a checkpoint needs a name',
    ]);
    assert.deepEqual(window.asked, [], 'no picker after a refused list');
    const empty = setup();
    empty.server.checkpoints = [];
    await empty.commands.restore();
    assert.deepEqual(empty.window.asked, []);
    assert.match(empty.window.infos[0] ?? '', /^toolhost: no checkpoint in this session yet/);
  });
});

describe('checkpoints: the wire and the contributions', () => {
  it('the list is read leniently: no name dropped, a missing count 0, a missing kind named', () => {
    assert.deepEqual(asCheckpoints({ action: 'list', checkpoints: CHECKPOINTS }), CHECKPOINTS);
    assert.deepEqual(asCheckpoints({ checkpoints: [{ name: '' }, 7, { kind: 'turn' }, { name: 'a', changedAfter: -1 }] }), [{ name: 'a', kind: 'named', changedAfter: 0 }]);
    assert.deepEqual(asCheckpoints({ action: 'list' }), []);
    assert.deepEqual(asCheckpoints(null), []);
  });

  it('a turn\'s long or multi-line prompt is one short line; a turn without one says so', () => {
    const long = checkpointPickItem({ name: 'run_1', kind: 'turn', prompt: `Do this\nand ${'x'.repeat(80)}`, changedAfter: 0 });
    assert.equal(long.description?.length, 'before the turn “”'.length + 60);
    assert.match(long.description ?? '', /^before the turn “Do this and x+…”$/);
    assert.equal(long.detail, '0 calls changed files since');
    assert.equal(checkpointPickItem({ name: 'run_2', kind: 'turn', changedAfter: 2 }).description, 'before an agent turn');
    assert.deepEqual(restoreCandidates([]), []);
  });

  it('the commands are registered under the ids package.json contributes, Create also in the panel\'s title bar', async () => {
    const registered: string[] = [];
    const { server, window, store } = setup();
    const disposables = registerCheckpointCommands(
      { registerCommand: (id: string) => (registered.push(id), id) },
      { store, callTool: server.callTool, reveal: () => Promise.resolve(), window },
      (fn) => async (arg) => void (await fn(arg)),
    );
    assert.deepEqual(disposables, [CHECKPOINT_COMMANDS.create, CHECKPOINT_COMMANDS.restore]);
    const { readFile } = await import('node:fs/promises');
    const path = await import('node:path');
    let dir = __dirname;
    while (!(await readFile(path.join(dir, 'package.json'), 'utf8').catch(() => '')).includes('"toolhost.ui.callTool"')) {
      dir = path.dirname(dir);
    }
    const pkg = JSON.parse(await readFile(path.join(dir, 'package.json'), 'utf8')) as {
      contributes: { commands: { command: string }[]; menus: { 'view/title': { command: string; when: string }[] } };
    };
    const byId = new Map(pkg.contributes.commands.map((c) => [c.command, c]));
    assert.deepEqual(byId.get(CHECKPOINT_COMMANDS.create), { command: CHECKPOINT_COMMANDS.create, title: 'Create Checkpoint', category: 'toolhost', icon: '$(bookmark)' });
    assert.deepEqual(byId.get(CHECKPOINT_COMMANDS.restore), { command: CHECKPOINT_COMMANDS.restore, title: 'Restore Checkpoint…', category: 'toolhost' });
    assert.ok(pkg.contributes.menus['view/title'].some((m) => m.command === CHECKPOINT_COMMANDS.create && m.when === 'view == toolhost.cards'));
  });
});
