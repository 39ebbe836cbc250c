// The `toolhost serve` process of one language client. The extension starts it itself and hands it
// to vscode-languageclient (a `ServerOptions` function returning the child), instead of letting the
// library spawn it, because the library writes `[Error - …] Server process exited with code 0.`
// for every exit — also after a stop the extension asked for (a new session, a changed setting,
// Restart Server), where toolhost answered `shutdown`, got `exit` and ended with 0 as it should.
// Here the exit is judged against what was asked: a process told to stop that exits 0 is logged as
// an ordinary line; any other exit (a crash, exit 0 nobody asked for, one that had to be killed
// after the stop) still says Error. Stopping waits for the process to be gone, so the next server
// never overlaps the old one, and kills it (TERM, then KILL) if it ignores the stop. Node only: no
// `vscode` import, so `node --test` covers it.

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';

export interface ServerCommand {
  command: string;
  args: string[];
  cwd?: string;
  env: NodeJS.ProcessEnv;
}

/** How the process ended (`code` null: killed by `signal`). */
export interface ServerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** What the extension writes about an exit: an ordinary log line, or an error. */
export interface ExitReport {
  error: boolean;
  text: string;
}

/** How long a stopped server may take to exit before it is sent SIGTERM, and then SIGKILL. */
export const STOP_GRACE_MS = 3000;

/** The line for an exit: `expected` when the extension stopped the server (shutdown + exit). Only a
 * clean exit after a stop is not an error; the error's wording is vscode-languageclient's own. */
export function exitReport(exit: ServerExit, expected: boolean): ExitReport {
  if (expected && exit.code === 0) {
    return { error: false, text: '[toolhost] server stopped (exit code 0)' };
  }
  const how = exit.code !== null ? `code ${exit.code}` : `signal ${exit.signal ?? 'unknown'}`;
  const stamp = `[Error - ${new Date().toLocaleTimeString()}]`;
  return { error: true, text: `${stamp} Server process exited with ${how}.${expected ? ' (It was being stopped.)' : ''}` };
}

export class ServerProcess {
  /** Settles once the process has exited (never rejects). */
  readonly exited: Promise<ServerExit>;
  private expected = false;

  private constructor(
    readonly child: ChildProcessWithoutNullStreams,
    log: (report: ExitReport) => void,
  ) {
    // A failed kill or write is reported on the streams and by the exit; an `error` event with no
    // listener would throw.
    child.on('error', () => undefined);
    this.exited = new Promise<ServerExit>((resolve) => {
      child.once('exit', (code, signal) => {
        const exit = { code, signal };
        log(exitReport(exit, this.expected));
        resolve(exit);
      });
    });
  }

  /** Starts `command`; rejects when it cannot be started (no such file, not executable). `log`
   * gets the report of its exit. */
  static start(command: ServerCommand, log: (report: ExitReport) => void): Promise<ServerProcess> {
    return new Promise<ServerProcess>((resolve, reject) => {
      const child = spawn(command.command, command.args, { cwd: command.cwd, env: command.env, stdio: 'pipe' });
      child.once('error', (err) => reject(err));
      child.once('spawn', () => resolve(new ServerProcess(child, log)));
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** From now on the process is expected to exit (the client sends `shutdown` and `exit`). */
  stopping(): void {
    this.expected = true;
  }

  /** Waits for the process to exit (after a stop, or a start that failed); past `graceMs` it gets
   * SIGTERM, and SIGKILL after as long again. */
  async gone(graceMs = STOP_GRACE_MS): Promise<ServerExit> {
    const timers: ReturnType<typeof setTimeout>[] = [];
    const signal = (name: NodeJS.Signals) => {
      if (this.child.exitCode === null && this.child.signalCode === null) {
        this.child.kill(name);
      }
    };
    timers.push(setTimeout(() => signal('SIGTERM'), graceMs));
    timers.push(setTimeout(() => signal('SIGKILL'), 2 * graceMs));
    try {
      return await this.exited;
    } finally {
      for (const t of timers) {
        clearTimeout(t);
      }
    }
  }
}
