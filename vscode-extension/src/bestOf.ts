// Best of n from the editor: the same task run by N of toolhost's own agents at once, each in a
// worktree session of its own (`toolhost agent --best-of N`, docs/agent.md), in an integrated
// terminal at the workspace — the runs, then the table of what each changed and whether its check
// passed, and the question which one to apply (hunk by hunk, on that terminal). The runs stay
// worktree sessions: the panel's session picker shows their cards, Apply Worktree Session… takes
// one later. The terminal runs the server's own binary with the server's environment and sessions
// folder, so the runs are the sessions the server lists. Pure but for `registerBestOf`'s
// `vscode` window calls, which are handed in, so `node --test` covers all of it.

/** The most runs the command line takes. */
export const MAX_RUNS = 8;

/** The command's id. */
export const BEST_OF_COMMAND = 'toolhost.ui.bestOf';

/** How the server was started (controller.ts `launch`). */
export interface Launch {
  command: string;
  args: readonly string[];
  cwd: string | undefined;
  env: NodeJS.ProcessEnv;
}

/** The arguments of `toolhost agent --best-of`: the task, the check when one is given, and the
 * server's `--session-dir` when it has one (so the runs land where the server looks). */
export function bestOfArgs(runs: number, task: string, check: string | undefined, serverArgs: readonly string[]): string[] {
  const args = ['agent', task, '--best-of', String(runs)];
  if (check !== undefined && check.trim() !== '') {
    args.push('--check', check);
  }
  const dir = serverArgs[serverArgs.indexOf('--session-dir') + 1];
  if (serverArgs.includes('--session-dir') && dir !== undefined) {
    args.push('--session-dir', dir);
  }
  return args;
}

/** What the runs' terminal is made of. */
export interface TerminalSpec {
  name: string;
  shellPath: string;
  shellArgs: string[];
  cwd: string | undefined;
  env: Record<string, string>;
}

export function bestOfTerminal(launch: Launch, runs: number, task: string, check: string | undefined): TerminalSpec {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(launch.env)) {
    if (value !== undefined) {
      env[key] = value;
    }
  }
  return {
    name: `toolhost best of ${runs}`,
    shellPath: launch.command,
    shellArgs: bestOfArgs(runs, task, check, launch.args),
    cwd: launch.cwd,
    env,
  };
}

/** The window calls the command makes (vscode.window, structurally). */
export interface BestOfWindow {
  showInputBox(options: { prompt: string; placeHolder?: string; ignoreFocusOut?: boolean }): PromiseLike<string | undefined>;
  showQuickPick(items: string[], options: { placeHolder: string }): PromiseLike<string | undefined>;
  showWarningMessage(message: string): PromiseLike<unknown>;
  createTerminal(options: TerminalSpec): { show(): void };
}

/** Asks for the task, how many runs and the check, then starts the runs in a terminal. Returns
 * the terminal's spec (undefined when the person dismissed a question or no server runs). */
export async function runBestOf(window: BestOfWindow, launch: Launch | undefined): Promise<TerminalSpec | undefined> {
  if (launch === undefined) {
    await window.showWarningMessage('toolhost: start the server first (Restart Server)');
    return undefined;
  }
  const task = await window.showInputBox({ prompt: 'Task for every run', placeHolder: 'fix the flaky test', ignoreFocusOut: true });
  if (task === undefined || task.trim() === '') {
    return undefined;
  }
  const counts = Array.from({ length: MAX_RUNS - 1 }, (_, i) => String(i + 2));
  const picked = await window.showQuickPick(counts, { placeHolder: 'How many runs, each in its own worktree session?' });
  if (picked === undefined) {
    return undefined;
  }
  const check = await window.showInputBox({
    prompt: 'Check command run in each worktree afterwards (empty: none)',
    placeHolder: 'cargo test',
    ignoreFocusOut: true,
  });
  if (check === undefined) {
    return undefined;
  }
  const spec = bestOfTerminal(launch, Number(picked), task, check);
  window.createTerminal(spec).show();
  return spec;
}
