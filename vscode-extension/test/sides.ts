// Expands a reconstructed diff side with the real file's lines: every `⋯ N unchanged line(s)`
// marker becomes those N lines; every other line must equal the file's line at that place.
import assert from 'node:assert/strict';

export function expandSide(side: string, fileLines: readonly string[]): string[] {
  const out: string[] = [];
  if (side === '') {
    return out;
  }
  for (const line of side.split('\n')) {
    const marker = /^⋯ (\d+) unchanged lines?$/.exec(line);
    if (marker) {
      const n = Number(marker[1]);
      out.push(...fileLines.slice(out.length, out.length + n));
    } else {
      assert.equal(line, fileLines[out.length], `line ${out.length + 1} differs from the file`);
      out.push(line);
    }
  }
  return out;
}
