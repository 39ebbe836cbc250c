// What the panel posts to its page when the card store changes: the feed's HTML (top-level cards
// newest first, each with the calls made under it drawn inside) and, for one card that changed,
// its HTML and where it goes. A card made under another one names its parent and the parent's new
// "N calls" label (and, for a workflow's child, its phase), so media/panel.js puts it in the
// parent's child list — under its phase's heading — (or at the top when the page has no such parent) and updates the parent's counts without drawing the parent again — a
// program may make a thousand calls. A parent drawn again (its final card) comes with all its
// children; the page then drops any copy of them it had drawn at the top before the parent was
// known. Pure: no `vscode` import, so `node --test` covers it (and drives the page with it).

import { phaseOf } from './cardGroups';
import { renderCardNode, replayBanner } from './cardHtml';
import type { CardStore, StoreEvent } from './cardStore';
import { cardTree, childrenLabel, type CardNode } from './cardTree';
import type { Card } from './cards';
import { worktreeBanner } from './worktreePicker';

export type CardMessage =
  | {
      type: 'upsert';
      callId: string;
      html: string;
      /** The card it goes inside; absent: a top-level card. */
      parentCallId?: string;
      /** The parent's "N calls · K failed" after this change. */
      parentLabel?: string;
      /** Whether any of the parent's children failed (its count is drawn as a failure). */
      parentFailed?: boolean;
      /** The phase it is grouped under inside its parent (a workflow child's `group.phase`). */
      phase?: string;
      /** The sibling (of the same phase) it goes before, when it is not the last one: a child
       * that comes later than one its parent made after it (parallel children). */
      before?: string;
    }
  | { type: 'remove'; callIds: string[] }
  | { type: 'reset'; html: string; banner: string };

/** The feed's HTML: the top-level cards, newest first, each with its children inside. */
export function feedHtml(cards: readonly Card[]): string {
  return cardTree(cards)
    .reverse()
    .map((node) => renderCardNode(node))
    .join('');
}

/** The message that places `card` (just upserted) among `cards` (the cards on show). One walk of
 * the tree finds the card's node and the node it hangs under. */
export function upsertMessage(cards: readonly Card[], card: Card): CardMessage {
  let found: { node: CardNode; parent: CardNode | undefined } | undefined;
  const stack: { node: CardNode; parent: CardNode | undefined }[] = cardTree(cards).map((node) => ({ node, parent: undefined }));
  while (!found) {
    const at = stack.pop();
    if (!at) {
      break;
    }
    if (at.node.card.callId === card.callId) {
      found = at;
    }
    stack.push(...at.node.children.map((child) => ({ node: child, parent: at.node })));
  }
  const node = found?.node ?? { card, children: [] };
  const message: CardMessage = { type: 'upsert', callId: card.callId, html: renderCardNode(node) };
  const parent = found?.parent;
  if (parent) {
    const siblings = parent.children.map((c) => c.card);
    message.parentCallId = parent.card.callId;
    message.parentLabel = childrenLabel(siblings);
    message.parentFailed = siblings.some((c) => c.status === 'failed');
    const phase = phaseOf(card);
    if (phase !== undefined) {
      message.phase = phase;
    }
    const at = parent.children.findIndex((c) => c.card.callId === card.callId);
    const next = parent.children.slice(at + 1).find((c) => phaseOf(c.card) === phase);
    if (next) {
      message.before = next.card.callId;
    }
  }
  return message;
}

/** The page's message for a change of the store. */
export function storeMessage(store: CardStore, event: StoreEvent): CardMessage {
  if (event.type === 'upsert') {
    return upsertMessage(store.visible(), event.card);
  }
  if (event.type === 'remove') {
    return { type: 'remove', callIds: event.callIds };
  }
  return resetMessage(store);
}

/** Every card on show (live, a replay or a worktree session's) and the banner over them. */
export function resetMessage(store: CardStore): Extract<CardMessage, { type: 'reset' }> {
  const replay = store.replay;
  let banner = '';
  if (replay) {
    banner = replay.worktree !== undefined ? worktreeBanner(replay.worktree, replay.cards.length) : replayBanner(replay.sessionId, replay.cards.length);
  }
  return { type: 'reset', html: feedHtml(store.visible()), banner };
}
