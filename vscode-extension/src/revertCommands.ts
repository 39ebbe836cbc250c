// The `toolhost.ui.revertCall` and `toolhost.ui.revertSince` commands: the panel's Revert and
// Revert since here buttons run them with the card's call id; from the palette they ask for a card
// first. Either way the server's `revert` tool does the work, and its result comes back as a card
// like every call's (a diff card of what the revert wrote, or a failed card).

import * as vscode from 'vscode';
import type { CardStore } from './cardStore';
import { asCard } from './cards';
import type { CallToolResult } from './protocol';
import {
  callIdArgument,
  REVERT_COMMANDS,
  REVERT_TOOL,
  revertArguments,
  revertCandidates,
  revertFailureMessage,
  revertibleSince,
  revertPickItem,
  sinceConfirmation,
  type RevertPickItem,
} from './revert';

export interface RevertDeps {
  store: CardStore;
  callTool(name: string, args: unknown): Promise<CallToolResult>;
  /** Shows the panel, where the revert's card arrives. */
  reveal(): Promise<void>;
  /** Wraps a command so that a thrown error (e.g. no server) becomes an error message. */
  withErrors<A extends unknown[]>(fn: (...args: A) => Promise<unknown>): (...args: A) => Promise<void>;
}

/** Asks for the card to revert: the completed diff cards of the live session, newest first. */
async function pickCall(store: CardStore, since: boolean): Promise<string | undefined> {
  const candidates = revertCandidates(store.liveCards());
  if (candidates.length === 0) {
    void vscode.window.showInformationMessage('toolhost: no completed file change to revert (no completed diff card in the panel)');
    return undefined;
  }
  const pick = await vscode.window.showQuickPick<RevertPickItem>(candidates.map(revertPickItem), {
    title: since ? 'toolhost: Revert Since Call…' : 'toolhost: Revert Call…',
    placeHolder: since ? 'Undo every file change from this call on' : 'Undo the file changes of this call',
    matchOnDescription: true,
    matchOnDetail: true,
  });
  return pick?.callId;
}

export function registerRevertCommands(deps: RevertDeps): vscode.Disposable[] {
  const { store } = deps;
  // Calls whose revert is under way (confirmation included): a second press of the button, before
  // the first one's card came, would revert the revert's effect again or fail on a conflict.
  const busy = new Set<string>();

  const revert = async (since: boolean, arg?: unknown): Promise<void> => {
    const callId = callIdArgument(arg) ?? (await pickCall(store, since));
    if (callId === undefined) {
      return;
    }
    if (busy.has(callId)) {
      vscode.window.setStatusBarMessage(`toolhost: a revert of ${callId} is already under way`, 4000);
      return;
    }
    busy.add(callId);
    try {
      if (since) {
        const ask = sinceConfirmation(callId, store.find(callId), revertibleSince(store.liveCards(), callId));
        const answer = await vscode.window.showWarningMessage(ask.message, { modal: true, detail: ask.detail }, ask.confirm);
        if (answer !== ask.confirm) {
          return;
        }
      }
      // The revert's card is a live card: leave a replay on show and the panel would hide it.
      store.showLive();
      await deps.reveal();
      const response = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Window, title: since ? `toolhost: revert since ${callId}` : `toolhost: revert ${callId}` },
        () => deps.callTool(REVERT_TOOL, revertArguments(callId, since)),
      );
      // The card normally arrives as a notification; the response carries it too.
      const card = asCard(response.card);
      if (card) {
        store.upsert(card);
      }
      if (response.result.isError) {
        void vscode.window.showErrorMessage(revertFailureMessage(callId, since, response.result));
      }
    } finally {
      busy.delete(callId);
    }
  };

  return [
    vscode.commands.registerCommand(REVERT_COMMANDS.revert, deps.withErrors((arg?: unknown) => revert(false, arg))),
    vscode.commands.registerCommand(REVERT_COMMANDS.since, deps.withErrors((arg?: unknown) => revert(true, arg))),
  ];
}
