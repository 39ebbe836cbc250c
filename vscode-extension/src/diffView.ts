// "Open diff": VS Code's native diff editor over two read-only virtual documents rebuilt from a
// card's hunks (hunkDocs.ts) — for preview hunks (no place in the file yet) a standalone proposed
// change whose title says so; "Go to": the card's location in an editor.

import * as path from 'node:path';
import * as vscode from 'vscode';
import { reconstruct, type DiffSides } from './hunkDocs';
import { cardCaller, type Card } from './cards';

export const DIFF_SCHEME = 'toolhost-card';
const KEEP = 100;

/** Serves the virtual documents from memory through a read-only file system (so neither the
 * editor nor a workspace edit can change them). */
export class CardDiffProvider implements vscode.FileSystemProvider {
  private readonly texts = new Map<string, Uint8Array>();
  private readonly changes = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  private counter = 0;

  readonly onDidChangeFile = this.changes.event;

  private bytes(uri: vscode.Uri): Uint8Array {
    const key = new URLSearchParams(uri.query).get('k') ?? '';
    return this.texts.get(key) ?? new TextEncoder().encode('⋯ this diff is no longer available; open it again from its card');
  }

  watch(): vscode.Disposable {
    return new vscode.Disposable(() => undefined);
  }

  stat(uri: vscode.Uri): vscode.FileStat {
    return { type: vscode.FileType.File, ctime: 0, mtime: 0, size: this.bytes(uri).byteLength, permissions: vscode.FilePermission.Readonly };
  }

  readFile(uri: vscode.Uri): Uint8Array {
    return this.bytes(uri);
  }

  readDirectory(): [string, vscode.FileType][] {
    return [];
  }

  createDirectory(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  writeFile(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  delete(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  rename(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  private put(text: string): string {
    const key = String(++this.counter);
    this.texts.set(key, new TextEncoder().encode(text));
    while (this.texts.size > KEEP * 2) {
      const oldest = this.texts.keys().next().value;
      if (oldest === undefined) {
        break;
      }
      this.texts.delete(oldest);
    }
    return key;
  }

  /** Opens the diff of one file of `card` (asks which when its hunks touch several, or when a
   * file has both placed and preview hunks). Returns the two URIs, or undefined when there is
   * nothing to show. */
  async openDiff(card: Card, which?: string): Promise<{ left: vscode.Uri; right: vscode.Uri } | undefined> {
    const sides = reconstruct(card.hunks ?? []);
    if (sides.length === 0) {
      void vscode.window.showInformationMessage('toolhost: this card has no diff hunks');
      return undefined;
    }
    const label = (s: DiffSides) => (s.preview ? `${s.path} (proposed change)` : s.path);
    let chosen = sides.find((s) => s.path === which) ?? sides[0];
    if (sides.length > 1 && which === undefined) {
      const pick = await vscode.window.showQuickPick(
        sides.map((s) => ({ label: label(s), sides: s })),
        { title: 'toolhost: open the diff of which file?' },
      );
      if (!pick) {
        return undefined;
      }
      chosen = pick.sides;
    }
    if (!chosen) {
      return undefined;
    }
    const docPath = chosen.path.startsWith('/') ? chosen.path : `/${chosen.path}`;
    const kind = chosen.preview ? '&preview=1' : '';
    const call = encodeURIComponent(card.callId);
    const left = vscode.Uri.from({ scheme: DIFF_SCHEME, path: docPath, query: `side=old&call=${call}${kind}&k=${this.put(chosen.old)}` });
    const right = vscode.Uri.from({ scheme: DIFF_SCHEME, path: docPath, query: `side=new&call=${call}${kind}&k=${this.put(chosen.new)}` });
    const what = chosen.preview ? 'proposed change · ' : '';
    const caller = cardCaller(card);
    const title = `${path.posix.basename(chosen.path)} (${what}${card.tool}: ${card.title} · ${card.status}${caller === undefined ? '' : ` · ${caller}`})`;
    const line = chosen.firstChangeLine - 1;
    await vscode.commands.executeCommand('vscode.diff', left, right, title, {
      preview: true,
      selection: new vscode.Range(line, 0, line, 0),
    } satisfies vscode.TextDocumentShowOptions);
    return { left, right };
  }
}

/** Opens the file of `card.locations[index]` at its line (and column for lsp locations). */
export async function goToLocation(card: Card, index = 0): Promise<vscode.TextEditor | undefined> {
  const location = card.locations[index] ?? card.locations[0];
  if (!location) {
    void vscode.window.showInformationMessage('toolhost: this card has no location');
    return undefined;
  }
  const searchLoc = card.search?.locations?.[index];
  const character = searchLoc && card.search?.paths == null && card.search?.files == null ? Math.max(searchLoc.character - 1, 0) : 0;
  const line = Math.max(location.line - 1, 0);
  const uri = vscode.Uri.file(location.path);
  try {
    const doc = await vscode.workspace.openTextDocument(uri);
    const clampedLine = Math.min(line, Math.max(doc.lineCount - 1, 0));
    const pos = new vscode.Position(clampedLine, character);
    return await vscode.window.showTextDocument(doc, { selection: new vscode.Range(pos, pos), preview: true });
  } catch (err) {
    void vscode.window.showErrorMessage(`toolhost: cannot open ${location.path}: ${err instanceof Error ? err.message : String(err)}`);
    return undefined;
  }
}
