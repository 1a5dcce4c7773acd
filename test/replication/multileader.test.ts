import t, { type Test } from 'tap';
import { createMultiLeaderCore, type PendingConflict } from '../../src/replication/cores/multi-leader.js';
import type { ClientReply, ClusterConfig, ConflictResolver, Version } from '../../src/replication/core.js';
import { DetCluster } from '../../src/fabric/deterministic.js';
import { withStatus } from '../helpers/status.js';

// ------------------------------------------------------------------ helpers

function config(resolver: ConflictResolver, nodeCount = 3): ClusterConfig {
  return {
    strategy: 'multi_leader',
    node_count: nodeCount,
    replication_mode: 'async',
    conflict_resolver: resolver,
    quorum_n: 3,
    quorum_w: 2,
    quorum_r: 2,
    regions: 1,
    inter_region_latency_ms: 80,
    consistency_level: 'quorum',
    read_repair_mode: 'async',
    sloppy_quorum: true,
  };
}

function ids(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `n${i + 1}`);
}

function cluster(resolver: ConflictResolver, n = 3, seed = 7): DetCluster {
  const c = new DetCluster({ factory: createMultiLeaderCore, nodeIds: ids(n), config: config(resolver, n), seed });
  for (const a of ids(n)) for (const b of ids(n)) if (a !== b) c.fabric.setLatency(a, b, 5);
  return c;
}

function ok(r: ClientReply | undefined): Version {
  if (!r || !r.ok || r.result.kind !== 'entry') throw new Error(`expected an ok entry reply, got ${JSON.stringify(r)}`);
  return r.result.entry;
}

function write(c: DetCluster, node: string, key: string, value: string): Version {
  return ok(c.runUntilReply(c.client(node, { op: 'write', key, value }), 100));
}

function read(c: DetCluster, node: string, key: string): ClientReply | undefined {
  return c.runUntilReply(c.client(node, { op: 'read', key }), 100);
}

/** Every node on its own: n1 | n2 | n3 (two partitions). */
function isolateAll(c: DetCluster): string[] {
  const [a, ...rest] = c.nodeIds();
  const parts = [c.fabric.partition([a as string], rest)];
  for (let i = 0; i < rest.length - 1; i++) parts.push(c.fabric.partition([rest[i] as string], rest.slice(i + 1)));
  return parts;
}

function healAll(c: DetCluster, parts: string[]): void {
  for (const p of parts) c.fabric.heal(p);
}

/** Store views without the per-node bookkeeping, as JSON, per node. */
function stores(c: DetCluster): Record<string, string> {
  const out: Record<string, string> = {};
  for (const id of c.nodeIds()) out[id] = JSON.stringify(c.core(id).storeView());
  return out;
}

function converged(c: DetCluster): boolean {
  return new Set(Object.values(stores(c))).size === 1;
}

function extra(c: DetCluster, id: string): Record<string, unknown> {
  return c.core(id).status(c.now).extra ?? {};
}

function conflictEvents(c: DetCluster): Array<{ node_id?: string; data?: Record<string, unknown> }> {
  return c.events.filter((e) => e.type === 'conflict_detected');
}

// ------------------------------------------------------------------ tests

t.test('a write on any node is replicated to every other node and read locally there', async (t) => {
  const c = cluster('lww');
  const v = write(c, 'n2', 'k', 'hello');
  t.same(v.vclock, { n2: 1 }, "the first write carries the writer's vector clock");
  t.equal(c.core('n2').status(c.now).role, 'primary');
  c.runFor(50);
  for (const id of ['n1', 'n3']) {
    const r = read(c, id, 'k');
    t.equal(r?.ok && r.result.kind === 'entry' ? r.result.entry.value : undefined, 'hello', `${id} reads the value`);
  }
  const missing = withStatus(read(c, 'n1', 'nope'), 'read');
  t.ok(
    missing &&
      !missing.ok &&
      missing.code === 'not_found' &&
      missing.status === 404 &&
      missing.error === 'key not found',
    'an unknown key is 404 key not found',
  );
  write(c, 'n3', 'k', 'x');
  c.runFor(50);
  const del = ok(c.runUntilReply(c.client('n1', { op: 'delete', key: 'k' }), 100));
  t.ok(del.tombstone, 'a delete stores a tombstone');
  c.runFor(50);
  const gone = read(c, 'n2', 'k');
  t.ok(gone && !gone.ok && gone.code === 'not_found', 'the delete reached n2: the key reads as not found');
  t.same(conflictEvents(c), [], 'causally ordered writes raised no conflict');
});

t.test('a causally ordered pair of writes on two nodes raises no conflict', async (t) => {
  const c = cluster('vector_clock');
  write(c, 'n1', 'k', 'first');
  c.runFor(50); // n2 has seen the first write
  const second = write(c, 'n2', 'k', 'second');
  t.same(second.vclock, { n1: 1, n2: 1 }, "the second write's clock descends from the first");
  c.runFor(50);
  t.same(conflictEvents(c), [], 'no conflict_detected event');
  for (const id of c.nodeIds()) {
    t.equal(extra(c, id).conflicts, 0, `${id} counted no conflict`);
    t.equal(c.core(id).storeView().k?.value, 'second', `${id} holds the second write`);
  }
});

t.test('concurrent writes are detected as conflicts and settled by each resolver', async (t) => {
  interface Case {
    resolver: ConflictResolver;
    values: [string, string, string];
    check: (t: Test, c: DetCluster) => void;
  }
  const cases: Case[] = [
    {
      resolver: 'lww',
      values: ['a', 'b', 'c'],
      check: (t, c) => {
        // n3 wrote last in virtual time, so its HLC timestamp is the largest.
        for (const id of c.nodeIds())
          t.equal(c.core(id).storeView().k?.value, 'c', `${id} keeps the last writer's value`);
        const merged = c.core('n1').storeView().k as Version;
        t.same(merged.vclock, { n1: 1, n2: 1, n3: 1 }, 'the kept version carries the merge of all three clocks');
      },
    },
    {
      resolver: 'vector_clock',
      values: ['a', 'b', 'c'],
      check: (t, c) => {
        for (const id of c.nodeIds()) {
          const siblings = (extra(c, id).siblings as Record<string, unknown[]>).k ?? [];
          t.equal(siblings.length, 3, `${id} keeps the three concurrent writes as siblings`);
        }
        // A write that has seen all siblings supersedes them everywhere.
        const w = write(c, 'n2', 'k', 'merged');
        t.same(w.vclock, { n1: 1, n2: 2, n3: 1 }, 'the superseding write dominates every sibling');
        c.runFor(100);
        for (const id of c.nodeIds()) {
          t.equal(extra(c, id).sibling_keys, 0, `${id} dropped the siblings`);
          t.equal(c.core(id).storeView().k?.value, 'merged', `${id} holds the superseding write`);
        }
      },
    },
    {
      resolver: 'crdt',
      values: [
        '{"crdt":"g_counter","op":"inc","by":1}',
        '{"crdt":"g_counter","op":"inc","by":2}',
        '{"crdt":"g_counter","op":"inc","by":3}',
      ],
      check: (t, c) => {
        for (const id of c.nodeIds()) {
          const v = JSON.parse(c.core(id).storeView().k?.value ?? '{}') as { value?: number };
          t.equal(v.value, 6, `${id} merged the three increments into 6`);
        }
      },
    },
  ];
  for (const cs of cases) {
    t.test(`${cs.resolver}: three isolated primaries write one key, then the partition heals`, async (t) => {
      const c = cluster(cs.resolver);
      const parts = isolateAll(c);
      cs.values.forEach((value, i) => {
        write(c, `n${i + 1}`, 'k', value);
        c.runFor(10);
      });
      healAll(c, parts);
      c.runFor(3000); // anti-entropy alone carries the writes across (replication was lost)
      const evs = conflictEvents(c);
      // Each detection merges two concurrent sides; a merged version then dominates, so joining
      // three concurrent writes takes at least two detections somewhere.
      t.ok(evs.length >= 2, `conflicts were detected (${evs.length} detections)`);
      t.ok(
        evs.every((e) => e.data?.resolver === cs.resolver),
        'each event names the resolver',
      );
      const total = c.nodeIds().reduce((s, id) => s + Number(extra(c, id).conflicts), 0);
      t.equal(total, evs.length, 'status().extra.conflicts counts every detection');
      t.ok(converged(c), 'all replicas converged');
      cs.check(t, c);
    });
  }
});

t.test('crdt: untagged values fall back to last-writer-wins, kinds merge only with themselves', async (t) => {
  const c = cluster('crdt');
  const parts = isolateAll(c);
  write(c, 'n1', 'plain', 'one');
  write(c, 'n1', 'set', '{"crdt":"or_set","op":"add","elem":"x"}');
  c.runFor(10);
  write(c, 'n2', 'plain', 'two');
  write(c, 'n2', 'set', '{"crdt":"or_set","op":"add","elem":"y"}');
  write(c, 'n3', 'map', '{"crdt":"lww_map","op":"set","field":"f","value":"1"}');
  healAll(c, parts);
  c.runFor(3000);
  t.ok(converged(c), 'converged');
  const view = c.core('n3').storeView();
  t.equal(view.plain?.value, 'two', 'plain strings: the later write wins');
  t.same(
    (JSON.parse(view.set?.value ?? '{}') as { value: string[] }).value,
    ['x', 'y'],
    'OR-Set adds from both sides survive',
  );
  t.same((JSON.parse(view.map?.value ?? '{}') as { value: unknown }).value, { f: '1' }, 'LWW-Map state replicated');
});

t.test('manual: conflicts are parked, listed, resolved by choice, and refused when nothing is pending', async (t) => {
  const c = cluster('manual');
  const parts = isolateAll(c);
  write(c, 'n1', 'k', 'left');
  c.runFor(10);
  write(c, 'n2', 'k', 'right');
  healAll(c, parts);
  c.runFor(3000);
  const listed = c.control('n1', { kind: 'custom', name: 'conflicts' });
  t.ok(listed.ok, 'conflicts listed');
  t.same(
    listed.data,
    [{ node_id: 'n1', key: 'k', local_value: 'left', remote_value: 'right' }] satisfies PendingConflict[],
    'n1 parked the remote write beside its own',
  );
  const n2 = c.control('n2', { kind: 'custom', name: 'conflicts' }).data as PendingConflict[];
  t.same(
    n2.map((p) => [p.local_value, p.remote_value]),
    [['right', 'left']],
    'n2 parked the mirror image',
  );
  t.equal(c.core('n1').storeView().k?.value, 'left', 'until resolved, each node shows its local value');

  const bad = withStatus(
    c.control('n1', { kind: 'custom', name: 'resolve', args: { key: 'k', choice: 'sideways' } }),
    'control',
  );
  t.equal(bad.status, 400, 'a bad choice is 400');
  const none = withStatus(
    c.control('n1', { kind: 'custom', name: 'resolve', args: { key: 'other', choice: 'local' } }),
    'control',
  );
  t.ok(!none.ok && none.status === 409, 'nothing pending for that key: 409');

  const res = c.control('n1', { kind: 'custom', name: 'resolve', args: { key: 'k', choice: 'remote' } });
  t.same(res, { ok: true, data: { status: 'resolved', key: 'k', choice: 'remote' } }, 'resolved');
  t.ok(
    c.events.some((e) => e.type === 'conflict_resolved' && e.data?.choice === 'remote'),
    'conflict_resolved event',
  );
  c.runFor(2000);
  for (const id of c.nodeIds()) {
    t.equal(c.core(id).storeView().k?.value, 'right', `${id} holds the chosen value`);
    t.same(c.control(id, { kind: 'custom', name: 'conflicts' }).data, [], `${id} has nothing pending`);
  }
  t.ok(converged(c), 'converged after resolution');
});

t.test('diverged replicas converge after a partition heals with no further writes', async (t) => {
  for (const seed of [1, 2, 3]) {
    const c = new DetCluster({ factory: createMultiLeaderCore, nodeIds: ids(4), config: config('lww', 4), seed });
    // Jittery links and some loss: replication messages can vanish, anti-entropy must repair.
    for (const a of ids(4))
      for (const b of ids(4))
        if (a !== b) {
          c.fabric.setLatency(a, b, c.rng.range(1, 30));
          c.fabric.setDropRate(a, b, 0.1);
        }
    const part = c.fabric.partition(['n1', 'n2'], ['n3', 'n4']);
    for (let i = 0; i < 40; i++) {
      const node = `n${1 + c.rng.int(4)}`;
      write(c, node, `k${c.rng.int(10)}`, `v${i}`);
      c.runFor(c.rng.range(1, 40));
    }
    t.notOk(converged(c), `seed ${seed}: the two sides diverged`);
    c.fabric.heal(part);
    for (const a of ids(4)) for (const b of ids(4)) if (a !== b) c.fabric.setDropRate(a, b, 0);
    c.runFor(5000);
    if (!converged(c)) console.error(stores(c));
    t.ok(converged(c), `seed ${seed}: converged without further writes (replay: seed ${seed})`);
  }
});

t.test('a node added later catches up through anti-entropy', async (t) => {
  const c = cluster('lww');
  for (let i = 0; i < 20; i++) write(c, 'n1', `k${i}`, `v${i}`);
  c.runFor(50);
  c.addNode('n4');
  c.runFor(3000);
  t.equal(Object.keys(c.core('n4').storeView()).length, 20, 'n4 holds every key');
  t.ok(converged(c), 'converged');
});

t.test('every resolver converges after random partitions and loss once the network heals', async (t) => {
  const resolvers: ConflictResolver[] = ['lww', 'vector_clock', 'crdt', 'manual'];
  for (const resolver of resolvers) {
    for (const seed of [21, 22]) {
      const c = new DetCluster({ factory: createMultiLeaderCore, nodeIds: ids(4), config: config(resolver, 4), seed });
      const rng = c.rng;
      const nodes = ids(4);
      for (const a of nodes) for (const b of nodes) if (a !== b) c.fabric.setLatency(a, b, rng.range(1, 40));
      let part: string | null = null;
      let increments = 0;
      for (let step = 0; step < 120; step++) {
        const node = nodes[rng.int(4)] as string;
        const roll = rng.next();
        if (roll < 0.5) write(c, node, `k${rng.int(6)}`, `v${step}`);
        else if (roll < 0.65) {
          const by = rng.range(1, 3);
          increments += by;
          write(c, node, 'counter', `{"crdt":"g_counter","op":"inc","by":${by}}`);
        } else if (roll < 0.7) ok(c.runUntilReply(c.client(node, { op: 'delete', key: `k${rng.int(6)}` }), 100));
        else if (roll < 0.8 && part === null) {
          const side = nodes.filter(() => rng.chance(0.5));
          if (side.length > 0 && side.length < 4)
            part = c.fabric.partition(
              side,
              nodes.filter((m) => !side.includes(m)),
            );
        } else if (roll < 0.9 && part !== null) {
          c.fabric.heal(part);
          part = null;
        } else c.fabric.setDropRate(node, nodes[rng.int(4)] as string, 0.5);
        c.runFor(rng.range(1, 50));
      }
      c.fabric.clearFaults();
      c.runFor(5000);
      if (resolver === 'manual') {
        // Settle whatever is parked, node by node, until nothing is pending anywhere.
        for (let round = 0; round < 20; round++) {
          let pending = 0;
          for (const id of nodes) {
            for (const p of c.control(id, { kind: 'custom', name: 'conflicts' }).data as PendingConflict[]) {
              pending++;
              c.control(id, {
                kind: 'custom',
                name: 'resolve',
                args: { key: p.key, choice: round % 2 ? 'local' : 'remote' },
              });
            }
          }
          c.runFor(2000);
          if (pending === 0) break;
        }
      }
      t.ok(converged(c), `${resolver}, seed ${seed}: converged`);
      if (resolver === 'crdt') {
        const v = JSON.parse(c.core('n1').storeView().counter?.value ?? '{}') as { value?: number };
        t.equal(v.value, increments, `crdt, seed ${seed}: the counter kept every increment (${increments})`);
      }
    }
  }
});
