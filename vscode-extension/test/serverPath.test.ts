import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveServerPath, type ResolveInput } from '../src/serverPath';

function input(over: Partial<ResolveInput>, files: string[] = []): ResolveInput {
  return {
    setting: '',
    extensionPath: '/ext',
    pathEnv: '/usr/local/bin:/usr/bin',
    home: '/home/u',
    workspaceFolder: '/w',
    platform: 'linux',
    isExecutable: (f) => files.includes(f),
    ...over,
  };
}

describe('server binary resolution', () => {
  it('the setting wins (absolute, ~, ${workspaceFolder}, relative to the workspace, bare name on PATH)', () => {
    assert.deepEqual(resolveServerPath(input({ setting: '/opt/toolhost' }, ['/opt/toolhost', '/ext/bin/toolhost'])), { ok: true, command: '/opt/toolhost', source: 'setting' });
    assert.deepEqual(resolveServerPath(input({ setting: '~/bin/toolhost' }, ['/home/u/bin/toolhost'])), { ok: true, command: '/home/u/bin/toolhost', source: 'setting' });
    assert.deepEqual(resolveServerPath(input({ setting: '${workspaceFolder}/target/debug/toolhost' }, ['/w/target/debug/toolhost'])), { ok: true, command: '/w/target/debug/toolhost', source: 'setting' });
    assert.deepEqual(resolveServerPath(input({ setting: 'target/debug/toolhost' }, ['/w/target/debug/toolhost'])), { ok: true, command: '/w/target/debug/toolhost', source: 'setting' });
    assert.deepEqual(resolveServerPath(input({ setting: 'toolhost-dev' }, ['/usr/bin/toolhost-dev'])), { ok: true, command: '/usr/bin/toolhost-dev', source: 'setting' });
  });

  it('a setting that points nowhere is an error (no silent fallback)', () => {
    const r = resolveServerPath(input({ setting: '/nope/toolhost' }, ['/usr/bin/toolhost']));
    assert.equal(r.ok, false);
    assert.match(r.ok ? '' : r.message, /is not an executable file/);
  });

  it('then the binary bundled with the extension, then PATH', () => {
    assert.deepEqual(resolveServerPath(input({}, ['/ext/bin/toolhost', '/usr/bin/toolhost'])), { ok: true, command: '/ext/bin/toolhost', source: 'bundled' });
    assert.deepEqual(resolveServerPath(input({}, ['/usr/bin/toolhost'])), { ok: true, command: '/usr/bin/toolhost', source: 'PATH' });
    const none = resolveServerPath(input({}, []));
    assert.equal(none.ok, false);
    assert.match(none.ok ? '' : none.message, /toolhost.serverPath/);
  });
});
