// Best of n from the editor (src/bestOf.ts): the command line it runs (the task, the check when
// given, the server's sessions folder), the terminal it makes (the server's binary, folder and
// environment), and the questions before it — each dismissal starting nothing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bestOfArgs, bestOfTerminal, runBestOf, type BestOfWindow, type TerminalSpec } from '../src/bestOf';

const launch = { command: '/bin/toolhost', args: ['serve', '--session-dir', '/s'], cwd: '/ws', env: { XDG_STATE_HOME: '/state', UNSET: undefined } };

function fakeWindow(answers: (string | undefined)[]): { window: BestOfWindow; made: TerminalSpec[]; warned: string[] } {
  const made: TerminalSpec[] = [];
  const warned: string[] = [];
  const next = () => Promise.resolve(answers.shift());
  const window: BestOfWindow = {
    showInputBox: next,
    showQuickPick: next,
    showWarningMessage: (m) => Promise.resolve(warned.push(m)),
    createTerminal: (spec) => {
      made.push(spec);
      return { show: () => undefined };
    },
  };
  return { window, made, warned };
}

describe('best of n', () => {
  it('runs toolhost agent --best-of with the task, the check and the server sessions folder', () => {
    assert.deepEqual(bestOfArgs(3, 'fix it', 'cargo test', launch.args), ['agent', 'fix it', '--best-of', '3', '--check', 'cargo test', '--session-dir', '/s']);
    assert.deepEqual(bestOfArgs(2, 'fix it', '  ', ['serve']), ['agent', 'fix it', '--best-of', '2']);
  });

  it('makes a terminal of the server binary, folder and environment', () => {
    const spec = bestOfTerminal(launch, 2, 'fix it', undefined);
    assert.equal(spec.name, 'toolhost best of 2');
    assert.equal(spec.shellPath, '/bin/toolhost');
    assert.equal(spec.cwd, '/ws');
    assert.deepEqual(spec.env, { XDG_STATE_HOME: '/state' });
  });

  it('asks the task, the count and the check, then starts the runs', async () => {
    const { window, made } = fakeWindow(['rename bravo', '3', 'grep -q x a.txt']);
    const spec = await runBestOf(window, launch);
    assert.equal(made.length, 1);
    assert.deepEqual(spec?.shellArgs, ['agent', 'rename bravo', '--best-of', '3', '--check', 'grep -q x a.txt', '--session-dir', '/s']);
  });

  it('starts nothing when a question is dismissed or no server runs', async () => {
    for (const answers of [[undefined], ['task', undefined], ['task', '2', undefined], ['  ']]) {
      const { window, made } = fakeWindow(answers);
      assert.equal(await runBestOf(window, launch), undefined);
      assert.equal(made.length, 0);
    }
    const { window, made, warned } = fakeWindow([]);
    assert.equal(await runBestOf(window, undefined), undefined);
    assert.equal(made.length, 0);
    assert.match(warned[0] ?? '', /start the server first/);
  });
});
