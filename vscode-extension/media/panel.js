// @ts-check
// The toolhost panel's script: places card HTML rendered by the extension host (escaped there),
// and turns clicks and keys into action messages. No remote resources, no inline handlers.
(function () {
  'use strict';
  const vscode = acquireVsCodeApi();
  const feed = /** @type {HTMLElement} */ (document.getElementById('cards'));
  const banner = /** @type {HTMLElement} */ (document.getElementById('banner'));
  const empty = /** @type {HTMLElement} */ (document.getElementById('empty'));

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

  window.addEventListener('message', (event) => {
    const message = event.data;
    if (!message || typeof message.type !== 'string') {
      return;
    }
    if (message.type === 'upsert') {
      const node = fragment(message.html);
      const fresh = node.firstElementChild;
      const existing = findCard(message.callId);
      if (existing && fresh) {
        const wasOpen = openState(existing);
        const hadFocus = existing.contains(document.activeElement);
        existing.replaceWith(node);
        const details = fresh.querySelector('details.native');
        if (wasOpen && details instanceof HTMLDetailsElement) {
          details.open = true;
        }
        if (hadFocus && fresh instanceof HTMLElement) {
          fresh.focus();
        }
      } else {
        feed.prepend(node);
      }
    } else if (message.type === 'remove') {
      for (const callId of message.callIds) {
        findCard(callId)?.remove();
      }
    } else if (message.type === 'reset') {
      feed.replaceChildren(fragment(message.html));
      banner.replaceChildren(fragment(message.banner || ''));
    }
    updateEmpty();
  });

  /** @param {Element} target */
  function send(target) {
    const button = target.closest('button[data-action]');
    if (!(button instanceof HTMLElement)) {
      return false;
    }
    const card = button.closest('article[data-call-id]');
    vscode.postMessage({
      action: button.dataset.action,
      callId: card instanceof HTMLElement ? card.dataset.callId : undefined,
      loc: button.dataset.loc !== undefined ? Number(button.dataset.loc) : undefined,
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

  updateEmpty();
  vscode.postMessage({ action: 'ready' });
})();
