import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ansiToHtml, applySgr, lineHtml, lineText, parseAnsi, plainStyle, type AnsiStyle } from '../src/ansi';
import { textOf } from './helpers';

const ESC = '\x1b';

/** Each line as `[text, classes and data attributes]` pairs of its spans. */
function spans(text: string): [string, string][][] {
  return ansiToHtml(text).map((html) => {
    const out: [string, string][] = [];
    for (const m of html.matchAll(/<span([^>]*)>(.*?)<\/span>|([^<]+)/g)) {
      if (m[3] !== undefined) {
        out.push([textOf(m[3]), '']);
      } else {
        out.push([textOf(m[2] ?? ''), (m[1] ?? '').trim()]);
      }
    }
    return out;
  });
}

function style(params: string, from: AnsiStyle = plainStyle()): AnsiStyle {
  const s = { ...from };
  applySgr(s, params);
  return s;
}

describe('ANSI → styled spans', () => {
  it('plain text is escaped, lines split, a trailing line break ends the last line', () => {
    assert.deepEqual(ansiToHtml('a < b && c > "d"\nsecond\n'), ['a &lt; b &amp;&amp; c &gt; &quot;d&quot;', 'second']);
    assert.deepEqual(ansiToHtml(''), []);
    assert.deepEqual(ansiToHtml('\n'), ['']);
    assert.deepEqual(ansiToHtml('a\n\nb'), ['a', '', 'b']);
    assert.deepEqual(ansiToHtml('dos\r\nline\r\n'), ['dos', 'line']);
  });

  it('the 8 colours, bright ones, backgrounds, and reset', () => {
    assert.deepEqual(spans(`${ESC}[31mred${ESC}[0m plain`), [[['red', 'class="ansi-fg-1"'], [' plain', '']]]);
    assert.deepEqual(spans(`${ESC}[32;44mgreen on blue${ESC}[m`), [[['green on blue', 'class="ansi-fg-2 ansi-bg-4"']]]);
    assert.deepEqual(spans(`${ESC}[91mbright red${ESC}[39m ${ESC}[103mbright yellow bg${ESC}[49m.`), [
      [
        ['bright red', 'class="ansi-fg-9"'],
        [' ', ''],
        ['bright yellow bg', 'class="ansi-bg-11"'],
        ['.', ''],
      ],
    ]);
    for (let i = 0; i < 8; i++) {
      assert.deepEqual(style(`${30 + i}`).fg, i);
      assert.deepEqual(style(`${40 + i}`).bg, i);
      assert.deepEqual(style(`${90 + i}`).fg, i + 8);
      assert.deepEqual(style(`${100 + i}`).bg, i + 8);
    }
  });

  it('bold, dim, italic, underline, strike and their resets', () => {
    assert.deepEqual(spans(`${ESC}[1mB${ESC}[22m${ESC}[2mD${ESC}[22m${ESC}[3mI${ESC}[23m${ESC}[4mU${ESC}[24m${ESC}[9mS${ESC}[29mx`), [
      [
        ['B', 'class="ansi-bold"'],
        ['D', 'class="ansi-dim"'],
        ['I', 'class="ansi-italic"'],
        ['U', 'class="ansi-underline"'],
        ['S', 'class="ansi-strike"'],
        ['x', ''],
      ],
    ]);
    const all = style('1;3;4;31;42');
    assert.deepEqual(spans(`${ESC}[1;3;4;31;42mall${ESC}[0mnone`), [[['all', 'class="ansi-bold ansi-italic ansi-underline ansi-fg-1 ansi-bg-2"'], ['none', '']]]);
    assert.deepEqual(style('0', all), plainStyle());
    assert.deepEqual(style('', all), plainStyle(), 'ESC[m is a reset');
    assert.equal(style('4:0', style('4')).underline, false, '4:0 is no underline');
    assert.equal(style('4:3').underline, true, 'curly underline is drawn as underline');
  });

  it('the style carries over to the next line, as in a terminal', () => {
    assert.deepEqual(spans(`${ESC}[33mone\ntwo${ESC}[0m\nthree`), [[['one', 'class="ansi-fg-3"']], [['two', 'class="ansi-fg-3"']], [['three', '']]]);
  });

  it('256 colours and truecolor: the 16 as classes, the rest as #rrggbb data attributes', () => {
    assert.deepEqual(spans(`${ESC}[38;5;1mA${ESC}[38;5;12mB${ESC}[38;5;196mC${ESC}[48;5;232mD${ESC}[0m`), [
      [
        ['A', 'class="ansi-fg-1"'],
        ['B', 'class="ansi-fg-12"'],
        ['C', 'class="ansi-fg-rgb" data-fg="#ff0000"'],
        ['D', 'class="ansi-fg-rgb ansi-bg-rgb" data-fg="#ff0000" data-bg="#080808"'],
      ],
    ]);
    assert.equal(style('38;5;16').fg, '#000000');
    assert.equal(style('38;5;231').fg, '#ffffff');
    assert.equal(style('38;5;67').fg, '#5f87af');
    assert.equal(style('38;5;255').fg, '#eeeeee');
    assert.equal(style('38;2;255;128;0').fg, '#ff8000');
    assert.equal(style('48;2;1;2;3').bg, '#010203');
    // the colon forms (ITU T.416), with and without a colour space
    assert.equal(style('38:5:208').fg, '#ff8700');
    assert.equal(style('38:2::10:20:30').fg, '#0a141e');
    assert.equal(style('38:2:10:20:30').fg, '#0a141e');
    // the parameters of an extended colour are not read as codes of their own (5 = blink, 1 = bold)
    assert.deepEqual(style('38;5;1;4'), { ...plainStyle(), fg: 1, underline: true });
    assert.deepEqual(style('38;2;1;1;1'), { ...plainStyle(), fg: '#010101' });
    // out of range or cut short: no colour, nothing else changed
    assert.deepEqual(style('38;5;300'), plainStyle());
    assert.deepEqual(style('38;2;1;2'), plainStyle());
    // the underline colour (58) is consumed, not drawn
    assert.deepEqual(style('58;5;9;1'), { ...plainStyle(), bold: true });
  });

  it('inverse swaps the colours; a default colour swapped in is the terminal\'s', () => {
    assert.deepEqual(spans(`${ESC}[7;31mx`), [[['x', 'class="ansi-fg-inverse ansi-bg-1"']]]);
    assert.deepEqual(spans(`${ESC}[7mx${ESC}[27my`), [[['x', 'class="ansi-fg-inverse ansi-bg-inverse"'], ['y', '']]]);
  });

  it('cursor moves, erases, titles, hyperlinks and other escapes are stripped; their text stays', () => {
    const text =
      `${ESC}[2J${ESC}[H${ESC}[1;1Hstart ${ESC}[2K${ESC}[3Amoved ${ESC}[?25lhidden-cursor ${ESC}[?25h` +
      `${ESC}]0;window title\x07${ESC}]8;;https://example.com${ESC}\\link${ESC}]8;;${ESC}\\ ` +
      `${ESC}(B${ESC}7${ESC}8${ESC}=${ESC}Pdcs payload${ESC}\\end\x07\x08\x00`;
    assert.deepEqual(parseAnsi(text).map(lineText), ['start moved hidden-cursor link end']);
    const html = ansiToHtml(text).join('\n');
    assert.ok(!html.includes(ESC), 'no escape character left');
    assert.doesNotMatch(html, /\[|window title|example\.com|dcs payload/);
    // an escape cut off at the end (live output arrives in pieces) shows nothing of itself
    assert.deepEqual(parseAnsi(`abc${ESC}[3`).map(lineText), ['abc']);
    assert.deepEqual(parseAnsi(`abc${ESC}`).map(lineText), ['abc']);
    assert.deepEqual(parseAnsi(`abc${ESC}]0;tit`).map(lineText), ['abc']);
    // 8-bit CSI
    assert.deepEqual(spans('\x9b31mred'), [[['red', 'class="ansi-fg-1"']]]);
  });

  it('escapes `<` and friends inside styled spans too; nothing of the text becomes markup', () => {
    const html = ansiToHtml(`${ESC}[31m<script>alert("x")</script>${ESC}[0m & <b>`);
    assert.deepEqual(html, ['<span class="ansi-fg-1">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</span> &amp; &lt;b&gt;']);
    assert.doesNotMatch(html.join(''), /<script|<b>/);
    // a colour is only ever the converter's own #rrggbb in the attribute
    assert.match(lineHtml([{ text: 'x', style: { ...plainStyle(), fg: '#"><img' } }]), /data-fg="#&quot;&gt;&lt;img"/);
  });

  it('a lone \\r starts the line over (progress bars); one at the very end waits for its \\n', () => {
    assert.deepEqual(parseAnsi('10%\r50%\r100%\ndone').map(lineText), ['100%', 'done']);
    assert.deepEqual(parseAnsi('line 1\r').map(lineText), ['line 1']);
    // the style set on an overwritten part still applies
    assert.deepEqual(spans(`${ESC}[32mwaiting\rok\n`), [[['ok', 'class="ansi-fg-2"']]]);
  });

  it('tabs stay; other control characters go', () => {
    assert.deepEqual(parseAnsi('a\tb\x07\x01c\x7f').map(lineText), ['a\tbc']);
  });
});
