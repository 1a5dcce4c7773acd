/**
 * Imports point down the layers, never up. It reads every .ts file under protocol/ and src/, resolves
 * each relative import (static, re-export, side-effect and dynamic `import()`), and checks it against
 * the rules below. Packages (`typebox`, `node:crypto`, ...) are not layers and are not checked, except
 * that the cores may not reach for threads.
 */
import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

interface Rule {
  /** Files the rule covers (repo-relative prefix). */
  from: string;
  /** Repo-relative prefixes they may not import; a target under an `except` prefix is allowed. */
  forbidden: string[];
  except?: string[];
  /** Packages they may not import. */
  forbiddenPackages?: string[];
  why: string;
}

const shell = [
  'server.ts',
  'routes/',
  'cluster.ts',
  'cluster/',
  'node-handle.ts',
  'main.ts',
  'metrics.ts',
  'durable-store.ts',
  'checkers/',
  'scenarios/',
  'demos/',
  'swarm/',
];

const rules: Rule[] = [
  {
    from: 'protocol/',
    forbidden: ['src/', 'workers/', 'test/', 'benchmarks/'],
    why: 'protocol is the bottom layer: wire, schemas and the core contract',
  },
  {
    from: 'src/util/',
    forbidden: ['src/', 'workers/'],
    except: ['src/util/'],
    why: 'util is shared by every service and knows none of them',
  },
  {
    from: 'src/fabric/',
    forbidden: ['src/replication/', 'src/flags/', 'src/clocklab/', 'src/http/', 'workers/'],
    why: 'the fabric and the deterministic runtime sit below every service (the core contract is protocol/core.ts)',
  },
  {
    from: 'src/http/',
    forbidden: ['src/replication/', 'src/flags/', 'src/clocklab/', 'workers/'],
    why: 'the HTTP edge is generic; services register routes on it',
  },
  {
    from: 'src/replication/cores/',
    forbidden: [
      'src/http/',
      'src/fabric/',
      'src/flags/',
      'src/clocklab/',
      'workers/',
      ...shell.map((s) => `src/replication/${s}`),
    ],
    forbiddenPackages: ['node:worker_threads', 'worker_threads'],
    why: 'a core is a pure state machine: it knows neither the transport nor the service around it',
  },
  {
    from: 'src/replication/dynamo/',
    forbidden: [
      'src/http/',
      'src/fabric/',
      'src/flags/',
      'src/clocklab/',
      'workers/',
      'src/replication/cores/',
      ...shell.map((s) => `src/replication/${s}`),
    ],
    why: 'the Dynamo helpers are pure leaves the leaderless core builds on',
  },
];

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(path.join(repoRoot, dir), { withFileTypes: true })) {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) out.push(...tsFiles(rel));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

/** Every module specifier in `source`: import/export ... from, bare import, dynamic import(). */
function specifiersOf(source: string): string[] {
  const found: string[] = [];
  const patterns = [
    /\bfrom\s*['"]([^'"]+)['"]/g,
    /^\s*import\s*['"]([^'"]+)['"]/gm,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const re of patterns) for (const m of source.matchAll(re)) found.push(m[1] as string);
  return found;
}

/** The repo-relative path a relative specifier of `file` names (.js mapped to .ts), or undefined for a package. */
function resolve(file: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), spec));
  return target.replace(/\.js$/, '.ts');
}

function violations(files: Array<{ file: string; source: string }>): string[] {
  const out: string[] = [];
  for (const { file, source } of files) {
    for (const rule of rules.filter((r) => file.startsWith(r.from))) {
      for (const spec of specifiersOf(source)) {
        const target = resolve(file, spec);
        if (target === undefined) {
          if (rule.forbiddenPackages?.includes(spec)) out.push(`${file} imports ${spec}: ${rule.why}`);
          continue;
        }
        const allowed = rule.except?.some((p) => target.startsWith(p)) ?? false;
        if (!allowed && rule.forbidden.some((p) => target.startsWith(p)))
          out.push(`${file} imports ${target}: ${rule.why}`);
      }
    }
  }
  return out;
}

t.test('the checker finds an upward import (it can fail)', async (t) => {
  const planted = [
    { file: 'src/fabric/x.ts', source: "import type { NodeCore } from '../replication/core.js';" },
    { file: 'protocol/x.ts', source: "export { invariant } from '../src/util/assert.js';" },
    { file: 'src/util/x.ts', source: "const m = await import('../flags/limits.js');" },
    {
      file: 'src/replication/cores/x.ts',
      source: "import '../cluster.js';\nimport { Worker } from 'node:worker_threads';",
    },
    { file: 'src/http/x.ts', source: "import {\n  a,\n} from '../clocklab/limits.js';" },
  ];
  t.equal(violations(planted).length, 6, violations(planted).join('\n'));
  const fine = [
    {
      file: 'src/fabric/x.ts',
      source: "import type { NodeCore } from '../../protocol/core.js';\nimport { x } from './fabric.js';",
    },
    {
      file: 'src/util/x.ts',
      source: "import type { Rng } from '../../protocol/rng.js';\nimport { y } from './logger.js';",
    },
    {
      file: 'src/replication/cores/x.ts',
      source: "import { z } from '../limits.js';\nimport { w } from '../core.js';",
    },
  ];
  t.same(violations(fine), []);
});

t.test('no import points up a layer', async (t) => {
  const files = [...tsFiles('protocol'), ...tsFiles('src')].map((file) => ({
    file,
    source: readFileSync(path.join(repoRoot, file), 'utf8'),
  }));
  t.ok(files.length > 100, `scanned ${files.length} files`);
  t.ok(
    files.some((f) => f.file === 'src/fabric/deterministic.ts'),
    'the deterministic fabric is scanned',
  );
  t.same(violations(files), [], 'imports that point up a layer');
});
