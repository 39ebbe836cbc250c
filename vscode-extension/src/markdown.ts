// A small markdown → HTML renderer for the plans of plan mode (`exit_plan_mode`: the plan card and
// the plan review form). It knows the constructs plans are written with — ATX headings, bullet,
// ordered and task lists (nested by indentation), fenced code blocks, block quotes, rules,
// paragraphs, and inline code, bold, italics and links — and escapes everything: the text comes
// from an agent, so no HTML of its own ever reaches the page (the CSP forbids scripts anyway, but
// markup could still fake buttons or hide text). Links are not followed: their text is shown with
// the address as its tooltip. Own code instead of markdown-it, because the extension host cannot
// reach VS Code's copy and a full CommonMark engine (with its own HTML/linkify options to get right)
// is far more than plans need. Pure: no `vscode` import.

import { escapeHtml } from './html';

/** Inline markdown of one line of text (already a single line or a paragraph joined by spaces). */
export function inlineHtml(text: string): string {
  // Code spans first: nothing inside them is markup.
  let out = '';
  let last = 0;
  for (const m of text.matchAll(/(`+)(?!`)([\s\S]*?[^`])\1(?!`)/g)) {
    out += emphasis(escapeHtml(text.slice(last, m.index)));
    const code = m[2] ?? '';
    // One space on each side is padding (so a span can start or end with a backtick).
    out += `<code>${escapeHtml(/^ .* $/.test(code) ? code.slice(1, -1) : code)}</code>`;
    last = m.index + m[0].length;
  }
  return out + emphasis(escapeHtml(text.slice(last)));
}

/** Links, bold and italics in escaped text. Escaping leaves `*`, `_`, `[`, `]`, `(` and `)` alone
 * and every captured group is escaped text, so the result holds only the tags added here. */
function emphasis(escaped: string): string {
  return escaped
    .replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, (_m, label: string, href: string) => `<span class="md-link" title="${href}">${label}</span>`)
    .replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, '<strong>$1</strong>')
    .replace(/(^|[^\w])__(?=\S)([\s\S]*?\S)__(?=[^\w]|$)/g, '$1<strong>$2</strong>')
    .replace(/\*(?=[^\s*])([^*]*?[^\s*])\*/g, '<em>$1</em>')
    .replace(/(^|[^\w])_(?=[^\s_])([^_]*?[^\s_])_(?=[^\w]|$)/g, '$1<em>$2</em>');
}

interface ListItem {
  indent: number;
  ordered: boolean;
  /** `[ ]` / `[x]` task items. */
  task?: boolean;
  text: string;
}

const LIST_ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;

/** Nested lists from consecutive list lines: an item indented deeper than the previous one opens
 * a list inside it. */
function listHtml(items: ListItem[]): string {
  let out = '';
  const stack: { indent: number; ordered: boolean }[] = [];
  const close = () => {
    const top = stack.pop();
    out += `</li></${top?.ordered ? 'ol' : 'ul'}>`;
  };
  for (const item of items) {
    while (stack.length > 0 && item.indent < (stack[stack.length - 1]?.indent ?? 0)) {
      close();
    }
    const top = stack[stack.length - 1];
    if (!top || item.indent > top.indent) {
      stack.push({ indent: item.indent, ordered: item.ordered });
      out += `<${item.ordered ? 'ol' : 'ul'} class="md-list">`;
    } else {
      out += '</li>';
    }
    if (item.task !== undefined) {
      out += `<li class="md-task${item.task ? ' done' : ''}"><span class="md-check" aria-label="${item.task ? 'done' : 'not done'}">${item.task ? '☑' : '☐'}</span> ${inlineHtml(item.text)}`;
    } else {
      out += `<li>${inlineHtml(item.text)}`;
    }
  }
  while (stack.length > 0) {
    close();
  }
  return out;
}

/** The whole document. */
export function markdownHtml(source: string): string {
  const lines = source.replace(/\r\n?/g, '\n').split('\n');
  const out: string[] = [];
  let paragraph: string[] = [];
  let items: ListItem[] = [];
  let quote: string[] = [];
  const flush = () => {
    if (paragraph.length > 0) {
      out.push(`<p>${inlineHtml(paragraph.join(' '))}</p>`);
      paragraph = [];
    }
    if (items.length > 0) {
      out.push(listHtml(items));
      items = [];
    }
    if (quote.length > 0) {
      out.push(`<blockquote>${markdownHtml(quote.join('\n'))}</blockquote>`);
      quote = [];
    }
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const fence = /^\s*(`{3,}|~{3,})\s*([^`\s]*)/.exec(line);
    if (fence) {
      flush();
      const marker = fence[1] ?? '```';
      const body: string[] = [];
      for (i++; i < lines.length && !(lines[i] ?? '').trim().startsWith(marker); i++) {
        body.push(lines[i] ?? '');
      }
      const lang = fence[2] ? ` data-lang="${escapeHtml(fence[2])}"` : '';
      out.push(`<pre class="md-code"${lang}><code>${escapeHtml(body.join('\n'))}</code></pre>`);
      continue;
    }
    if (line.trim() === '') {
      flush();
      continue;
    }
    const quoted = /^\s{0,3}>\s?(.*)$/.exec(line);
    if (quoted) {
      if (quote.length === 0) {
        flush();
      }
      quote.push(quoted[1] ?? '');
      continue;
    }
    if (quote.length > 0) {
      flush();
    }
    const heading = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      flush();
      const level = heading[1]?.length ?? 1;
      out.push(`<h${level}>${inlineHtml(heading[2] ?? '')}</h${level}>`);
      continue;
    }
    if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flush();
      out.push('<hr>');
      continue;
    }
    const item = LIST_ITEM.exec(line);
    if (item) {
      if (paragraph.length > 0) {
        flush();
      }
      const text = item[3] ?? '';
      const task = /^\[([ xX])\]\s+(.*)$/.exec(text);
      items.push({
        indent: (item[1] ?? '').replace(/\t/g, '    ').length,
        ordered: /\d/.test(item[2] ?? ''),
        ...(task ? { task: task[1] !== ' ', text: task[2] ?? '' } : { text }),
      });
      continue;
    }
    if (items.length > 0 && /^\s+\S/.test(line)) {
      // A continuation line of the last item.
      const last = items[items.length - 1];
      if (last) {
        last.text += ` ${line.trim()}`;
      }
      continue;
    }
    if (items.length > 0) {
      flush();
    }
    paragraph.push(line.trim());
  }
  flush();
  return out.join('');
}
