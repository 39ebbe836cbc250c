// The session picker above the panel's cards: "This workspace" (the live cards) or one of the
// workspace's worktree sessions (its cards, replayed as its log grows), with Apply and Discard
// beside it while a worktree session is chosen; and the banner over a worktree session's cards.
// media/panel.js sends the choice, a refresh when the picker gets the focus (about to open), and
// the buttons. Pure: no `vscode` import.

import { escapeHtml } from './html';
import { worktreeLabel, type WorktreeInfo } from './worktrees';

/** The label of the picker's first choice. */
export const THIS_WORKSPACE = 'This workspace';

/** The picker: `list` in the server's order, `shown` the session id chosen (undefined: this
 * workspace). A chosen session the list no longer has stays chosen under its id until the
 * extension goes back to the workspace. */
export function sessionPickerHtml(list: readonly WorktreeInfo[], shown: string | undefined): string {
  const option = (value: string, label: string, title: string) =>
    `<option value="${escapeHtml(value)}"${value === (shown ?? '') ? ' selected' : ''}${title ? ` title="${escapeHtml(title)}"` : ''}>${escapeHtml(label)}</option>`;
  const options = [option('', THIS_WORKSPACE, 'The live cards of this workspace\'s session')];
  for (const info of list) {
    options.push(option(info.sessionId, worktreeLabel(info), info.root));
  }
  if (shown !== undefined && !list.some((w) => w.sessionId === shown)) {
    options.push(option(shown, shown, ''));
  }
  const hidden = shown === undefined ? ' hidden' : '';
  return (
    `<div class="session-picker" role="group" aria-label="whose cards the panel shows">` +
    `<label for="session-select">Cards of</label>` +
    `<select id="session-select" title="This workspace's live cards, or a worktree session's">${options.join('')}</select>` +
    `<span class="session-actions">` +
    `<button type="button" class="action" data-action="worktree" data-op="apply"${hidden} title="Bring its changes into this workspace, hunk by hunk">Apply</button>` +
    `<button type="button" class="action" data-action="worktree" data-op="discard"${hidden} title="Remove its worktree, branch and session log">Discard</button>` +
    `</span></div>`
  );
}

/** The banner over a worktree session's cards (instead of a replay's): its name, how many cards,
 * and the way back to this workspace's live cards. */
export function worktreeBanner(name: string, count: number): string {
  return (
    `<div class="replay-banner worktree-banner">Worktree session <code>${escapeHtml(name)}</code> · ${count} ${count === 1 ? 'card' : 'cards'} · live ` +
    `<button type="button" class="action" data-action="live">Back to this workspace</button></div>`
  );
}
