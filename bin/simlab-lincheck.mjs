#!/usr/bin/env node
// simlab-lincheck: the linearizability checker's command line, run from the build (npx tsc -p tsconfig.json).
// Usage and exit codes: simlab-lincheck --help (src/checkers/lincheck/cli.ts).
import { runCli } from '../dist/src/checkers/lincheck/cli.js';

process.exitCode = await runCli(process.argv.slice(2), {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  now: () => performance.now(),
});
