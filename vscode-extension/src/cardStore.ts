// The panel's model: live cards (upserted by callId as `toolhost/card` notifications arrive,
// pending → completed/failed) and, optionally, a replayed session shown instead of them.
// Pure: no `vscode` import.

import type { Card } from './protocol';

export type StoreEvent =
  | { type: 'upsert'; card: Card }
  | { type: 'remove'; callIds: string[] }
  | { type: 'reset' };

export interface ReplayState {
  sessionId: string;
  cards: Card[];
}

export class CardStore {
  /** Live cards in arrival order (oldest first). */
  private live: Card[] = [];
  private replayState: ReplayState | undefined;
  private readonly listeners = new Set<(event: StoreEvent) => void>();

  constructor(private maxCards = 500) {}

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

  private trim(): void {
    if (this.live.length > this.maxCards) {
      const dropped = this.live.splice(0, this.live.length - this.maxCards);
      if (!this.replayState) {
        this.emit({ type: 'remove', callIds: dropped.map((c) => c.callId) });
      }
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
      this.live[index] = card;
    } else {
      this.live.push(card);
    }
    if (!this.replayState) {
      this.emit({ type: 'upsert', card });
    }
    this.trim();
  }

  /** Shows a replayed session instead of the live cards. */
  showReplay(sessionId: string, cards: Card[]): void {
    this.replayState = { sessionId, cards: [...cards] };
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
