// Questions for the person in VS Code: the server's `toolhost/askUser` request becomes a form in
// the toolhost panel (ask.ts draws it, media/panel.js runs its keys) and a notification whose
// Answer button puts the keyboard focus in that form. The person's answer (or Escape: dismissed)
// settles the request. The server may withdraw the question (`$/cancelRequest`, which
// vscode-languageclient turns into the handler's cancellation token: the call was cancelled or
// timed out); the form then goes without an answer. Open questions wait in the queue of pending
// requests they share with reviews (pending.ts), which orders, counts and withdraws them. Tests and the conformance runner can answer
// instead of the person (a responder).

import * as vscode from 'vscode';
import { ResponseError } from 'vscode-languageclient/node';
import {
  AskSession,
  askFormHtml,
  notificationText,
  parseAskUserParams,
  QUESTION_KIND,
  resultOf,
  type AskUserParams,
  type AskUserResult,
  type FormAction,
} from './ask';
import type { PendingQueue } from './pending';
import type { QuestionForm } from './panel';

export const ASK_COMMANDS = {
  /** Shows the panel with the focus in the oldest open question (or the one named). */
  focus: 'toolhost.ask.focus',
} as const;

/** Answers a question instead of the person; returning undefined leaves it to the form. */
export type AskResponder = (params: AskUserParams, token: vscode.CancellationToken) => Promise<AskUserResult> | undefined;

/** What the tests read of an open question. */
export interface AskSnapshot {
  key: string;
  requestId: number | string;
  callId: string;
  intent: string;
  title: string;
  questions: string[];
}

export class AskController implements vscode.Disposable {
  private responder: AskResponder | undefined;
  private readonly changed = new vscode.EventEmitter<void>();
  private readonly disposables: vscode.Disposable[] = [];

  /** Fires when a question opens or closes. */
  readonly onDidChange = this.changed.event;

  constructor(
    private readonly pending: PendingQueue,
    private readonly output: vscode.OutputChannel,
    private readonly focus: (key?: string) => Promise<void>,
  ) {
    this.disposables.push(
      this.changed,
      pending.onChange((kind) => {
        if (kind === QUESTION_KIND) {
          void vscode.commands.executeCommand('setContext', 'toolhost.questionPending', this.open().length > 0);
          this.changed.fire();
        }
      }),
      vscode.commands.registerCommand(ASK_COMMANDS.focus, async (key?: unknown) => {
        const next = this.pending.next(AskSession);
        if (!next) {
          vscode.window.setStatusBarMessage('toolhost: no question is waiting for an answer', 4000);
          return;
        }
        await this.focus(typeof key === 'string' && this.pending.get(AskSession, key) ? key : next.key);
      }),
    );
  }

  /** The open questions, oldest first. */
  open(): AskSession[] {
    return this.pending.all(AskSession);
  }

  setResponder(responder: AskResponder | undefined): void {
    this.responder = responder;
  }

  /** The forms of the open questions, oldest first. */
  forms(): QuestionForm[] {
    return this.open().map((s) => ({ key: s.key, html: askFormHtml(s) }));
  }

  snapshots(): AskSnapshot[] {
    return this.open().map((s) => ({
      key: s.key,
      requestId: s.params.requestId,
      callId: s.params.callId,
      intent: s.params.intent,
      title: s.params.title,
      questions: s.params.questions.map((q) => q.question),
    }));
  }

  /** One `toolhost/askUser` request: settles with the person's answer; never settles when the
   * server withdraws it (no answer is sent). */
  handle(raw: unknown, token: vscode.CancellationToken): Promise<AskUserResult> {
    let params: AskUserParams;
    try {
      params = parseAskUserParams(raw);
    } catch (err) {
      // The call fails with this message rather than wait for a form nobody can fill in.
      return Promise.reject(new ResponseError(-32602, `toolhost/askUser: ${err instanceof Error ? err.message : String(err)}`));
    }
    const scripted = this.responder?.(params, token);
    if (scripted) {
      return scripted;
    }
    return new Promise<AskUserResult>((resolve) => {
      const session = new AskSession(params, resolve);
      this.pending.add(session);
      this.output.appendLine(`[toolhost] question asked: ${params.title} (${params.callId}, ${params.intent}, ${params.questions.length} ${params.questions.length === 1 ? 'question' : 'questions'})`);
      const waiting = this.pending.withdrawOnCancel(session, token, () => {
        this.output.appendLine(`[toolhost] question withdrawn by the server: ${params.title} (${params.callId})`);
        vscode.window.setStatusBarMessage(`toolhost: the question "${params.title}" was withdrawn (the call was cancelled or timed out)`, 6000);
      });
      if (!waiting) {
        return;
      }
      // Not modal and no focus taken: keys typed into an editor must not land in the form (Enter
      // would submit it). Answer puts the focus there.
      void vscode.window.showInformationMessage(`toolhost: ${notificationText(params)}`, 'Answer').then((pick) => {
        if (pick && session.isOpen) {
          void this.focus(session.key);
        }
      });
    });
  }

  /** A form's answer from the panel; false when the question is no longer open or the action does
   * not fit it. */
  answer(key: string, action: { op: string; state?: unknown; feedback?: unknown }): boolean {
    const session = this.pending.get(AskSession, key);
    if (!session) {
      vscode.window.setStatusBarMessage('toolhost: that question is no longer open', 4000);
      return false;
    }
    const result = resultOf(session.params, action as FormAction);
    if (!result) {
      return false;
    }
    const sent = this.pending.respond(session, result);
    if (sent) {
      this.output.appendLine(`[toolhost] question answered: ${session.params.title}: ${JSON.stringify(result)}`);
    }
    return sent;
  }

  dispose(): void {
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}
