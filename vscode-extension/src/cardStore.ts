// The panel's model: live cards (upserted by callId as `toolhost/card` notifications arrive,
// pending → completed/failed), the live output of running terminal and MCP calls (appended from
// `toolhost/callOutput` until the final card replaces it) and, optionally, a replayed session
// shown instead of them. Every card is kept flat, a program's nested calls (`parentCallId`) too:
// find, Revert and Stop reach a child card by its own call id; `tree()` is what the panel draws.
// Pure: no `vscode` import.

import type { Card } from './cards';
import { cardTree, type CardNode } from './cardTree';
import { appendLive, LIVE_OUTPUT_MAX, takesLiveOutput, withLiveOutput, type LiveOutput } from './terminal';

export type StoreEvent =
  | { type: 'upsert'; card: Card }
  | { type: 'remove'; callIds: string[] }
  | { type: 'reset' };

export interface ReplayState {
  sessionId: string;
  cards: Card[];
  /** The worktree session's name when the session is one (its cards follow its log). */
  worktree?: string;
}

export class CardStore {
  /** Live cards in arrival order (oldest first). */
  private live: Card[] = [];
  private replayState: ReplayState | undefined;
  /** The live output of running calls, by callId (only while their card is pending). */
  private readonly outputs = new Map<string, LiveOutput>();
  private readonly listeners = new Set<(event: StoreEvent) => void>();

  constructor(
    private maxCards = 500,
    private readonly liveOutputMax = LIVE_OUTPUT_MAX,
  ) {}

  setMaxCards(max: number): void {
    this.maxCards = Math.max(1, Math.floor(max));
    this.trim();
  }

  onChange(listener: (event: StoreEvent) => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  private emit(event: StoreEvent): void {
    for (const listener of this.listeners) {
      listener(event);
    }
  }

  /** Keeps the newest `maxCards` top-level cards: the calls made under a card (a program's nested
   * calls, up to thousands) go with it rather than counting on their own, so a long program does
   * not push out the cards before it, and a parent never loses its first children. */
  private trim(): void {
    if (this.live.length <= this.maxCards) {
      return;
    }
    const roots = cardTree(this.live);
    if (roots.length <= this.maxCards) {
      return;
    }
    const gone = new Set<string>();
    const stack = roots.slice(0, roots.length - this.maxCards);
    for (let node = stack.pop(); node; node = stack.pop()) {
      gone.add(node.card.callId);
      stack.push(...node.children);
    }
    const dropped = this.live.filter((c) => gone.has(c.callId));
    this.live = this.live.filter((c) => !gone.has(c.callId));
    for (const card of dropped) {
      this.outputs.delete(card.callId);
    }
    if (!this.replayState) {
      this.emit({ type: 'remove', callIds: dropped.map((c) => c.callId) });
    }
  }

  /** A live card: replaces the card with the same callId (a pending card by its final one; a
   * final card is never replaced by a late pending one), else appends. */
  upsert(card: Card): void {
    const index = this.live.findIndex((c) => c.callId === card.callId);
    if (index >= 0) {
      const existing = this.live[index];
      if (existing && existing.status !== 'pending' && card.status === 'pending') {
        return;
      }
    }
    // The final card's output is the server's, and replaces what arrived live; a pending card sent
    // again keeps what has arrived so far.
    const live = this.outputs.get(card.callId);
    if (!takesLiveOutput(card)) {
      this.outputs.delete(card.callId);
    } else if (live) {
      card = withLiveOutput(card, live);
    }
    if (index >= 0) {
      this.live[index] = card;
    } else {
      this.live.push(card);
    }
    if (!this.replayState) {
      this.emit({ type: 'upsert', card });
    }
    this.trim();
  }

  /** Appends `text` (a `toolhost/callOutput`) to the output of the running call `callId` and
   * draws its card again. Ignored (false) unless that call's live card is a pending terminal or
   * MCP card: output that comes late, after the final card, must not change it. */
  appendOutput(callId: string, text: string): boolean {
    const index = this.live.findIndex((c) => c.callId === callId);
    const card = this.live[index];
    if (!card || !takesLiveOutput(card)) {
      return false;
    }
    const live = appendLive(this.outputs.get(callId), text, this.liveOutputMax);
    this.outputs.set(callId, live);
    const updated = withLiveOutput(card, live);
    this.live[index] = updated;
    if (!this.replayState) {
      this.emit({ type: 'upsert', card: updated });
    }
    return true;
  }

  /** The live output kept for a running call (tests and diagnostics). */
  liveOutput(callId: string): LiveOutput | undefined {
    const live = this.outputs.get(callId);
    return live ? { ...live } : undefined;
  }

  /** Shows a replayed session instead of the live cards (`worktree`: the name of the worktree
   * session it is). */
  showReplay(sessionId: string, cards: Card[], worktree?: string): void {
    this.replayState = worktree === undefined ? { sessionId, cards: [...cards] } : { sessionId, cards: [...cards], worktree };
    this.emit({ type: 'reset' });
  }

  /** Back to the live cards. */
  showLive(): void {
    if (this.replayState) {
      this.replayState = undefined;
      this.emit({ type: 'reset' });
    }
  }

  clear(): void {
    this.live = [];
    this.outputs.clear();
    this.replayState = undefined;
    this.emit({ type: 'reset' });
  }

  get replay(): ReplayState | undefined {
    return this.replayState;
  }

  /** The cards on show, oldest first. */
  visible(): Card[] {
    return this.replayState ? [...this.replayState.cards] : [...this.live];
  }

  /** The cards on show as trees (cardTree.ts): the top-level cards oldest first, each with the
   * calls made under it. */
  tree(): CardNode[] {
    return cardTree(this.replayState ? this.replayState.cards : this.live);
  }

  liveCards(): Card[] {
    return [...this.live];
  }

  /** A card on show or live, by callId. */
  find(callId: string): Card | undefined {
    return (
      this.replayState?.cards.find((c) => c.callId === callId) ?? this.live.find((c) => c.callId === callId)
    );
  }
}
