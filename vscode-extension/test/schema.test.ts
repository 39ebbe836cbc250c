import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { argumentSkeleton, parseArguments } from '../src/schema';
import { editSchema, readSchema } from './schemas';

describe('Call Tool… arguments', () => {
  it('valid JSON that matches the schema passes', () => {
    const r = parseArguments('{"file_path": "a.txt", "old_string": "x", "new_string": "y"}', editSchema);
    assert.deepEqual(r, { ok: true, value: { file_path: 'a.txt', old_string: 'x', new_string: 'y' } });
    assert.deepEqual(parseArguments('{"file_path": "a.txt", "offset": 2, "limit": 10}', readSchema), {
      ok: true,
      value: { file_path: 'a.txt', offset: 2, limit: 10 },
    });
  });

  it('not JSON', () => {
    const r = parseArguments('{"file_path": ', editSchema);
    assert.equal(r.ok, false);
    assert.match(r.ok ? '' : r.message, /^Not valid JSON: /);
  });

  it('missing required properties and wrong types are named', () => {
    const r = parseArguments('{"file_path": 3, "old_string": "x"}', editSchema);
    assert.equal(r.ok, false);
    const message = r.ok ? '' : r.message;
    assert.match(message, /missing required property "new_string"/);
    assert.match(message, /arguments\.file_path must be string/);
    const notObject = parseArguments('[1]', readSchema);
    assert.match(notObject.ok ? '' : notObject.message, /arguments must be object/);
    const wrongBool = parseArguments('{"file_path":"a","old_string":"b","new_string":"c","replace_all":"yes"}', editSchema);
    assert.match(wrongBool.ok ? '' : wrongBool.message, /replace_all must be boolean/);
  });

  it('the `format: double` annotations of the server schemas do not get in the way', () => {
    assert.equal(parseArguments('{"file_path": "a", "offset": 1.5}', readSchema).ok, true);
  });

  it('an empty input is an empty object', () => {
    const r = parseArguments('  ', editSchema);
    assert.match(r.ok ? '' : r.message, /missing required property "file_path"/);
  });

  it('no schema (or an unusable one): anything that parses goes to the server', () => {
    assert.deepEqual(parseArguments('{"a":1}', undefined), { ok: true, value: { a: 1 } });
    assert.deepEqual(parseArguments('{"a":1}', { type: 'object', properties: { a: { $ref: '#/nowhere' } } }), { ok: true, value: { a: 1 } });
  });

  it('skeletons list the required properties', () => {
    assert.equal(argumentSkeleton(editSchema), '{"file_path":"","old_string":"","new_string":""}');
    assert.equal(argumentSkeleton(readSchema), '{"file_path":""}');
    assert.equal(
      argumentSkeleton({ type: 'object', required: ['n', 'b', 'e', 'd'], properties: { n: { type: 'integer' }, b: { type: 'boolean' }, e: { enum: ['x', 'y'] }, d: { type: 'string', default: 'z' } } }),
      '{"n":1,"b":false,"e":"x","d":"z"}',
    );
    assert.equal(argumentSkeleton(undefined), '{}');
    const withRef = {
      type: 'object',
      required: ['operation', 'kind'],
      properties: { operation: { $ref: '#/$defs/Op' }, kind: { anyOf: [{ const: 'a' }, { const: 'b' }] } },
      $defs: { Op: { type: 'string', enum: ['goToDefinition', 'hover'] } },
    };
    assert.equal(argumentSkeleton(withRef), '{"operation":"goToDefinition","kind":"a"}');
    assert.equal(parseArguments(argumentSkeleton(withRef), withRef).ok, true);
    assert.match(JSON.stringify(parseArguments('{"operation":"rename","kind":"a"}', withRef)), /must be equal to one of the allowed values/);
  });

  it('every tool of the real server: its schema compiles and its skeleton parses', { skip: !process.env.TOOLHOST_BIN && 'TOOLHOST_BIN not set' }, () => {
    const out = execFileSync(process.env.TOOLHOST_BIN ?? 'toolhost', ['tools', '--json'], { encoding: 'utf8' });
    const { tools } = JSON.parse(out) as { tools: { name: string; inputSchema: unknown }[] };
    assert.ok(tools.length >= 5);
    for (const tool of tools) {
      const skeleton = argumentSkeleton(tool.inputSchema);
      const r = parseArguments(skeleton, tool.inputSchema);
      assert.equal(r.ok, true, `${tool.name}: ${r.ok ? '' : r.message}`);
      assert.equal(parseArguments('{"definitely_unknown": [}', tool.inputSchema).ok, false);
    }
  });
});
