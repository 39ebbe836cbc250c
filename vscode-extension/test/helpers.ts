// Test helpers: a tiny HTML reader for the card markup (enough for the renderer's own output),
// and fixtures.

const ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'" };

export function unescapeHtml(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|#39);/g, (m) => ENTITIES[m] ?? m);
}

/** The text content of an HTML fragment (tags dropped, entities decoded). */
export function textOf(html: string): string {
  return unescapeHtml(html.replace(/<[^>]*>/g, ''));
}

/** The diff lines a card element shows, in order: hunk headers and `op`+`text` lines — what a
 * person reads, and what the e2e test collects from the live DOM. */
export function diffLinesOf(html: string): string[] {
  const out: string[] = [];
  const re = /<div class="hunk-header"[^>]*>(.*?)<\/div>|<div class="line [a-z]+" data-op="[^"]*"><span class="op" aria-hidden="true">(.*?)<\/span><span class="text">(.*?)<\/span><\/div>/g;
  for (const m of html.matchAll(re)) {
    out.push(m[1] !== undefined ? unescapeHtml(m[1]) : unescapeHtml((m[2] ?? '') + (m[3] ?? '')));
  }
  return out;
}

/** The search lines a card element shows. */
export function searchLinesOf(html: string): string[] {
  return [...html.matchAll(/<li class="search-line[^"]*">(.*?)<\/li>/g)].map((m) => textOf(m[1] ?? ''));
}

/** Every element's attribute values of `name`. */
export function attrValues(html: string, name: string): string[] {
  return [...html.matchAll(new RegExp(`\\s${name}="([^"]*)"`, 'g'))].map((m) => unescapeHtml(m[1] ?? ''));
}
