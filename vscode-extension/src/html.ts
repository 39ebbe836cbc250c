// HTML escaping for everything the panel shows (cards, terminal output). Its own module so that
// the renderers (cardHtml.ts, ansi.ts) share it without importing each other. Pure: no `vscode`
// import.

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}
