/**
 * Which file a node actor's worker thread starts: the one-file bundle scripts/build-worker.mjs
 * writes beside dist/workers/node-actor.js (a third less CPU per started actor), while it is fresh,
 * else the plain module. Fresh means: it exists, the list of dist/ files it was built from exists,
 * and none of them is newer than the bundle (a `tsc` without `make build`'s bundling step falls
 * back to the modules instead of running old core code). REPLSIM_WORKER_BUNDLE=0 turns it off.
 * Run from the sources (tests under tap) there is no bundle and the plain module is used.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The bundle's file name beside the actor module, and its list of inputs (paths relative to the repository). */
export const actorBundleName = 'node-actor.bundle.js';
export const actorBundleInputsName = 'node-actor.bundle.inputs.json';

/** Why the bundle is or is not used (for the log and the tests). */
export type ActorFileChoice =
  | { bundle: true; url: URL }
  | { bundle: false; url: URL; reason: 'off' | 'not a built module' | 'no bundle' | 'stale' | 'unreadable' };

/** The file to start for `moduleUrl` (…/dist/workers/node-actor.js) under `env`. */
export function chooseActorFile(moduleUrl: URL, env: NodeJS.ProcessEnv = process.env): ActorFileChoice {
  const plain = (reason: 'off' | 'not a built module' | 'no bundle' | 'stale' | 'unreadable'): ActorFileChoice => ({
    bundle: false,
    url: moduleUrl,
    reason,
  });
  if (env['REPLSIM_WORKER_BUNDLE'] === '0') return plain('off');
  if (moduleUrl.protocol !== 'file:') return plain('not a built module');
  const modulePath = fileURLToPath(moduleUrl);
  if (!existsSync(modulePath)) return plain('not a built module');
  const dir = path.dirname(modulePath);
  const bundlePath = path.join(dir, actorBundleName);
  const inputsPath = path.join(dir, actorBundleInputsName);
  if (!existsSync(bundlePath) || !existsSync(inputsPath)) return plain('no bundle');
  try {
    const builtAt = statSync(bundlePath).mtimeMs;
    // dist/workers/ -> the repository root the input paths are relative to
    const root = path.resolve(dir, '..', '..');
    const inputs = JSON.parse(readFileSync(inputsPath, 'utf8')) as unknown;
    if (!Array.isArray(inputs) || inputs.length === 0) return plain('unreadable');
    for (const f of inputs) {
      if (typeof f !== 'string') return plain('unreadable');
      const p = path.join(root, f);
      if (!existsSync(p) || statSync(p).mtimeMs > builtAt) return plain('stale');
    }
  } catch {
    return plain('unreadable');
  }
  return { bundle: true, url: new URL(actorBundleName, moduleUrl) };
}
