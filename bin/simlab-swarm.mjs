#!/usr/bin/env node
// simlab-swarm: the seeded swarm's command line, run from the build (npx tsc -p tsconfig.json).
// Usage and exit codes: simlab-swarm --help (src/replication/swarm/cli.ts, which runs on import).
// Distributed mode over Redis: simlab-swarm submit | worker | report --help (swarm/distributed/cli.ts).
import '../dist/src/replication/swarm/cli.js';
