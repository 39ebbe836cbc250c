import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { asCard, hunkHeader } from '../src/cards';
import {
  isEmptyAnswer,
  isLoadingAnswer,
  languageHasExtension,
  hoverContentText,
  normalizeHover,
  normalizeLocations,
  parseLspQueryParams,
  queryCommand,
} from '../src/lspQuery';
import { annotationsLabel, DEFAULT_TOOL_ANNOTATIONS, toolAnnotations } from '../src/protocol';
import { customKindCard, editCard, pendingEditCard, terminalCard } from './fixtures';

/** Stand-ins for vscode.Uri / Range / Location / LocationLink / Hover / MarkdownString. */
class FakeUri {
  constructor(private readonly value: string) {}
  toString(): string {
    return this.value;
  }
}
const pos = (line: number, character: number) => ({ line, character });
const range = (a: number, b: number, c: number, d: number) => ({ start: pos(a, b), end: pos(c, d) });
class MarkdownString {
  constructor(public value: string) {}
}

describe('lspQuery normalization', () => {
  it('maps operations to VS Code provider commands (tool names and LSP names)', () => {
    assert.equal(queryCommand('goToDefinition'), 'vscode.executeDefinitionProvider');
    assert.equal(queryCommand('findReferences'), 'vscode.executeReferenceProvider');
    assert.equal(queryCommand('goToImplementation'), 'vscode.executeImplementationProvider');
    assert.equal(queryCommand('hover'), 'vscode.executeHoverProvider');
    assert.equal(queryCommand('textDocument/definition'), 'vscode.executeDefinitionProvider');
    assert.equal(queryCommand('references'), 'vscode.executeReferenceProvider');
    assert.equal(queryCommand('rename'), undefined);
  });

  it('checks params', () => {
    const ok = parseLspQueryParams({ operation: 'hover', uri: 'file:///w/a.ts', position: { line: 0, character: 4 }, extra: 1 });
    assert.deepEqual(ok, { operation: 'hover', uri: 'file:///w/a.ts', position: { line: 0, character: 4 } });
    assert.throws(() => parseLspQueryParams(null), /params must be an object/);
    assert.throws(() => parseLspQueryParams({ operation: '', uri: 'x', position: pos(0, 0) }), /operation/);
    assert.throws(() => parseLspQueryParams({ operation: 'hover', position: pos(0, 0) }), /uri/);
    assert.throws(() => parseLspQueryParams({ operation: 'hover', uri: 'x', position: { line: -1, character: 0 } }), /position/);
    assert.throws(() => parseLspQueryParams({ operation: 'hover', uri: 'x', position: { line: 1.5, character: 0 } }), /position/);
  });

  it('Location results → {kind: "locations"} with plain JSON ranges', () => {
    const result = normalizeLocations([
      { uri: new FakeUri('file:///w/a.ts'), range: range(0, 16, 0, 21) },
      { uri: new FakeUri('file:///w/b.ts'), range: range(2, 4, 2, 9) },
    ]);
    assert.deepEqual(result, {
      kind: 'locations',
      locations: [
        { uri: 'file:///w/a.ts', range: range(0, 16, 0, 21) },
        { uri: 'file:///w/b.ts', range: range(2, 4, 2, 9) },
      ],
    });
  });

  it('LocationLink results use the target selection range (else the target range)', () => {
    const result = normalizeLocations([
      { originSelectionRange: range(5, 0, 5, 3), targetUri: new FakeUri('file:///w/a.ts'), targetRange: range(0, 0, 3, 1), targetSelectionRange: range(0, 16, 0, 21) },
      { targetUri: new FakeUri('file:///w/c.ts'), targetRange: range(7, 0, 9, 1) },
    ]);
    assert.deepEqual(result, {
      kind: 'locations',
      locations: [
        { uri: 'file:///w/a.ts', range: range(0, 16, 0, 21) },
        { uri: 'file:///w/c.ts', range: range(7, 0, 9, 1) },
      ],
    });
  });

  it('nothing → no locations; a single location; duplicates dropped; junk ignored', () => {
    assert.deepEqual(normalizeLocations(undefined), { kind: 'locations', locations: [] });
    assert.deepEqual(normalizeLocations(null), { kind: 'locations', locations: [] });
    const one = { uri: new FakeUri('file:///w/a.ts'), range: range(1, 2, 1, 3) };
    assert.equal(normalizeLocations(one).kind, 'locations');
    const r = normalizeLocations([one, { ...one }, 42, { nope: true }]);
    assert.equal(r.kind === 'locations' ? r.locations.length : -1, 1);
  });

  it('hover: markdown and marked strings joined by a blank line, first range kept', () => {
    const result = normalizeHover([
      { contents: [new MarkdownString('```typescript\nfunction greet(name: string): string\n```'), new MarkdownString('Says hello.')], range: range(2, 9, 2, 14) },
      { contents: [{ language: 'ts', value: 'let x: number' }, 'plain'], range: range(0, 0, 0, 1) },
    ]);
    assert.deepEqual(result, {
      kind: 'hover',
      hover: {
        contents: '```typescript\nfunction greet(name: string): string\n```\n\nSays hello.\n\n```ts\nlet x: number\n```\n\nplain',
        range: range(2, 9, 2, 14),
      },
    });
  });

  it('hover: no providers, or only empty contents → null; no range → no range key', () => {
    assert.deepEqual(normalizeHover([]), { kind: 'hover', hover: null });
    assert.deepEqual(normalizeHover(undefined), { kind: 'hover', hover: null });
    assert.deepEqual(normalizeHover([{ contents: [new MarkdownString('  ')] }]), { kind: 'hover', hover: null });
    assert.deepEqual(normalizeHover([{ contents: [new MarkdownString('x')] }]), { kind: 'hover', hover: { contents: 'x' } });
    assert.equal(hoverContentText({ value: 'v', language: '' }), 'v');
  });

  it('cards from the wire: defaults for missing fields, junk rejected', () => {
    assert.equal(asCard(null), undefined);
    assert.equal(asCard({ tool: 'x' }), undefined);
    const card = asCard({ callId: 'c', tool: 'edit', status: 'weird', kind: 42 });
    assert.deepEqual(card, { callId: 'c', tool: 'edit', status: 'pending', kind: 'generic', title: 'edit', text: '', rendered: '', locations: [] });
    assert.equal(asCard({ callId: 'c', tool: 'edit', kind: '' })?.kind, 'generic');
  });

  it('the card kind is an open string: known and unknown kinds are kept as sent, with their data', () => {
    for (const kind of ['diff', 'terminal', 'todo', 'question', 'fetch', 'structured', 'generic', 'nope', 'my-tool/view']) {
      assert.equal(asCard({ callId: 'c', tool: 't', kind })?.kind, kind);
    }
    for (const card of [terminalCard, customKindCard, editCard, pendingEditCard]) {
      assert.deepEqual(asCard(JSON.parse(JSON.stringify(card))), card, card.callId);
    }
    assert.deepEqual(asCard({ ...terminalCard, data: { nested: [1, { x: null }] } })?.data, { nested: [1, { x: null }] });
  });

  it('hunks from the wire: the header as sent; a missing one (an older server) as to_text wrote it', () => {
    const base = { path: 'a.txt', oldStart: 3, oldLines: 2, newStart: 4, newLines: 1, lines: [{ op: '-', text: 'x' }] };
    const wire = (hunks: unknown) => asCard({ callId: 'c', tool: 'edit', kind: 'diff', hunks })?.hunks;
    assert.equal(wire([{ ...base, header: '@@ -3,2 +4,1 @@ section' }])?.[0]?.header, '@@ -3,2 +4,1 @@ section');
    assert.equal(wire([base])?.[0]?.header, '@@ -3,2 +4,1 @@');
    assert.equal(wire([{ ...base, header: '' }])?.[0]?.header, '@@ -3,2 +4,1 @@');
    const pv = wire([{ ...base, oldStart: 0, newStart: 0, preview: true }])?.[0];
    assert.equal(pv?.header, '@@ preview -2 +1 @@');
    assert.equal(pv?.preview, true);
    assert.equal(hunkHeader({ ...base, preview: true, header: '@@ preview -2 +1 @@' }), '@@ preview -2 +1 @@');
    // no `preview` key is invented; junk hunks and lines are dropped; no hunks stays no hunks
    assert.equal('preview' in (wire([base])?.[0] ?? {}), false);
    assert.deepEqual(wire([null, 3, { ...base, lines: [{ op: '+', text: 'y' }, { op: 1 }] }])?.map((h) => h.lines), [[{ op: '+', text: 'y' }]]);
    assert.equal(wire(null), null);
    assert.equal(wire('junk'), null);
    assert.equal('hunks' in (asCard({ callId: 'c', tool: 'edit' }) ?? {}), false);
  });

  it('tool annotations: as declared, MCP defaults for what a tool does not say', () => {
    const read = { readOnly: true, destructive: false, idempotent: true, openWorld: false };
    assert.deepEqual(toolAnnotations({ annotations: read }), read);
    assert.deepEqual(toolAnnotations({}), DEFAULT_TOOL_ANNOTATIONS);
    assert.deepEqual(toolAnnotations({ annotations: { readOnly: true } as never }), { ...DEFAULT_TOOL_ANNOTATIONS, readOnly: true });
    assert.equal(annotationsLabel(read), 'read-only · idempotent');
    assert.equal(annotationsLabel(DEFAULT_TOOL_ANNOTATIONS), 'destructive · open world');
    assert.equal(annotationsLabel({ readOnly: false, destructive: false, idempotent: false, openWorld: false }), 'writes');
  });

  it('which languages the editor can answer for: an extension activating on the language, never plain text', () => {
    const extensions = [
      { id: 'vscode.typescript-language-features', activationEvents: ['onLanguage:typescript', 'onLanguage:javascript'] },
      { id: 'vscode.emmet', activationEvents: ['onLanguage'] },
      { id: 'vscode.cpp' },
      { id: 'toolhost.toolhost', activationEvents: ['onLanguage:c'] },
    ];
    assert.equal(languageHasExtension('typescript', extensions, 'toolhost.toolhost'), true);
    assert.equal(languageHasExtension('c', extensions, 'toolhost.toolhost'), false, 'only a grammar (and ourselves)');
    assert.equal(languageHasExtension('plaintext', [{ id: 'x', activationEvents: ['onLanguage:plaintext'] }], 'toolhost.toolhost'), false);
  });

  it('empty and loading answers', () => {
    assert.equal(isEmptyAnswer({ kind: 'locations', locations: [] }), true);
    assert.equal(isEmptyAnswer({ kind: 'hover', hover: null }), true);
    assert.equal(isEmptyAnswer({ kind: 'hover', hover: { contents: 'x' } }), false);
    assert.equal(isLoadingAnswer({ kind: 'hover', hover: { contents: '```typescript\n(loading...) import greet\n```' } }), true);
    assert.equal(isLoadingAnswer({ kind: 'hover', hover: { contents: 'function greet' } }), false);
  });
});
