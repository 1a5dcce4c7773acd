#!/usr/bin/env node
// simlab-lincheck: the linearizability checker's command line, run from the build: the one-file
// bundle (dist/cli/simlab-lincheck.mjs, scripts/build-cli.mjs) when it is there and not older than
// any of the checker's compiled modules (npx tsc -p tsconfig.json), else those modules.
// Usage and exit codes: simlab-lincheck --help (src/checkers/lincheck/cli.ts).
import { readdirSync, statSync } from 'node:fs';

const bundle = new URL('../dist/cli/simlab-lincheck.mjs', import.meta.url);
const modules = new URL('../dist/src/checkers/lincheck/cli.js', import.meta.url);
const mtime = (url) => statSync(url, { throwIfNoEntry: false })?.mtimeMs;
const bundled = mtime(bundle);
const modulesDir = new URL('../dist/src/checkers/lincheck/', import.meta.url);
let compiled;
try {
  for (const f of readdirSync(modulesDir)) {
    if (f.endsWith('.js')) compiled = Math.max(compiled ?? 0, mtime(new URL(f, modulesDir)) ?? 0);
  }
} catch {
  // no compiled modules: the bundle, if any
}
const entry = bundled !== undefined && (compiled === undefined || bundled >= compiled) ? bundle : modules;
const { runCli } = await import(entry.href);

process.exitCode = await runCli(process.argv.slice(2), {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  now: () => performance.now(),
});
