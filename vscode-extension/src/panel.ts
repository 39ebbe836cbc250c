// The toolhost panel: a webview view (own activity-bar container) showing the card store, newest
// first. The host renders card HTML (cardHtml.ts) and posts it (cardMessages.ts) — a running
// terminal card again on every piece of live output, a program's nested call into its parent's
// card; media/panel.js places it and turns clicks and keys into action
// messages (Stop, open a spilled output file, Revert, open a web card's source in the browser, …).
// Above the cards: the forms of the open questions (`toolhost/askUser`), the summaries of the open
// reviews (review mode) with their buttons, and the session's todo list (the latest todo card's,
// pinned); over them the session picker (this workspace, or a worktree session's cards:
// worktreePicker.ts, worktreeSessions.ts). At the top: the chat with an agent (chat.ts,
// chatView.ts) — its transcript, streamed as the run goes (drawn again at most every 50 ms), and
// the chat box with its agent choice (agentPicker.ts).

import * as crypto from 'node:crypto';
import * as vscode from 'vscode';
import { makeNonce, PANEL_STYLESHEETS, renderPage } from './cardHtml';
import { resetMessage, storeMessage } from './cardMessages';
import type { CardStore } from './cardStore';
import { asAgentMode, chatSectionHtml, exchangeHtml, chatLogHtml } from './chat';
import { agentOptionsHtml, agentSelectTitle } from './agentPicker';
import { agentSettingsHtml } from './agentSettings';
import type { ChatController } from './chatView';
import { pinnedTodosHtml } from './dataCards';
import type { Card } from './cards';
import { isObject } from './guards';
import { openableUrl } from './webCard';

export const VIEW_ID = 'toolhost.cards';

export interface PanelActions {
  openDiff(card: Card): Promise<unknown>;
  goTo(card: Card, index: number): Promise<unknown>;
  copy(card: Card): Promise<unknown>;
  /** Stop: `toolhost/cancelCall` for the card's call; whether a running call was cancelled. */
  stop(card: Card): Promise<boolean>;
  /** Opens the terminal card's spilled output file `index` (`terminal.spillPaths`) in an editor. */
  openSpill(card: Card, index: number): Promise<unknown>;
  /** Revert (`since`: Revert since here) of the card's call: the `toolhost.ui.revert*` commands. */
  revert(card: Card, since: boolean): Promise<unknown>;
  /** A review summary's button: `op` (open, acceptAll, rejectAll, submit) on review `key`. */
  review(key: string, op: string): Promise<unknown>;
  /** A question form's answer (`op`: submit, dismiss, approve, keep) for question `key`. */
  ask(key: string, action: { op: string; state?: unknown; feedback?: unknown }): Promise<unknown>;
  /** The session picker (`op`: select `sessionId`, or '' for this workspace; refresh, as it is
   * about to open) and its Apply and Discard buttons. */
  worktree(op: string, sessionId: string | undefined): Promise<unknown>;
}

/** One open question's form (ask.ts `askFormHtml`) under its key. */
export interface QuestionForm {
  key: string;
  html: string;
}

export class CardsViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private reviewsHtml = '';
  private questionForms: QuestionForm[] = [];
  private todosHtml = '';
  private sessionsHtml = '';
  /** A question to focus once the page listens (asked before the view was resolved). */
  private focusAfterReady: string | undefined;
  /** Focus the chat box once the page listens. */
  private chatFocusAfterReady = false;
  /** Chat exchanges changed since the page last got them (undefined in the set: all of them). */
  private readonly chatDirty = new Set<string | undefined>();
  private chatTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly resolvedEmitter = new vscode.EventEmitter<void>();
  readonly onDidResolve = this.resolvedEmitter.event;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly store: CardStore,
    private readonly actions: PanelActions,
    private readonly chat: ChatController,
  ) {
    this.disposables.push(
      this.resolvedEmitter,
      chat.onDidChange((change) => this.chatChanged(change?.key)),
      { dispose: () => clearTimeout(this.chatTimer) },
      store.onChange((event) => {
        if (event.type === 'reset') {
          void this.postReset();
        } else {
          void this.post(storeMessage(store, event));
        }
        this.updateTodos();
      }),
    );
    this.todosHtml = pinnedTodosHtml(store.visible());
  }

  /** The pinned todo list follows the cards on show (live or a replay). */
  private updateTodos(): void {
    const html = pinnedTodosHtml(this.store.visible());
    if (html !== this.todosHtml) {
      this.todosHtml = html;
      void this.post({ type: 'todos', html });
    }
  }

  get isResolved(): boolean {
    return this.view !== undefined;
  }

  /** Shows the panel (without taking focus when it is already resolved). */
  async reveal(): Promise<void> {
    if (this.view) {
      this.view.show(true);
      return;
    }
    await vscode.commands.executeCommand(`${VIEW_ID}.focus`);
  }

  /** Shows the summaries of the open reviews (empty: none). */
  setReviews(html: string): void {
    if (html !== this.reviewsHtml) {
      this.reviewsHtml = html;
      void this.post({ type: 'reviews', html });
    }
  }

  /** Shows the session picker (worktreePicker.ts) as it is now. */
  setSessions(html: string): void {
    if (html !== this.sessionsHtml) {
      this.sessionsHtml = html;
      void this.post({ type: 'sessions', html });
    }
  }

  /** Shows the forms of the open questions, oldest first. The page keeps a form that is still
   * open as it is (what the person has typed or checked), adds the new ones and drops the rest. */
  setQuestions(forms: QuestionForm[]): void {
    this.questionForms = forms;
    void this.post({ type: 'questions', forms });
  }

  /** Shows the panel with the keyboard focus in question `key`'s form (the first one when none is
   * named). */
  async focusQuestion(key?: string): Promise<void> {
    const target = key ?? this.questionForms[0]?.key;
    if (this.view) {
      this.view.show(false);
      await this.post({ type: 'askFocus', key: target });
    } else {
      this.focusAfterReady = target ?? '';
      await vscode.commands.executeCommand(`${VIEW_ID}.focus`);
    }
  }

  /** Shows the panel with the keyboard focus in the chat box. */
  async focusChat(): Promise<void> {
    if (this.view) {
      this.view.show(false);
      await this.post({ type: 'chatFocus' });
    } else {
      this.chatFocusAfterReady = true;
      await vscode.commands.executeCommand(`${VIEW_ID}.focus`);
    }
  }

  /** A streamed update draws its exchange again, at most every 50 ms (text comes token by token). */
  private chatChanged(key: string | undefined): void {
    this.chatDirty.add(key);
    if (this.chatTimer === undefined) {
      this.chatTimer = setTimeout(() => {
        this.chatTimer = undefined;
        void this.flushChat();
      }, 50);
    }
  }

  private chatStateMessage(): { running: boolean; stopping: boolean } {
    const running = this.chat.state.running;
    return { running: running !== undefined, stopping: running?.state === 'stopping' };
  }

  private async flushChat(): Promise<void> {
    const keys = [...this.chatDirty];
    this.chatDirty.clear();
    if (keys.includes(undefined)) {
      await this.post({ type: 'chat', html: chatLogHtml(this.chat.state), ...this.chatStateMessage() });
      await this.post(this.chatAgentsMessage());
      return;
    }
    for (const key of keys) {
      const x = key === undefined ? undefined : this.chat.state.get(key);
      if (x) {
        await this.post({ type: 'chatX', key: x.key, html: exchangeHtml(x), ...this.chatStateMessage() });
      }
    }
  }

  /** The agent select: its options, locked to the chat's agent once the chat started; beside it the
   * hosted agent's settings. */
  private chatAgentsMessage(): { type: 'chatAgents'; html: string; locked: boolean; title: string; settings: string } {
    const agent = this.chat.state.agent;
    return {
      type: 'chatAgents',
      html: agentOptionsHtml(this.chat.picker, agent),
      locked: agent !== undefined,
      title: agentSelectTitle(agent),
      settings: agentSettingsHtml(this.chat.settings),
    };
  }

  private async postReset(): Promise<void> {
    await this.post(resetMessage(this.store));
    await this.post({ type: 'sessions', html: this.sessionsHtml });
    await this.post({ type: 'reviews', html: this.reviewsHtml });
    await this.post({ type: 'questions', forms: this.questionForms });
    await this.post({ type: 'todos', html: this.todosHtml });
    await this.post({ type: 'chat', html: chatLogHtml(this.chat.state), ...this.chatStateMessage() });
    await this.post(this.chatAgentsMessage());
  }

  private async post(message: unknown): Promise<void> {
    if (this.view) {
      await this.view.webview.postMessage(message);
    }
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const media = vscode.Uri.joinPath(this.extensionUri, 'media');
    view.webview.options = { enableScripts: true, localResourceRoots: [media] };
    const reset = resetMessage(this.store);
    view.webview.html = renderPage({
      cspSource: view.webview.cspSource,
      nonce: makeNonce((n) => crypto.randomBytes(n)),
      scriptUri: view.webview.asWebviewUri(vscode.Uri.joinPath(media, 'panel.js')).toString(),
      styleUris: PANEL_STYLESHEETS.map((name) => view.webview.asWebviewUri(vscode.Uri.joinPath(media, 'styles', `${name}.css`)).toString()),
      cardsHtml: reset.html,
      bannerHtml: reset.banner,
      sessionsHtml: this.sessionsHtml,
      reviewsHtml: this.reviewsHtml,
      questionsHtml: this.questionForms.map((f) => f.html).join(''),
      todosHtml: this.todosHtml,
      chatHtml: chatSectionHtml(this.chat.state, this.chat.mode, this.chat.picker, this.chat.settings),
    });
    this.disposables.push(
      view.webview.onDidReceiveMessage((message: unknown) => this.onMessage(message)),
      view.onDidDispose(() => {
        if (this.view === view) {
          this.view = undefined;
        }
      }),
    );
    this.resolvedEmitter.fire();
  }

  private async onMessage(message: unknown): Promise<void> {
    if (!isObject(message) || typeof message.action !== 'string') {
      return;
    }
    if (message.action === 'ready') {
      // Anything posted before the script listened is lost: send the whole state again.
      await this.postReset();
      if (this.focusAfterReady !== undefined) {
        const key = this.focusAfterReady;
        this.focusAfterReady = undefined;
        await this.post({ type: 'askFocus', key: key === '' ? undefined : key });
      }
      if (this.chatFocusAfterReady) {
        this.chatFocusAfterReady = false;
        await this.post({ type: 'chatFocus' });
      }
      return;
    }
    if (message.action === 'chat') {
      this.onChatMessage(message);
      return;
    }
    if (message.action === 'ask') {
      if (typeof message.ask === 'string' && typeof message.op === 'string') {
        await this.actions.ask(message.ask, { op: message.op, state: message.state, feedback: message.feedback });
      }
      return;
    }
    if (message.action === 'worktree') {
      if (typeof message.op === 'string') {
        await this.actions.worktree(message.op, typeof message.sessionId === 'string' ? message.sessionId : undefined);
      }
      return;
    }
    if (message.action === 'live') {
      this.store.showLive();
      return;
    }
    if (message.action === 'review') {
      if (typeof message.review === 'string' && typeof message.op === 'string') {
        await this.actions.review(message.review, message.op);
      }
      return;
    }
    const card = typeof message.callId === 'string' ? this.store.find(message.callId) : undefined;
    if (!card) {
      return;
    }
    const index = typeof message.loc === 'number' ? message.loc : Number(message.loc ?? 0) || 0;
    const spill = typeof message.spill === 'number' ? message.spill : Number(message.spill ?? 0) || 0;
    switch (message.action) {
      case 'openDiff':
        await this.actions.openDiff(card);
        break;
      case 'goto':
        await this.actions.goTo(card, index);
        break;
      case 'copy':
        await this.actions.copy(card);
        break;
      case 'stop':
        if (!(await this.actions.stop(card))) {
          // Nothing was running under that id (a replayed card, or the call just ended): the page
          // gives the button back.
          await this.post({ type: 'stopRefused', callId: card.callId });
        }
        break;
      case 'openSpill':
        await this.actions.openSpill(card, spill);
        break;
      case 'openUrl': {
        // A web card's source or page: checked again here (http/https, and one the card shows),
        // since the page's message is not trusted to name what the browser opens.
        const url = openableUrl(card, message.url);
        if (url !== undefined) {
          await vscode.env.openExternal(vscode.Uri.parse(url, true));
        }
        break;
      }
      case 'revert':
      case 'revertSince':
        await this.actions.revert(card, message.action === 'revertSince');
        break;
      default:
        break;
    }
  }

  /** The chat box: send, stop, new chat, a mode or an agent picked, a hosted agent's setting. */
  private onChatMessage(message: Record<string, unknown>): void {
    switch (message.op) {
      case 'send':
        if (typeof message.prompt === 'string') {
          this.chat.mode = asAgentMode(message.mode);
          if (this.chat.state.agent === undefined && typeof message.agent === 'string') {
            this.chat.pickAgent(message.agent);
          }
          void this.chat.prompt(message.prompt, this.chat.mode);
        }
        break;
      case 'stop':
        this.chat.stop();
        break;
      case 'new':
        this.chat.newChat();
        break;
      case 'mode':
        this.chat.mode = asAgentMode(message.mode);
        break;
      case 'agent':
        this.chat.pickAgent(message.agent);
        break;
      case 'option':
        void this.chat.setOption(message.option, message.value);
        break;
      default:
        break;
    }
  }

  dispose(): void {
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}
