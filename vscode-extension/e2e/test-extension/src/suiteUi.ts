// UI suite, run by the driver through the command palette ("toolhost tests: Verify UI") after it
// has clicked through the panel: checks through the `vscode` API what the clicks did.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { reconstruct } from '../../../src/hunkDocs';
import { env, toolhostApi, waitFor, type Card, type ToolhostApiLike } from './shared';

function diffTabs(): vscode.TabInputTextDiff[] {
  return vscode.window.tabGroups.all
    .flatMap((g) => g.tabs)
    .map((t) => t.input)
    .filter((i): i is vscode.TabInputTextDiff => i instanceof vscode.TabInputTextDiff && i.original.scheme === 'toolhost-card');
}

function callOf(uri: vscode.Uri): string {
  return new URLSearchParams(uri.query).get('call') ?? '';
}

describe('toolhost UI, after the driver clicked through it', function () {
  let api: ToolhostApiLike;

  before(async () => {
    api = await toolhostApi();
  });

  it('the panel shows a replayed session with the same cards as the live ones', () => {
    const replay = api.store.replay;
    assert.ok(replay, 'a replay is on show');
    const live = api.store.liveCards();
    const edits = live.filter((c) => c.tool === 'edit' && c.status === 'completed');
    assert.ok(edits.length >= 1);
    for (const card of edits) {
      assert.deepEqual(
        replay.cards.find((c) => c.callId === card.callId),
        card,
      );
    }
  });

  it('"Open diff" opened the native diff editor over two toolhost-card documents built from the hunks', async () => {
    const tabs = await waitFor('a toolhost diff tab', () => (diffTabs().length > 0 ? diffTabs() : undefined), 10_000);
    for (const tab of tabs) {
      const card: Card | undefined = api.store.find(callOf(tab.modified));
      assert.ok(card?.hunks, `card ${callOf(tab.modified)}`);
      const [sides] = reconstruct(card.hunks);
      const original = await vscode.workspace.openTextDocument(tab.original);
      const modified = await vscode.workspace.openTextDocument(tab.modified);
      assert.equal(original.getText(), sides?.old);
      assert.equal(modified.getText(), sides?.new);
      assert.equal(path.posix.basename(tab.modified.path), 'a.txt');
    }
    const active = vscode.window.tabGroups.activeTabGroup.activeTab;
    assert.ok(active?.input instanceof vscode.TabInputTextDiff, `active tab: ${active?.label}`);
  });

  it('the virtual documents live on a read-only file system', async () => {
    const [tab] = diffTabs();
    assert.ok(tab);
    assert.equal(vscode.workspace.fs.isWritableFileSystem('toolhost-card'), false);
    const stat = await vscode.workspace.fs.stat(tab.modified);
    assert.equal(stat.permissions, vscode.FilePermission.Readonly);
    await assert.rejects(Promise.resolve(vscode.workspace.fs.writeFile(tab.modified, new Uint8Array([120]))));
    assert.equal(new TextDecoder().decode(await vscode.workspace.fs.readFile(tab.modified)), (await vscode.workspace.openTextDocument(tab.modified)).getText());
  });

  it('a replayed card opens its diff with no disk reads (the file is gone)', async () => {
    const replay = api.store.replay;
    const card = replay?.cards.find((c) => c.tool === 'edit' && c.status === 'completed');
    assert.ok(card);
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    const file = path.join(env('TOOLHOST_TEST_WS'), 'a.txt');
    const saved = fs.readFileSync(file);
    fs.rmSync(file);
    try {
      const opened = await api.openDiff(card.callId);
      assert.ok(opened);
      const doc = await vscode.workspace.openTextDocument(opened.right);
      assert.equal(doc.getText(), reconstruct(card.hunks ?? [])[0]?.new);
      assert.ok(diffTabs().some((t) => t.modified.toString() === opened.right.toString()));
    } finally {
      fs.writeFileSync(file, saved);
    }
  });
});
