// @ts-check
// The toolhost panel's script: places card HTML rendered by the extension host (escaped there),
// and turns clicks and keys into action messages. No remote resources, no inline handlers. What
// only concerns the page stays here: the "Show all N lines" toggle of terminal output (kept open
// while a running card is drawn again), a pressed Stop button, and the 256-colour/truecolor
// colours of terminal output, set through the CSSOM because the CSP allows no style attributes.
(function () {
  'use strict';
  const vscode = acquireVsCodeApi();
  const feed = /** @type {HTMLElement} */ (document.getElementById('cards'));
  const banner = /** @type {HTMLElement} */ (document.getElementById('banner'));
  const empty = /** @type {HTMLElement} */ (document.getElementById('empty'));
  const reviews = /** @type {HTMLElement} */ (document.getElementById('reviews'));

  function updateEmpty() {
    empty.hidden = feed.children.length > 0;
  }

  /** @param {string} html */
  function fragment(html) {
    const template = document.createElement('template');
    template.innerHTML = html;
    return template.content;
  }

  /** @param {string} callId */
  function findCard(callId) {
    for (const el of feed.children) {
      if (el instanceof HTMLElement && el.dataset.callId === callId) {
        return el;
      }
    }
    return undefined;
  }

  /** Keeps a card's "Native text" disclosure state across updates. */
  function openState(el) {
    const details = el.querySelector('details.native');
    return details instanceof HTMLDetailsElement && details.open;
  }

  /** Whether a card's terminal output is expanded ("Show all N lines" pressed). */
  function expandedState(el) {
    const output = el.querySelector('.term-output');
    return output instanceof HTMLElement && output.classList.contains('expanded');
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
      const node = fragment(message.html);
      const fresh = node.firstElementChild;
      const existing = findCard(message.callId);
      if (fresh) {
        decorate(node);
      }
      if (existing && fresh) {
        const wasOpen = openState(existing);
        const wasExpanded = expandedState(existing);
        const hadFocus = existing.contains(document.activeElement);
        existing.replaceWith(node);
        const details = fresh.querySelector('details.native');
        if (wasOpen && details instanceof HTMLDetailsElement) {
          details.open = true;
        }
        const output = fresh.querySelector('.term-output');
        if (wasExpanded && output instanceof HTMLElement) {
          setExpanded(output, true);
        }
        if (hadFocus && fresh instanceof HTMLElement) {
          fresh.focus();
        }
      } else {
        feed.prepend(node);
      }
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
    } else if (message.type === 'reset') {
      const node = fragment(message.html);
      decorate(node);
      feed.replaceChildren(node);
      banner.replaceChildren(fragment(message.banner || ''));
    }
    updateEmpty();
  });

  /** @param {Element} target */
  function send(target) {
    const local = target.closest('button[data-local]');
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
    });
    return true;
  }

  document.addEventListener('click', (event) => {
    if (event.target instanceof Element) {
      send(event.target);
    }
  });

  // Arrow keys move between cards; Home/End jump to the newest/oldest one.
  document.addEventListener('keydown', (event) => {
    const active = document.activeElement;
    if (!(active instanceof HTMLElement) || !feed.contains(active)) {
      return;
    }
    const cards = Array.from(feed.querySelectorAll('article[data-call-id]'));
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
