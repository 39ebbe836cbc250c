// Companion test extension: runs the mocha suites inside the extension host, against the installed
// toolhost extension, and writes their results as JSON for the driver (e2e/driver.mjs).
//   on startup (TOOLHOST_TEST_RESULT set): dist/suite.js   → $TOOLHOST_TEST_RESULT
//   command "toolhost tests: Verify UI":    dist/suiteUi.js → $TOOLHOST_TEST_RESULT_UI
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { results } from './shared';

interface MochaResults {
  passed: string[];
  failed: { title: string; err: string }[];
  pending: string[];
  data: Record<string, unknown>;
}

async function runSuite(file: string, out: string): Promise<void> {
  // mocha is a plain dependency of this extension (node_modules next to it), loaded at run time.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const Mocha = require('mocha') as typeof import('mocha');
  const mocha = new Mocha({ ui: 'bdd', color: false, timeout: 60_000 });
  mocha.addFile(path.join(__dirname, file));
  const report: MochaResults = { passed: [], failed: [], pending: [], data: results };
  await new Promise<void>((resolve) => {
    const runner = mocha.run(() => resolve());
    runner.on('pass', (t) => report.passed.push(t.fullTitle()));
    runner.on('fail', (t, err: unknown) =>
      report.failed.push({ title: t.fullTitle(), err: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
    );
    runner.on('pending', (t) => report.pending.push(t.fullTitle()));
  });
  fs.writeFileSync(`${out}.tmp`, JSON.stringify(report, null, 2));
  fs.renameSync(`${out}.tmp`, out);
}

export function activate(context: vscode.ExtensionContext): void {
  const main = process.env.TOOLHOST_TEST_RESULT;
  const ui = process.env.TOOLHOST_TEST_RESULT_UI;
  context.subscriptions.push(
    vscode.commands.registerCommand('toolhostTests.verifyUi', async () => {
      if (ui) {
        await runSuite('suiteUi.js', ui);
      }
    }),
  );
  if (main) {
    void runSuite('suite.js', main);
  }
}
