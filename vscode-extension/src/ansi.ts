// Terminal output → styled lines for the panel. SGR sequences (colours, bold, dim, italic,
// underline, …) become classes; every other escape sequence (cursor moves, erases, titles,
// hyperlinks, …) and every other control character is dropped, since the panel is no terminal and
// would otherwise show them as junk. The 16 colours are classes drawn with the theme's terminal
// colours (`--vscode-terminal-ansi*`); a 256-colour or truecolor colour is an `#rrggbb` in a
// `data-fg`/`data-bg` attribute that media/panel.js applies through the CSSOM, because the
// webview's CSP forbids `style` attributes in markup. All text is HTML-escaped. Pure: no `vscode`
// import.

import { escapeHtml } from './html';

/** A colour: a palette index 0–15 (the theme's terminal colours) or `#rrggbb`. */
export type AnsiColour = number | string;

export interface AnsiStyle {
  bold: boolean;
  dim: boolean;
  italic: boolean;
  underline: boolean;
  strike: boolean;
  inverse: boolean;
  fg?: AnsiColour;
  bg?: AnsiColour;
}

export interface AnsiSpan {
  text: string;
  style: AnsiStyle;
}

/** One output line: its spans, in order (none for an empty line). */
export type AnsiLine = AnsiSpan[];

export function plainStyle(): AnsiStyle {
  return { bold: false, dim: false, italic: false, underline: false, strike: false, inverse: false };
}

function sameStyle(a: AnsiStyle, b: AnsiStyle): boolean {
  return (
    a.bold === b.bold &&
    a.dim === b.dim &&
    a.italic === b.italic &&
    a.underline === b.underline &&
    a.strike === b.strike &&
    a.inverse === b.inverse &&
    a.fg === b.fg &&
    a.bg === b.bg
  );
}

function isPlain(style: AnsiStyle): boolean {
  return sameStyle(style, plainStyle());
}

// One token per match: an escape sequence (kept only when it is SGR), a line break, a carriage
// return, or another control character (dropped). An escape sequence cut off at the end of the
// text (live output arrives in pieces) is dropped as well, so its tail never shows as text.
const TOKEN = new RegExp(
  [
    '(?:\\x1b\\[|\\x9b)[0-?]*[ -/]*[@-~]', // CSI (SGR among them)
    '(?:\\x1b\\[|\\x9b)[0-?]*[ -/]*$', // CSI cut off
    '(?:\\x1b\\]|\\x9d)[^\\x07\\x1b\\x9c]*(?:\\x07|\\x1b\\\\|\\x9c|(?=\\x1b)|$)', // OSC (titles, hyperlinks)
    '(?:\\x1b[P^_X]|[\\x90\\x98\\x9e\\x9f])[\\s\\S]*?(?:\\x1b\\\\|\\x9c|$)', // DCS, SOS, PM, APC
    '\\x1b[ -/]*[0-~]', // other escapes (charsets, ESC 7/8, ESC c, …)
    '\\x1b[ -/]*$', // an escape cut off
    '\\r\\n|\\n',
    '\\r',
    '[\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\x9f]',
  ].join('|'),
  'g',
);

// (matching control characters is the point here)
// eslint-disable-next-line no-control-regex
const SGR = /^(?:\x1b\[|\x9b)([0-9;:]*)m$/;

/** The 6×6×6 cube and the grey ramp of the 256 colours (xterm's values). */
function colour256(n: number): AnsiColour | undefined {
  if (!Number.isInteger(n) || n < 0 || n > 255) {
    return undefined;
  }
  if (n < 16) {
    return n;
  }
  const hex = (v: number) => v.toString(16).padStart(2, '0');
  if (n >= 232) {
    const v = 8 + 10 * (n - 232);
    return `#${hex(v)}${hex(v)}${hex(v)}`;
  }
  const levels = [0, 95, 135, 175, 215, 255];
  const i = n - 16;
  return `#${hex(levels[Math.floor(i / 36)] ?? 0)}${hex(levels[Math.floor(i / 6) % 6] ?? 0)}${hex(levels[i % 6] ?? 0)}`;
}

function rgb(r: number, g: number, b: number): AnsiColour | undefined {
  const ok = (v: number) => Number.isInteger(v) && v >= 0 && v <= 255;
  if (!ok(r) || !ok(g) || !ok(b)) {
    return undefined;
  }
  const hex = (v: number) => v.toString(16).padStart(2, '0');
  return `#${hex(r)}${hex(g)}${hex(b)}`;
}

/** An extended colour (38/48/58): from its colon sub-parameters (`38:5:n`, `38:2::r:g:b`) or the
 * semicolon parameters that follow (`38;5;n`, `38;2;r;g;b`). Returns the colour (undefined when
 * malformed) and how many of the following parameters it used. */
function extendedColour(sub: number[], rest: number[][]): { colour: AnsiColour | undefined; used: number } {
  if (sub.length > 1) {
    const [, mode, ...args] = sub;
    if (mode === 5) {
      return { colour: colour256(args[0] ?? -1), used: 0 };
    }
    if (mode === 2) {
      // `38:2:<colour space>:r:g:b` or `38:2:r:g:b`: the last three
      const [r = -1, g = -1, b = -1] = args.slice(-3);
      return { colour: rgb(r, g, b), used: 0 };
    }
    return { colour: undefined, used: 0 };
  }
  const mode = rest[0]?.[0];
  if (mode === 5) {
    return { colour: colour256(rest[1]?.[0] ?? -1), used: 2 };
  }
  if (mode === 2) {
    return { colour: rgb(rest[1]?.[0] ?? -1, rest[2]?.[0] ?? -1, rest[3]?.[0] ?? -1), used: 4 };
  }
  return { colour: undefined, used: mode === undefined ? 0 : 1 };
}

/** Applies one SGR sequence's parameters (`"1;31"`, `""` = reset) to `style`, in place. */
export function applySgr(style: AnsiStyle, params: string): void {
  // An empty parameter means 0 (`ESC[m`, `ESC[;1m`).
  const list = params.split(';').map((p) => p.split(':').map((v) => (v === '' ? 0 : Number(v))));
  for (let i = 0; i < list.length; i++) {
    const sub = list[i] ?? [0];
    const code = sub[0] ?? 0;
    if (code === 0) {
      Object.assign(style, plainStyle());
      delete style.fg;
      delete style.bg;
    } else if (code === 1) {
      style.bold = true;
    } else if (code === 2) {
      style.dim = true;
    } else if (code === 3) {
      style.italic = true;
    } else if (code === 4) {
      // `4:0` is "no underline"; `4:1`…`4:5` are underline styles, drawn as one
      style.underline = sub.length < 2 || sub[1] !== 0;
    } else if (code === 7) {
      style.inverse = true;
    } else if (code === 9) {
      style.strike = true;
    } else if (code === 21) {
      style.underline = true;
    } else if (code === 22) {
      style.bold = false;
      style.dim = false;
    } else if (code === 23) {
      style.italic = false;
    } else if (code === 24) {
      style.underline = false;
    } else if (code === 27) {
      style.inverse = false;
    } else if (code === 29) {
      style.strike = false;
    } else if (code >= 30 && code <= 37) {
      style.fg = code - 30;
    } else if (code === 39) {
      delete style.fg;
    } else if (code >= 40 && code <= 47) {
      style.bg = code - 40;
    } else if (code === 49) {
      delete style.bg;
    } else if (code >= 90 && code <= 97) {
      style.fg = code - 90 + 8;
    } else if (code >= 100 && code <= 107) {
      style.bg = code - 100 + 8;
    } else if (code === 38 || code === 48 || code === 58) {
      const { colour, used } = extendedColour(sub, list.slice(i + 1));
      i += used;
      // 58 is the underline colour: consumed, not drawn
      if (colour !== undefined && code !== 58) {
        if (code === 38) {
          style.fg = colour;
        } else {
          style.bg = colour;
        }
      }
    }
    // everything else (blink, hidden, fonts, …) is ignored
  }
}

/** Parses terminal output into lines of styled spans. `\r\n` is a line break; a lone `\r`
 * (progress bars) starts its line over, as a terminal shows it once the line is rewritten; a
 * trailing line break ends the last line rather than starting an empty one. The style carries
 * over from line to line, as in a terminal. */
export function parseAnsi(text: string): AnsiLine[] {
  const lines: AnsiLine[] = [];
  let line: AnsiLine = [];
  const style = plainStyle();
  const push = (chunk: string) => {
    if (chunk === '') {
      return;
    }
    const last = line[line.length - 1];
    if (last && sameStyle(last.style, style)) {
      last.text += chunk;
    } else {
      line.push({ text: chunk, style: { ...style } });
    }
  };
  let at = 0;
  TOKEN.lastIndex = 0;
  for (let m = TOKEN.exec(text); m !== null; m = TOKEN.exec(text)) {
    push(text.slice(at, m.index));
    at = m.index + m[0].length;
    const token = m[0];
    if (token === '\n' || token === '\r\n') {
      lines.push(line);
      line = [];
    } else if (token === '\r') {
      // A `\r` at the very end may be the first half of a `\r\n` still on its way (live output).
      if (at < text.length) {
        line = [];
      }
    } else {
      const sgr = SGR.exec(token);
      if (sgr) {
        applySgr(style, sgr[1] ?? '');
      }
    }
  }
  push(text.slice(at));
  if (line.length > 0) {
    lines.push(line);
  }
  return lines;
}

/** The classes (and CSSOM colours) of a style. Inverse swaps the colours; a default colour
 * swapped in is the terminal's background or foreground (`ansi-*-inverse`). */
function styleAttrs(style: AnsiStyle): string {
  const classes: string[] = [];
  const data: string[] = [];
  const flags: [keyof AnsiStyle, string][] = [
    ['bold', 'ansi-bold'],
    ['dim', 'ansi-dim'],
    ['italic', 'ansi-italic'],
    ['underline', 'ansi-underline'],
    ['strike', 'ansi-strike'],
  ];
  for (const [key, cls] of flags) {
    if (style[key] === true) {
      classes.push(cls);
    }
  }
  const fg = style.inverse ? style.bg : style.fg;
  const bg = style.inverse ? style.fg : style.bg;
  for (const [which, colour] of [
    ['fg', fg],
    ['bg', bg],
  ] as const) {
    if (typeof colour === 'number') {
      classes.push(`ansi-${which}-${colour}`);
    } else if (typeof colour === 'string') {
      classes.push(`ansi-${which}-rgb`);
      data.push(` data-${which}="${escapeHtml(colour)}"`);
    } else if (style.inverse) {
      classes.push(`ansi-${which}-inverse`);
    }
  }
  return `${classes.length > 0 ? ` class="${classes.join(' ')}"` : ''}${data.join('')}`;
}

/** One line's spans as HTML: plain text escaped, styled text in a `<span>`. */
export function lineHtml(line: AnsiLine): string {
  return line
    .map((span) => (isPlain(span.style) ? escapeHtml(span.text) : `<span${styleAttrs(span.style)}>${escapeHtml(span.text)}</span>`))
    .join('');
}

/** The text of a line, escapes gone (what a person reads). */
export function lineText(line: AnsiLine): string {
  return line.map((span) => span.text).join('');
}

/** Terminal output as HTML lines (one string per line). */
export function ansiToHtml(text: string): string[] {
  return parseAnsi(text).map(lineHtml);
}
