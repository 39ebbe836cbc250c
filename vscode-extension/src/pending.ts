// What waits for the person: the server's requests that only a person can answer — questions
// (`toolhost/askUser`, ask.ts) and reviews (`toolhost/review`, review.ts) — in one queue, in the
// order they arrived whatever their kind. The queue owns what both kinds share: one answer at most
// per request, replacing a still-open request of the same kind and key, withdrawal (the server's
// `$/cancelRequest`, which vscode-languageclient hands over as the request's cancellation token, or
// the server going away) without an answer, one count of what waits, and which request is next.
// Each kind adds its own state by extending `PendingRequest` (a review's hunk decisions). Pure: no
// `vscode` import, so `node --test` covers it.

/** The command that leads to the oldest waiting request (the status bar item's click while
 * something waits). */
export const NEXT_PENDING_COMMAND = 'toolhost.pending.next';

/** A JSON-RPC request id: what `$/cancelRequest` names. */
export type RequestId = number | string;

export type PendingStatus = 'open' | 'answered' | 'withdrawn';

/** One request waiting for the person, answered at most once. */
export class PendingRequest<R> {
  private statusValue: PendingStatus = 'open';

  constructor(
    /** What is asked (`question`, `review`): the queue keeps one open request per kind and key. */
    readonly kind: string,
    /** Its name within its kind (a question's call id, a review's request id). */
    readonly key: string,
    readonly requestId: RequestId,
    private readonly answer: (result: R) => void,
  ) {}

  get status(): PendingStatus {
    return this.statusValue;
  }

  get isOpen(): boolean {
    return this.statusValue === 'open';
  }

  /** Answers the server once; false when the request was already answered or withdrawn. */
  respond(result: R): boolean {
    if (!this.isOpen) {
      return false;
    }
    this.statusValue = 'answered';
    this.answer(result);
    return true;
  }

  /** Closes the request without an answer (nobody waits for one any more); false when it was not
   * open. */
  withdraw(): boolean {
    if (!this.isOpen) {
      return false;
    }
    this.statusValue = 'withdrawn';
    return true;
  }
}

/** Any pending request, whatever its answer's type (`never`: the queue never answers by itself). */
export type AnyPending = PendingRequest<never>;

/** A kind of pending request, named by its class (`AskSession`, `ReviewSession`). */
export type PendingType<T extends AnyPending> = abstract new (...args: never[]) => T;

/** The part of a cancellation token the queue listens to (`vscode.CancellationToken` fits). */
export interface Cancellation {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => void): { dispose(): unknown };
}

/** Called with the kind of request whose set changed (opened, answered, withdrawn, or changed in
 * place, e.g. a review's decisions). */
export type PendingListener = (kind: string) => void;

/** The open requests, oldest first across kinds. */
export class PendingQueue {
  private readonly entries: AnyPending[] = [];
  private readonly listeners = new Set<PendingListener>();

  onChange(listener: PendingListener): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  /** Tells the listeners that requests of `kind` changed. */
  changed(kind: string): void {
    for (const listener of this.listeners) {
      listener(kind);
    }
  }

  /** Queues a new request, last. A still-open request of the same kind and key (a call asking
   * again, a request id a restarted server used again) is withdrawn and leaves the queue first:
   * nobody can answer it any more. Returns that replaced request, if any. */
  add(entry: AnyPending): AnyPending | undefined {
    const at = this.entries.findIndex((e) => e.kind === entry.kind && e.key === entry.key);
    const replaced = at >= 0 ? this.entries.splice(at, 1)[0] : undefined;
    replaced?.withdraw();
    this.entries.push(entry);
    this.changed(entry.kind);
    return replaced;
  }

  /** Every open request, oldest first; with `type`, only that kind's. */
  all(): AnyPending[];
  all<T extends AnyPending>(type: PendingType<T>): T[];
  all<T extends AnyPending>(type?: PendingType<T>): AnyPending[] {
    return type ? this.entries.filter((e): e is T => e instanceof type) : [...this.entries];
  }

  /** The open request of `type` named `key`. */
  get<T extends AnyPending>(type: PendingType<T>, key: string): T | undefined {
    return this.all(type).find((e) => e.key === key);
  }

  /** The open request whose JSON-RPC id is `requestId` (ids are numbers or strings on the wire). */
  byRequestId(requestId: RequestId): AnyPending | undefined {
    return this.entries.find((e) => String(e.requestId) === String(requestId));
  }

  /** How many requests wait (of `type`, or of every kind: the one count the status bar shows). */
  count(type?: PendingType<AnyPending>): number {
    return type ? this.all(type).length : this.entries.length;
  }

  get size(): number {
    return this.entries.length;
  }

  /** The request to show first: the one that has waited longest (of `type`, or of any kind). When
   * it is answered or withdrawn, the next oldest takes its place. */
  next(): AnyPending | undefined;
  next<T extends AnyPending>(type: PendingType<T>): T | undefined;
  next<T extends AnyPending>(type?: PendingType<T>): AnyPending | undefined {
    return type ? this.all(type)[0] : this.entries[0];
  }

  /** Answers `entry` and takes it out of the queue; false when it was not open here. */
  respond<R>(entry: PendingRequest<R>, result: R): boolean {
    if (!this.holds(entry) || !entry.respond(result)) {
      return false;
    }
    this.remove(entry);
    return true;
  }

  /** Takes out `entry` once something else settled it (e.g. `ReviewSession.submit`). */
  settled(entry: AnyPending): void {
    if (!entry.isOpen && this.holds(entry)) {
      this.remove(entry);
    }
  }

  /** Withdraws `entry` without an answer; only that request, since a later one of the same kind
   * and key may have replaced it. False when it was no longer waiting here. */
  withdraw(entry: AnyPending): boolean {
    if (!this.holds(entry)) {
      return false;
    }
    entry.withdraw();
    this.remove(entry);
    return true;
  }

  /** `$/cancelRequest` for `requestId`: withdraws the request with that id, if one waits. */
  withdrawRequest(requestId: RequestId): AnyPending | undefined {
    const entry = this.byRequestId(requestId);
    return entry && this.withdraw(entry) ? entry : undefined;
  }

  /** Withdraws `entry` when `token` is cancelled (the server's `$/cancelRequest` for it), at once
   * if it already is; `onWithdrawn` runs after a withdrawal this caused. True when the request is
   * still waiting. */
  withdrawOnCancel(entry: AnyPending, token: Cancellation, onWithdrawn: () => void): boolean {
    const withdraw = () => {
      if (this.withdraw(entry)) {
        onWithdrawn();
      }
    };
    if (token.isCancellationRequested) {
      withdraw();
      return false;
    }
    const subscription = token.onCancellationRequested(withdraw);
    // Once settled the request needs no token any more; the listener goes with it.
    const stop = this.onChange(() => {
      if (!this.holds(entry)) {
        subscription.dispose();
        stop.dispose();
      }
    });
    return true;
  }

  /** Withdraws every request (the server went away: nobody waits for an answer); oldest first. */
  withdrawAll(): AnyPending[] {
    const all = this.entries.splice(0, this.entries.length);
    for (const entry of all) {
      entry.withdraw();
    }
    for (const kind of new Set(all.map((e) => e.kind))) {
      this.changed(kind);
    }
    return all;
  }

  private holds(entry: AnyPending): boolean {
    return this.entries.includes(entry);
  }

  private remove(entry: AnyPending): void {
    this.entries.splice(this.entries.indexOf(entry), 1);
    this.changed(entry.kind);
  }
}

/** What waits, for people: `2 questions, 1 review` (empty when nothing does). */
export function pendingSummary(queue: PendingQueue): string {
  const counts = new Map<string, number>();
  for (const entry of queue.all()) {
    counts.set(entry.kind, (counts.get(entry.kind) ?? 0) + 1);
  }
  return [...counts].map(([kind, n]) => `${n} ${kind}${n === 1 ? '' : 's'}`).join(', ');
}
