// Questions for the person (docs/protocol.md, `toolhost/askUser`): `ask_user_question` asks
// (intent `question`), `exit_plan_mode` puts a plan up for approval (intent `plan-review`),
// toolhost's own agent asks whether a call may run (intent `permission`: Allow / Deny). Here:
// the request's shape, turning what the person did in the panel's form into the protocol's answer
// (`{answers: [{id, selected, custom?}]}` or `{dismissed: true}`), a question as an entry of the
// queue of pending requests it shares with reviews (pending.ts; several calls may ask at once, one
// question per call, so the call id is the key) and the form's HTML. The page (media/panel.js) only reports the raw state of the form; the rules — labels that
// are options, one choice for a single-select question, free text replacing that choice — live
// here, where `node --test` covers them. Pure: no `vscode` import.

import { escapeHtml } from './html';
import { markdownHtml } from './markdown';
import { PendingRequest } from './pending';
import { isObject } from './guards';

export type QuestionIntent = 'question' | 'plan-review' | 'permission';

export interface QuestionOption {
  label: string;
  description?: string;
}

export interface Question {
  id: string;
  question: string;
  header?: string;
  /** Empty: answered with free text only. */
  options: QuestionOption[];
  multiSelect: boolean;
}

/** `toolhost/askUser` params. */
export interface AskUserParams {
  /** The JSON-RPC id of the request (what `$/cancelRequest` names when the server withdraws it). */
  requestId: number | string;
  callId: string;
  tool: string;
  title: string;
  caller?: string;
  intent: QuestionIntent;
  questions: Question[];
  /** The plan (markdown) of a `plan-review`. */
  plan?: string;
}

export interface Answer {
  id: string;
  selected: string[];
  custom?: string;
}

/** `toolhost/askUser` result. */
export type AskUserResult = { answers: Answer[] } | { dismissed: true };

/** The option labels of a plan review (exit_plan_mode's question). */
export const APPROVE = 'Approve';
export const KEEP_PLANNING = 'Keep planning';

function nonEmpty(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}

/** Checks `toolhost/askUser` params; throws a message for unusable ones (answered as an error: the
 * call then fails with the editor's message instead of waiting for a form nobody can fill in). */
export function parseAskUserParams(raw: unknown): AskUserParams {
  if (!isObject(raw)) {
    throw new Error('params must be an object');
  }
  const { requestId, callId, tool, title, caller, intent, questions, plan } = raw;
  if (!(typeof requestId === 'number' || nonEmpty(requestId))) {
    throw new Error('requestId must be the request id (a number or a string)');
  }
  if (!nonEmpty(callId) || !nonEmpty(tool)) {
    throw new Error('callId and tool must be non-empty strings');
  }
  if (intent !== undefined && intent !== 'question' && intent !== 'plan-review' && intent !== 'permission') {
    throw new Error(`unknown intent ${JSON.stringify(intent)}`);
  }
  if (!Array.isArray(questions) || questions.length === 0) {
    throw new Error('questions must be a non-empty array');
  }
  const seen = new Set<string>();
  const parsed = questions.map((q, i): Question => {
    if (!isObject(q) || !nonEmpty(q.id) || typeof q.question !== 'string') {
      throw new Error(`questions[${i}] must have an id and a question`);
    }
    if (seen.has(q.id)) {
      throw new Error(`questions[${i}]: the id ${JSON.stringify(q.id)} is used twice`);
    }
    seen.add(q.id);
    const options = q.options === undefined || q.options === null ? [] : q.options;
    if (!Array.isArray(options)) {
      throw new Error(`questions[${i}].options must be an array`);
    }
    const out: Question = {
      id: q.id,
      question: q.question,
      options: options.map((o, j) => {
        if (!isObject(o) || !nonEmpty(o.label)) {
          throw new Error(`questions[${i}].options[${j}] must have a label`);
        }
        return nonEmpty(o.description) ? { label: o.label, description: o.description } : { label: o.label };
      }),
      multiSelect: q.multiSelect === true,
    };
    if (nonEmpty(q.header)) {
      out.header = q.header;
    }
    return out;
  });
  const params: AskUserParams = {
    requestId,
    callId,
    tool,
    title: nonEmpty(title) ? title : tool,
    intent: intent === 'plan-review' || intent === 'permission' ? intent : 'question',
    questions: parsed,
  };
  if (nonEmpty(caller)) {
    params.caller = caller;
  }
  if (typeof plan === 'string') {
    params.plan = plan;
  }
  return params;
}

/** What the form holds for one question: the checked options' labels and the "Other" text. */
export interface FormAnswer {
  selected?: unknown;
  custom?: unknown;
}

/** The form's raw state, by question id (from the page: checked, so anything may arrive). */
export type FormState = Record<string, FormAnswer | undefined>;

/** One answer per question, in the questions' order, holding only what the question allows: labels
 * that are its options, in the options' order (one at most for a single-select question), and the
 * trimmed free text as `custom`, which replaces a single-select choice (docs/protocol.md). */
export function buildAnswers(questions: readonly Question[], state: unknown): Answer[] {
  const raw: FormState = isObject(state) ? (state as FormState) : {};
  return questions.map((q) => {
    const given = raw[q.id];
    const picked = new Set(isObject(given) && Array.isArray(given.selected) ? given.selected.filter((s): s is string => typeof s === 'string') : []);
    const custom = isObject(given) && typeof given.custom === 'string' ? given.custom.trim() : '';
    let selected = q.options.map((o) => o.label).filter((label) => picked.has(label));
    if (!q.multiSelect) {
      selected = custom !== '' ? [] : selected.slice(0, 1);
    }
    return custom !== '' ? { id: q.id, selected, custom } : { id: q.id, selected };
  });
}

/** The question of a plan review (the server sends one: Approve / Keep planning). */
function planQuestion(params: AskUserParams): Question | undefined {
  return params.questions[0];
}

/** The answer to a plan review. Approve sends the option `Approve`; keep planning sends the
 * feedback as free text when there is some (it counts as keep planning), else the option. */
export function planReviewResult(params: AskUserParams, decision: 'approve' | 'keep', feedback?: string): AskUserResult {
  const question = planQuestion(params);
  const id = question?.id ?? 'plan';
  const label = (wanted: string) => question?.options.find((o) => o.label.toLowerCase() === wanted.toLowerCase())?.label ?? wanted;
  if (decision === 'approve') {
    return { answers: [{ id, selected: [label(APPROVE)] }] };
  }
  const text = feedback?.trim() ?? '';
  return { answers: [text === '' ? { id, selected: [label(KEEP_PLANNING)] } : { id, selected: [], custom: text }] };
}

export const DISMISSED: AskUserResult = { dismissed: true };

/** The kind of a question in the queue of pending requests (pending.ts). */
export const QUESTION_KIND = 'question';

/** One open question (a form in the panel) and how it ended. One question per call: a call that
 * asks again replaces its open question, so the call id is the key. */
export class AskSession extends PendingRequest<AskUserResult> {
  constructor(
    readonly params: AskUserParams,
    answer: (result: AskUserResult) => void,
  ) {
    super(QUESTION_KIND, params.callId, params.requestId, answer);
  }
}

/** What a page message asks of a question: submit the form, dismiss it, or decide a plan. */
export interface FormAction {
  op: 'submit' | 'dismiss' | 'approve' | 'keep';
  state?: unknown;
  feedback?: unknown;
}

/** The answer a page message stands for, or undefined for one that does not fit the question (a
 * plan decision on a plain question, an unknown op). */
export function resultOf(params: AskUserParams, action: FormAction): AskUserResult | undefined {
  switch (action.op) {
    case 'dismiss':
      return DISMISSED;
    case 'submit':
      return { answers: buildAnswers(params.questions, action.state) };
    case 'approve':
    case 'keep':
      if (params.intent !== 'plan-review') {
        return undefined;
      }
      return planReviewResult(params, action.op, typeof action.feedback === 'string' ? action.feedback : undefined);
    default:
      return undefined;
  }
}

/** The notification's text: who asks, and the first question (or the plan's title). */
export function notificationText(params: AskUserParams): string {
  const who = params.caller ?? 'Agent';
  if (params.intent === 'plan-review') {
    return `${who} asks: approve the plan "${params.title.replace(/^Plan: /, '')}"?`;
  }
  const first = params.questions[0]?.question ?? params.title;
  const more = params.questions.length > 1 ? ` (+${params.questions.length - 1} more)` : '';
  return `${who} asks: ${first}${more}`;
}

/** The keys, as the form's hint line lists them. */
export const QUESTION_KEYS = '↑/↓ or j/k move · Space selects · 1–9 pick · Tab next question · Enter submits · Esc dismisses';
export const PLAN_KEYS = 'a approve · k keep planning (type feedback, Enter sends) · Esc dismisses';

function headerHtml(params: AskUserParams): string {
  const badge = params.intent === 'plan-review' ? 'plan review' : params.intent === 'permission' ? 'permission' : 'question';
  const caller = params.caller ? ` <span class="card-caller">${escapeHtml(params.caller)}</span>` : '';
  return (
    `<div class="ask-title"><span class="ask-badge">${badge}</span> <span class="card-tool">${escapeHtml(params.tool)}</span> ` +
    `<span class="card-title">${escapeHtml(params.title)}</span>${caller}</div>`
  );
}

function questionHtml(params: AskUserParams, q: Question, index: number): string {
  const name = `ask-${params.callId}-${index}`;
  const type = q.multiSelect ? 'checkbox' : 'radio';
  const header = q.header ? `<span class="ask-chip">${escapeHtml(q.header)}</span> ` : '';
  const options = q.options
    .map((o, i) => {
      const num = i < 9 ? `<span class="ask-num" aria-hidden="true">${i + 1}</span>` : '<span class="ask-num" aria-hidden="true"></span>';
      const description = o.description ? `<span class="ask-desc">${escapeHtml(o.description)}</span>` : '';
      return (
        `<label class="ask-opt">${num}<input type="${type}" class="ask-input" name="${escapeHtml(name)}" value="${escapeHtml(o.label)}" data-index="${i}">` +
        `<span class="ask-opt-text"><span class="ask-label">${escapeHtml(o.label)}</span>${description}</span></label>`
      );
    })
    .join('');
  const other = q.options.length > 0 ? 'Other (your own answer)…' : 'Your answer…';
  // A permission is Allow or Deny: free text would only count as Deny.
  const otherField =
    params.intent === 'permission' && q.options.length > 0
      ? ''
      : `<input type="text" class="ask-other" aria-label="${escapeHtml(`${other} ${q.question}`)}" placeholder="${escapeHtml(other)}">`;
  return (
    `<fieldset class="ask-q" data-qid="${escapeHtml(q.id)}" data-multi="${q.multiSelect}">` +
    `<legend class="ask-question">${header}<span class="ask-text">${escapeHtml(q.question)}</span>` +
    `${q.multiSelect ? ' <span class="ask-multi">(choose any)</span>' : ''}</legend>` +
    (options ? `<div class="ask-options" role="${q.multiSelect ? 'group' : 'radiogroup'}">${options}</div>` : '') +
    otherField +
    `</fieldset>`
  );
}

/** One open question as a form. */
export function askFormHtml(session: AskSession): string {
  const { params } = session;
  const key = escapeHtml(session.key);
  const button = (op: string, label: string, cls = '') => `<button type="button" class="action ask-button${cls}" data-ask-op="${op}">${escapeHtml(label)}</button>`;
  if (params.intent === 'plan-review') {
    return (
      `<form class="ask ask-plan" data-ask="${key}" data-intent="plan-review" tabindex="-1" aria-label="${escapeHtml(`plan review: ${params.title}`)}">` +
      headerHtml(params) +
      `<div class="plan-body markdown">${markdownHtml(params.plan ?? '')}</div>` +
      `<input type="text" class="ask-feedback" aria-label="Feedback for the agent (keeps planning)" placeholder="Feedback: what should change? (Enter: keep planning)">` +
      `<div class="actions">${button('approve', 'Approve (a)', ' primary')}${button('keep', 'Keep planning (k)')}${button('dismiss', 'Dismiss (Esc)')}</div>` +
      `<div class="ask-keys">${escapeHtml(PLAN_KEYS)}</div>` +
      `</form>`
    );
  }
  return (
    `<form class="ask" data-ask="${key}" data-intent="${params.intent}" tabindex="-1" aria-label="${escapeHtml(`${params.intent}: ${params.title}`)}">` +
    headerHtml(params) +
    params.questions.map((q, i) => questionHtml(params, q, i)).join('') +
    `<div class="actions">${button('submit', 'Submit (Enter)', ' primary')}${button('dismiss', 'Dismiss (Esc)')}</div>` +
    `<div class="ask-keys">${escapeHtml(QUESTION_KEYS)}</div>` +
    `</form>`
  );
}
