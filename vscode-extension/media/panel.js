// @ts-check
// The toolhost panel's script: places card HTML rendered by the extension host (escaped there),
// and turns clicks and keys into action messages. No remote resources, no inline handlers. What
// only concerns the page stays here: the "Show all N lines" toggle of terminal output (kept open
// while a running card is drawn again), a pressed Stop button, and the 256-colour/truecolor
// colours of terminal output, set through the CSSOM because the CSP allows no style attributes.
// Question forms (`toolhost/askUser`, drawn by ask.ts): the page runs their keys and reports the
// raw state of a form (checked labels, typed text) with the person's decision; the extension turns
// that into the answer. The chat with an agent (chat.ts): the page sends the prompt (Enter;
// Shift+Enter is a new line), Stop (Esc), New chat, the agent and the mode picked; the extension
// sends the agent select's options (locked while a chat goes on: it stays with its agent), a hosted
// agent's own settings beside it (a change is sent as it is made; they are drawn again only when
// they changed, so an open select is not pulled away) and the transcript's exchanges as they stream, which the page places, keeping what a person unfolded
// and following the end of the transcript while it is scrolled there. A tool line of the
// transcript scrolls its card into view. A card made under another one (a program's nested call)
// goes into its parent's child list, whose "N calls" toggle opens and closes it — a workflow's
// child under its phase's heading there; each child card has the buttons of a top-level card and
// sends its own call id. The session picker (worktreePicker.ts): the choice is sent as it is made,
// and a refresh of its list when it gets the focus (it is about to open); drawn again, it keeps
// the focus.
(function () {
  'use strict';
  const vscode = acquireVsCodeApi();
  const feed = /** @type {HTMLElement} */ (document.getElementById('cards'));
  const banner = /** @type {HTMLElement} */ (document.getElementById('banner'));
  const empty = /** @type {HTMLElement} */ (document.getElementById('empty'));
  const reviews = /** @type {HTMLElement} */ (document.getElementById('reviews'));
  const questions = /** @type {HTMLElement} */ (document.getElementById('questions'));
  const todos = /** @type {HTMLElement} */ (document.getElementById('todos'));
  const sessions = document.getElementById('sessions');
  const chatLog = document.getElementById('chat-log');
  const chatInput = /** @type {HTMLTextAreaElement | null} */ (document.getElementById('chat-input'));
  const chatMode = /** @type {HTMLSelectElement | null} */ (document.getElementById('chat-mode'));
  const chatAgent = /** @type {HTMLSelectElement | null} */ (document.getElementById('chat-agent'));
  const chatSend = /** @type {HTMLButtonElement | null} */ (document.getElementById('chat-send'));
  const chatStop = /** @type {HTMLButtonElement | null} */ (document.getElementById('chat-stop'));
  const chatNew = /** @type {HTMLButtonElement | null} */ (document.getElementById('chat-new'));
  const chatOptions = document.getElementById('chat-options');
  /** The settings' HTML on show (the extension sends it with every redraw of the chat box). */
  let chatOptionsHtml = chatOptions ? chatOptions.innerHTML : '';

  function updateEmpty() {
    empty.hidden = feed.children.length > 0;
  }

  /** @param {string} html */
  function fragment(html) {
    const template = document.createElement('template');
    template.innerHTML = html;
    return template.content;
  }

  /** A card anywhere in the feed: at the top or inside its parent's child list. */
  function findCard(callId) {
    for (const el of feed.querySelectorAll('article[data-call-id]')) {
      if (el instanceof HTMLElement && el.dataset.callId === callId) {
        return el;
      }
    }
    return undefined;
  }

  /** A card's own elements matching `selector`, not those of the child cards drawn inside it. */
  function own(card, selector) {
    return Array.from(card.querySelectorAll(selector)).filter((e) => e.closest('article[data-call-id]') === card);
  }

  /** What a person changed in a card that is drawn again: its "Native text" disclosure, its
   * terminal output expanded ("Show all N lines"), its folded texts shown whole (by position) and
   * named disclosures (`data-fold`, a running MCP card), and its child list open or closed. */
  function viewState(card) {
    const details = own(card, 'details.native')[0];
    const output = own(card, '.term-output')[0];
    const children = own(card, 'details.card-children')[0];
    return {
      open: details instanceof HTMLDetailsElement && details.open,
      expanded: output instanceof HTMLElement && output.classList.contains('expanded'),
      texts: own(card, '.fold-text').map((t) => t.classList.contains('expanded')),
      details: own(card, 'details[data-fold]')
        .filter((d) => d instanceof HTMLDetailsElement)
        .map((d) => [d.dataset.fold, d.open]),
      children: children instanceof HTMLDetailsElement ? children.open : undefined,
    };
  }

  function restoreView(card, state) {
    const details = own(card, 'details.native')[0];
    if (state.open && details instanceof HTMLDetailsElement) {
      details.open = true;
    }
    const output = own(card, '.term-output')[0];
    if (state.expanded && output instanceof HTMLElement) {
      setExpanded(output, true);
    }
    own(card, '.fold-text').forEach((t, i) => {
      if (state.texts[i] && t instanceof HTMLElement) {
        setFolded(t, true);
      }
    });
    for (const [name, open] of state.details) {
      const d = own(card, 'details[data-fold]').find((x) => x instanceof HTMLElement && x.dataset.fold === name);
      if (d instanceof HTMLDetailsElement) {
        d.open = open;
      }
    }
    const children = own(card, 'details.card-children')[0];
    if (state.children !== undefined && children instanceof HTMLDetailsElement) {
      children.open = state.children;
    }
  }

  /** A card and the cards inside it. */
  function cardsIn(card) {
    return [card, ...card.querySelectorAll('article[data-call-id]')].filter((c) => c instanceof HTMLElement);
  }

  /** The list a parent card shows its children in (the calls a program made): made, like
   * cardHtml.ts's `childrenHtml`, when its first child arrives. */
  function childList(parent) {
    const list = own(parent, '.child-list')[0];
    if (list instanceof HTMLElement) {
      return list;
    }
    const details = document.createElement('details');
    details.className = 'card-children';
    details.dataset.childrenOf = parent.dataset.callId;
    details.open = true;
    const summary = document.createElement('summary');
    summary.className = 'children-summary';
    const made = document.createElement('div');
    made.className = 'child-list';
    made.setAttribute('role', 'group');
    made.setAttribute('aria-label', `calls made by ${own(parent, '.card-tool')[0]?.textContent ?? 'this call'}`);
    details.append(summary, made);
    parent.append(details);
    return made;
  }

  /** The section of a parent's child list that holds one phase's children (a workflow's): made,
   * like cardHtml.ts's `phaseHtml`, at the end of the list when the phase's first child arrives. */
  function phaseList(list, phase) {
    for (const section of list.children) {
      if (section instanceof HTMLElement && section.classList.contains('child-phase') && section.dataset.phase === phase) {
        return section;
      }
    }
    const section = document.createElement('div');
    section.className = 'child-phase';
    section.dataset.phase = phase;
    section.setAttribute('role', 'group');
    section.setAttribute('aria-label', `phase ${phase}`);
    const heading = document.createElement('div');
    heading.className = 'phase-heading';
    heading.textContent = phase;
    section.append(heading);
    list.append(section);
    return section;
  }

  /** A parent's "N calls · K failed" in its child list's toggle and its header. */
  function countChildren(parent, label, failed) {
    const summary = own(parent, 'summary.children-summary')[0];
    if (summary) {
      summary.textContent = label;
    }
    let pill = own(parent, '.children-count')[0];
    const header = own(parent, '.card-header')[0];
    if (!pill && header) {
      pill = document.createElement('span');
      header.append(pill);
    }
    if (pill) {
      pill.className = `pill children-count${failed ? ' has-failed' : ''}`;
      pill.textContent = label;
    }
  }

  /** A parent drawn with its children: the copies of them drawn at the top while the parent was
   * not known yet go. */
  function adopt(fresh) {
    const inside = new Set(cardsIn(fresh));
    if (inside.size < 2) {
      return;
    }
    const ids = new Set([...inside].map((c) => c.dataset.callId));
    for (const el of feed.querySelectorAll('article[data-call-id]')) {
      if (el instanceof HTMLElement && ids.has(el.dataset.callId) && !inside.has(el) && el.isConnected) {
        el.remove();
      }
    }
  }

  /** Places a card (and the cards inside it): in place of its earlier drawing, keeping what a
   * person opened in it and in its children, else new — a top-level card at the top, a child at
   * its place in its parent's list — before the sibling its parent made after it (`before`), else
   * at the end — (a parent the page does not have: at the top). */
  function placeCard(message, node) {
    const fresh = node.firstElementChild;
    if (!(fresh instanceof HTMLElement)) {
      return;
    }
    decorate(node);
    const existing = findCard(message.callId);
    const parent = typeof message.parentCallId === 'string' ? findCard(message.parentCallId) : undefined;
    const children = parent ? childList(parent) : feed;
    const list = parent && typeof message.phase === 'string' ? phaseList(children, message.phase) : children;
    if (existing && existing.parentElement === list) {
      const states = new Map(cardsIn(existing).map((c) => [c.dataset.callId, viewState(c)]));
      const hadFocus = existing.contains(document.activeElement);
      existing.replaceWith(node);
      for (const card of cardsIn(fresh)) {
        const state = states.get(card.dataset.callId);
        if (state) {
          restoreView(card, state);
        }
      }
      if (hadFocus) {
        fresh.focus();
      }
    } else {
      existing?.remove();
      const next = typeof message.before === 'string' ? findCard(message.before) : undefined;
      if (list === feed) {
        feed.prepend(node);
      } else if (next && next.parentElement === list) {
        list.insertBefore(node, next);
      } else {
        list.append(node);
      }
    }
    if (parent) {
      countChildren(parent, String(message.parentLabel ?? ''), message.parentFailed === true);
    }
    adopt(fresh);
  }

  /** Shows a folded text whole, or only its beginning. */
  function setFolded(block, expanded) {
    block.classList.toggle('expanded', expanded);
    const toggle = block.querySelector('button[data-local="toggleFold"]');
    if (toggle instanceof HTMLElement) {
      toggle.setAttribute('aria-expanded', String(expanded));
      toggle.textContent = (expanded ? toggle.dataset.hideLabel : toggle.dataset.showLabel) || toggle.textContent;
    }
  }

  /** Shows every line of a terminal output block, or only the last ones. */
  function setExpanded(output, expanded) {
    output.classList.toggle('expanded', expanded);
    const toggle = output.querySelector('button[data-local="toggleOutput"]');
    if (toggle instanceof HTMLElement) {
      toggle.setAttribute('aria-expanded', String(expanded));
      toggle.textContent = (expanded ? toggle.dataset.hideLabel : toggle.dataset.showLabel) || toggle.textContent;
    }
  }

  /** The calls whose Stop button was pressed: their card keeps it disabled while it is drawn again
   * with more live output, until the final card comes. */
  const stopping = new Set();

  /** Page-side state of freshly placed card HTML: colours beyond the 16 (`data-fg`/`data-bg`,
   * `#rrggbb` only) and a pressed Stop button. */
  function decorate(root) {
    for (const el of root.querySelectorAll('[data-fg], [data-bg]')) {
      if (!(el instanceof HTMLElement)) {
        continue;
      }
      const colour = /^#[0-9a-fA-F]{6}$/;
      if (el.dataset.fg && colour.test(el.dataset.fg)) {
        el.style.color = el.dataset.fg;
      }
      if (el.dataset.bg && colour.test(el.dataset.bg)) {
        el.style.backgroundColor = el.dataset.bg;
      }
    }
    for (const card of root.querySelectorAll('article[data-call-id]')) {
      if (!(card instanceof HTMLElement)) {
        continue;
      }
      if (card.dataset.status !== 'pending') {
        stopping.delete(card.dataset.callId);
        continue;
      }
      const stop = card.querySelector('button[data-action="stop"]');
      if (stopping.has(card.dataset.callId) && stop instanceof HTMLButtonElement) {
        stop.disabled = true;
        stop.textContent = 'Stopping…';
      }
    }
  }

  window.addEventListener('message', (event) => {
    const message = event.data;
    if (!message || typeof message.type !== 'string') {
      return;
    }
    if (message.type === 'upsert') {
      placeCard(message, fragment(message.html));
    } else if (message.type === 'stopRefused') {
      stopping.delete(message.callId);
      const stop = findCard(message.callId)?.querySelector('button[data-action="stop"]');
      if (stop instanceof HTMLButtonElement) {
        stop.disabled = false;
        stop.textContent = 'Stop';
      }
    } else if (message.type === 'remove') {
      for (const callId of message.callIds) {
        findCard(callId)?.remove();
      }
    } else if (message.type === 'reviews') {
      // Keep the focus on the same button of a review drawn again (keyboard use of its buttons).
      const focused = document.activeElement;
      const where =
        focused instanceof HTMLElement && reviews.contains(focused)
          ? { review: focused.closest('[data-review]')?.getAttribute('data-review'), op: focused.dataset.op }
          : undefined;
      reviews.replaceChildren(fragment(message.html || ''));
      if (where) {
        const again = Array.from(reviews.querySelectorAll('button[data-op]')).find(
          (b) => b instanceof HTMLElement && b.dataset.review === where.review && b.dataset.op === where.op,
        );
        if (again instanceof HTMLElement) {
          again.focus();
        }
      }
    } else if (message.type === 'questions') {
      placeQuestions(Array.isArray(message.forms) ? message.forms : []);
    } else if (message.type === 'askFocus') {
      focusQuestion(message.key);
    } else if (message.type === 'sessions') {
      placeSessions(message.html || '');
    } else if (message.type === 'todos') {
      todos.replaceChildren(fragment(message.html || ''));
    } else if (message.type === 'chat') {
      placeChat(undefined, message.html || '');
      chatState(message.running === true, message.stopping === true);
    } else if (message.type === 'chatX') {
      placeChat(message.key, message.html || '');
      chatState(message.running === true, message.stopping === true);
    } else if (message.type === 'chatAgents') {
      if (chatAgent) {
        chatAgent.replaceChildren(fragment(message.html || ''));
        chatAgent.disabled = message.locked === true;
        chatAgent.title = typeof message.title === 'string' ? message.title : '';
      }
      const settings = typeof message.settings === 'string' ? message.settings : '';
      if (chatOptions && settings !== chatOptionsHtml) {
        chatOptionsHtml = settings;
        chatOptions.replaceChildren(fragment(settings));
        chatOptions.hidden = settings === '';
      }
    } else if (message.type === 'chatFocus') {
      if (chatInput) {
        chatInput.focus();
        chatInput.scrollIntoView({ block: 'nearest' });
      }
    } else if (message.type === 'reset') {
      const node = fragment(message.html);
      decorate(node);
      feed.replaceChildren(node);
      banner.replaceChildren(fragment(message.banner || ''));
    }
    updateEmpty();
  });

  // ------------------------------------------------------------------ the session picker

  /** Focus given back to the picker drawn again: not a person opening it (no refresh). */
  let refocusing = false;

  function placeSessions(html) {
    if (!sessions) {
      return;
    }
    const hadFocus = document.activeElement instanceof HTMLSelectElement && sessions.contains(document.activeElement);
    sessions.replaceChildren(fragment(html));
    const select = sessions.querySelector('select');
    if (hadFocus && select instanceof HTMLSelectElement) {
      refocusing = true;
      select.focus();
      refocusing = false;
    }
  }

  sessions?.addEventListener('change', (event) => {
    if (event.target instanceof HTMLSelectElement) {
      vscode.postMessage({ action: 'worktree', op: 'select', sessionId: event.target.value });
    }
  });
  sessions?.addEventListener('focusin', (event) => {
    if (event.target instanceof HTMLSelectElement && !refocusing) {
      vscode.postMessage({ action: 'worktree', op: 'refresh' });
    }
  });

  // ------------------------------------------------------------------ the chat

  /** The open folds (reasoning) of an exchange, by name. */
  function openFolds(el) {
    return new Set(
      Array.from(el.querySelectorAll('details[data-fold]'))
        .filter((d) => d instanceof HTMLDetailsElement && d.open)
        .map((d) => (d instanceof HTMLElement ? d.dataset.fold : undefined)),
    );
  }

  /** Places one exchange of the transcript (`key`), or the whole transcript (no key). */
  function placeChat(key, html) {
    if (!chatLog) {
      return;
    }
    const atEnd = chatLog.scrollHeight - chatLog.scrollTop - chatLog.clientHeight < 24;
    if (key === undefined) {
      chatLog.replaceChildren(fragment(html));
    } else {
      const fresh = fragment(html).firstElementChild;
      const existing = Array.from(chatLog.children).find((el) => el instanceof HTMLElement && el.dataset.chatKey === key);
      if (fresh && existing) {
        const open = openFolds(existing);
        for (const d of fresh.querySelectorAll('details[data-fold]')) {
          if (d instanceof HTMLDetailsElement && open.has(d.dataset.fold)) {
            d.open = true;
          }
        }
        const focusedCard = document.activeElement instanceof HTMLElement && existing.contains(document.activeElement) ? document.activeElement.dataset.card : undefined;
        existing.replaceWith(fresh);
        if (focusedCard !== undefined) {
          const again = Array.from(fresh.querySelectorAll('button[data-card]')).find((b) => b instanceof HTMLElement && b.dataset.card === focusedCard);
          if (again instanceof HTMLElement) {
            again.focus();
          }
        }
      } else if (fresh) {
        chatLog.append(fresh);
      }
    }
    chatLog.hidden = chatLog.children.length === 0;
    if (atEnd) {
      chatLog.scrollTop = chatLog.scrollHeight;
    }
  }

  /** The chat box while a prompt runs: Send off, Stop shown (Stopping… once pressed). */
  function chatState(running, stopping) {
    if (chatSend) {
      chatSend.disabled = running;
    }
    if (chatStop) {
      const hadFocus = document.activeElement === chatStop;
      chatStop.hidden = !running;
      chatStop.disabled = stopping;
      chatStop.textContent = stopping ? 'Stopping…' : 'Stop';
      if (hadFocus && !running && chatInput) {
        chatInput.focus();
      }
    }
  }

  function chatRunning() {
    return chatStop !== null && !chatStop.hidden;
  }

  function sendPrompt() {
    if (!chatInput || chatRunning()) {
      return;
    }
    const prompt = chatInput.value;
    if (prompt.trim() === '') {
      return;
    }
    chatInput.value = '';
    chatState(true, false);
    vscode.postMessage({ action: 'chat', op: 'send', prompt, mode: chatMode ? chatMode.value : '', agent: chatAgent ? chatAgent.value : '' });
  }

  function stopPrompt() {
    if (chatRunning() && chatStop && !chatStop.disabled) {
      chatState(true, true);
      vscode.postMessage({ action: 'chat', op: 'stop' });
    }
  }

  if (chatLog) {
    chatLog.hidden = chatLog.children.length === 0;
    chatLog.scrollTop = chatLog.scrollHeight;
  }
  chatInput?.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing && !event.ctrlKey && !event.altKey && !event.metaKey) {
      event.preventDefault();
      sendPrompt();
    } else if (event.key === 'Escape' && chatRunning()) {
      event.preventDefault();
      stopPrompt();
    }
  });
  chatSend?.addEventListener('click', sendPrompt);
  chatStop?.addEventListener('click', stopPrompt);
  chatNew?.addEventListener('click', () => {
    vscode.postMessage({ action: 'chat', op: 'new' });
    chatInput?.focus();
  });
  chatMode?.addEventListener('change', () => vscode.postMessage({ action: 'chat', op: 'mode', mode: chatMode.value }));
  chatAgent?.addEventListener('change', () => vscode.postMessage({ action: 'chat', op: 'agent', agent: chatAgent.value }));
  chatOptions?.addEventListener('change', (event) => {
    const control = event.target;
    if (control instanceof HTMLSelectElement && control.dataset.option) {
      vscode.postMessage({ action: 'chat', op: 'option', option: control.dataset.option, value: control.value });
    } else if (control instanceof HTMLInputElement && control.type === 'checkbox' && control.dataset.option) {
      vscode.postMessage({ action: 'chat', op: 'option', option: control.dataset.option, value: control.checked });
    }
  });

  /** A tool line of the transcript: its card scrolled into view and focused. */
  function showCard(callId) {
    const card = findCard(callId);
    if (!card) {
      return;
    }
    // a nested call: open the child lists it is in
    for (let list = card.closest('details.card-children'); list; list = list.parentElement?.closest('details.card-children') ?? null) {
      if (list instanceof HTMLDetailsElement) {
        list.open = true;
      }
    }
    card.scrollIntoView({ block: 'nearest' });
    card.focus({ preventScroll: true });
    card.classList.remove('flash');
    void card.offsetWidth;
    card.classList.add('flash');
  }

  // ------------------------------------------------------------------ question forms

  /** @param {string | undefined} key */
  function findForm(key) {
    for (const el of questions.querySelectorAll('form[data-ask]')) {
      if (el instanceof HTMLFormElement && (key === undefined || el.dataset.ask === key)) {
        return el;
      }
    }
    return undefined;
  }

  /** Places the forms of the open questions in order. A form still open keeps its element (what
   * was checked and typed, and the focus); a new one is added; the others go. */
  function placeQuestions(forms) {
    const keep = new Map();
    for (const el of questions.querySelectorAll('form[data-ask]')) {
      if (el instanceof HTMLElement && el.dataset.ask !== undefined) {
        keep.set(el.dataset.ask, el);
      }
    }
    const next = [];
    for (const form of forms) {
      const existing = keep.get(form.key);
      if (existing && !existing.classList.contains('sent')) {
        next.push(existing);
      } else {
        const el = fragment(form.html).firstElementChild;
        if (el) {
          next.push(el);
        }
      }
    }
    const hadFocus = questions.contains(document.activeElement);
    questions.replaceChildren(...next);
    if (hadFocus && !questions.contains(document.activeElement) && next[0] instanceof HTMLElement) {
      // The answered form went: on to the next question, if there is one.
      focusForm(/** @type {HTMLFormElement} */ (next[0]));
    }
  }

  /** The places Tab stops at in a question form: per question its option (the checked one, else the
   * first) and its "Other" field, then the buttons. */
  function stops(form) {
    const out = [];
    for (const fieldset of form.querySelectorAll('fieldset.ask-q')) {
      const options = Array.from(fieldset.querySelectorAll('input.ask-input'));
      const checked = options.find((o) => o instanceof HTMLInputElement && o.checked);
      if (options.length > 0) {
        out.push(checked ?? options[0]);
      }
      const other = fieldset.querySelector('input.ask-other');
      if (other) {
        out.push(other);
      }
    }
    out.push(...form.querySelectorAll('button[data-ask-op]'));
    return out;
  }

  /** @param {HTMLFormElement} form */
  function focusForm(form) {
    if (form.dataset.intent === 'plan-review') {
      form.focus();
    } else {
      const first = stops(form)[0];
      (first instanceof HTMLElement ? first : form).focus();
    }
    form.scrollIntoView({ block: 'nearest' });
  }

  /** @param {string | undefined} key */
  function focusQuestion(key) {
    const form = findForm(key) ?? findForm(undefined);
    if (form) {
      focusForm(form);
    }
  }

  /** @param {HTMLFormElement} form */
  function formState(form) {
    const state = {};
    for (const fieldset of form.querySelectorAll('fieldset.ask-q')) {
      if (!(fieldset instanceof HTMLElement) || fieldset.dataset.qid === undefined) {
        continue;
      }
      const other = fieldset.querySelector('input.ask-other');
      state[fieldset.dataset.qid] = {
        selected: Array.from(fieldset.querySelectorAll('input.ask-input')).flatMap((i) => (i instanceof HTMLInputElement && i.checked ? [i.value] : [])),
        custom: other instanceof HTMLInputElement ? other.value : '',
      };
    }
    return state;
  }

  /** Sends the person's decision once; the extension then takes the form away. */
  function answerForm(form, op) {
    if (form.classList.contains('sent')) {
      return;
    }
    form.classList.add('sent');
    const feedback = form.querySelector('input.ask-feedback');
    vscode.postMessage({
      action: 'ask',
      ask: form.dataset.ask,
      op,
      state: op === 'submit' ? formState(form) : undefined,
      feedback: feedback instanceof HTMLInputElement ? feedback.value : undefined,
    });
  }

  /** Single-select: a chosen option and "Other" text exclude each other (the text would replace the
   * choice), so the form shows what will be sent. */
  function chose(input) {
    const fieldset = input.closest('fieldset.ask-q');
    if (fieldset instanceof HTMLElement && fieldset.dataset.multi !== 'true' && input.checked) {
      const other = fieldset.querySelector('input.ask-other');
      if (other instanceof HTMLInputElement) {
        other.value = '';
      }
    }
  }

  /** Space / a number key on an option: a radio is chosen, a checkbox toggled. */
  function pickOption(input) {
    if (!(input instanceof HTMLInputElement)) {
      return;
    }
    input.checked = input.type === 'checkbox' ? !input.checked : true;
    chose(input);
    input.focus();
  }

  function questionKey(event, form, target) {
    const fieldset = target.closest('fieldset.ask-q') ?? form.querySelector('fieldset.ask-q');
    const options = fieldset ? Array.from(fieldset.querySelectorAll('input.ask-input')) : [];
    const other = fieldset?.querySelector('input.ask-other');
    const typing = target instanceof HTMLInputElement && target.type === 'text';
    const key = event.key;
    if (key === 'Escape') {
      event.preventDefault();
      answerForm(form, 'dismiss');
      return;
    }
    if (key === 'Enter') {
      if (target instanceof HTMLButtonElement) {
        return; // the button's own click
      }
      event.preventDefault();
      answerForm(form, 'submit');
      return;
    }
    if (key === 'Tab') {
      const all = stops(form);
      let at = all.indexOf(target);
      if (at < 0 && target instanceof HTMLInputElement && target.classList.contains('ask-input')) {
        // an option that is not the group's stop: its group's stop
        at = all.findIndex((s) => s instanceof HTMLInputElement && s.name === target.name);
      }
      const next = at < 0 ? (event.shiftKey ? undefined : all[0]) : all[at + (event.shiftKey ? -1 : 1)];
      if (next instanceof HTMLElement) {
        event.preventDefault();
        next.focus();
      }
      return; // past the first or last stop: out of the form as usual
    }
    const down = key === 'ArrowDown' || (!typing && key === 'j');
    const up = key === 'ArrowUp' || (!typing && key === 'k');
    if (down || up) {
      event.preventDefault();
      const ring = [...options, ...(other ? [other] : [])];
      const at = ring.indexOf(target);
      if (at < 0) {
        ring[0]?.focus();
        return;
      }
      const step = at + (down ? 1 : -1);
      if (step >= 0 && step < ring.length) {
        ring[step].focus();
        return;
      }
      // past the ends of a question: on to the next (or previous) one
      const fieldsets = Array.from(form.querySelectorAll('fieldset.ask-q'));
      const neighbour = fieldsets[fieldsets.indexOf(fieldset) + (down ? 1 : -1)];
      if (neighbour) {
        const inputs = Array.from(neighbour.querySelectorAll('input.ask-input, input.ask-other'));
        (down ? inputs[0] : inputs[inputs.length - 1])?.focus();
      }
      return;
    }
    if (typing) {
      return;
    }
    if (key === ' ' && options.includes(target)) {
      event.preventDefault();
      pickOption(target);
      return;
    }
    if (/^[1-9]$/.test(key) && !event.ctrlKey && !event.altKey && !event.metaKey) {
      const option = options[Number(key) - 1];
      if (option) {
        event.preventDefault();
        pickOption(option);
      }
    }
  }

  function planKey(event, form, target) {
    const feedback = form.querySelector('input.ask-feedback');
    const typing = target === feedback;
    const key = event.key;
    if (key === 'Escape') {
      event.preventDefault();
      answerForm(form, 'dismiss');
      return;
    }
    if (typing) {
      if (key === 'Enter') {
        event.preventDefault();
        answerForm(form, 'keep');
      }
      return;
    }
    if (target instanceof HTMLButtonElement && (key === 'Enter' || key === ' ')) {
      return; // the button's own click
    }
    if (event.ctrlKey || event.altKey || event.metaKey) {
      return;
    }
    if (key === 'a') {
      event.preventDefault();
      answerForm(form, 'approve');
    } else if (key === 'k') {
      event.preventDefault();
      if (feedback instanceof HTMLElement) {
        feedback.focus();
      }
    } else if (key === 'Enter') {
      event.preventDefault();
    }
  }

  questions.addEventListener('keydown', (event) => {
    const target = event.target;
    if (!(target instanceof HTMLElement)) {
      return;
    }
    const form = target.closest('form[data-ask]');
    if (!(form instanceof HTMLFormElement) || form.classList.contains('sent')) {
      return;
    }
    if (form.dataset.intent === 'plan-review') {
      planKey(event, form, target);
    } else {
      questionKey(event, form, target);
    }
  });
  // The browser would also toggle a checkbox on the release of Space: the keydown did it already.
  questions.addEventListener('keyup', (event) => {
    if (event.key === ' ' && event.target instanceof HTMLInputElement && event.target.classList.contains('ask-input')) {
      event.preventDefault();
    }
  });
  questions.addEventListener('change', (event) => {
    if (event.target instanceof HTMLInputElement && event.target.classList.contains('ask-input')) {
      chose(event.target);
    }
  });
  questions.addEventListener('input', (event) => {
    const input = event.target;
    if (!(input instanceof HTMLInputElement) || !input.classList.contains('ask-other') || input.value.trim() === '') {
      return;
    }
    const fieldset = input.closest('fieldset.ask-q');
    if (fieldset instanceof HTMLElement && fieldset.dataset.multi !== 'true') {
      for (const option of fieldset.querySelectorAll('input.ask-input')) {
        if (option instanceof HTMLInputElement) {
          option.checked = false;
        }
      }
    }
  });
  // A form is never submitted the browser's way (it would navigate the webview).
  document.addEventListener('submit', (event) => event.preventDefault());

  /** @param {Element} target */
  function send(target) {
    const ask = target.closest('button[data-ask-op]');
    if (ask instanceof HTMLElement) {
      const form = ask.closest('form[data-ask]');
      if (form instanceof HTMLFormElement) {
        const op = ask.dataset.askOp;
        if (op) {
          answerForm(form, op);
        }
      }
      return true;
    }
    const local = target.closest('button[data-local]');
    if (local instanceof HTMLElement && local.dataset.local === 'toggleFold') {
      const block = local.closest('.fold-text');
      if (block instanceof HTMLElement) {
        setFolded(block, !block.classList.contains('expanded'));
      }
      return true;
    }
    if (local instanceof HTMLElement && local.dataset.local === 'toggleOutput') {
      const output = local.closest('.term-output');
      if (output instanceof HTMLElement) {
        setExpanded(output, !output.classList.contains('expanded'));
      }
      return true;
    }
    const button = target.closest('button[data-action]');
    if (!(button instanceof HTMLElement)) {
      return false;
    }
    const card = button.closest('article[data-call-id]');
    const callId = card instanceof HTMLElement ? card.dataset.callId : undefined;
    if (button.dataset.action === 'stop' && button instanceof HTMLButtonElement) {
      if (button.disabled || callId === undefined) {
        return true;
      }
      stopping.add(callId);
      button.disabled = true;
      button.textContent = 'Stopping…';
    }
    vscode.postMessage({
      action: button.dataset.action,
      callId,
      loc: button.dataset.loc !== undefined ? Number(button.dataset.loc) : undefined,
      spill: button.dataset.spill !== undefined ? Number(button.dataset.spill) : undefined,
      review: button.dataset.review,
      op: button.dataset.op,
      // a web card's source (`openUrl`): the extension checks it before opening anything
      url: button.dataset.url,
    });
    return true;
  }

  document.addEventListener('click', (event) => {
    if (!(event.target instanceof Element)) {
      return;
    }
    const link = event.target.closest('button[data-card]');
    if (link instanceof HTMLElement && link.dataset.card !== undefined) {
      showCard(link.dataset.card);
      return;
    }
    send(event.target);
  });

  // Arrow keys move between cards; Home/End jump to the newest/oldest one.
  document.addEventListener('keydown', (event) => {
    const active = document.activeElement;
    if (!(active instanceof HTMLElement) || !feed.contains(active)) {
      return;
    }
    // the cards a person sees: not those in a closed child list
    const cards = Array.from(feed.querySelectorAll('article[data-call-id]')).filter((c) => !c.closest('details.card-children:not([open])'));
    const current = active.closest('article[data-call-id]');
    const index = current ? cards.indexOf(current) : -1;
    let next;
    if (event.key === 'ArrowDown' && active === current) {
      next = cards[Math.min(index + 1, cards.length - 1)];
    } else if (event.key === 'ArrowUp' && active === current) {
      next = cards[Math.max(index - 1, 0)];
    } else if (event.key === 'Home' && active === current) {
      next = cards[0];
    } else if (event.key === 'End' && active === current) {
      next = cards[cards.length - 1];
    }
    if (next instanceof HTMLElement) {
      event.preventDefault();
      next.focus();
    }
  });

  decorate(document);
  updateEmpty();
  vscode.postMessage({ action: 'ready' });
})();
