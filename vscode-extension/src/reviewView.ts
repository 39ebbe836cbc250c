// Review mode in VS Code: the server's `toolhost/review` request opens the native diff editor of
// the file's `before` and `after` (read-only virtual documents), with Accept / Reject CodeLens above
// each hunk on the right-hand side, editor-title actions, keyboard commands while a review diff has
// focus (context key `toolhost.reviewing`), and a summary in the panel. Once every hunk is decided
// the person is asked for an optional comment and the answer `{accepted, comment}` is sent. The
// server may withdraw the question (`$/cancelRequest`: the call was cancelled or timed out): the
// review then closes without an answer. Open reviews wait in the queue of pending requests they
// share with questions (pending.ts); the UI follows it, so a review that leaves the queue (answered,
// withdrawn, replaced, or the server gone) closes its diff. The decisions themselves live in
// review.ts (pure).

import * as vscode from 'vscode';
import { ResponseError } from 'vscode-languageclient/node';
import {
  hunkAt,
  hunkName,
  hunkSpans,
  lensTitles,
  ownLines,
  parseReviewParams,
  REVIEW_KIND,
  ReviewSession,
  reviewTitle,
  stepHunk,
  submitPrompt,
  type Decision,
  type HunkSpan,
  type ReviewParams,
  type ReviewResult,
  type Side,
} from './review';
import type { PendingQueue } from './pending';

export const REVIEW_SCHEME = 'toolhost-review';
/** The language of the review documents, for which package.json turns `diffEditor.codeLens` on
 * (see {@link ReviewController.openDiff}). */
export const REVIEW_LANGUAGE = 'toolhost-review';
/** True while the focused editor is a side of an open review's diff (the keybindings' `when`). */
export const REVIEWING_CONTEXT = 'toolhost.reviewing';
/** True while any review is open (the palette shows the review commands). */
export const REVIEW_PENDING_CONTEXT = 'toolhost.reviewPending';

export const REVIEW_COMMANDS = {
  acceptHunk: 'toolhost.review.acceptHunk',
  rejectHunk: 'toolhost.review.rejectHunk',
  nextHunk: 'toolhost.review.nextHunk',
  previousHunk: 'toolhost.review.previousHunk',
  acceptAll: 'toolhost.review.acceptAll',
  rejectAll: 'toolhost.review.rejectAll',
  submit: 'toolhost.review.submit',
  open: 'toolhost.review.open',
} as const;

/** Answers a review instead of the person (the conformance runner's scripted answers); returning
 * undefined leaves the question to the UI. */
export type ReviewResponder = (params: ReviewParams, token: vscode.CancellationToken) => Promise<ReviewResult> | undefined;

/** What the tests read of an open review. */
export interface ReviewSnapshot {
  key: string;
  callId: string;
  title: string;
  decisions: (Decision | undefined)[];
  before: string;
  after: string;
}

interface OpenReview {
  session: ReviewSession;
  before: vscode.Uri;
  after: vscode.Uri;
  spans: Record<Side, HunkSpan[]>;
  /** The comment prompt on show, hidden when the review closes under it. */
  prompt: vscode.InputBox | undefined;
}

export class ReviewController implements vscode.Disposable {
  private readonly reviews = new Map<string, OpenReview>();
  /** Document texts by serial (the `n` of a review URI): a fresh URI per review, so a document VS
   * Code still holds from an earlier review with the same request id is never shown again. */
  private readonly texts = new Map<string, Uint8Array>();
  private serial = 0;
  private responder: ReviewResponder | undefined;
  private readonly lensesChanged = new vscode.EventEmitter<void>();
  private readonly fileChanges = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  private readonly changed = new vscode.EventEmitter<void>();
  private readonly rejectedStyle = vscode.window.createTextEditorDecorationType({
    textDecoration: 'line-through',
    opacity: '0.55',
    isWholeLine: true,
  });
  private readonly disposables: vscode.Disposable[] = [];

  /** Fires on every change of the open reviews (opened, decided, closed). */
  readonly onDidChange = this.changed.event;

  constructor(
    private readonly pending: PendingQueue,
    private readonly output: vscode.OutputChannel,
  ) {
    const fsProvider: vscode.FileSystemProvider = {
      onDidChangeFile: this.fileChanges.event,
      watch: () => new vscode.Disposable(() => undefined),
      stat: (uri) => ({ type: vscode.FileType.File, ctime: 0, mtime: 0, size: this.bytes(uri).byteLength, permissions: vscode.FilePermission.Readonly }),
      readFile: (uri) => this.bytes(uri),
      readDirectory: () => [],
      createDirectory: (uri) => {
        throw vscode.FileSystemError.NoPermissions(uri);
      },
      writeFile: (uri) => {
        throw vscode.FileSystemError.NoPermissions(uri);
      },
      delete: (uri) => {
        throw vscode.FileSystemError.NoPermissions(uri);
      },
      rename: (uri) => {
        throw vscode.FileSystemError.NoPermissions(uri);
      },
    };
    this.disposables.push(
      this.lensesChanged,
      this.fileChanges,
      this.changed,
      this.rejectedStyle,
      vscode.workspace.registerFileSystemProvider(REVIEW_SCHEME, fsProvider, { isCaseSensitive: true, isReadonly: true }),
      vscode.languages.registerCodeLensProvider(
        { scheme: REVIEW_SCHEME },
        { onDidChangeCodeLenses: this.lensesChanged.event, provideCodeLenses: (doc) => this.lenses(doc) },
      ),
      vscode.window.onDidChangeActiveTextEditor(() => this.updateContext()),
      vscode.window.onDidChangeVisibleTextEditors(() => this.decorate()),
      pending.onChange((kind) => {
        if (kind === REVIEW_KIND) {
          this.sync();
        }
      }),
      vscode.commands.registerCommand(REVIEW_COMMANDS.acceptHunk, (key?: unknown, index?: unknown) => this.decideHunk('accepted', key, index)),
      vscode.commands.registerCommand(REVIEW_COMMANDS.rejectHunk, (key?: unknown, index?: unknown) => this.decideHunk('rejected', key, index)),
      vscode.commands.registerCommand(REVIEW_COMMANDS.nextHunk, () => this.step(1)),
      vscode.commands.registerCommand(REVIEW_COMMANDS.previousHunk, () => this.step(-1)),
      vscode.commands.registerCommand(REVIEW_COMMANDS.acceptAll, (key?: unknown) => this.decideAll('accepted', key)),
      vscode.commands.registerCommand(REVIEW_COMMANDS.rejectAll, (key?: unknown) => this.decideAll('rejected', key)),
      vscode.commands.registerCommand(REVIEW_COMMANDS.submit, (key?: unknown) => this.submitCommand(key)),
      vscode.commands.registerCommand(REVIEW_COMMANDS.open, async (key?: unknown) => {
        const review = await this.target(key);
        if (review) {
          await this.openDiff(review);
        }
      }),
    );
    this.updateContext();
  }

  /** Scripted answers instead of the UI (undefined: back to the UI). */
  setResponder(responder: ReviewResponder | undefined): void {
    this.responder = responder;
  }

  /** The open reviews, oldest first. */
  open(): ReviewSession[] {
    return this.pending.all(ReviewSession);
  }

  snapshots(): ReviewSnapshot[] {
    return this.open().map((s) => {
      const review = this.reviews.get(s.key);
      return {
        key: s.key,
        callId: s.params.callId,
        title: s.params.title,
        decisions: s.params.hunks.map((_, i) => s.decision(i)),
        before: review?.before.toString() ?? '',
        after: review?.after.toString() ?? '',
      };
    });
  }

  /** One `toolhost/review` request: settles with the answer once the person submits; never
   * settles when the server withdraws it (no answer is sent). */
  handle(raw: unknown, token: vscode.CancellationToken): Promise<ReviewResult> {
    let params: ReviewParams;
    try {
      params = parseReviewParams(raw);
    } catch (err) {
      // The server's fallback applies: better than a review nobody can read.
      return Promise.reject(new ResponseError(-32602, `toolhost/review: ${err instanceof Error ? err.message : String(err)}`));
    }
    const scripted = this.responder?.(params, token);
    if (scripted) {
      return scripted;
    }
    return new Promise<ReviewResult>((resolve) => {
      const session = new ReviewSession(params, resolve);
      // Replaces (withdraws) an open review under the same request id; sync() closes its UI.
      this.pending.add(session);
      const serial = String(++this.serial);
      const uri = (side: Side) =>
        vscode.Uri.from({
          scheme: REVIEW_SCHEME,
          path: params.path.startsWith('/') ? params.path : `/${params.path}`,
          query: `review=${encodeURIComponent(session.key)}&side=${side}&n=${serial}`,
        });
      const review: OpenReview = {
        session,
        before: uri('before'),
        after: uri('after'),
        spans: { before: hunkSpans(params.hunks, 'before', params.before), after: hunkSpans(params.hunks, 'after', params.after) },
        prompt: undefined,
      };
      this.texts.set(`${serial}/before`, new TextEncoder().encode(params.before));
      this.texts.set(`${serial}/after`, new TextEncoder().encode(params.after));
      this.reviews.set(session.key, review);
      this.output.appendLine(`[toolhost] review asked: ${params.title} (${params.callId}, ${params.hunks.length} hunks)`);
      // Only this review: a later one may use the same id (a restarted server).
      const waiting = this.pending.withdrawOnCancel(session, token, () => {
        void vscode.window.showInformationMessage(`toolhost: the review of "${params.title}" was withdrawn (the call was cancelled or timed out)`);
      });
      if (!waiting) {
        return;
      }
      this.sync();
      void this.openDiff(review).catch((err: unknown) => {
        this.output.appendLine(`[toolhost] cannot open the review of ${params.title}: ${err instanceof Error ? err.message : String(err)}`);
      });
    });
  }

  private bytes(uri: vscode.Uri): Uint8Array {
    const query = new URLSearchParams(uri.query);
    return (
      this.texts.get(`${query.get('n') ?? ''}/${query.get('side') ?? ''}`) ??
      new TextEncoder().encode('⋯ this review is closed (submitted, or withdrawn by the server)')
    );
  }

  /** The open review and side a review document belongs to. */
  private reviewOf(uri: vscode.Uri): { review: OpenReview; side: Side } | undefined {
    if (uri.scheme !== REVIEW_SCHEME) {
      return undefined;
    }
    const query = new URLSearchParams(uri.query);
    const review = this.reviews.get(query.get('review') ?? '');
    if (!review || (review.before.toString() !== uri.toString() && review.after.toString() !== uri.toString())) {
      return undefined;
    }
    return { review, side: query.get('side') === 'before' ? 'before' : 'after' };
  }

  private activeReview(): { review: OpenReview; side: Side; editor: vscode.TextEditor } | undefined {
    const editor = vscode.window.activeTextEditor;
    const found = editor ? this.reviewOf(editor.document.uri) : undefined;
    return found && editor ? { ...found, editor } : undefined;
  }

  private updateContext(): void {
    void vscode.commands.executeCommand('setContext', REVIEWING_CONTEXT, this.activeReview() !== undefined);
    void vscode.commands.executeCommand('setContext', REVIEW_PENDING_CONTEXT, this.pending.count(ReviewSession) > 0);
  }

  /** The review a command is about: the one named (CodeLens, panel), else the focused one, else
   * the only one open, else the person picks. */
  private async target(key: unknown): Promise<OpenReview | undefined> {
    if (typeof key === 'string' || typeof key === 'number') {
      return this.reviews.get(String(key));
    }
    const active = this.activeReview();
    if (active) {
      return active.review;
    }
    const all = [...this.reviews.values()];
    if (all.length <= 1) {
      if (all.length === 0) {
        vscode.window.setStatusBarMessage('toolhost: no review is open', 4000);
      }
      return all[0];
    }
    const pick = await vscode.window.showQuickPick(
      all.map((r) => ({ label: r.session.params.title, description: r.session.params.caller, detail: r.session.params.path, review: r })),
      { title: 'toolhost: which review?' },
    );
    return pick?.review;
  }

  private lenses(doc: vscode.TextDocument): vscode.CodeLens[] {
    const found = this.reviewOf(doc.uri);
    if (!found || found.side !== 'after' || !found.review.session.isOpen) {
      return [];
    }
    const { session, spans } = found.review;
    return spans.after.flatMap((span, i) => {
      const range = new vscode.Range(span.first, 0, span.first, 0);
      const titles = lensTitles(session, i);
      return [
        new vscode.CodeLens(range, { title: titles.state, command: REVIEW_COMMANDS.open, arguments: [session.key], tooltip: hunkName(session, i) }),
        new vscode.CodeLens(range, { title: titles.accept, command: REVIEW_COMMANDS.acceptHunk, arguments: [session.key, i], tooltip: `Accept ${hunkName(session, i)}` }),
        new vscode.CodeLens(range, { title: titles.reject, command: REVIEW_COMMANDS.rejectHunk, arguments: [session.key, i], tooltip: `Reject ${hunkName(session, i)}` }),
      ];
    });
  }

  /** Strikes through the new lines of rejected hunks in the right-hand documents on show. */
  private decorate(): void {
    for (const editor of vscode.window.visibleTextEditors) {
      const found = this.reviewOf(editor.document.uri);
      if (!found || found.side !== 'after') {
        continue;
      }
      const { session } = found.review;
      const ranges = session.params.hunks.flatMap((hunk, i) =>
        session.decision(i) === 'rejected' ? ownLines(hunk, 'after').map((line) => new vscode.Range(line, 0, line, 0)) : [],
      );
      editor.setDecorations(this.rejectedStyle, ranges);
    }
  }

  /** Opens (or shows again) the diff of a review, the cursor on its first undecided hunk. */
  async openDiff(review: OpenReview): Promise<void> {
    const { session } = review;
    const first = session.nextUndecided(-1) ?? 0;
    const line = review.spans.after[first]?.first ?? 0;
    // A diff editor shows CodeLens only when `diffEditor.codeLens` is on for the language of its
    // right-hand document. It is off by default, and turning it on for every diff would change
    // all the others (git, compare), so package.json turns it on for the language
    // `toolhost-review` only, and both documents get that language (plain text: a diff editor reads
    // its options again when the language changes, so it cannot be given back afterwards). Someone
    // who turned `diffEditor.codeLens` on for the file's language keeps its syntax colours.
    try {
      const after = await vscode.workspace.openTextDocument(review.after);
      const codeLensOn = vscode.workspace.getConfiguration('diffEditor', { languageId: after.languageId }).get<boolean>('codeLens', false);
      if (!codeLensOn) {
        for (const doc of [after, await vscode.workspace.openTextDocument(review.before)]) {
          if (doc.languageId !== REVIEW_LANGUAGE) {
            await vscode.languages.setTextDocumentLanguage(doc, REVIEW_LANGUAGE);
          }
        }
      }
    } catch (err) {
      this.output.appendLine(`[toolhost] review: cannot set the documents' language: ${err instanceof Error ? err.message : String(err)}`);
    }
    await vscode.commands.executeCommand('vscode.diff', review.before, review.after, reviewTitle(session.params), {
      preview: false,
      selection: new vscode.Range(line, 0, line, 0),
    } satisfies vscode.TextDocumentShowOptions);
    this.updateContext();
    this.decorate();
  }

  /** Moves the cursor of `editor` (a side of `review`) to hunk `index`. */
  private reveal(review: OpenReview, side: Side, editor: vscode.TextEditor, index: number): void {
    const line = review.spans[side][index]?.first;
    if (line === undefined) {
      return;
    }
    const pos = new vscode.Position(line, 0);
    editor.selection = new vscode.Selection(pos, pos);
    editor.revealRange(new vscode.Range(pos, pos), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  }

  private async decideHunk(decision: Decision, key: unknown, index: unknown): Promise<void> {
    const review = await this.target(key);
    if (!review) {
      return;
    }
    const active = this.activeReview();
    const here = active?.review === review ? active : undefined;
    let i: number | undefined = typeof index === 'number' ? index : undefined;
    if (i === undefined) {
      i = here ? hunkAt(review.spans[here.side], here.editor.selection.active.line) : review.session.nextUndecided(-1);
    }
    if (i === undefined || !review.session.decide(i, decision)) {
      return;
    }
    this.pending.changed(REVIEW_KIND);
    if (here) {
      // On to the next hunk that still needs a decision, so a review is a run of key presses.
      const next = review.session.nextUndecided(i);
      if (next !== undefined) {
        this.reveal(review, here.side, here.editor, next);
      }
    }
    this.finishIfDecided(review);
  }

  private async decideAll(decision: Decision, key: unknown): Promise<void> {
    const review = await this.target(key);
    if (review?.session.decideAll(decision)) {
      this.pending.changed(REVIEW_KIND);
      this.finishIfDecided(review);
    }
  }

  private step(direction: 1 | -1): void {
    const active = this.activeReview();
    if (!active) {
      vscode.window.setStatusBarMessage('toolhost: focus a review diff first', 4000);
      return;
    }
    const index = stepHunk(active.review.spans[active.side], active.editor.selection.active.line, direction);
    if (index !== undefined) {
      this.reveal(active.review, active.side, active.editor, index);
    }
  }

  private async submitCommand(key: unknown): Promise<void> {
    const review = await this.target(key);
    if (review) {
      await this.promptAndSubmit(review);
    }
  }

  /** Every hunk decided: ask for the comment and submit (Escape keeps the review open). */
  private finishIfDecided(review: OpenReview): void {
    if (review.session.allDecided && review.session.isOpen && !review.prompt) {
      void this.promptAndSubmit(review);
    }
  }

  /** Asks for the optional comment, then answers the server. The box is hidden (and nothing sent)
   * when the review is withdrawn while it is on show. */
  private async promptAndSubmit(review: OpenReview): Promise<void> {
    if (!review.session.isOpen) {
      return;
    }
    if (review.prompt) {
      review.prompt.show();
      return;
    }
    const box = vscode.window.createInputBox();
    review.prompt = box;
    box.title = `toolhost: submit the review of ${review.session.params.title}`;
    box.prompt = submitPrompt(review.session);
    box.placeholder = 'Comment for the agent (optional), e.g. why a hunk was rejected';
    box.ignoreFocusOut = true;
    const comment = await new Promise<string | undefined>((resolve) => {
      let value: string | undefined;
      box.onDidAccept(() => {
        value = box.value;
        box.hide();
      });
      box.onDidHide(() => resolve(value));
      box.show();
    });
    box.dispose();
    review.prompt = undefined;
    if (!review.session.isOpen) {
      return;
    }
    if (comment === undefined) {
      vscode.window.setStatusBarMessage('toolhost: review not sent yet; Ctrl+Enter (or Submit) sends it', 6000);
      return;
    }
    this.submit(review, comment);
  }

  /** Answers a review with its decisions and `comment`; sync() then closes it. */
  private submit(review: OpenReview, comment?: string): void {
    const { session } = review;
    const result = session.submit(comment);
    this.pending.settled(session);
    if (result) {
      const rejected = session.size - result.accepted.length;
      this.output.appendLine(`[toolhost] review answered: ${session.params.title}: ${JSON.stringify(result)}`);
      vscode.window.setStatusBarMessage(`toolhost: review sent: ${result.accepted.length} accepted, ${rejected} rejected`, 6000);
    }
  }

  /** Makes the UI follow the queue: the reviews that left it (answered, withdrawn by the server,
   * replaced, or all of them when the server went away) close; the rest show their decisions. */
  private sync(): void {
    for (const review of [...this.reviews.values()]) {
      if (!review.session.isOpen) {
        if (review.session.status === 'withdrawn') {
          this.output.appendLine(`[toolhost] review withdrawn (no answer sent): ${review.session.params.title} (${review.session.params.callId})`);
        }
        this.closeUi(review);
      }
    }
    this.lensesChanged.fire();
    this.decorate();
    this.updateContext();
    this.changed.fire();
  }

  /** Closes a review's diff tab and its comment prompt, and forgets its documents. */
  private closeUi(review: OpenReview): void {
    if (this.reviews.get(review.session.key) === review) {
      this.reviews.delete(review.session.key);
    }
    review.prompt?.hide();
    const mine = (uri: vscode.Uri) => uri.toString() === review.after.toString() || uri.toString() === review.before.toString();
    const tabs = vscode.window.tabGroups.all
      .flatMap((g) => g.tabs)
      .filter((t) => (t.input instanceof vscode.TabInputTextDiff && mine(t.input.modified)) || (t.input instanceof vscode.TabInputText && mine(t.input.uri)));
    if (tabs.length > 0) {
      void vscode.window.tabGroups.close(tabs, true).then(undefined, () => undefined);
    }
    const serial = new URLSearchParams(review.after.query).get('n') ?? '';
    this.texts.delete(`${serial}/before`);
    this.texts.delete(`${serial}/after`);
  }

  dispose(): void {
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}
