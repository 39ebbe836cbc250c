// Nested calls: a card with a `parentCallId` (a `run_code` program's nested call, a subagent's
// call) is drawn inside its parent's card. The store keeps every card flat, in arrival order; this
// module turns such a list into the tree the panel draws. Cards arrive out of order — live, a
// program's nested calls come before the program's final card; in a replay, before its result —
// so the tree is rebuilt from the whole list rather than grown card by card, and a card whose
// parent is not in the list (an older session, a trimmed or filtered view) is drawn at the top.
// Pure: no `vscode` import.

import type { Card } from './cards';

export interface CardNode {
  card: Card;
  /** The calls made under this one, oldest first (the order the program made them). */
  children: CardNode[];
}

/** The call a card ran under, when it names one (a non-empty string other than its own id). */
export function parentIdOf(card: Pick<Card, 'callId' | 'parentCallId'>): string | undefined {
  const parent = card.parentCallId;
  return typeof parent === 'string' && parent !== '' && parent !== card.callId ? parent : undefined;
}

/** The parent card a card is drawn inside, among `byId`: undefined when it has none or when
 * following parents would come back to the card itself (a malformed log must not hide cards). */
function drawnParent(card: Card, byId: ReadonlyMap<string, Card>): Card | undefined {
  const parentId = parentIdOf(card);
  const parent = parentId === undefined ? undefined : byId.get(parentId);
  if (!parent) {
    return undefined;
  }
  const seen = new Set([card.callId]);
  for (let at: Card | undefined = parent; at; ) {
    if (seen.has(at.callId)) {
      return undefined;
    }
    seen.add(at.callId);
    const up = parentIdOf(at);
    at = up === undefined ? undefined : byId.get(up);
  }
  return parent;
}

/** The place a child's id gives it among its siblings: `n` of `<parent>:<kind>:<n>` (a program's
 * nested call `:code:<n>`, a workflow's child `:agent:<n>`), numbered in the order its parent made
 * them; undefined for other ids. */
export function stepOf(parentId: string, childId: string): number | undefined {
  if (!childId.startsWith(`${parentId}:`)) {
    return undefined;
  }
  const m = /^[a-z_]+:(\d+)$/.exec(childId.slice(parentId.length + 1));
  return m ? Number(m[1]) : undefined;
}

/** Siblings in the order their parent made them when their ids say it (calls started together —
 * a workflow's parallel children — may send their first cards, and be logged, in either order),
 * else in the order given. */
function byStep(parentId: string, children: CardNode[]): void {
  if (children.length > 1) {
    children.sort((a, b) => {
      const x = stepOf(parentId, a.card.callId);
      const y = stepOf(parentId, b.card.callId);
      return x === undefined || y === undefined ? 0 : x - y;
    });
  }
}

/** The cards (oldest first) as trees: the top-level cards in the order given, each with the
 * cards made under it, recursively, in the order their parent made them (see `stepOf`). */
export function cardTree(cards: readonly Card[]): CardNode[] {
  const byId = new Map(cards.map((c) => [c.callId, c]));
  const nodes = new Map(cards.map((c) => [c.callId, { card: c, children: [] as CardNode[] }]));
  const roots: CardNode[] = [];
  for (const card of cards) {
    const node = nodes.get(card.callId);
    if (!node || node.card !== card) {
      continue; // a second card of the same call: the map holds the last one
    }
    const parent = drawnParent(card, byId);
    const parentNode = parent ? nodes.get(parent.callId) : undefined;
    (parentNode ? parentNode.children : roots).push(node);
  }
  for (const node of nodes.values()) {
    byStep(node.card.callId, node.children);
  }
  return roots;
}

/** The node of `callId` in the trees of `cards`, with its children. */
export function nodeOf(cards: readonly Card[], callId: string): CardNode | undefined {
  const stack = cardTree(cards);
  for (let node = stack.pop(); node; node = stack.pop()) {
    if (node.card.callId === callId) {
      return node;
    }
    stack.push(...node.children);
  }
  return undefined;
}

/** The card `card` is drawn inside, among `cards`, or undefined (drawn at the top). */
export function parentCard(cards: readonly Card[], card: Card): Card | undefined {
  return drawnParent(card, new Map(cards.map((c) => [c.callId, c])));
}

/** What a parent's header says of its children: `3 calls`, then how many failed and how many are
 * still running, when any. */
export function childrenLabel(children: readonly Pick<Card, 'status'>[]): string {
  const failed = children.filter((c) => c.status === 'failed').length;
  const running = children.filter((c) => c.status === 'pending').length;
  let label = `${children.length} ${children.length === 1 ? 'call' : 'calls'}`;
  if (failed > 0) {
    label += ` · ${failed} failed`;
  }
  if (running > 0) {
    label += ` · ${running} running`;
  }
  return label;
}
