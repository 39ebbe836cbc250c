// `toolhost/lspQuery`, the editor-backed lsp provider's request (docs/protocol.md): its params, the
// VS Code provider command answering each operation, whether an extension may serve a language,
// and the normalization of VS Code's navigation and hover results (Location, LocationLink, Hover,
// structurally typed so the tests need no `vscode`) into the answer's shape. Pure: no `vscode`
// import, so `node --test` covers it.

import { isIndex, isObject } from './guards';

export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

export interface LspQueryParams {
  operation: string;
  uri: string;
  position: Position;
}

export interface WireLocation {
  uri: string;
  range: Range;
}

export type LspQueryResult =
  | { kind: 'locations'; locations: WireLocation[] }
  | { kind: 'hover'; hover: { contents: string; range?: Range } | null };

/** The provider commands of VS Code that answer each lspQuery operation. */
export type QueryCommand =
  | 'vscode.executeDefinitionProvider'
  | 'vscode.executeReferenceProvider'
  | 'vscode.executeImplementationProvider'
  | 'vscode.executeHoverProvider';

const OPERATIONS: Record<string, QueryCommand> = {
  gotodefinition: 'vscode.executeDefinitionProvider',
  definition: 'vscode.executeDefinitionProvider',
  'textdocument/definition': 'vscode.executeDefinitionProvider',
  findreferences: 'vscode.executeReferenceProvider',
  references: 'vscode.executeReferenceProvider',
  'textdocument/references': 'vscode.executeReferenceProvider',
  gotoimplementation: 'vscode.executeImplementationProvider',
  implementation: 'vscode.executeImplementationProvider',
  'textdocument/implementation': 'vscode.executeImplementationProvider',
  hover: 'vscode.executeHoverProvider',
  'textdocument/hover': 'vscode.executeHoverProvider',
};

/** The VS Code command answering `operation` (the lsp tool's names, case-insensitive, or the LSP
 * method names), or undefined when the operation is unknown. */
export function queryCommand(operation: string): QueryCommand | undefined {
  return OPERATIONS[operation.toLowerCase()];
}

/** Codes the server keeps from an lspQuery error's `data.code` (the lsp tool's error codes). */
export const LSP_UNAVAILABLE = 'LSP_UNAVAILABLE';
export const LSP_UNSUPPORTED_OPERATION = 'LSP_UNSUPPORTED_OPERATION';

/** What an installed extension declares (from its package.json). */
export interface ExtensionInfo {
  id: string;
  activationEvents?: readonly string[];
}

/** Whether some extension (other than `selfId`) activates for `languageId` files, so VS Code may
 * have definition/hover providers for them. A language no extension serves (plain text, or only a
 * grammar) cannot be answered by the editor: the server should ask a language server itself. */
export function languageHasExtension(languageId: string, extensions: readonly ExtensionInfo[], selfId: string): boolean {
  if (languageId === 'plaintext' || languageId === '') {
    return false;
  }
  const event = `onLanguage:${languageId}`;
  return extensions.some(
    (ext) => ext.id.toLowerCase() !== selfId.toLowerCase() && (ext.activationEvents ?? []).some((e) => e === event),
  );
}

/** Whether a normalized answer carries nothing. */
export function isEmptyAnswer(result: LspQueryResult): boolean {
  return result.kind === 'hover' ? result.hover === null : result.locations.length === 0;
}

/** Whether a hover is a placeholder of a language server still loading its project. */
export function isLoadingAnswer(result: LspQueryResult): boolean {
  return result.kind === 'hover' && result.hover !== null && result.hover.contents.includes('(loading...)');
}

/** Checks and returns lspQuery params; throws a message for malformed ones. */
export function parseLspQueryParams(raw: unknown): LspQueryParams {
  if (!isObject(raw)) {
    throw new Error('params must be an object');
  }
  const { operation, uri, position } = raw;
  if (typeof operation !== 'string' || operation === '') {
    throw new Error('operation must be a non-empty string');
  }
  if (typeof uri !== 'string' || uri === '') {
    throw new Error('uri must be a non-empty string');
  }
  if (!isObject(position) || !isIndex(position.line) || !isIndex(position.character)) {
    throw new Error('position must be {line, character} with non-negative integers');
  }
  return { operation, uri, position: { line: position.line, character: position.character } };
}

// ---- normalization of VS Code API results (structurally typed, so tests need no `vscode`) ----

/** A `vscode.Position`-like value. */
export interface PositionLike {
  line: number;
  character: number;
}

/** A `vscode.Range`-like value. */
export interface RangeLike {
  start: PositionLike;
  end: PositionLike;
}

/** Anything with a `toString()` giving the URI string (a `vscode.Uri`). */
export interface UriLike {
  toString(): string;
}

/** `vscode.Location`. */
export interface LocationLike {
  uri: UriLike;
  range: RangeLike;
}

/** `vscode.LocationLink`. */
export interface LocationLinkLike {
  targetUri: UriLike;
  targetRange: RangeLike;
  targetSelectionRange?: RangeLike;
}

/** `vscode.MarkdownString` or a `MarkedString`. */
export type HoverContentLike = string | { value: string; language?: string };

/** `vscode.Hover`. */
export interface HoverLike {
  contents: HoverContentLike[] | HoverContentLike;
  range?: RangeLike;
}

export function toWireRange(range: RangeLike): Range {
  return {
    start: { line: range.start.line, character: range.start.character },
    end: { line: range.end.line, character: range.end.character },
  };
}

/** Definition/reference/implementation results (Location or LocationLink, single or array, or
 * nothing) → `{kind: "locations"}`, duplicates dropped, order kept. */
export function normalizeLocations(raw: unknown): LspQueryResult {
  const items: unknown[] = raw === undefined || raw === null ? [] : Array.isArray(raw) ? raw : [raw];
  const locations: WireLocation[] = [];
  const seen = new Set<string>();
  for (const item of items) {
    let loc: WireLocation | undefined;
    if (isObject(item) && 'targetUri' in item) {
      const link = item as unknown as LocationLinkLike;
      loc = { uri: link.targetUri.toString(), range: toWireRange(link.targetSelectionRange ?? link.targetRange) };
    } else if (isObject(item) && 'uri' in item && 'range' in item) {
      const plain = item as unknown as LocationLike;
      loc = { uri: plain.uri.toString(), range: toWireRange(plain.range) };
    }
    if (loc === undefined) {
      continue;
    }
    const key = JSON.stringify(loc);
    if (!seen.has(key)) {
      seen.add(key);
      locations.push(loc);
    }
  }
  return { kind: 'locations', locations };
}

/** One hover content part as text: markdown/plain verbatim, `{language, value}` as a fence. */
export function hoverContentText(part: HoverContentLike): string {
  if (typeof part === 'string') {
    return part;
  }
  if (typeof part.language === 'string' && part.language !== '') {
    return '```' + part.language + '\n' + part.value + '\n```';
  }
  return part.value;
}

/** Hover results of every provider → `{kind: "hover"}`: parts joined by a blank line, empty ⇒
 * null, the first provider's range. */
export function normalizeHover(raw: unknown): LspQueryResult {
  const hovers: HoverLike[] = (Array.isArray(raw) ? raw : raw ? [raw] : []) as HoverLike[];
  const parts: string[] = [];
  let range: Range | undefined;
  for (const hover of hovers) {
    if (!isObject(hover)) {
      continue;
    }
    const contents = Array.isArray(hover.contents) ? hover.contents : [hover.contents];
    for (const part of contents) {
      const text = hoverContentText(part).trim();
      if (text !== '') {
        parts.push(text);
      }
    }
    if (range === undefined && hover.range !== undefined) {
      range = toWireRange(hover.range);
    }
  }
  if (parts.length === 0) {
    return { kind: 'hover', hover: null };
  }
  const hover: { contents: string; range?: Range } = { contents: parts.join('\n\n') };
  if (range !== undefined) {
    hover.range = range;
  }
  return { kind: 'hover', hover };
}
