// The editor-backed lsp provider: the server asks (`toolhost/lspQuery`), VS Code's own language
// features answer (definition, references, implementation, hover providers), normalized to the
// protocol's shapes by the pure functions in lspQuery.ts.

import * as vscode from 'vscode';
import type { ClientCapabilities, FeatureState, StaticFeature } from 'vscode-languageclient/node';
import { ResponseError } from 'vscode-languageclient/node';
import {
  isEmptyAnswer,
  isLoadingAnswer,
  languageHasExtension,
  LSP_UNAVAILABLE,
  LSP_UNSUPPORTED_OPERATION,
  normalizeHover,
  normalizeLocations,
  parseLspQueryParams,
  queryCommand,
  type ExtensionInfo,
  type LspQueryResult,
} from './lspQuery';

/** How long a hover waits for a language server that is still loading its project. */
const LOADING_WAIT_MS = 20_000;

/** Advertises `capabilities.experimental.toolhost.lspProvider = true` in initialize. */
export class LspProviderFeature implements StaticFeature {
  constructor(private readonly enabled: () => boolean) {}

  fillClientCapabilities(capabilities: ClientCapabilities): void {
    if (!this.enabled()) {
      return;
    }
    const experimental = (capabilities.experimental ?? {}) as Record<string, unknown>;
    const toolhost = (experimental.toolhost ?? {}) as Record<string, unknown>;
    experimental.toolhost = { ...toolhost, lspProvider: true };
    capabilities.experimental = experimental;
  }

  initialize(): void {}

  getState(): FeatureState {
    return { kind: 'static' };
  }

  clear(): void {}
}

/** Answers one `toolhost/lspQuery`. Errors carry `data.code` with the lsp tool's codes:
 * malformed params or an unknown operation are `-32602` (`LSP_UNSUPPORTED_OPERATION` for the
 * latter); a file no extension of this editor serves is `-32601` with `LSP_UNAVAILABLE` (so the
 * server can ask a language server of its own); a provider failure is `-32603`. */
export async function answerLspQuery(raw: unknown, selfId = SELF_ID, token?: vscode.CancellationToken): Promise<LspQueryResult> {
  let params;
  try {
    params = parseLspQueryParams(raw);
  } catch (err) {
    throw new ResponseError(-32602, `toolhost/lspQuery: ${err instanceof Error ? err.message : String(err)}`);
  }
  const command = queryCommand(params.operation);
  if (command === undefined) {
    throw new ResponseError(-32602, `toolhost/lspQuery: unsupported operation "${params.operation}"`, { code: LSP_UNSUPPORTED_OPERATION });
  }
  const uri = vscode.Uri.parse(params.uri, true);
  const position = new vscode.Position(params.position.line, params.position.character);
  let result: LspQueryResult;
  let languageId: string;
  try {
    const wasOpen = vscode.workspace.textDocuments.some((d) => d.uri.toString() === uri.toString());
    // Providers need the document loaded (a language extension activates on it).
    const document = await vscode.workspace.openTextDocument(uri);
    languageId = document.languageId;
    const served = languageHasExtension(languageId, extensionInfos(), selfId);
    const ask = async (): Promise<LspQueryResult> => {
      const answer: unknown = await vscode.commands.executeCommand(command, uri, position);
      return command === 'vscode.executeHoverProvider' ? normalizeHover(answer) : normalizeLocations(answer);
    };
    result = await ask();
    // A language extension activating on a document it just saw registers its providers a moment
    // later, and TypeScript answers "(loading...)" while it loads the project: ask again a while.
    const deadline = Date.now() + LOADING_WAIT_MS;
    while ((isLoadingAnswer(result) || (served && !wasOpen && isEmptyAnswer(result))) && Date.now() < deadline) {
      // The server sends `$/cancelRequest` when the tool call was cancelled or timed out: stop
      // asking for an answer nobody will read.
      if (token?.isCancellationRequested) {
        throw new ResponseError(-32800, 'toolhost/lspQuery cancelled');
      }
      await new Promise((resolve) => setTimeout(resolve, 300));
      result = await ask();
    }
    if (isEmptyAnswer(result) && !served) {
      throw new ResponseError(-32601, `no VS Code extension provides language features for ${languageId} files`, { code: LSP_UNAVAILABLE });
    }
  } catch (err) {
    if (err instanceof ResponseError) {
      throw err;
    }
    throw new ResponseError(-32603, `toolhost/lspQuery ${params.operation} failed: ${err instanceof Error ? err.message : String(err)}`);
  }
  return result;
}

const SELF_ID = 'toolhost.toolhost';

function extensionInfos(): ExtensionInfo[] {
  return vscode.extensions.all.map((ext) => ({
    id: ext.id,
    activationEvents: (ext.packageJSON as { activationEvents?: string[] } | undefined)?.activationEvents,
  }));
}
