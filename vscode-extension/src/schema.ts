// The "Call Tool…" input: JSON text checked against the tool's input schema (JSON Schema
// 2020-12, as the server derives it) before anything is sent, and a starting skeleton built from
// the schema's required properties. Pure: no `vscode` import.

import Ajv2020 from 'ajv/dist/2020';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { isObject } from './guards';

const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
const cache = new WeakMap<object, ValidateFunction>();

function compile(schema: unknown): ValidateFunction | undefined {
  if (!isObject(schema)) {
    return undefined;
  }
  const cached = cache.get(schema);
  if (cached) {
    return cached;
  }
  // `$schema`/`$id` would make ajv look up (or clash on) meta-schemas; the keywords are enough.
  const { $schema: _ignored, $id: _id, ...rest } = schema;
  void _ignored;
  void _id;
  const validate = ajv.compile(rest);
  cache.set(schema, validate);
  return validate;
}

function describe(error: ErrorObject): string {
  const where = error.instancePath === '' ? 'arguments' : `arguments${error.instancePath.replace(/\//g, '.')}`;
  if (error.keyword === 'required' && isObject(error.params)) {
    return `${where}: missing required property "${String(error.params.missingProperty)}"`;
  }
  if (error.keyword === 'additionalProperties' && isObject(error.params)) {
    return `${where}: unknown property "${String(error.params.additionalProperty)}"`;
  }
  return `${where} ${error.message ?? 'is invalid'}`;
}

export type ParsedArguments = { ok: true; value: unknown } | { ok: false; message: string };

/** Parses `text` as JSON and validates it against `schema`: the value, or a one-line message
 * naming every problem (what an input box shows). */
export function parseArguments(text: string, schema: unknown): ParsedArguments {
  let value: unknown;
  try {
    value = JSON.parse(text.trim() === '' ? '{}' : text);
  } catch (err) {
    return { ok: false, message: `Not valid JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
  let validate: ValidateFunction | undefined;
  try {
    validate = compile(schema);
  } catch (err) {
    // A schema ajv cannot compile: let the server judge the arguments.
    void err;
    return { ok: true, value };
  }
  if (validate && !validate(value)) {
    const messages = (validate.errors ?? []).map(describe);
    return { ok: false, message: [...new Set(messages)].join('; ') || 'arguments do not match the schema' };
  }
  return { ok: true, value };
}

/** Follows a local `$ref` (`#/$defs/Name`, any JSON pointer into the root schema). */
function deref(root: unknown, schema: unknown, depth = 0): unknown {
  if (!isObject(schema) || typeof schema.$ref !== 'string' || !schema.$ref.startsWith('#') || depth > 16) {
    return schema;
  }
  let target: unknown = root;
  for (const raw of schema.$ref.slice(1).split('/').filter((p) => p !== '')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    target = isObject(target) ? target[key] : undefined;
  }
  return deref(root, target, depth + 1);
}

function placeholder(root: unknown, raw: unknown): unknown {
  const schema = deref(root, raw);
  if (!isObject(schema)) {
    return '';
  }
  if ('default' in schema) {
    return schema.default;
  }
  if ('const' in schema) {
    return schema.const;
  }
  if (Array.isArray(schema.enum) && schema.enum.length > 0) {
    return schema.enum[0];
  }
  for (const key of ['oneOf', 'anyOf'] as const) {
    const options = schema[key];
    if (Array.isArray(options) && options.length > 0) {
      return placeholder(root, options[0]);
    }
  }
  const type: unknown = Array.isArray(schema.type) ? (schema.type as unknown[])[0] : schema.type;
  switch (type) {
    case 'number':
    case 'integer':
      return 1;
    case 'boolean':
      return false;
    case 'array':
      return [];
    case 'object':
      return {};
    default:
      return '';
  }
}

/** `{"<required>": <placeholder>, …}` for an object schema, as compact JSON. */
export function argumentSkeleton(schema: unknown): string {
  const out: Record<string, unknown> = {};
  if (isObject(schema) && Array.isArray(schema.required)) {
    const properties = isObject(schema.properties) ? schema.properties : {};
    for (const name of schema.required) {
      if (typeof name === 'string') {
        out[name] = placeholder(schema, properties[name]);
      }
    }
  }
  return JSON.stringify(out);
}
