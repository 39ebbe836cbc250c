// The server process the extension starts itself (serverProcess.ts): a stop it asked for that ends
// in exit 0 is an ordinary log line, everything else says Error — checked against the real
// `toolhost serve` (TOOLHOST_BIN: initialize, then shutdown and exit, as vscode-languageclient's
// stop sends them) and against stand-in processes that exit unasked or ignore the stop.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { exitReport, ServerProcess, type ExitReport } from '../src/serverProcess';

const bin = process.env.TOOLHOST_BIN;

/** A Node one-liner as a stand-in server. */
function node(script: string) {
  return { command: process.execPath, args: ['-e', script], env: process.env };
}

describe('the exit of the server process', () => {
  it('a clean exit after a stop is no error; any other exit is, in the language client\'s words', () => {
    assert.deepEqual(exitReport({ code: 0, signal: null }, true), { error: false, text: '[toolhost] server stopped (exit code 0)' });
    const unasked = exitReport({ code: 0, signal: null }, false);
    assert.equal(unasked.error, true);
    assert.match(unasked.text, /^\[Error - [^\]]+\] Server process exited with code 0\.$/);
    const crashed = exitReport({ code: 101, signal: null }, false);
    assert.match(crashed.text, /^\[Error - [^\]]+\] Server process exited with code 101\.$/);
    const killed = exitReport({ code: null, signal: 'SIGKILL' }, true);
    assert.equal(killed.error, true);
    assert.match(killed.text, /^\[Error - [^\]]+\] Server process exited with signal SIGKILL\. \(It was being stopped\.\)$/);
    const failed = exitReport({ code: 1, signal: null }, true);
    assert.equal(failed.error, true, 'a stop that ends with a failure code is still an error');
  });

  it('a server that exits by itself, even with 0, says Error', async () => {
    const reports: ExitReport[] = [];
    const server = await ServerProcess.start(node('process.exit(0)'), (r) => reports.push(r));
    assert.deepEqual(await server.exited, { code: 0, signal: null });
    assert.equal(reports.length, 1);
    assert.equal(reports[0]?.error, true);
  });

  it('a server that ignores the stop is sent SIGTERM after the grace time, and that says Error', async () => {
    const reports: ExitReport[] = [];
    const server = await ServerProcess.start(node('setInterval(() => undefined, 1000)'), (r) => reports.push(r));
    server.stopping();
    const exit = await server.gone(100);
    assert.deepEqual(exit, { code: null, signal: 'SIGTERM' });
    assert.equal(reports.length, 1);
    assert.equal(reports[0]?.error, true);
    assert.match(reports[0]?.text ?? '', /signal SIGTERM\. \(It was being stopped\.\)/);
  });

  it('a server that cannot be started rejects the start', async () => {
    await assert.rejects(ServerProcess.start({ command: '/nonexistent/toolhost', args: ['serve'], env: process.env }, () => undefined), /ENOENT/);
  });
});

describe('the real server stopped on purpose', { skip: !bin && 'TOOLHOST_BIN not set' }, () => {
  let dir = '';

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolhost-stop-'));
    for (const sub of ['ws', 'sessions', 'config', 'state', 'data', 'cache', 'runtime']) {
      fs.mkdirSync(path.join(dir, sub));
    }
  });

  after(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('shutdown then exit: toolhost serve exits 0, logged as a stop, not an error', async () => {
    const ws = path.join(dir, 'ws');
    const env = {
      ...process.env,
      XDG_CONFIG_HOME: path.join(dir, 'config'),
      XDG_STATE_HOME: path.join(dir, 'state'),
      XDG_DATA_HOME: path.join(dir, 'data'),
      XDG_CACHE_HOME: path.join(dir, 'cache'),
      XDG_RUNTIME_DIR: path.join(dir, 'runtime'),
    };
    const reports: ExitReport[] = [];
    const server = await ServerProcess.start({ command: bin ?? '', args: ['serve', '--session-dir', path.join(dir, 'sessions')], cwd: ws, env }, (r) => reports.push(r));
    const rpc = new Rpc(server);
    const init = await rpc.request(1, 'initialize', { processId: process.pid, rootUri: `file://${ws}`, workspaceFolders: [{ uri: `file://${ws}`, name: 'ws' }], capabilities: {} });
    assert.ok(init.result, `initialize: ${JSON.stringify(init)}`);
    rpc.notify('initialized', {});
    // what vscode-languageclient's stop sends
    server.stopping();
    const down = await rpc.request(2, 'shutdown', null);
    assert.equal(down.error, undefined, `shutdown: ${JSON.stringify(down)}`);
    rpc.notify('exit', null);
    assert.deepEqual(await server.gone(), { code: 0, signal: null });
    assert.deepEqual(reports, [{ error: false, text: '[toolhost] server stopped (exit code 0)' }]);
  });
});

/** A minimal LSP peer over the process's stdio (Content-Length framing). */
class Rpc {
  private buffer = Buffer.alloc(0);
  private readonly waiting = new Map<number, (message: { result?: unknown; error?: unknown }) => void>();

  constructor(private readonly server: ServerProcess) {
    server.child.stdout.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.drain();
    });
  }

  private drain(): void {
    for (;;) {
      const end = this.buffer.indexOf('\r\n\r\n');
      if (end < 0) {
        return;
      }
      const length = Number(/Content-Length: (\d+)/i.exec(this.buffer.subarray(0, end).toString('ascii'))?.[1] ?? NaN);
      if (this.buffer.length < end + 4 + length) {
        return;
      }
      const message = JSON.parse(this.buffer.subarray(end + 4, end + 4 + length).toString('utf8')) as { id?: unknown; method?: string; result?: unknown; error?: unknown };
      this.buffer = this.buffer.subarray(end + 4 + length);
      if (typeof message.id === 'number' && message.method === undefined) {
        this.waiting.get(message.id)?.(message);
        this.waiting.delete(message.id);
      }
    }
  }

  private send(message: unknown): void {
    const body = Buffer.from(JSON.stringify(message), 'utf8');
    this.server.child.stdin.write(Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`, 'ascii'), body]));
  }

  request(id: number, method: string, params: unknown): Promise<{ result?: unknown; error?: unknown }> {
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.send({ jsonrpc: '2.0', id, method, params });
    });
  }

  notify(method: string, params: unknown): void {
    this.send({ jsonrpc: '2.0', method, params });
  }
}
