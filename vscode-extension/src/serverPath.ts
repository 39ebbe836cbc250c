// Where the `toolhost` binary comes from: the `toolhost.serverPath` setting, else a binary
// bundled with the extension (`bin/toolhost`), else `toolhost` on PATH. Pure over an injected
// file check, so it is unit-tested without `vscode`.

import * as path from 'node:path';

export interface ResolveInput {
  /** `toolhost.serverPath` (may be empty, may start with `~/`). */
  setting: string;
  extensionPath: string;
  /** The PATH variable. */
  pathEnv: string | undefined;
  home: string | undefined;
  /** The first workspace folder, for relative settings. */
  workspaceFolder: string | undefined;
  platform: NodeJS.Platform;
  isExecutable(file: string): boolean;
}

export type Resolved = { ok: true; command: string; source: 'setting' | 'bundled' | 'PATH' } | { ok: false; message: string };

export function resolveServerPath(input: ResolveInput): Resolved {
  const exe = input.platform === 'win32' ? 'toolhost.exe' : 'toolhost';
  let setting = input.setting.trim();
  if (setting !== '') {
    if (setting === '~' || setting.startsWith('~/')) {
      setting = path.join(input.home ?? '', setting.slice(1));
    }
    if (setting.includes('${workspaceFolder}') && input.workspaceFolder) {
      setting = setting.split('${workspaceFolder}').join(input.workspaceFolder);
    }
    if (!path.isAbsolute(setting) && setting.includes('/') && input.workspaceFolder) {
      setting = path.join(input.workspaceFolder, setting);
    }
    if (path.isAbsolute(setting)) {
      return input.isExecutable(setting)
        ? { ok: true, command: setting, source: 'setting' }
        : { ok: false, message: `toolhost.serverPath "${setting}" is not an executable file` };
    }
    const found = searchPath(setting, input);
    return found
      ? { ok: true, command: found, source: 'setting' }
      : { ok: false, message: `toolhost.serverPath "${setting}" was not found on PATH` };
  }
  const bundled = path.join(input.extensionPath, 'bin', exe);
  if (input.isExecutable(bundled)) {
    return { ok: true, command: bundled, source: 'bundled' };
  }
  const found = searchPath(exe, input);
  if (found) {
    return { ok: true, command: found, source: 'PATH' };
  }
  return {
    ok: false,
    message: 'the toolhost binary was not found: set "toolhost.serverPath", or put `toolhost` on PATH',
  };
}

function searchPath(name: string, input: ResolveInput): string | undefined {
  const sep = input.platform === 'win32' ? ';' : ':';
  for (const dir of (input.pathEnv ?? '').split(sep)) {
    if (dir === '') {
      continue;
    }
    const candidate = path.join(dir, name);
    if (input.isExecutable(candidate)) {
      return candidate;
    }
  }
  return undefined;
}
