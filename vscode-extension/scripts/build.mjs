// Bundles with esbuild.
//   node scripts/build.mjs               dist/extension.js (development: sourcemaps)
//   node scripts/build.mjs --production  dist/extension.js (minified, what the .vsix ships)
//   node scripts/build.mjs --tests       out/test/*.test.js (unit tests, no `vscode`; jsdom, which
//                                        loads files of its own, from node_modules)
//   node scripts/build.mjs --e2e         e2e/test-extension/dist/*.js (companion test extension)
import * as esbuild from 'esbuild';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = new Set(process.argv.slice(2));
const production = args.has('--production');

const common = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  logLevel: 'warning',
  absWorkingDir: root,
};

async function main() {
  if (args.has('--tests')) {
    const dir = path.join(root, 'test');
    const entryPoints = fs.readdirSync(dir).filter((f) => f.endsWith('.test.ts')).map((f) => path.join(dir, f));
    fs.rmSync(path.join(root, 'out/test'), { recursive: true, force: true });
    await esbuild.build({ ...common, entryPoints, outdir: path.join(root, 'out/test'), sourcemap: 'inline', external: ['vscode', 'jsdom'] });
    return;
  }
  if (args.has('--e2e')) {
    const dir = path.join(root, 'e2e/test-extension');
    await esbuild.build({
      ...common,
      entryPoints: ['extension', 'suite', 'suiteUi'].map((f) => path.join(dir, 'src', `${f}.ts`)),
      outdir: path.join(dir, 'dist'),
      external: ['vscode', 'mocha'],
      sourcemap: 'inline',
    });
    return;
  }
  fs.rmSync(path.join(root, 'dist'), { recursive: true, force: true });
  await esbuild.build({
    ...common,
    entryPoints: [path.join(root, 'src/extension.ts')],
    outfile: path.join(root, 'dist/extension.js'),
    external: ['vscode'],
    minify: production,
    sourcemap: production ? false : 'linked',
    metafile: false,
  });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
