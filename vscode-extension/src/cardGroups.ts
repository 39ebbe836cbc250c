// Orchestrated calls: a `workflow` or `ralph` run's children are `subagent` cards under the run's
// card, each with the `group` its caller put it in (`{phase?, label?}`: a workflow child's phase
// and label, a ralph round's `round <n>`) and, once it ended, the `usage` its run reported
// (`{tokens, cost?}`); the run's own card carries the sum. This module checks those two fields
// as they come from the wire, says a usage the way the panel shows it (`1,234 tokens · $0.01`),
// and splits a parent's children into the sections the panel draws: a child without a phase on
// its own, the children of one phase under one heading, in the order phases first appear.
// Pure: no `vscode` import.

import type { CardNode } from './cardTree';
import { isObject } from './guards';

/** Where the call's caller put it among its parent's children (docs/protocol.md, `group`). */
export interface CardGroup {
  phase?: string;
  label?: string;
}

/** What the call used: tokens and, with prices configured, dollars. */
export interface CardUsage {
  tokens: number;
  cost?: number;
}

/** A group from the wire: its non-empty string fields; undefined when it has none. */
export function asGroup(raw: unknown): CardGroup | undefined {
  if (!isObject(raw)) {
    return undefined;
  }
  const group: CardGroup = {};
  if (typeof raw.phase === 'string' && raw.phase !== '') {
    group.phase = raw.phase;
  }
  if (typeof raw.label === 'string' && raw.label !== '') {
    group.label = raw.label;
  }
  return group.phase === undefined && group.label === undefined ? undefined : group;
}

/** A usage from the wire: a whole, non-negative token count and a finite, non-negative cost. */
export function asUsage(raw: unknown): CardUsage | undefined {
  if (!isObject(raw) || typeof raw.tokens !== 'number' || !Number.isSafeInteger(raw.tokens) || raw.tokens < 0) {
    return undefined;
  }
  const usage: CardUsage = { tokens: raw.tokens };
  if (typeof raw.cost === 'number' && Number.isFinite(raw.cost) && raw.cost >= 0) {
    usage.cost = raw.cost;
  }
  return usage;
}

/** Dollars as the panel shows them: cents from a cent on, two significant digits below it. */
export function costLabel(cost: number): string {
  if (cost === 0) {
    return '$0';
  }
  return cost >= 0.01 ? `$${cost.toFixed(2)}` : `$${Number(cost.toPrecision(2))}`;
}

/** `1,234 tokens · $0.01` (the cost only when there is one). */
export function usageLabel(usage: CardUsage): string {
  const tokens = `${usage.tokens.toLocaleString('en-US')} ${usage.tokens === 1 ? 'token' : 'tokens'}`;
  return usage.cost === undefined ? tokens : `${tokens} · ${costLabel(usage.cost)}`;
}

/** The phase a card is grouped under, if any. */
export function phaseOf(card: { group?: CardGroup | null }): string | undefined {
  return card.group?.phase;
}

/** What a parent's child list holds, in order: a child without a phase, or one phase's children. */
export type ChildSection = { phase?: undefined; node: CardNode } | { phase: string; nodes: CardNode[] };

/** A parent's children as the panel draws them: each phase's children together under the place
 * its first child had, the children without a phase where they are. */
export function childSections(children: readonly CardNode[]): ChildSection[] {
  const sections: ChildSection[] = [];
  const byPhase = new Map<string, CardNode[]>();
  for (const node of children) {
    const phase = phaseOf(node.card);
    if (phase === undefined) {
      sections.push({ node });
      continue;
    }
    const nodes = byPhase.get(phase);
    if (nodes) {
      nodes.push(node);
    } else {
      const fresh = [node];
      byPhase.set(phase, fresh);
      sections.push({ phase, nodes: fresh });
    }
  }
  return sections;
}
