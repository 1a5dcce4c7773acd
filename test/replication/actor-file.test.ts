// Which file a node actor starts (src/replication/actor-file.ts): the one-file bundle only while it
// is fresh, the plain module otherwise. Built in a temp directory laid out like the repository.
import t from 'tap';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { actorBundleInputsName, actorBundleName, chooseActorFile } from '../../src/replication/actor-file.js';

const root = mkdtempSync(path.join(tmpdir(), 'simlab-actor-file-'));
t.teardown(() => rmSync(root, { recursive: true, force: true }));
const workers = path.join(root, 'dist', 'workers');
const cores = path.join(root, 'dist', 'src', 'replication', 'cores');
mkdirSync(workers, { recursive: true });
mkdirSync(cores, { recursive: true });
const modulePath = path.join(workers, 'node-actor.js');
const corePath = path.join(cores, 'raft.js');
const bundlePath = path.join(workers, actorBundleName);
const inputsPath = path.join(workers, actorBundleInputsName);
const moduleUrl = pathToFileURL(modulePath);
const at = (file: string, seconds: number) => utimesSync(file, seconds, seconds);

writeFileSync(modulePath, '// module\n');
writeFileSync(corePath, '// core\n');
at(modulePath, 1_000);
at(corePath, 1_000);

t.test('no bundle: the module', async (t) => {
  t.match(chooseActorFile(moduleUrl, {}), { bundle: false, reason: 'no bundle' });
  t.equal(chooseActorFile(moduleUrl, {}).url.href, moduleUrl.href);
});

t.test('a bundle newer than every input it lists: the bundle', async (t) => {
  writeFileSync(bundlePath, '// bundle\n');
  writeFileSync(inputsPath, JSON.stringify(['dist/workers/node-actor.js', 'dist/src/replication/cores/raft.js']));
  at(bundlePath, 2_000);
  const c = chooseActorFile(moduleUrl, {});
  t.equal(c.bundle, true);
  t.equal(c.url.href, pathToFileURL(bundlePath).href);
});

t.test('REPLSIM_WORKER_BUNDLE=0 turns it off', async (t) => {
  t.match(chooseActorFile(moduleUrl, { REPLSIM_WORKER_BUNDLE: '0' }), { bundle: false, reason: 'off' });
  t.match(chooseActorFile(moduleUrl, { REPLSIM_WORKER_BUNDLE: '1' }), { bundle: true });
});

t.test('an input rebuilt after the bundle (tsc without the bundling step): the module', async (t) => {
  at(corePath, 3_000);
  t.match(chooseActorFile(moduleUrl, {}), { bundle: false, reason: 'stale' });
  at(corePath, 1_000);
  t.match(chooseActorFile(moduleUrl, {}), { bundle: true }, 'fresh again once the bundle is the newest');
});

t.test('an input gone, or an unreadable list: the module', async (t) => {
  writeFileSync(inputsPath, JSON.stringify(['dist/src/replication/cores/gone.js']));
  t.match(chooseActorFile(moduleUrl, {}), { bundle: false, reason: 'stale' });
  writeFileSync(inputsPath, '{not json');
  t.match(chooseActorFile(moduleUrl, {}), { bundle: false, reason: 'unreadable' });
  writeFileSync(inputsPath, '[]');
  t.match(chooseActorFile(moduleUrl, {}), { bundle: false, reason: 'unreadable' });
  writeFileSync(inputsPath, '[1]');
  t.match(chooseActorFile(moduleUrl, {}), { bundle: false, reason: 'unreadable' });
});

t.test('run from the sources (no built module there): the module', async (t) => {
  const src = pathToFileURL(path.join(root, 'workers', 'node-actor.js'));
  t.match(chooseActorFile(src, {}), { bundle: false, reason: 'not a built module' });
});
