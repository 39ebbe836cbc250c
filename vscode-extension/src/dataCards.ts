// The cards whose view is their `data` (docs/protocol.md, the `toolhost/card` table): `todo` (a
// checklist), `question` (each question and its answer), `plan` (the plan as markdown, Approved or
// why not) and `structured` (the recorded JSON). Each reader checks the data's shape and returns
// undefined when it does not fit, so such a card falls back to the generic view (its Native text),
// as `card::to_text` does. Also the pinned todo list: a session has one todo list, which every
// `todo_write` replaces, so the panel draws the latest one in full above the cards and the todo
// cards in the feed only as a collapsed line each. Everything is escaped. Pure: no `vscode`
// import.

import { escapeHtml } from './html';
import { markdownHtml } from './markdown';
import type { Card } from './cards';
import { isObject } from './guards';

export type TodoStatus = 'pending' | 'in_progress' | 'completed';

export interface Todo {
  content: string;
  status: TodoStatus;
}

export interface TodoCounts {
  pending: number;
  inProgress: number;
  completed: number;
}

/** The todos of a todo card's data, or undefined when it has none. An unknown status reads as
 * pending (as the server's plain rendering does). */
export function todosOf(data: unknown): Todo[] | undefined {
  if (!isObject(data) || !Array.isArray(data.todos)) {
    return undefined;
  }
  return data.todos.flatMap((t): Todo[] => {
    if (!isObject(t) || typeof t.content !== 'string') {
      return [];
    }
    const status: TodoStatus = t.status === 'completed' || t.status === 'in_progress' ? t.status : 'pending';
    return [{ content: t.content, status }];
  });
}

/** Counted here from the list: a pending card's call-time data has no counts. */
export function todoCounts(todos: readonly Todo[]): TodoCounts {
  return {
    pending: todos.filter((t) => t.status === 'pending').length,
    inProgress: todos.filter((t) => t.status === 'in_progress').length,
    completed: todos.filter((t) => t.status === 'completed').length,
  };
}

export function todoCountsText(todos: readonly Todo[]): string {
  const c = todoCounts(todos);
  return `${c.completed}/${todos.length} completed · ${c.inProgress} in progress · ${c.pending} pending`;
}

const TODO_MARK: Record<TodoStatus, { glyph: string; label: string }> = {
  completed: { glyph: '✓', label: 'completed' },
  in_progress: { glyph: '▸', label: 'in progress' },
  pending: { glyph: '○', label: 'pending' },
};

/** The checklist: completed struck through, the one in progress highlighted, pending plain. */
export function todoListHtml(todos: readonly Todo[]): string {
  if (todos.length === 0) {
    return '<div class="todo-empty">(the todo list is empty)</div>';
  }
  const items = todos
    .map((t) => {
      const mark = TODO_MARK[t.status];
      return (
        `<li class="todo todo-${t.status.replace('_', '-')}" data-status="${t.status}">` +
        `<span class="todo-mark" role="img" aria-label="${mark.label}">${mark.glyph}</span>` +
        `<span class="todo-text">${escapeHtml(t.content)}</span></li>`
      );
    })
    .join('');
  return `<ul class="todo-list">${items}</ul>`;
}

/** A todo card's body in the feed: its counts, the list collapsed (the pinned list shows the
 * latest in full). */
function todoCardHtml(todos: readonly Todo[]): string {
  return (
    `<details class="todo-snapshot"><summary class="todo-counts">${escapeHtml(todoCountsText(todos))}</summary>` +
    `${todoListHtml(todos)}</details>`
  );
}

/** The pinned todo list: the list of the latest completed todo card (the session's list now), or
 * nothing when there is none. A failed `todo_write` changed nothing, and a pending one is about to
 * be replaced by its result, so only completed cards count. */
export function pinnedTodosHtml(cards: readonly Card[]): string {
  for (let i = cards.length - 1; i >= 0; i--) {
    const card = cards[i];
    if (card?.kind !== 'todo' || card.status !== 'completed') {
      continue;
    }
    const todos = todosOf(card.data);
    if (!todos) {
      continue;
    }
    return (
      `<section class="todos-pinned" data-call-id="${escapeHtml(card.callId)}" aria-label="todo list">` +
      `<div class="todos-title"><span class="todos-badge">todos</span> <span class="todo-counts">${escapeHtml(todoCountsText(todos))}</span></div>` +
      `${todoListHtml(todos)}</section>`
    );
  }
  return '';
}

interface AnswerView {
  selected: string[];
  custom?: string;
}

/** A question card: each question (its header as a chip, its options when unanswered) and its
 * answer once there is one; undefined when the data has no questions. */
function questionCardHtml(card: Card, data: Record<string, unknown>): string | undefined {
  if (!Array.isArray(data.questions)) {
    return undefined;
  }
  const answers = Array.isArray(data.answers) ? data.answers.filter(isObject) : [];
  const rows = data.questions.filter(isObject).map((q) => {
    const header = typeof q.header === 'string' && q.header !== '' ? `<span class="ask-chip">${escapeHtml(q.header)}</span> ` : '';
    const raw = answers.find((a) => a.id === q.id);
    const answer: AnswerView | undefined = raw
      ? {
          selected: Array.isArray(raw.selected) ? raw.selected.filter((s): s is string => typeof s === 'string') : [],
          ...(typeof raw.custom === 'string' ? { custom: raw.custom } : {}),
        }
      : undefined;
    let below = '';
    if (answer) {
      const chosen = answer.selected.map((s) => `<span class="qa-choice">${escapeHtml(s)}</span>`);
      if (answer.custom !== undefined) {
        chosen.push(`<span class="qa-custom">“${escapeHtml(answer.custom)}”</span>`);
      }
      below = `<div class="qa-answer"><span class="qa-arrow" aria-hidden="true">→ </span>${chosen.length > 0 ? chosen.join(', ') : '<span class="qa-none">(no answer)</span>'}</div>`;
    } else if (card.status === 'pending') {
      below = '<div class="qa-waiting">waiting for the answer…</div>';
    }
    const options = !answer && Array.isArray(q.options)
      ? q.options
          .filter(isObject)
          .map((o) => `<li>${escapeHtml(typeof o.label === 'string' ? o.label : '')}</li>`)
          .join('')
      : '';
    return (
      `<div class="qa"><div class="qa-question">${header}<span class="qa-mark" aria-hidden="true">? </span>${escapeHtml(typeof q.question === 'string' ? q.question : '')}</div>` +
      (options ? `<ul class="qa-options">${options}</ul>` : '') +
      `${below}</div>`
    );
  });
  return `<div class="questions">${rows.join('')}</div>`;
}

function planCardHtml(card: Card, data: Record<string, unknown>): string | undefined {
  if (typeof data.plan !== 'string') {
    return undefined;
  }
  const approved = data.approved === true ? '<div class="plan-approved"><span class="pill approved-pill">Approved</span></div>' : '';
  const waiting = card.status === 'pending' ? '<div class="qa-waiting">waiting for the review…</div>' : '';
  return `<div class="plan-body markdown">${markdownHtml(data.plan)}</div>${approved}${waiting}`;
}

function structuredCardHtml(data: Record<string, unknown>): string | undefined {
  if (!('value' in data)) {
    return undefined;
  }
  return `<pre class="json">${escapeHtml(JSON.stringify(data.value, null, 2) ?? 'null')}</pre>`;
}

/** The kinds drawn from their data. */
export type DataView = 'todo' | 'question' | 'plan' | 'structured';

export function isDataView(kind: string): kind is DataView {
  return kind === 'todo' || kind === 'question' || kind === 'plan' || kind === 'structured';
}

/** A data card's body, or undefined when the card is not one (its kind, or its data's shape). A
 * failed card's error is shown by the caller, under this (a refused plan still shows the plan). */
export function dataCardHtml(card: Card): string | undefined {
  if (!isDataView(card.kind) || !isObject(card.data)) {
    return undefined;
  }
  const data = card.data;
  switch (card.kind) {
    case 'todo': {
      const todos = todosOf(data);
      return todos ? todoCardHtml(todos) : undefined;
    }
    case 'question':
      return questionCardHtml(card, data);
    case 'plan':
      return planCardHtml(card, data);
    case 'structured':
      return structuredCardHtml(data);
  }
}
